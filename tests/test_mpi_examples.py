"""The MPI examples, built by examples/Makefile with each real MPI and run untraced under its real
mpiexec (4 ranks oversubscribe this 2-core machine); and what tareador knows about launching: the
environment each MPI needs (tracing.mpi_launch), where a rank finds its number (workers)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest

from tareador.tracing.mpi_launch import MPICH, MPIS, OPEN_MPI
from tareador.workers import launch_rank
from tests.helpers import EXAMPLES, MPI_EXAMPLES, require


@pytest.mark.parametrize("ranks", [2, 4])
@pytest.mark.parametrize("name", MPI_EXAMPLES)
@pytest.mark.parametrize("mpi", MPIS.values(), ids=MPIS.keys())
def test_example_checks_ok_on_every_rank(mpi_examples, mpi, name, ranks):
    run = subprocess.run(mpi.command(ranks, [str(mpi_examples(mpi) / name)]), env=mpi.env(), capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    said = [re.fullmatch(rf"{name} rank=(\d+)/{ranks} .* check=ok", line) for line in run.stdout.splitlines()]
    assert all(said) and sorted(int(m.group(1)) for m in said) == list(range(ranks)), run.stdout


def test_makefile_tells_mpi_examples_by_their_include(tmp_path):
    """Only a file including <mpi.h> is built with MPI's compiler, into BIN/<MPI>/."""
    run = subprocess.run(["make", "-n", "-C", str(EXAMPLES), "CC=cc", "MPI=openmpi", f"BIN={tmp_path}",
                          "TAREADOR_CFLAGS=", "TAREADOR_LIBS=", "heat", "ring"],
                         capture_output=True, text=True, check=True)
    commands = [line.split()[0] + " " + line.split("-o ")[1].split()[0] for line in run.stdout.splitlines()
                if " -o " in line]
    assert commands == [f"cc {tmp_path}/heat", f"mpicc.openmpi {tmp_path}/openmpi/ring"]


@pytest.mark.parametrize("mpi, argv", [(MPICH, []), (MPICH, ["-pmi-port"]), (OPEN_MPI, [])],
                         ids=["mpich", "mpich-pmi-port", "openmpi"])
def test_rank_from_each_launchers_environment(tmp_path, mpi, argv):
    """Every rank of a real launch finds a different number, 0..3, without calling MPI."""
    require(mpi)
    run = subprocess.run([mpi.mpiexec, *argv, "-n", "4", "sh", "-c", 'env > "$0/$$"', str(tmp_path)],
                         env=mpi.env(), capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    environments = [dict(line.split("=", 1) for line in p.read_text().splitlines() if "=" in line)
                    for p in tmp_path.iterdir()]
    assert sorted(launch_rank(e) for e in environments) == [0, 1, 2, 3]


@pytest.mark.fast
def test_no_rank_outside_a_launcher():
    assert launch_rank({"PATH": "/usr/bin"}) is None
    assert launch_rank({"PMI_RANK": ""}) is None


def test_mpi4py_runs_with_open_mpi_whichever_libmpi_so_is_first(tmp_path):
    """mpi4py's wheel loads the first `libmpi.so` it finds; with MPICH's there (the Debian
    alternatives may pick it) it cannot start unless told to load Open MPI's library."""
    require(OPEN_MPI)
    require(MPICH)
    if importlib.util.find_spec("mpi4py") is None:
        pytest.skip("mpi4py is not installed; `make deps` installs it")
    mpich_library = "/usr/lib/x86_64-linux-gnu/libmpich.so.12"
    (tmp_path / "libmpi.so").symlink_to(mpich_library)
    code = ("from mpi4py import MPI; c = MPI.COMM_WORLD; s = c.gather(c.allreduce(c.Get_rank() + 1)); "
            "c.Get_rank() or print(s)")
    run = subprocess.run(OPEN_MPI.command(2, [sys.executable, "-c", code]),
                         env={**OPEN_MPI.env(), "LD_LIBRARY_PATH": str(tmp_path)},
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "[3, 3]\n"
