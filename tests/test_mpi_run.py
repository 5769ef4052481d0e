"""MPI runs from hand-made rank directories (the files `tareador trace --mpi` writes, as
docs/reference/files.md describes them): matching, the run's files, validation, and authentic.dim replayed to makespans
derived by hand, on an ideal network and with latency and bandwidth."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict

import pytest

import tareador
from tareador.analyses.postprocess import postprocess
from tareador.errors import TraceDirError
from tareador.formats.dimemas import read_dim
from tareador.formats.paraver import pcf_value_labels
from tareador.simulation.dimemas_engine import replay
from tareador.simulation.machine import MB, Machine
from tareador.synthesis import collectives
from tareador.taskgraph.model import Communicator, Fragment, TaskTrace
from tareador.taskgraph.mpi import Message, MpiRun
from tests.helpers import call, make_run, rank_dir

IPS = 1e9  # instructions per second of authentic.dim: one instruction is one nanosecond


def makespan(run_dir, latency=0.0, bandwidth=0.0):
    """authentic.dim replayed with one CPU per rank (one rank per node)."""
    trace = read_dim(run_dir / "authentic.dim")
    machine = Machine(nodes=len(trace.threads), inter_latency=latency, inter_bandwidth=bandwidth)
    return replay(trace, machine).makespan


def ping_pong(a, b, c, size=8):
    """rank 0 computes a, sends to 1, receives its answer, computes c; rank 1 receives, computes
    b, answers."""
    return [[call("MPI_Send", 1, 0, size, a), call("MPI_Recv", 1, 0, size, a), call("MPI_Finalize", at=a + c)],
            [call("MPI_Recv", 0, 0, size, 0), call("MPI_Send", 0, 0, size, b)]]


@pytest.mark.fast
def test_ping_pong_messages_and_summary(tmp_path):
    run = make_run(tmp_path, ping_pong(1000, 3000, 500, size=64))
    assert run.messages == [Message(0, 0, 1, 0, 0, 64, 0, 0), Message(1, 1, 0, 0, 0, 64, 1, 1)]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert (summary["ranks"], summary["mpi"], summary["messages"], summary["bytes"]) == (2, "mpich", 2, 128)
    assert [(r["rank"], r["t1"], r["mpi_calls"]) for r in summary["per_rank"]] == [(0, 1500, 3), (1, 3000, 2)]
    assert summary["unmatched_sends"] == summary["unmatched_receives"] == [] and not summary["partial"]
    assert (tmp_path / "messages.csv").read_text().splitlines() == [
        "id,src,dst,tag,comm,bytes,send_seq,recv_seq", "0,0,1,0,0,64,0,0", "1,1,0,0,0,64,1,1"]
    assert len((tmp_path / "mpi.csv").read_text().splitlines()) == 1 + 5


@pytest.mark.fast
def test_ping_pong_replays_to_its_chain(tmp_path):
    """Ideal network: a + b + c. With latency L and bandwidth B each message costs the sender
    L on its CPU and size/B on the way, the receiver L when it posts the receive (rank 1 posts
    before the message comes, rank 0 too): a + b + c + 2L + 2 size/B."""
    a, b, c, size = 1000, 3000, 500, 1 << 20
    make_run(tmp_path, ping_pong(a, b, c, size))
    assert makespan(tmp_path) == pytest.approx((a + b + c) / IPS, abs=1e-12)
    latency, bandwidth = 1e-6, 1000.0
    transfer = size / (bandwidth * MB)
    assert makespan(tmp_path, latency, bandwidth) == pytest.approx((a + b + c) / IPS + 2 * latency + 2 * transfer,
                                                                   abs=1e-12)


@pytest.mark.fast
def test_authentic_dim_records(tmp_path):
    """Bursts between the calls in seconds, task-type events around the fragment, the sends and
    receives with the real peers, sizes and tags on communicator 0, each between the events of
    its MPI function (Extrae's: type 50000001, MPI_Send 1, MPI_Recv 2, 0 after the call), which
    the .pcf names; MPI_Finalize is no record."""
    make_run(tmp_path, ping_pong(1000, 3000, 500, size=64))
    lines = (tmp_path / "authentic.dim").read_text().splitlines()
    assert lines[0].startswith('#DIMEMAS:"authentic":1,') and lines[0].endswith(":2(1,1),0")
    send, recv, out = "50000001:1", "50000001:2", "50000001:0"
    assert lines[1:-2] == [
        "1:0:0:0.000000000", "20:0:0:7003:1", "1:0:0:0.000001000", f"20:0:0:{send}", "2:0:0:1:64:0:0:0",
        f"20:0:0:{out}", f"20:0:0:{recv}", "3:0:0:1:64:0:0:0", f"20:0:0:{out}", "1:0:0:0.000000500", "20:0:0:7003:0",
        "1:1:0:0.000000000", "20:1:0:7003:1", f"20:1:0:{recv}", "3:1:0:0:64:0:0:0", f"20:1:0:{out}",
        "1:1:0:0.000003000", f"20:1:0:{send}", "2:1:0:0:64:0:0:0", f"20:1:0:{out}", "20:1:0:7003:0"]
    labels = pcf_value_labels(tmp_path / "authentic.pcf", 50000001)
    assert (labels[0], labels[1], labels[2], labels[6]) == ("Outside MPI", "MPI_Send", "MPI_Recv", "MPI_Waitall")
    assert pcf_value_labels(tmp_path / "authentic.pcf", 50000002)[10] == "MPI_Allreduce"


@pytest.mark.fast
def test_ring_of_sendrecv(tmp_path):
    """Rank r computes w[r], MPI_Sendrecv to r+1 and from r-1, computes z[r]: an immediate send
    and a receive, so rank r goes on at max(w[r], w[r-1]); with latency L and bandwidth B at
    max(w[r] + 2L, w[r-1] + L + size/B), its send and its receive each costing L."""
    w, z, size = [100, 900, 400], [1000, 50, 300], 4096
    ranks = [[call("MPI_Sendrecv", (r + 1) % 3, 7, size, w[r]), call("MPI_Sendrecv", (r - 1) % 3, 7, size, w[r]),
              call("MPI_Finalize", at=w[r] + z[r])] for r in range(3)]
    run = make_run(tmp_path, ranks)
    assert sorted((m.src, m.dst, m.tag, m.send_seq, m.recv_seq) for m in run.messages) == [
        (0, 1, 7, 0, 1), (1, 2, 7, 0, 1), (2, 0, 7, 0, 1)]
    assert makespan(tmp_path) == pytest.approx(max(max(w[r], w[r - 1]) + z[r] for r in range(3)) / IPS, abs=1e-12)
    latency, bandwidth = 2e-6, 100.0
    transfer = size / (bandwidth * MB)
    expected = max(max(w[r] / IPS + 2 * latency, w[r - 1] / IPS + latency + transfer) + z[r] / IPS for r in range(3))
    assert makespan(tmp_path, latency, bandwidth) == pytest.approx(expected, abs=1e-12)
    assert "2:0:0:1:4096:7:0:2" in (tmp_path / "authentic.dim").read_text().splitlines()  # immediate


@pytest.mark.fast
def test_isend_irecv_waitall_exchange(tmp_path):
    """Each rank posts an Irecv and an Isend at x, computes until y, waits for both, computes
    until its end: the Wait returns at max(y, the other's x). Rank 1 waits for rank 0."""
    x, y, end = [400, 50], [500, 60], [600, 960]
    ranks = [[call("MPI_Irecv", 1 - r, 3, 80, x[r], completed=y[r], request="0"),
              call("MPI_Isend", 1 - r, 3, 80, x[r], completed=y[r], request="1"),
              call("MPI_Waitall", at=y[r], request="0;1"), call("MPI_Finalize", at=end[r])] for r in range(2)]
    run = make_run(tmp_path, ranks)
    assert [(m.src, m.dst, m.send_seq, m.recv_seq) for m in run.messages] == [(0, 1, 1, 0), (1, 0, 1, 0)]
    dim = (tmp_path / "authentic.dim").read_text().splitlines()
    at = dim.index("3:1:0:0:80:3:0:1")
    assert dim[at - 1:at + 10] == ["20:1:0:50000001:4", "3:1:0:0:80:3:0:1", "20:1:0:50000001:0", "20:1:0:50000001:3",
                                   "2:1:0:0:80:3:0:2", "20:1:0:50000001:0", "1:1:0:0.000000010", "20:1:0:50000001:6",
                                   "3:1:0:0:80:3:0:2", "20:1:0:50000001:0", "1:1:0:0.000000900"]
    assert makespan(tmp_path) == pytest.approx(max(max(y[r], x[1 - r]) + end[r] - y[r] for r in range(2)) / IPS,
                                               abs=1e-12)
    assert makespan(tmp_path) == pytest.approx(1300e-9, abs=1e-12)


@pytest.mark.fast
def test_rooted_collective_as_a_binomial_tree(tmp_path):
    """MPI_Bcast from rank 1 over 4 ranks: relative ranks v = r - 1 mod 4; the root sends to
    v=2 (rank 3) and v=1 (rank 2), rank 3 passes it to v=3 (rank 0). Each rank enters at e[r]
    and computes z[r] after: rank 1 leaves at e1, ranks 2 and 3 at max(e, e1), rank 0 at
    max(e0, e3, e1)."""
    e, z = [10, 500, 20, 700], [1000, 100, 100, 100]
    ranks = [[call("MPI_Bcast", 1, -1, 32, e[r]), call("MPI_Finalize", at=e[r] + z[r])] for r in range(4)]
    run = make_run(tmp_path, ranks, collectives="p2p")
    assert run.messages == [] and len(run.matching.collectives) == 1
    dim = (tmp_path / "authentic.dim").read_text().splitlines()
    # collective traffic on communicator 0 + the run's 5 communicators (world and 4 selves), tag 0
    assert [line for line in dim if line.startswith(("2:", "3:"))] == [
        "3:0:0:3:32:0:5:0", "2:1:0:3:32:0:5:0", "2:1:0:2:32:0:5:0", "3:2:0:1:32:0:5:0", "3:3:0:1:32:0:5:0",
        "2:3:0:0:32:0:5:0"]
    leave = [max(e[0], e[3], e[1]), e[1], max(e[2], e[1]), max(e[3], e[1])]
    assert makespan(tmp_path) == pytest.approx(max(leave[r] + z[r] for r in range(4)) / IPS, abs=1e-12)


@pytest.mark.fast
def test_collective_as_a_global_operation(tmp_path):
    """The same Bcast by default: one record 10 per rank (id 1, Dimemas communicator 1 = the
    run's world, defined by a d:1: line; root field 1 on rank 1's record, which sends 32 bytes,
    the others receive them). With inter-node latency 1e-5 s and 100 MB/s (one rank per node) it
    starts when rank 3 enters (700 ns) and takes the root's fans: intra-node nothing, inter-node
    (10^4 + 32 x 10^9 / 2^20 / 100) + (10^4 + 0) = 20305.17578125 ns; rank 0 then computes
    1000 ns, the longest."""
    e, z = [10, 500, 20, 700], [1000, 100, 100, 100]
    make_run(tmp_path, [[call("MPI_Bcast", 1, -1, 32, e[r]), call("MPI_Finalize", at=e[r] + z[r])] for r in range(4)])
    dim = (tmp_path / "authentic.dim").read_text().splitlines()
    assert dim[0].endswith(":4(1,1,1,1),1") and dim[1] == "d:1:1:4:0:1:2:3"
    assert [line for line in dim if line.startswith("10:")] == [
        "10:0:0:1:1:0:0:0:32:1", "10:1:0:1:1:1:0:32:0:1", "10:2:0:1:1:0:0:0:32:1", "10:3:0:1:1:0:0:0:32:1"]
    assert not [line for line in dim if line.startswith(("2:", "3:"))]
    assert makespan(tmp_path, 1e-5, 100.0) == pytest.approx((700 + 20305.17578125 + 1000) / IPS, abs=1e-15)


@pytest.mark.fast
def test_global_operation_sizes_fit_a_c_int(tmp_path):
    """Dimemas times a global operation's sizes as C ints: a 3 GiB Allreduce is written with
    2^31 - 1 bytes each way, and the trace replays."""
    make_run(tmp_path, [[call("MPI_Allreduce", size=3 << 30, at=10)] for _ in range(2)])
    dim = (tmp_path / "authentic.dim").read_text().splitlines()
    assert [line for line in dim if line.startswith("10:")] == [f"10:{r}:0:11:1:0:0:2147483647:2147483647:1"
                                                                 for r in (0, 1)]
    assert makespan(tmp_path) == 10 / IPS


@pytest.mark.fast
@pytest.mark.parametrize("ranks", [2, 3, 5])
def test_allreduce_by_recursive_doubling_leaves_when_the_last_enters(tmp_path, ranks):
    """However the ranks fold in (3 and 5 are not powers of two), no rank leaves an Allreduce
    before every rank entered it, and on an ideal network all leave right then."""
    e = [100 * (r * 7 % ranks) + 10 for r in range(ranks)]
    z = [50 * (r + 1) for r in range(ranks)]
    make_run(tmp_path, [[call("MPI_Allreduce", size=8, at=e[r]), call("MPI_Finalize", at=e[r] + z[r])]
                        for r in range(ranks)], collectives="p2p")
    assert makespan(tmp_path) == pytest.approx((max(e) + max(z)) / IPS, abs=1e-12)


@pytest.mark.fast
def test_split_communicators_are_told_apart(tmp_path):
    """MPI_Comm_split into even and odd ranks: communicator 2 on every rank, two communicators.
    Each half's Allreduce is one operation, and messages with the same tag on the two halves
    do not cross."""
    comms = [[Communicator(0, 4, "0;1;2;3"), Communicator(1, 1, str(r)), Communicator(2, 2, ("0;2", "1;3")[r % 2])]
             for r in range(4)]
    ranks = [[call("MPI_Comm_split", at=0, comm=0), call("MPI_Allreduce", size=8, at=10, comm=2),
              call("MPI_Send" if r < 2 else "MPI_Recv", (r + 2) % 4, 0, 8, 20, comm=2)] for r in range(4)]
    run = make_run(tmp_path, ranks, comms=comms)
    assert [(c.comm, c.members) for c in run.matching.collectives] == [(2, (0, 2)), (4, (1, 3))]
    assert [(m.src, m.dst) for m in run.messages] == [(0, 2), (1, 3)]
    # the two halves' Allreduces are global operations on Dimemas communicators 3 and 5
    dim = (tmp_path / "authentic.dim").read_text().splitlines()
    assert dim[1:3] == ["d:1:3:2:0:2", "d:1:5:2:1:3"]
    assert [line.split(":")[4] for line in dim if line.startswith("10:")] == ["3", "5", "3", "5"]
    assert run.summary["unmatched_collectives"] == [] and run.summary["warnings"] == []


@pytest.mark.fast
def test_unmatched_sends_receives_and_collectives_are_reported_not_dropped(tmp_path):
    """Rank 0 sends tag 5 twice, rank 1 receives it once and waits for a tag 6 nobody sends;
    rank 0 calls MPI_Barrier, rank 1 MPI_Bcast. The trace still replays without them."""
    ranks = [[call("MPI_Send", 1, 5, 8, 10), call("MPI_Send", 1, 5, 8, 20), call("MPI_Barrier", at=30)],
             [call("MPI_Recv", 0, 5, 8, 10), call("MPI_Recv", 0, 6, 8, 20), call("MPI_Bcast", 0, size=4, at=30)]]
    run = make_run(tmp_path, ranks)
    s = json.loads((tmp_path / "summary.json").read_text())
    assert [(c["rank"], c["seq"], c["call"], c["tag"]) for c in s["unmatched_sends"]] == [(0, 1, "MPI_Send", 5)]
    assert [(c["rank"], c["seq"], c["tag"]) for c in s["unmatched_receives"]] == [(1, 1, 6)]
    assert s["unmatched_collectives"] == [{"comm": 0, "index": 0, "members": [0, 1],
                                           "calls": ["MPI_Barrier", "MPI_Bcast"], "seqs": [2, 2]}]
    assert len(run.messages) == 1
    assert s["warnings"] == ["1 send matched nothing (summary.json lists it)",
                             "1 receive matched nothing (summary.json lists it)",
                             "1 collective call matched nothing (summary.json lists it)"]
    assert makespan(tmp_path) == pytest.approx(30e-9, abs=1e-12)


@pytest.mark.fast
def test_where_interrupted_ranks_stopped(tmp_path):
    """Rank 0 waits for a message nobody sent; rank 1's counter stood still in its last call (time
    inside MPI is not counted); rank 2 waits in MPI_Waitall for an Irecv nobody matched; rank 3
    computed after its last call."""
    ranks = [[call("MPI_Recv", 3, 0, 8, 10)], [call("MPI_Barrier", comm=1, at=7)],
             [call("MPI_Irecv", 3, 1, 8, 5, completed=-1, request="0"), call("MPI_Waitall", at=6, request="")],
             [call("MPI_Send", 2, 2, 8, 5)]]
    tasks = [[Fragment(0, "main", 0, -1, 0, 50, 50)]] * 3 + [[Fragment(0, "main", 0, -1, 0, 50, 50)]]
    tasks[1] = None
    run = make_run(tmp_path, ranks, tasks=tasks, summary=[{"partial": True, "ending": "was interrupted (Ctrl-C)"}] * 4)
    blocked = [r["blocked_in"] and (r["blocked_in"]["call"], r["blocked_in"]["kind"], r["blocked_in"]["peer"])
               for r in run.summary["per_rank"]]
    assert blocked == [("MPI_Recv", "receive", 3), ("MPI_Barrier", "collective", -1), ("MPI_Waitall", "completion", -1),
                       None]
    assert run.summary["partial"]


@pytest.mark.fast
def test_no_mpi_calls_is_a_warning(tmp_path):
    run = make_run(tmp_path, [[], [], []])
    assert run.summary["warnings"] == ["no rank made an MPI call: the 3 ranks are independent runs of the program"]


@pytest.mark.fast
def test_calls_outside_tasks_and_task_events(tmp_path):
    """Fragments main [0,100), work [100,400), main [400,450): a send made by 'work' at 250 lies
    inside its burst; a receive outside every fragment (task -1, after tareador_OFF) at 450."""
    tasks = [Fragment(0, "main", 0, -1, 0, 100, 100), Fragment(1, "work", 1, 0, 100, 400, 300),
             Fragment(2, "main", 0, -1, 400, 450, 50)]
    ranks = [[call("MPI_Send", 1, 1, 8, 250, task=1), call("MPI_Recv", 1, 2, 8, 450, task=-1)],
             [call("MPI_Recv", 0, 1, 8, 0), call("MPI_Send", 0, 2, 8, 0)]]
    make_run(tmp_path, ranks, tasks=[tasks, None])
    body = (tmp_path / "authentic.dim").read_text().splitlines()[1:]
    assert body[:16] == ["1:0:0:0.000000000", "20:0:0:7003:1", "1:0:0:0.000000100", "20:0:0:7003:0", "20:0:0:7003:2",
                         "1:0:0:0.000000150", "20:0:0:50000001:1", "2:0:0:1:8:1:0:0", "20:0:0:50000001:0",
                         "1:0:0:0.000000150", "20:0:0:7003:0", "20:0:0:7003:1", "1:0:0:0.000000050", "20:0:0:7003:0",
                         "20:0:0:50000001:2", "3:0:0:1:8:2:0:0"]
    assert makespan(tmp_path) == pytest.approx(450e-9, abs=1e-12)


@pytest.mark.fast
def test_load_returns_the_run(tmp_path):
    make_run(tmp_path, ping_pong(10, 20, 30))
    run = tareador.load(tmp_path)
    assert isinstance(run, MpiRun)
    assert [t.t1 for t in run.ranks] == [40, 20] and len(run.calls) == 5 and len(run.messages) == 2
    assert run.summary["messages"] == 2 and [c.call for c in run.calls_of(1)] == ["MPI_Recv", "MPI_Send"]
    assert isinstance(tareador.load(tmp_path / "rank-1"), TaskTrace)


@pytest.mark.fast
def test_stale_run_files_are_named(tmp_path):
    """A rank traced again after postprocess leaves the run's files stale."""
    make_run(tmp_path, ping_pong(10, 20, 30))
    rank_dir(tmp_path, 1, 2, [call("MPI_Recv", 0, 0, 8, 0), call("MPI_Send", 0, 1, 8, 20)])
    with pytest.raises(TraceDirError, match=r"mpi.csv:6: differs from what the ranks' own files give .*"
                                            r"run 'tareador postprocess"):
        tareador.load(tmp_path)


def test_single_trace_commands_refuse_a_run(tmp_path):
    make_run(tmp_path, ping_pong(10, 20, 30))
    for command in (["graph", str(tmp_path)], ["whatif", str(tmp_path)]):
        r = subprocess.run([sys.executable, "-m", "tareador", *command], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and r.stderr == f"tareador: {tmp_path} is an MPI run: give one rank's trace, " \
                                                 f"e.g. {tmp_path / 'rank-0'}\n"


CORRUPTIONS = {
    # rank 1's mpi.csv rows: what the message must say
    "seq": ([call("MPI_Recv", 0, 0, 8, 0), call("MPI_Send", 0, 0, 8, 20)], 1, "seq", 5,
            r"rank-1/mpi.csv:3: row of rank 1, seq 5 where rank 1, seq 1 belongs"),
    "task": ([call("MPI_Recv", 0, 0, 8, 0, task=4)], 0, None, None, r"rank-1/mpi.csv:2: MPI_Recv was made by task 4"),
    "peer": ([call("MPI_Recv", 2, 0, 8, 0)], 0, None, None, r"rank-1/mpi.csv:2: MPI_Recv: peer 2"),
    "comm": ([call("MPI_Recv", 0, 0, 8, 0, comm=3)], 0, None, None, r"communicator 3 .* communicators \[0, 1\]"),
    "backwards": ([call("MPI_Recv", 0, 0, 8, 9), call("MPI_Send", 0, 0, 8, 5)], 0, None, None,
                  r"rank-1/mpi.csv:3: MPI_Send posted at 5.*counter goes back"),
    "request": ([call("MPI_Wait", at=0, request="3")], 0, None, None,
                r"rank-1/mpi.csv:2: MPI_Wait completes request 3, which no earlier call started"),
    "twice": ([call("MPI_Irecv", 0, 0, 8, 0, request="0"), call("MPI_Wait", at=0, request="0"),
               call("MPI_Wait", at=0, request="0")], 0, None, None, r"mpi.csv:4: .*was completed before"),
    "sendrecv": ([call("MPI_Sendrecv", 0, 0, 8, 0)], 0, None, None,
                 r"rank-1/mpi.csv:2: MPI_Sendrecv is its send part, and its receive part must follow"),
}


@pytest.mark.fast
@pytest.mark.parametrize("case", CORRUPTIONS, ids=CORRUPTIONS)
def test_corrupt_rank_files_are_named_by_line(tmp_path, case):
    rows, index, column, value, message = CORRUPTIONS[case]
    rank_dir(tmp_path, 0, 2, [call("MPI_Send", 1, 0, 8, 0)])
    rank_dir(tmp_path, 1, 2, rows)
    if column:
        path = tmp_path / "rank-1" / "mpi.csv"
        lines = path.read_text().splitlines()
        cells = lines[index + 1].split(",")
        cells[lines[0].split(",").index(column)] = str(value)
        lines[index + 1] = ",".join(cells)
        path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceDirError, match=message):
        postprocess(tmp_path)


def test_postprocess_command(tmp_path):
    make_run(tmp_path, ping_pong(1000, 3000, 500))
    r = subprocess.run([sys.executable, "-m", "tareador", "postprocess", str(tmp_path)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:3] == ["ranks             2 (MPICH)", "messages          2, 16 bytes",
                                         "collectives       0"]
    assert r.stdout.splitlines()[-1] == f"run directory: {tmp_path}"
    r = subprocess.run([sys.executable, "-m", "tareador", "postprocess", str(tmp_path / "none")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("tareador: ") and len(r.stderr.splitlines()) == 1


@pytest.mark.fast
@pytest.mark.parametrize("operation", sorted(collectives.ALGORITHMS))
def test_every_collective_algorithm_pairs_its_messages_and_finishes(operation):
    """On 1 to 9 members, with any root, each member's steps are sends that go at once and
    receives that wait for their message: all of them finish, and every message is received by
    the member it was sent to, with the size it was sent with."""
    for p in range(1, 10):
        for root in range(p):
            steps = collectives.steps(operation, root, [60 * (i + 1) for i in range(p)])
            pc, sent, received = [0] * p, defaultdict(list), defaultdict(list)
            progress = True
            while progress:
                progress = False
                for me in range(p):
                    while pc[me] < len(steps[me]):
                        kind, peer, size = steps[me][pc[me]]
                        if kind == collectives.RECV:
                            if len(received[peer, me]) == len(sent[peer, me]):
                                break
                            received[peer, me].append(size)
                        else:
                            sent[me, peer].append(size)
                        pc[me] += 1
                        progress = True
            assert pc == [len(s) for s in steps], (operation, p, root)
            assert sent == received, (operation, p, root)
    assert collectives.steps("MPI_Scatter", 1, [0, 60, 0]) == [[(collectives.RECV, 1, 20)],
                                                                [(collectives.SEND, 0, 20), (collectives.SEND, 2, 20)],
                                                                [(collectives.RECV, 1, 20)]]
