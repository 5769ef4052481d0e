"""Inputs that made simulate and replay hang: each now runs at once or is refused in one line,
idle cores cost nothing, and Ctrl-C stops a long replay. Each command runs in a subprocess with
a timeout, so that a hang fails the test instead of hanging the suite."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tareador.cli import main as cli
from tareador.formats.dimemas import write_dim
from tareador.simulation import dimemas_engine as engine
from tareador.simulation.dimemas_engine import replay
from tareador.simulation.list_scheduler import simulate
from tareador.simulation.machine import Machine
from tareador.taskgraph.store import save
from tests.helpers import ROOT, THREE_THREADS, TWO_RANKS, dim, fork_join

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def tareador(*argv, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tareador", *map(str, argv)], capture_output=True, text=True,
                          timeout=timeout, env=ENV)


def one_second(tmp_path):
    """One thread, one burst of 1 s."""
    return write_dim(tmp_path / "long.dim", "long", [1], ["1:0:0:1.0\n"])


def rr(tmp_path, quantum: str):
    path = tmp_path / f"rr{quantum}.toml"
    path.write_text(f'[scheduler]\npolicy = "rr"\nquantum = {quantum}\n')
    return path


def test_a_quantum_that_explodes_into_slices_is_refused(tmp_path):
    """1 s in quanta of 1e-12 s is 1e12 slices; 2 * 1e9 ns / 2^30 slices gives the advice."""
    r = tareador("replay", one_second(tmp_path), "--machine", rr(tmp_path, "1e-12"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "rr quantum of 1e-12 s cuts its bursts into 1e+12 slices" in r.stderr
    assert "use a quantum of at least 1.9e-09 s" in r.stderr


MACHINE_CPUS = "[cpu]\ncores_per_node = 1e12\n"


def run_case(tmp_path, machine: str, argv: list[str], run) -> tuple[int, str]:
    """Run argv (with {trace}, {dim}, {machine}) on a fork-join trace, THREE_THREADS and the machine."""
    (tmp_path / "m.toml").write_text(machine)
    trace = save(fork_join(width=4, work=1000), tmp_path / "fj.tareador")
    three = write_dim(tmp_path / "three.dim", "three", [3], THREE_THREADS)
    return run([a.format(trace=trace, dim=three, machine=tmp_path / "m.toml") for a in argv])


@pytest.mark.parametrize("machine,argv,message", [
    ("", ["simulate", "{trace}", "--cores", "100000000"], "100000000 cores are more than the 1048576"),
    (MACHINE_CPUS, ["simulate", "{trace}", "--machine", "{machine}"],
     "1000000000000 CPUs (nodes x cores_per_node) are more than the 1048576"),
    ("[network]\nintra_latency = 1e300\n", ["replay", "{dim}", "--machine", "{machine}"],
     "take longer than can be counted"),
])
def test_inputs_that_hung_are_refused(tmp_path, machine, argv, message):
    def run(args):
        r = tareador(*args)
        return r.returncode, r.stderr

    status, err = run_case(tmp_path, machine, argv, run)
    assert status == 2 and message in err and err.splitlines()[-1].startswith("tareador")


@pytest.mark.parametrize("machine,argv,message", [
    ("", ["simulate", "{trace}", "--cores", "99999999999"], "use inf for an unbounded machine"),
    (MACHINE_CPUS, ["replay", "{dim}", "--machine", "{machine}"], "1000000000000 CPUs"),
    ("[network]\nbuses = 1e19\n", ["replay", "{dim}", "--machine", "{machine}"], "buses = 1e+19 is too large"),
    ("", ["simulate", "{trace}", "--overhead", str(10 ** 30)], "--overhead must be >= 0 and at most 2147483647"),
])
@pytest.mark.fast
def test_absurd_values_are_one_line_errors(tmp_path, capsys, machine, argv, message):
    def run(args):
        try:
            status = cli.main(args)
        except SystemExit as e:  # argparse's own errors
            status = e.code
        return status, capsys.readouterr().err

    status, err = run_case(tmp_path, machine, argv, run)
    assert status == 2 and message in err and "out of memory" not in err
    assert err.splitlines()[-1].startswith("tareador")


@pytest.mark.fast
def test_idle_cores_cost_nothing(tmp_path):
    """A trillion cores schedule like as many cores as instances; a machine of a trillion CPUs per
    node replays TWO_RANKS as one CPU per node does, its second node's first CPU numbered 10^12 + 1."""
    dag = fork_join(width=4, work=10).dag
    huge, enough = simulate(dag, 10 ** 12), simulate(dag, dag.n)
    assert (huge.start.tolist(), huge.core.tolist(), huge.makespan) == (enough.start.tolist(), enough.core.tolist(), 10)
    network = dict(nodes=2, inter_latency=1e-5, inter_bandwidth=100.0)
    r = replay(dim(tmp_path, [1, 1], TWO_RANKS), Machine(cores_per_node=10 ** 12, **network), record=True)
    assert r.makespan == 2.01001 and r.task_end == [1.50001, 2.01001]
    comms = r.paraver.comms
    assert (comms["cpu"].tolist(), comms["rcpu"].tolist()) == ([1], [10 ** 12 + 1])


def test_ctrl_c_stops_a_long_replay(tmp_path):
    """1 s in quanta of 1 ns is 10^9 slices, many seconds of event loop: SIGINT during it ends the
    replay (a replay that ignored it would finish and exit 0), with the one-line message."""
    engine._library()  # built here, so that the replay below is in its loop when it has loaded it
    proc = subprocess.Popen([sys.executable, "-m", "tareador", "replay", str(one_second(tmp_path)), "--machine",
                             str(rr(tmp_path, "1e-9"))], env=ENV, start_new_session=True, stderr=subprocess.PIPE,
                            text=True)
    maps = f"/proc/{proc.pid}/maps"
    deadline = time.monotonic() + 30
    while proc.poll() is None and "libtareador_replay" not in open(maps).read() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130 and err.strip().splitlines()[-1] == "tareador: interrupted"


@pytest.mark.fast
def test_no_gantt_of_more_cores_than_it_can_draw(tmp_path, capsys):
    trace = save(fork_join(width=4, work=1000), tmp_path / "fj.tareador")
    assert cli.main(["simulate", str(trace), "--cores", "257", "--plot"]) == 0
    assert not (trace / "gantt.png").exists() and (trace / "speedup.png").exists()
    assert "no Gantt chart: 6 task instances on 257 cores are too many to draw" in capsys.readouterr().err
