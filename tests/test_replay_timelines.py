"""Paraver timelines of MPI replays (`tareador replay --prv`): one row per rank, the MPI call a
rank is in (Extrae's event types, from authentic.dim), Dimemas' states, and one communication
record per message with its logical and physical times; on a hand-written ping-pong whose every
time is derived below, and on a real 4-rank Jacobi traced by `tareador mpirun`."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tareador.formats.dimemas import read_dim, write_dim
from tareador.formats.paraver import PRIORITY_EVENT, pcf_value_labels
from tareador.simulation.dimemas_engine import replay
from tareador.simulation.machine import MB, Machine
from tareador.simulation.machine_files import BUNDLED
from tareador.synthesis.ompss import write_dim_traces
from tareador.tracing.mpi_launch import MPIS
from tests.helpers import call, make, make_run

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PTP = 50000001  # Extrae's MPI point-to-point event type: MPI_Send 1, MPI_Recv 2, MPI_Isend 3, MPI_Irecv 4, ...

# 2 ranks, ns: rank 0 computes 5000, sends 800 bytes (tag 5) to rank 1, receives the answer,
# computes 2000; rank 1 receives, computes 3000, answers. Each call between its MPI events.
PING_PONG = [f"1:0:0:0.000005000\n20:0:0:{PTP}:1\n2:0:0:1:800:5:0:0\n20:0:0:{PTP}:0\n"
             f"20:0:0:{PTP}:2\n3:0:0:1:800:5:0:0\n20:0:0:{PTP}:0\n1:0:0:0.000002000\n",
             f"1:1:0:0.0\n20:1:0:{PTP}:2\n3:1:0:0:800:5:0:0\n20:1:0:{PTP}:0\n1:1:0:0.000003000\n"
             f"20:1:0:{PTP}:1\n2:1:0:0:800:5:0:0\n20:1:0:{PTP}:0\n"]
# One byte per ns: 10^9 / 2^20 MB/s, exact in binary.
ONE_BYTE_PER_NS = 1e9 / MB


def replay_cli(dim: Path, machine: Path, prv: Path):
    """Replay with --prv PRV and --chrome PRV.json; the .prv's lines."""
    r = subprocess.run([sys.executable, "-m", "tareador", "replay", str(dim), "--machine", str(machine),
                        "--prv", str(prv), "--chrome", str(prv.with_suffix(".json"))],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return prv.read_text().splitlines()


def records(lines: list[str], kind: str) -> list[list[int]]:
    """The .prv body records of one kind, as integer fields after the kind."""
    return [[int(x) for x in line.split(":")[1:]] for line in lines[1:] if line.startswith(kind + ":")]


def row_labels(prv: Path, level: str = "THREAD") -> list[str]:
    lines = prv.with_suffix(".row").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"LEVEL {level} SIZE"))
    return lines[at + 1:at + 1 + int(lines[at].split()[-1])]


