"""`tareador mpirun`: what it refuses before launching anything (one line each), and which MPI
it launches a program with."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import write_c
from tareador.tracing.mpi_launch import MPICH, OPEN_MPI, linked_mpi

MPI_HELLO = """
#include <mpi.h>
int main(int argc, char **argv) { MPI_Init(&argc, &argv); MPI_Finalize(); return 0; }
"""


def mpirun(*args, env=None):
    return subprocess.run([sys.executable, "-m", "tareador", "mpirun", *args], capture_output=True, text=True,
                          timeout=60, env=env)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """built(mpi) -> a minimal MPI program compiled with that MPI's mpicc."""
    out = tmp_path_factory.mktemp("mpi")
    source = write_c(out, "hello", MPI_HELLO)

    def build(mpi):
        if not mpi.installed():
            pytest.skip(f"{mpi.name} is not installed; `make deps` installs it")
        exe = out / f"hello-{mpi.name}"
        if not exe.exists():
            subprocess.run([mpi.mpicc, str(source), "-o", str(exe)], check=True)
        return exe

    return build


def test_the_mpi_a_program_is_built_with(built, tmp_path):
    assert linked_mpi(str(built(MPICH))) is MPICH
    assert linked_mpi(str(built(OPEN_MPI))) is OPEN_MPI
    assert linked_mpi("/bin/true") is None


def test_a_program_built_with_the_other_mpi(built, tmp_path):
    r = mpirun("--mpi", "mpich", "-np", "2", "-o", str(tmp_path / "run"), "--", str(built(OPEN_MPI)))
    assert r.returncode == 2 and r.stderr == (f"tareador: {built(OPEN_MPI)} is built with Open MPI, which cannot run "
                                              "under MPICH's launcher: use --mpi openmpi, or build it with "
                                              "mpicc.mpich\n")
    assert not (tmp_path / "run").exists()


def test_mpi_not_installed_says_how_to_install_it(tmp_path):
    """Without the launcher on PATH: one line naming the MPI and `make deps`."""
    env = {**os.environ, "PATH": str(tmp_path)}
    for asked, title, launcher in (("mpich", "MPICH", "mpiexec.mpich"), ("openmpi", "Open MPI", "mpiexec.openmpi")):
        r = mpirun("--mpi", asked, "-np", "2", "--", "/bin/true", env=env)
        assert r.returncode == 2 and r.stderr == (f"tareador: {title} is not installed (no {launcher} on PATH): "
                                                  "install it with 'make deps'\n")


@pytest.mark.parametrize("args, message", [
    (["-np", "0", "--", "/bin/true"], "-np must be a positive whole number, not '0'"),
    (["-np", "two", "--", "/bin/true"], "-np must be a positive whole number, not 'two'"),
    (["-np", "2", "--timeout", "-1", "--", "/bin/true"], "--timeout must be a positive number, not '-1'"),
    (["-np", "2"], "no program given: tareador mpirun -np N -o DIR -- ./prog [args]"),
    (["-np", "2", "--", "./no-such-program"], "program './no-such-program' not found: check the path"),
])
def test_bad_arguments_are_one_line(args, message):
    r = mpirun(*args)
    assert r.returncode == 2 and r.stderr == f"tareador: {message}\n"
