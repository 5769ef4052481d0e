"""ompss.dim of an MPI run (the MPI/OmpSs artificial trace, tareador/synthesis/mpi_ompss.py) from
hand-written rank directories: its threads and records, and its replays on an ideal network
(latency 0, bandwidth 0 = instantaneous), one instruction a nanosecond, derived by hand; the
per-rank work in a process pool gives the same files as serially; `tareador simulate RUN_DIR`."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest

from tareador.analyses.postprocess import postprocess
from tareador.formats.dimemas import DEPENDENCY_COMM, read_dim
from tareador.simulation.dimemas_engine import replay
from tareador.simulation.machine import Machine
from tareador.taskgraph.model import Fragment
from tareador.workers import rank_pool
from tests.helpers import RUN_FILES, call, make_run, mpi_records, rank_dir

NS = 1e-9  # one instruction, at the traces' 10^9 instructions per second


def fragment(id, name, parent, start, end, instance=None):
    return Fragment(id, name, id if instance is None else instance, parent, start, end, end - start)


def send_then_consume(root):
    """Rank 0: main (0..10) creates A (100 instructions, writes the send buffer), main (10) creates
    B (300, independent), main (10) sends the buffer at its 5th instruction. Rank 1: main receives
    at its 5th instruction, creates C (50, reads the received buffer), main ends with 5 more.

    Counters: rank 0 m0 [0,10] A [10,110] m2 [110,120] B [120,420] m4 [420,430], send at 425;
    rank 1 m0 [0,10] (receive at 5) C [10,60] m2 [60,65]. RAW: A -> m4 (the send reads A's buffer),
    m0 -> C on rank 1 (C reads what the receive wrote)."""
    tasks = [[fragment(0, "main", -1, 0, 10), fragment(1, "A", 0, 10, 110), fragment(2, "main", -1, 110, 120, 0),
              fragment(3, "B", 2, 120, 420), fragment(4, "main", -1, 420, 430, 0)],
             [fragment(0, "main", -1, 0, 10), fragment(1, "C", 0, 10, 60), fragment(2, "main", -1, 60, 65, 0)]]
    return make_run(root, [[call("MPI_Send", 1, 0, 8, 425, task=4)], [call("MPI_Recv", 0, 0, 8, 5, task=0)]],
                    tasks=tasks, deps=[[(1, 4)], [(0, 1)]])


def ompss_makespan(root, cores_per_rank, policy="cp"):
    trace = read_dim(root / "ompss.dim")
    return replay(trace, Machine(nodes=len(trace.threads), cores_per_node=cores_per_rank, policy=policy)).makespan


def authentic_makespan(root):
    trace = read_dim(root / "authentic.dim")
    return replay(trace, Machine(nodes=len(trace.threads))).makespan


@pytest.mark.fast
def test_threads_and_records(tmp_path):
    """Rank 0: thread 0 is main's three fragments (10 + 10 + 5, the send, 5), A and B threads 1
    and 2; the dependency A -> m4 is a receive on thread 0 before m4 and a send at A's end, the
    creations m0 -> A and m2 -> B sends after m0 and m2. Priorities: m4 makes an MPI call, so it
    counts T1 + 1 = 431 more than its 10: 441; A 100 + 441 = 541 above B 300 (nothing after it);
    m2 10 + 441, m0 10 + 541 = 551, and thread 0 one more: 552. Task types: main 1, A 2, B 3."""
    send_then_consume(tmp_path)
    lines = (tmp_path / "ompss.dim").read_text().splitlines()
    assert lines[0].startswith('#DIMEMAS:"ompss":1,') and lines[0].endswith(":2(3,2),0")
    dep = f"1:8002:{DEPENDENCY_COMM}"
    assert lines[1:lines.index("1:0:1:0.000000000")] == [
        "1:0:0:0.000000000", "20:0:0:6999:552", "20:0:0:7003:1", "1:0:0:0.000000010", "20:0:0:7003:0",
        f"2:0:0:0:1:{dep}:2", "20:0:0:7003:1", "1:0:0:0.000000010", "20:0:0:7003:0", f"2:0:0:0:2:{dep}:2",
        "20:0:0:7003:1", f"3:0:0:0:1:{dep}:0", "1:0:0:0.000000005", "20:0:0:50000001:1", "2:0:0:1:8:0:0:0",
        "20:0:0:50000001:0", "1:0:0:0.000000005", "20:0:0:7003:0"]
    a = lines.index("1:0:1:0.000000000")
    assert lines[a:a + 7] == ["1:0:1:0.000000000", "20:0:1:6999:541", "20:0:1:7003:2", f"3:0:1:0:0:{dep}:0",
                              "1:0:1:0.000000100", "20:0:1:7003:0", f"2:0:1:0:0:{dep}:2"]
    assert "20:0:2:6999:300" in lines
    assert (tmp_path / "ompss.pcf").exists()


@pytest.mark.fast
def test_b_overlaps_the_send(tmp_path):
    """Authentic run: rank 0 sends at 425, rank 1 has received at 425 and computes 5 + 50 + 5:
    485 ns.

    1 core per rank (cp, thread 0 first, then the higher priority): rank 0's thread 0 runs m0
    (0..10) and m2 (10..20), then waits for A; A (541) goes before B (300): 20..120, notifies
    thread 0 and keeps the core for its closing empty burst, so that the core goes to the woken
    thread 0, not to B: thread 0 120..130 sends at 125; B 130..430. Rank 1: receives at 125,
    125..130, creates C; thread 0 ends m2 130..135; C 135..185. Makespan 430: B overlaps rank 1's work.
    2 cores per rank: A starts at 10 on the second core (done at 110), B at 20 when thread 0 waits
    for A (done at 320); thread 0 110..120 sends at 115; rank 1 ends C at 120 + 50 = 170: 320."""
    send_then_consume(tmp_path)
    assert authentic_makespan(tmp_path) == pytest.approx(485 * NS, abs=1e-13)
    assert ompss_makespan(tmp_path, 1) == pytest.approx(430 * NS, abs=1e-13)
    assert ompss_makespan(tmp_path, 2) == pytest.approx(320 * NS, abs=1e-13)


@pytest.mark.fast
def test_dependencies_take_no_time_on_a_network(tmp_path):
    """The same run, one rank per node, on a network whose intra-node messages are slow and
    whose inter-node ones are free: the dependencies between a rank's threads cost nothing (the
    thesis' instantaneous task synchronisation), so 2 cores per rank still take 320 ns. The MPI
    message goes between nodes: with an inter-node latency L it leaves rank 0 at 115 + L (the
    sender pays L on its core first); rank 1 paid its L when it posted the receive at 5, long
    before: it goes on at 115 + L, 5 more, then C: 115 + L + 55, which with L = 200 is 370."""
    send_then_consume(tmp_path)
    trace = read_dim(tmp_path / "ompss.dim")
    slow = Machine(nodes=2, cores_per_node=2, policy="cp", intra_latency=1e-3, intra_bandwidth=1.0,
                   intra_in_links=1, intra_out_links=1, intra_buses=1)
    assert replay(trace, slow).makespan == pytest.approx(320 * NS, abs=1e-13)
    assert replay(trace, replace(slow, inter_latency=200 * NS)).makespan == pytest.approx(370 * NS, abs=1e-13)


@pytest.mark.fast
def test_mpi_calls_keep_their_order_across_tasks(tmp_path):
    """Rank 0: main (10) creates S1 (100, sends tag 0 at its 50th instruction), main (10) creates
    S2 (50, sends tag 1 at its 20th), main ends (10); no data between S1 and S2. Rank 1 receives
    tag 0 at 5 and tag 1 at 7 in one main fragment of 10.

    With 2 cores per rank S2 could start at 20, but its send comes after S1's in the rank, so
    S2 waits for S1: S1 10..110 (sends at 60), S2 110..160 (sends at 130); rank 1: 0..5, tag 0 at
    60, 60..62, tag 1 at 130, 130..133. Makespan 160 (110 without the order)."""
    tasks = [[fragment(0, "main", -1, 0, 10), fragment(1, "S1", 0, 10, 110), fragment(2, "main", -1, 110, 120, 0),
              fragment(3, "S2", 2, 120, 170), fragment(4, "main", -1, 170, 180, 0)], None]
    make_run(tmp_path, [[call("MPI_Send", 1, 0, 8, 60, task=1), call("MPI_Send", 1, 1, 8, 140, task=3)],
                        [call("MPI_Recv", 0, 0, 8, 5), call("MPI_Recv", 0, 1, 8, 7, completed=7)]], tasks=tasks)
    lines = (tmp_path / "ompss.dim").read_text().splitlines()
    s1, s2 = lines.index("1:0:1:0.000000000"), lines.index("1:0:2:0.000000000")
    dep = f"1:8002:{DEPENDENCY_COMM}"
    assert lines[s1 + 3:s2] == [f"3:0:1:0:0:{dep}:0", "1:0:1:0.000000050", "20:0:1:50000001:1", "2:0:1:1:8:0:0:0",
                                "20:0:1:50000001:0", "1:0:1:0.000000050", "20:0:1:7003:0", f"2:0:1:0:2:{dep}:2"]
    assert f"3:0:2:0:1:{dep}:0" in lines[s2:]
    assert ompss_makespan(tmp_path, 2) == pytest.approx(160 * NS, abs=1e-13)


@pytest.mark.fast
@pytest.mark.parametrize("collectives, allreduce", [("dimemas", 3), ("p2p", 8)])
def test_every_mpi_message_of_authentic_is_in_ompss(tmp_path, collectives, allreduce):
    """Ring of MPI_Sendrecv (made by a task), an Irecv/Isend/Waitall and an Allreduce (made by
    main) on 3 ranks: ompss.dim has exactly authentic.dim's MPI records. Per rank the point-to-
    point calls are 5 records (Sendrecv: an immediate send and a receive; Irecv, Isend, the wait
    of the Irecv); the Allreduce is one global operation record per rank, or by recursive
    doubling over 3 ranks 8 (rank 0 sends to 1, ranks 1 and 2 exchange, rank 1 sends back to 0:
    4 messages, a send and a receive each)."""
    tasks = [[fragment(0, "main", -1, 0, 10), fragment(1, "T", 0, 10, 40), fragment(2, "main", -1, 40, 90, 0)]
             for _ in range(3)]
    ranks = [[call("MPI_Sendrecv", (r + 1) % 3, 7, 16, 20, task=1),
              call("MPI_Sendrecv", (r - 1) % 3, 7, 16, 20, task=1),
              call("MPI_Irecv", (r - 1) % 3, 2, 8, 45, completed=60, request="0", task=2),
              call("MPI_Isend", (r + 1) % 3, 2, 8, 50, completed=60, request="1", task=2),
              call("MPI_Waitall", at=60, request="0;1", task=2), call("MPI_Allreduce", size=8, at=70, task=2),
              call("MPI_Finalize", at=90, task=-1)] for r in range(3)]
    make_run(tmp_path, ranks, collectives, tasks=tasks)
    authentic = mpi_records(tmp_path / "authentic.dim")
    assert sum(authentic.values()) == 3 * 5 + allreduce
    assert mpi_records(tmp_path / "ompss.dim") == authentic
    assert ompss_makespan(tmp_path, 2) > 0


@pytest.mark.fast
def test_pool_gives_the_serial_files(tmp_path):
    """Byte for byte: the per-rank work in a process pool of 2, and in this process."""
    for d in ("serial", "pool"):
        send_then_consume(tmp_path / d)
    with rank_pool(2) as starmap:
        postprocess(tmp_path / "pool", starmap=starmap)
    for name in RUN_FILES:
        assert (tmp_path / "pool" / name).read_bytes() == (tmp_path / "serial" / name).read_bytes(), name


@pytest.mark.fast
def test_pool_workers_leave_signals_to_the_parent():
    """A worker raising Ctrl-C or SIGTERM as KeyboardInterrupt while it wrote its result hung
    postprocess --jobs 2 on SIGTERM; the workers ignore them and the parent stops the pool."""
    import signal

    with rank_pool(2) as starmap:
        handlers = starmap(signal.getsignal, [(signal.SIGINT,), (signal.SIGTERM,)])
    assert handlers == [signal.SIG_IGN, signal.SIG_IGN]


@pytest.mark.fast
def test_postprocess_runs_in_one_process_unless_the_ranks_files_are_large(tmp_path):
    """A pool of 2 made a 4-rank Jacobi's postprocess 8.8 s against 5.0 s (pickled tables cost
    what reading them does): the default is this process alone below 64 MB of rank files, then as
    many workers as ranks and CPUs allow."""
    import os

    from tareador.analyses.postprocess import run_work
    from tareador.workers import POOL_MIN_BYTES, default_jobs

    send_then_consume(tmp_path)
    ranks, size = run_work(tmp_path)
    assert ranks == 2 and size == sum(f.stat().st_size for d in ("rank-0", "rank-1") for f in (tmp_path / d).iterdir()
                                         if f.is_file())
    assert default_jobs(ranks, size) == 1
    cpus = len(os.sched_getaffinity(0))
    assert default_jobs(4, POOL_MIN_BYTES) == min(4, cpus) if cpus > 1 else 1
    assert default_jobs(1, 10 * POOL_MIN_BYTES) == default_jobs(4, POOL_MIN_BYTES - 1) == 1


def tareador_cli(*args):
    return subprocess.run([sys.executable, "-m", "tareador", *map(str, args)], capture_output=True, text=True,
                          timeout=60)


def simulate(*args):
    return tareador_cli("simulate", *args)


def test_simulate_run_dir(tmp_path):
    """The sweep of cores per rank on the ideal network (no --machine: one rank per node): the
    authentic run 485 ns, 1 core per rank 430, 2 cores 320 (test_b_overlaps_the_send), inf (as
    many cores as threads: rank 0's 3) as 2 here."""
    send_then_consume(tmp_path)
    r = simulate(tmp_path, "--cores", "1,2,inf", "--json", "--csv", "-o", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert set(result) == {"ranks", "ranks_per_node", "policy", "authentic", "results"}
    assert (result["ranks"], result["ranks_per_node"], result["policy"]) == (2, 1, "cp")
    assert result["authentic"] == pytest.approx(485 * NS, abs=1e-13)
    assert [(x["cores_per_rank"], x["cores_per_node"]) for x in result["results"]] == [(1, 1), (2, 2), ("inf", 3)]
    assert [x["time"] for x in result["results"]] == pytest.approx([430 * NS, 320 * NS, 320 * NS], abs=1e-13)
    assert [x["speedup"] for x in result["results"]] == pytest.approx([485 / 430, 485 / 320, 485 / 320])
    assert [x["efficiency"] for x in result["results"]] == pytest.approx([485 / 430, 485 / 640, None])
    assert (tmp_path / "out" / "speedup.csv").read_text().splitlines()[0] == \
        "cores_per_rank,cores_per_node,time,speedup,efficiency"
    r = simulate(tmp_path, "--cores", "1", "--prv", "-o", tmp_path / "prv")
    assert r.returncode == 0
    assert r.stdout.splitlines()[-1].endswith("simulation-1.prv simulation-1.pcf simulation-1.row")
    # ends at 430 ns, 2 nodes of 1 core, rank 0's 3 threads on node 1, rank 1's 2 on node 2
    header = (tmp_path / "prv" / "simulation-1.prv").read_text().splitlines()[0]
    assert header.endswith(":430_ns:2(1,1):1:2(3:1,2:2),0")


def test_simulate_run_dir_refusals(tmp_path):
    send_then_consume(tmp_path)
    (tmp_path / "ompss.dim").unlink()
    r = simulate(tmp_path)
    assert (r.returncode, r.stderr) == (2, f"tareador: {tmp_path} has no ompss.dim: run 'tareador postprocess "
                                           f"{tmp_path}' first\n")
    postprocess(tmp_path)
    r = simulate(tmp_path, "--machine", tmp_path / "one.toml")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
    (tmp_path / "one.toml").write_text("[cpu]\nnodes = 1\ncores_per_node = 4\ntasks_per_node = 1\n")
    r = simulate(tmp_path, "--machine", tmp_path / "one.toml")
    assert (r.returncode, r.stderr) == (2, "tareador: 2 ranks at 1 per node need 2 nodes; the machine has 1: give it "
                                           "more nodes, or more ranks per node (--ranks-per-node 2, or tasks_per_node "
                                           "in the machine file)\n")
    assert simulate(tmp_path, "--machine", tmp_path / "one.toml", "--ranks-per-node", "2").returncode == 0
    r = tareador_cli("postprocess", tmp_path, "--jobs", "0")
    assert (r.returncode, r.stderr) == (2, "tareador: --jobs must be at least 1, not 0\n")
    r = simulate(tmp_path, "--overhead", "5")
    assert r.returncode == 2 and r.stderr.startswith("tareador: --overhead does not apply to an MPI run")
    calls = tmp_path / "rank-0" / "mpi.csv"
    calls.write_text(calls.read_text().replace("MPI_Send,1,0,0,8,", "MPI_Send,1,0,0,16,"))  # traced again since
    r = simulate(tmp_path)
    assert (r.returncode, r.stderr) == (2, f"tareador: {tmp_path / 'mpi.csv'}:2: differs from what the ranks' own "
                                           "files give (a rank traced again since?); run 'tareador postprocess "
                                           f"{tmp_path}'\n")


@pytest.mark.fast
def test_partial_run_replays(tmp_path):
    """Rank 1 of 3 wrote no trace: rank 0's send to it matched nothing and is left out (as in
    authentic.dim), rank 1 is an idle thread 0; rank 0 computes 20 and receives what rank 2
    sends at 30: 30 ns."""
    rank_dir(tmp_path, 0, 3, [call("MPI_Send", 1, 0, 8, 10), call("MPI_Recv", 2, 0, 8, 20)])
    rank_dir(tmp_path, 2, 3, [call("MPI_Send", 0, 0, 8, 30)])
    assert postprocess(tmp_path).summary["partial"]
    assert read_dim(tmp_path / "ompss.dim").threads == [1, 1, 1]
    assert mpi_records(tmp_path / "ompss.dim") == mpi_records(tmp_path / "authentic.dim")
    assert ompss_makespan(tmp_path, 1) == pytest.approx(30 * NS, abs=1e-13)
