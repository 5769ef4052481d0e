"""`tareador mpirun` on real MPI programs under both real MPIs: the examples' messages exactly as
their headers derive them, and runs that go wrong (a crash, a deadlock, Ctrl-C, a killed tracer,
no MPI at all, more ranks than cores), each ending without a hang and with every rank's trace
written; and what it refuses before launching anything (one line each)."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import tareador
from tareador.formats.dimemas import read_dim
from tareador.simulation.dimemas_engine import replay
from tareador.simulation.machine import Machine
from tareador.system_packages import PACKAGES, how_to_install
from tareador.tracing import toolchain
from tareador.tracing.mpi_launch import MPICH, MPIS, OPEN_MPI, linked_mpi
from tareador.tracing.mpirun import _tracers
from tests.helpers import require, write_c


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """build(mpi, name, source) -> the C source built with that MPI."""
    out = tmp_path_factory.mktemp("mpirun")
    flags = shlex.split(toolchain.cflags()), shlex.split(toolchain.libs())

    def compile_with(mpi, name, source):
        require(mpi)
        exe = out / f"{name}-{mpi.name}"
        if not exe.exists():
            subprocess.run([mpi.mpicc, "-g", *flags[0], str(write_c(out, name, source)), "-o", str(exe), *flags[1]],
                           check=True)
        return exe

    return compile_with


def mpirun(*args, env=None):
    return subprocess.run([sys.executable, "-m", "tareador", "mpirun", *map(str, args)], capture_output=True,
                          text=True, timeout=90, env=env)


# name -> arguments, ranks, (src, dst, tag, bytes) of every message by sender and order, collectives
EXPECTED = {
    # 2 iterations of a 16 x 16 grid: one row (16 doubles) each way per iteration
    "jacobi": (["16", "4", "2"], 2, [(0, 1, 1, 128)] * 2 + [(1, 0, 0, 128)] * 2, 0),
    # 4 blocks of 8 columns: rank 0 sends each block's last row, tags 0..3
    "wavefront": (["4", "32", "8"], 2, [(0, 1, k, 64) for k in range(4)], 0),
    # P - 1 = 1 step: each vector of 64 longs once to the other rank, tag 0
    "ring": (["64"], 2, [(0, 1, 0, 512), (1, 0, 0, 512)], 0),
    # 3 iterations: one double each way per iteration; 1 + 2 x 3 Allreduce
    "cg": (["8", "4", "3"], 2, [(0, 1, 1, 8)] * 3 + [(1, 0, 0, 8)] * 3, 7),
}


@pytest.mark.parametrize("name", EXPECTED)
@pytest.mark.parametrize("mpi", MPIS.values(), ids=MPIS.keys())
def test_examples_messages_as_their_headers_say(mpi_examples, tmp_path, mpi, name):
    arguments, ranks, messages, collectives = EXPECTED[name]
    r = mpirun("-np", ranks, "-o", tmp_path / "run", "--", mpi_examples(mpi) / name, *arguments)
    assert r.returncode == 0, r.stderr
    run = tareador.load(tmp_path / "run")
    assert [(m.src, m.dst, m.tag, m.bytes) for m in run.messages] == messages  # by sender, in order
    s = run.summary
    assert (s["mpi"], s["ranks"], s["collectives"], s["partial"]) == (mpi.name, ranks, collectives, False)
    assert s["unmatched_sends"] == s["unmatched_receives"] == s["unmatched_collectives"] == []
    assert all(c.operation == "MPI_Allreduce" for c in run.matching.collectives)
    said = [re.fullmatch(rf"{name} rank=\d/{ranks} .* check=ok", line) for line in r.stdout.splitlines()]
    assert sum(map(bool, said)) == ranks
    if name == "ring":
        ring_replays_to_its_chain(run)
    if name == "cg":
        cg_allreduces_are_global_operations(run, collectives)


def cg_allreduces_are_global_operations(run, collectives):
    """Each rank's Allreduce of one double is a record 10 (id 11, communicator 1 = the world,
    8 bytes each way); on an ideal network a rank leaves a collective when the last enters in
    both forms, so the point-to-point form (--collectives p2p) replays to the same makespan."""
    dim = (Path(run.path) / "authentic.dim").read_text().splitlines()
    assert "d:1:1:2:0:1" in dim
    assert [line for line in dim if line.startswith("10:")] == [f"10:{r}:0:11:1:0:0:8:8:1" for r in (0, 1)
                                                                 for _ in range(collectives)]
    ideal = replay(read_dim(Path(run.path) / "authentic.dim"), Machine(nodes=2)).makespan
    r = subprocess.run([sys.executable, "-m", "tareador", "postprocess", "--collectives", "p2p", str(run.path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    dim = (Path(run.path) / "authentic.dim").read_text().splitlines()
    assert not [line for line in dim if line.startswith(("10:", "d:"))]
    p2p = replay(read_dim(Path(run.path) / "authentic.dim"), Machine(nodes=2)).makespan
    assert p2p == pytest.approx(ideal, abs=1e-12)


def ring_replays_to_its_chain(run):
    """Each rank computes accumulate(0), exchanges, computes accumulate(1): on an ideal network it
    goes on after the exchange when the later of the two reached it."""
    exchange = [next(c.posted for c in run.calls_of(rank) if c.operation == "MPI_Sendrecv") for rank in (0, 1)]
    expected = max(max(exchange) + run.ranks[rank].t1 - exchange[rank] for rank in (0, 1))
    assert replay(read_dim(f"{run.path}/authentic.dim"), Machine(nodes=2)).makespan == pytest.approx(expected / 1e9,
                                                                                                    abs=1e-12)


def test_more_ranks_than_cores(mpi_examples, tmp_path):
    """4 ranks on this 2-core machine: 3 neighbour pairs, one row each way."""
    r = mpirun("-np", 4, "-o", tmp_path / "run", "--", mpi_examples(MPICH) / "jacobi", "16", "4", "1")
    assert r.returncode == 0, r.stderr
    run = tareador.load(tmp_path / "run")
    assert Counter((m.src, m.dst) for m in run.messages) == {(0, 1): 1, (1, 0): 1, (1, 2): 1, (2, 1): 1, (2, 3): 1,
                                                              (3, 2): 1}


WAIT_FOR_EACH_OTHER = r"""
#include <mpi.h>
#include <stdio.h>
#include "tareador.h"
int main(int argc, char **argv) {
  int rank, x = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  tareador_ON();
  tareador_start_task("work");
  x = rank + 1;
  tareador_end_task("work");
  if (CRASHING_RANK == rank) *(volatile int *)0 = x;
  printf("waiting %d\n", rank);
  fflush(stdout);
  MPI_Recv(&x, 1, MPI_INT, 1 - rank, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  tareador_OFF();
  MPI_Finalize();
  return 0;
}
"""


def waiting(build, mpi, crashing):
    return build(mpi, f"wait{crashing + 1}", WAIT_FOR_EACH_OTHER.replace("CRASHING_RANK", str(crashing)))


def rank_summaries(run_dir):
    return [json.loads((run_dir / f"rank-{r}" / "summary.json").read_text()) for r in (0, 1)]


@pytest.mark.parametrize("mpi", MPIS.values(), ids=MPIS.keys())
def test_a_crashing_rank_stops_the_others_after_they_wrote_their_traces(build, tmp_path, mpi):
    """Rank 1 crashes; rank 0 waits for it forever: tareador stops it, its partial trace is written."""
    r = mpirun("-np", 2, "-o", tmp_path / "run", "--", waiting(build, mpi, 1))
    assert r.returncode == 1
    ranks = rank_summaries(tmp_path / "run")
    assert ranks[1]["ending"].startswith("crashed") and " in main (wait2.c:13)" in ranks[1]["ending"]
    assert ranks[0]["partial"] and ranks[0]["instances"] == 1
    assert ranks[0]["ending"] == f"was stopped: rank 1 {ranks[1]['ending']}"  # not "interrupted (Ctrl-C)"
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert s["partial"] and s["ending"] == f"was stopped: rank 1 {ranks[1]['ending']}"
    assert (s["per_rank"][0]["blocked_in"]["call"], s["per_rank"][0]["blocked_in"]["peer"]) == ("MPI_Recv", 1)
    assert "tareador: the run was stopped: rank 1 crashed" in r.stderr


def test_ctrl_c_writes_every_ranks_partial_trace(build, tmp_path):
    p = subprocess.Popen([sys.executable, "-m", "tareador", "mpirun", "-np", "2", "-o", str(tmp_path / "run"), "--",
                          str(waiting(build, MPICH, -1))], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        said = [p.stdout.readline() for _ in range(2)]
        assert sorted(said) == ["waiting 0\n", "waiting 1\n"]
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 1, err
    assert [t["ending"] for t in rank_summaries(tmp_path / "run")] == ["was interrupted (Ctrl-C)"] * 2
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["ending"] == "was interrupted (Ctrl-C)"


def test_sigterm_ends_the_run_as_ctrl_c_does_leaving_nothing_running(build, tmp_path):
    p = subprocess.Popen([sys.executable, "-m", "tareador", "mpirun", "-np", "2", "-o", str(tmp_path / "run"), "--",
                          str(waiting(build, MPICH, -1))], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert sorted(p.stdout.readline() for _ in range(2)) == ["waiting 0\n", "waiting 1\n"]
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 1, err
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["ending"] == "was stopped (SIGTERM)"
    assert all(t["partial"] for t in rank_summaries(tmp_path / "run"))
    left = running_with(str(tmp_path / "run"))
    for pid in left:  # not left behind by a failing test either
        os.kill(pid, signal.SIGKILL)
    assert not left


def running_with(text):
    """pids of the processes whose command line holds text."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def test_a_program_without_mpi_is_independent_traces(compile_c, tmp_path):
    exe = compile_c(write_c(tmp_path, "alone", '#include "tareador.h"\nint x;\nint main(void) {\n'
                            '  tareador_ON(); tareador_start_task("t"); x++; tareador_end_task("t"); tareador_OFF();\n'
                            '  return 0;\n}\n'))
    r = mpirun("-np", 3, "-o", tmp_path / "run", "--", exe)
    assert r.returncode == 0, r.stderr
    run = tareador.load(tmp_path / "run")
    assert [t.instances for t in run.ranks] == [1, 1, 1] and run.calls == []
    assert "no rank made an MPI call: the 3 ranks are independent runs of the program" in run.summary["warnings"]


def test_a_rank_whose_tracer_is_killed_stops_the_run(build, tmp_path):
    """Rank 1's tracer is killed (no trace): rank 0, waiting for it, is stopped and writes its own.
    (MPICH's launcher kills every rank itself when one is killed by a signal.)"""
    p = subprocess.Popen([sys.executable, "-m", "tareador", "mpirun", "-np", "2", "-o", str(tmp_path / "run"), "--",
                          str(waiting(build, OPEN_MPI, -1))], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert sorted(p.stdout.readline() for _ in range(2)) == ["waiting 0\n", "waiting 1\n"]
        os.kill(_tracers()[1], signal.SIGKILL)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 1, err
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert s["ending"] == "was stopped: rank 1's tracer ended without writing its trace"
    assert [r["ending"] for r in s["per_rank"]] == ["was stopped: rank 1's tracer ended without writing its trace",
                                                    "wrote no trace"]


def test_the_mpi_a_program_is_built_with(build):
    assert linked_mpi(str(waiting(build, MPICH, -1))) is MPICH
    assert linked_mpi(str(waiting(build, OPEN_MPI, -1))) is OPEN_MPI
    assert linked_mpi("/bin/true") is None


def test_a_program_built_with_the_other_mpi(build, tmp_path):
    program = waiting(build, OPEN_MPI, -1)
    r = mpirun("--mpi", "mpich", "-np", "2", "-o", tmp_path / "run", "--", program)
    assert r.returncode == 2 and r.stderr == (f"tareador: {program} is built with Open MPI, which cannot run under "
                                              "MPICH's launcher: use --mpi openmpi, or build it with mpicc.mpich\n")
    assert not (tmp_path / "run").exists()


def test_mpi_not_installed_says_how_to_install_it(tmp_path):
    """Without the launcher on PATH: one line naming the MPI and the packages that bring it."""
    env = {**os.environ, "PATH": str(tmp_path)}
    for asked, title, launcher in (("mpich", "MPICH", "mpiexec.mpich"), ("openmpi", "Open MPI", "mpiexec.openmpi")):
        r = mpirun("--mpi", asked, "-np", "2", "--", "/bin/true", env=env)
        assert r.returncode == 2 and r.stderr == (f"tareador: {title} is not installed (no {launcher} on PATH): "
                                                  f"{how_to_install(title)}\n")
        assert f"apt-get install {PACKAGES[title][0]} (Debian" in r.stderr


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