def test_ping_pong_timeline(tmp_path):
    """Latency L = 1000 ns (paid on the CPU before every send and receive: Dimemas' state 26),
    800 bytes at one byte per ns, a node per rank (rank 0 on CPU 1, rank 1 on CPU 2).
    Rank 1: receive reached at 0, latency 0-1000, waits for the message from 1000.
    Rank 0: runs 0-5000; send reached at 5000 (logical send), latency 5000-6000, the transfer
    starts at 6000 (physical send) and arrives at 6800; its receive reached at 6000, latency
    6000-7000, waits from 7000. Rank 1 gets the message at 6800 (its logical receive is 0, when
    it posted the receive), runs 6800-9800, sends at 9800, latency until 10800, arrival 11600;
    rank 0 (logical receive 6000) runs 11600-13600, the makespan."""
    dim = write_dim(tmp_path / "pp.dim", "pp", [1, 1], PING_PONG)
    machine = tmp_path / "m.toml"
    machine.write_text(f"[cpu]\nnodes = 2\ncores_per_node = 1\n[network]\ninter_latency = 1e-6\n"
                       f"inter_bandwidth = {ONE_BYTE_PER_NS!r}\n")
    prv = tmp_path / "pp.prv"
    lines = replay_cli(dim, machine, prv)
    assert lines[0].split(":", 2)[2].startswith("13600_ns:2(1,1):1:2(1:1,1:2)")
    # cpu, appl, task, thread, logical send, physical send, rcpu, rappl, rtask, rthread, logical
    # receive, physical receive, size, tag
    assert records(lines, "3") == [[1, 1, 1, 1, 5000, 6000, 2, 1, 2, 1, 0, 6800, 800, 5],
                                   [2, 1, 2, 1, 9800, 10800, 1, 1, 1, 1, 6000, 11600, 800, 5]]
    states = sorted((r[2], r[4], r[5], r[6]) for r in records(lines, "1"))
    assert states == [(1, 0, 5000, 1), (1, 5000, 6000, 26), (1, 6000, 7000, 26), (1, 7000, 11600, 3),
                      (1, 11600, 13600, 1),
                      (2, 0, 1000, 26), (2, 1000, 6800, 3), (2, 6800, 9800, 1), (2, 9800, 10800, 26)]
    assert {(r[0], r[2]) for r in records(lines, "2")} == {(1, 1), (2, 2)}  # events on the rank's CPU, as Dimemas
    mpi = [(r[2], r[4], r[6]) for r in records(lines, "2") if r[5] == PTP]
    assert mpi == sorted(mpi, key=lambda e: e[1])  # in time order, file order kept within a time
    assert sorted(mpi) == [(1, 5000, 1), (1, 6000, 0), (1, 6000, 2), (1, 11600, 0),
                           (2, 0, 2), (2, 6800, 0), (2, 9800, 1), (2, 10800, 0)]
    assert row_labels(prv) == ["rank 0", "rank 1"]
    assert pcf_value_labels(prv.with_suffix(".pcf"), PTP)[1] == "MPI_Send"
    # The same in Chrome's JSON (microseconds): a process per rank, each call a slice from its
    # event to the next, each message an arrow from its logical send to its physical receive.
    chrome = json.loads(prv.with_suffix(".json").read_text())["traceEvents"]
    assert [(e["pid"], e["args"]["name"]) for e in chrome if e["name"] == "process_name"] == [(1, "rank 0"),
                                                                                              (2, "rank 1")]
    assert sorted((e["pid"], e["name"], e["ts"], e["dur"]) for e in chrome if e["ph"] == "X") == [
        (1, "MPI_Recv", 6.0, 5.6), (1, "MPI_Send", 5.0, 1.0), (2, "MPI_Recv", 0.0, 6.8), (2, "MPI_Send", 9.8, 1.0)]
    assert [(e["ph"], e["id"], e["pid"], e["ts"]) for e in chrome if e.get("cat") == "message"] == [
        ("s", 0, 1, 5.0), ("f", 0, 2, 6.8), ("s", 1, 2, 9.8), ("f", 1, 1, 11.6)]


@pytest.mark.fast
def test_sendrecv_is_one_call_between_its_events(tmp_path):
    """MPI_Sendrecv is two rows of mpi.csv, one call of the program: event 41 (Extrae's
    MPI_Sendrecv) before its immediate send, 0 after its receive."""
    ranks = [[call("MPI_Sendrecv", 1 - r, 7, 64, 10), call("MPI_Sendrecv", 1 - r, 7, 64, 10)] for r in range(2)]
    make_run(tmp_path, ranks)
    lines = (tmp_path / "authentic.dim").read_text().splitlines()
    at = lines.index(f"20:0:0:{PTP}:41")
    assert lines[at:at + 4] == [f"20:0:0:{PTP}:41", "2:0:0:1:64:7:0:2", "3:0:0:1:64:7:0:0", f"20:0:0:{PTP}:0"]


def test_collective_is_one_call_around_its_global_operation(tmp_path):
    """An MPI_Allreduce (Extrae's collective type 50000002, value 10) entered by rank 0 at 100 ns
    and by rank 1 at 300 ns, on an ideal network with a node per rank: both leave when the last
    enters, so rank 0 is in the call (and in Dimemas' state 13, Group Communication) from 100 to
    300 and rank 1 for no time; both then compute 50 ns (makespan 350)."""
    enter = [100, 300]
    make_run(tmp_path, [[call("MPI_Allreduce", -1, -1, 8, enter[r]), call("MPI_Finalize", at=enter[r] + 50)]
                        for r in range(2)])
    machine = tmp_path / "m.toml"
    machine.write_text("[cpu]\nnodes = 2\ncores_per_node = 1\n")
    prv = tmp_path / "ar.prv"
    lines = replay_cli(tmp_path / "authentic.dim", machine, prv)
    assert lines[0].split(":", 2)[2].startswith("350_ns:")
    assert sorted((e[2], e[4], e[6]) for e in records(lines, "2") if e[5] == 50000002) == [
        (1, 100, 10), (1, 300, 0), (2, 300, 0), (2, 300, 10)]
    assert sorted((r[2], r[4], r[5], r[6]) for r in records(lines, "1")) == [
        (1, 0, 100, 1), (1, 100, 300, 13), (1, 300, 350, 1), (2, 0, 300, 1), (2, 300, 350, 1)]
    assert pcf_value_labels(prv.with_suffix(".pcf"), 50000002)[10] == "MPI_Allreduce"


@pytest.mark.fast
def test_rows_of_task_parallel_traces(tmp_path):
    """One process: a row per thread, named by the one task type each ompss.dim thread runs;
    the authentic trace's only thread runs them all."""
    trace = make([("main", -1, 5), ("alpha", 0, 10), ("beta", 0, 20), ("main", -1, 1)], [(1, 3), (2, 3)])
    write_dim_traces(trace.dag, tmp_path, 1e9)
    ompss = replay(read_dim(tmp_path / "ompss.dim"), Machine(cores_per_node=2), record=True).paraver
    assert ompss.thread_labels == ["thread 0 main", "thread 1 alpha", "thread 2 beta", "thread 3 main"]
    # ompss.dim sets each thread's priority (event 6999), which Dimemas keeps out of its Paraver trace
    assert "20:0:0:6999:" in (tmp_path / "ompss.dim").read_text() and PRIORITY_EVENT not in ompss.events["type"]
    authentic = replay(read_dim(tmp_path / "authentic.dim"), Machine(), record=True).paraver
    assert authentic.thread_labels == ["thread 0"]
    # Two ranks of two threads (as an MPI/OmpSs trace has), types 1 and 2 unnamed (no .pcf).
    blocks = [f"1:{t}:{h}:0.0\n20:{t}:{h}:7003:{h + 1}\n1:{t}:{h}:0.000000010\n20:{t}:{h}:7003:0\n"
              for t in range(2) for h in range(2)]
    ranks = replay(read_dim(write_dim(tmp_path / "r.dim", "r", [2, 2], blocks)), Machine(nodes=2, cores_per_node=2),
                   record=True).paraver
    assert ranks.thread_labels == ["rank 0 thread 0 type 1", "rank 0 thread 1 type 2", "rank 1 thread 0 type 1",
                                   "rank 1 thread 1 type 2"]


@pytest.mark.parametrize("mpi", MPIS.values(), ids=MPIS.keys())
def test_jacobi_timeline_has_an_arrow_per_message(mpi_examples, tmp_path, mpi):
    """examples/jacobi with its defaults (96 x 96, 4 iterations) on 4 ranks: each iteration rank
    r sends its last row (96 doubles, 768 bytes) to r+1 with tag 1 and its first row to r-1 with
    tag 0, so 4 messages on each of the 6 directed neighbour links, 24 in all. On
    the bundled cluster.toml (a 16-core node per rank, 10 us latency, 100 MB/s) every
    message leaves its sender's node's first CPU at least 10 us after its MPI_Isend (the latency;
    more when the receiver's one input link is busy with the message from its other neighbour),
    takes 768 B / 100 MB/s = 7324.21875 ns, and is received logically at an MPI_Irecv of its
    receiver."""
    run = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "tareador", "mpirun", "-np", "4", "-o", str(run), "--",
                        str(mpi_examples(mpi) / "jacobi")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    prv = tmp_path / "j.prv"
    lines = replay_cli(run / "authentic.dim", BUNDLED / "cluster.toml", prv)
    comms = records(lines, "3")
    assert len(comms) == 24
    assert Counter((c[2] - 1, c[8] - 1, c[13]) for c in comms) == Counter(
        {**{(k, k + 1, 1): 4 for k in range(3)}, **{(k + 1, k, 0): 4 for k in range(3)}})
    assert {c[12] for c in comms} == {768}
    assert all(c[0] == 16 * (c[2] - 1) + 1 and c[6] == 16 * (c[8] - 1) + 1 for c in comms)
    assert all(c[5] - c[4] >= 10000 for c in comms)
    assert all(abs(c[11] - c[5] - 768e9 / (100 * MB)) <= 0.5 for c in comms)
    assert {(e[0], e[2]) for e in records(lines, "2")} == {(16 * k + 1, k + 1) for k in range(4)}  # its node's CPU 1
    events = Counter((e[2] - 1, e[4], e[6]) for e in records(lines, "2") if e[5] == PTP)
    assert all(events[c[2] - 1, c[4], 3] for c in comms)  # an MPI_Isend of the sender at the logical send
    assert all(events[c[8] - 1, c[10], 4] for c in comms)  # an MPI_Irecv of the receiver at the logical receive
    per_rank = Counter((rank, value) for (rank, _t, value), n in events.items() for _ in range(n) if value)
    sends = [1, 2, 2, 1]  # neighbours of each rank
    assert per_rank == Counter({**{(k, 3): 4 * sends[k] for k in range(4)}, **{(k, 4): 4 * sends[k] for k in range(4)},
                                **{(k, 6): 4 for k in range(4)}})
    assert row_labels(prv) == row_labels(prv, "TASK") == ["rank 0", "rank 1", "rank 2", "rank 3"]
    chrome = json.loads(prv.with_suffix(".json").read_text())["traceEvents"]
    arrows = [(e["ph"], e["pid"]) for e in chrome if e.get("cat") == "message"]
    assert Counter(arrows) == Counter({**{("s", k + 1): 4 * sends[k] for k in range(4)},
                                       **{("f", k + 1): 4 * sends[k] for k in range(4)}})
