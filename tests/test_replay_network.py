"""The network and scheduler costs of the machine model, as Dimemas 5.5.0 charges them: the
context switch, half-duplex links, links lent between inter-node transfers, the ranks-to-nodes
mapping; and `tareador replay --bandwidth/--latency` sweeps. Makespans derived by hand (each
test says how); the same traces give the same makespans in the real Dimemas (docs/reference/validation.md)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest

from tareador.cli import replay as replay_cli
from tareador.cli.main import main
from tareador.errors import MachineError
from tareador.formats.dimemas import read_dim, write_dim
from tareador.simulation.dimemas_engine import replay
from tareador.simulation.machine import Machine, parse_toml
from tareador.simulation.machine_files import BUNDLED, load_machine
from tareador.tracing.mpi_launch import MPICH
from tests.helpers import TWO_RANKS, cfg, require

MIB = 1 << 20
TWO_RANKS_CFG = BUNDLED / "two_ranks.cfg"
TWO_THREADS = ["1:0:0:0.0\n1:0:0:1.0\n", "1:0:1:0.0\n1:0:1:1.0\n"]  # Tareador's convention: an empty first burst
# two ranks send each other 1 MiB (immediate sends), then receive
EXCHANGE = [f"1:0:0:0.0\n2:0:0:1:{MIB}:1:0:2\n3:0:0:1:{MIB}:1:0:0\n",
            f"1:1:0:0.0\n2:1:0:0:{MIB}:1:0:2\n3:1:0:0:{MIB}:1:0:0\n"]


def dim(tmp_path, threads, blocks, name="t"):
    return read_dim(write_dim(tmp_path / f"{name}.dim", name, threads, blocks))


def scheduler_cfg(tmp_path, policy: str, switch: float, quantum: float | None = None) -> Machine:
    """1 node of 1 CPU whose Dimemas scheduler file names a context-switch cost."""
    (tmp_path / "sched.txt").write_text(f"Policy: {policy}\nContext switch cost (seconds): {switch}\n"
                                        "Busy wait (seconds):  0.0\n"
                                        + (f"Quantum (seconds):  {quantum}\n" if quantum else ""))
    (tmp_path / "m.cfg").write_text(cfg(1, 1, 0.0, 0.0, "sched.txt"))
    return load_machine(tmp_path / "m.cfg")


@pytest.mark.fast
def test_context_switch_every_time_a_thread_gets_the_cpu(tmp_path):
    """Two threads of 1 s on one CPU, 0.1 s switch: each gets the CPU for its empty first burst
    and again for its 1 s burst (the first goes to the queue's tail after its empty burst), so
    4 switches: 2 + 4 x 0.1 = 2.4 s (the issue's figure from Dimemas); 2.2 s without the
    empty bursts; 2.0 s with no switch cost."""
    machine = scheduler_cfg(tmp_path, "FIFO", 0.1)
    assert machine.context_switch == 0.1
    assert replay(dim(tmp_path, [2], TWO_THREADS), machine).makespan == pytest.approx(2.4, abs=1e-12)
    bare = ["1:0:0:1.0\n", "1:0:1:1.0\n"]
    assert replay(dim(tmp_path, [2], bare, "bare"), machine).makespan == pytest.approx(2.2, abs=1e-12)
    assert replay(dim(tmp_path, [2], TWO_THREADS), scheduler_cfg(tmp_path, "FIFO", 0.0)).makespan == 2.0


@pytest.mark.fast
def test_context_switch_under_round_robin_starts_a_new_quantum(tmp_path):
    """One thread, a 1 s burst, quantum 0.3 s, switch 0.1 s: slices 0.3, 0.3, 0.3, 0.1, each after
    a switch: 1.0 + 4 x 0.1 = 1.4 s. A thread that keeps its turn after a non-blocking action
    (here an irecv after a 0.1 s burst) gets what is left of its quantum (0.2 s) without a
    switch; with one, the switch is a timer like any other in Dimemas and the 0.3 s burst after
    it runs whole: switch + empty burst, switch + 0.1, switch + 0.3 = 0.7 s (not 0.8 s)."""
    machine = scheduler_cfg(tmp_path, "RR", 0.1, 0.3)
    assert replay(dim(tmp_path, [1], ["1:0:0:1.0\n"]), machine).makespan == pytest.approx(1.4, abs=1e-12)
    kept_turn = ["1:0:0:0.0\n1:0:0:0.1\n3:0:0:1:0:1:0:1\n1:0:0:0.3\n", "1:1:0:0.0\n2:1:0:0:0:1:0:2\n"]
    (tmp_path / "m.cfg").write_text(cfg(2, 1, 0.0, 0.0, "sched.txt"))
    r = replay(dim(tmp_path, [1, 1], kept_turn, "kept"), load_machine(tmp_path / "m.cfg"))
    assert r.task_end[0] == pytest.approx(0.7, abs=1e-12)


@pytest.mark.fast
def test_context_switch_in_toml_and_ss_mpi_cp(tmp_path):
    """TOML names it in [scheduler] and it costs under every policy; Dimemas' SS_MPI_CP reads
    nothing past the policy line of its scheduler file, so there the file's cost is 0 (2.0 s)."""
    toml = parse_toml('[scheduler]\npolicy = "cp"\ncontext_switch = 0.1\n', "m.toml")
    assert replay(dim(tmp_path, [2], TWO_THREADS), toml).makespan == pytest.approx(2.4, abs=1e-12)
    cp = scheduler_cfg(tmp_path, "SS_MPI_CP", 0.1)
    assert (cp.policy, cp.context_switch) == ("cp", 0.0)
    assert replay(dim(tmp_path, [2], TWO_THREADS), cp).makespan == 2.0
    with pytest.raises(MachineError, match="context_switch must be a finite number >= 0"):
        parse_toml("[scheduler]\ncontext_switch = -1\n", "m.toml")
    (tmp_path / "sched.txt").write_text("Policy: FIFO\nContext switch cost (seconds): soon\n")
    with pytest.raises(MachineError, match=r"sched.txt:2: context switch cost 'soon' is not a number"):
        load_machine(tmp_path / "m.cfg")


@pytest.mark.parametrize("links,expected", [((1, 1), 0.01), ((1, 0), 0.02), ((0, 1), 0.02), ((2, 0), 0.01),
                                            ((0, 0), 0.01)])
@pytest.mark.fast
def test_half_duplex_links_between_nodes(tmp_path, links, expected):
    """1 MiB each way at 100 MB/s, one rank per node: 0.01 s per transfer. With one in and one
    out link per node both go at once; with exactly one count 0 a node's max(in, out) links
    carry one message at a time in either direction: one link serialises them (0.02 s, the
    issue's figure from Dimemas), two do not; 0 and 0 is unlimited."""
    machine = Machine(nodes=2, inter_bandwidth=100.0, in_links=links[0], out_links=links[1])
    assert replay(dim(tmp_path, [1, 1], EXCHANGE), machine).makespan == pytest.approx(expected, abs=1e-12)


@pytest.mark.fast
@pytest.mark.parametrize("links,expected", [((1, 1), 0.01), ((0, 1), 0.02), ((1, 0), 0.02)])
def test_half_duplex_links_within_a_node(tmp_path, links, expected):
    """The same exchange between two ranks of one node (fields 9-10 of the .cfg's multi node
    information are these per-task links): the same answers."""
    machine = Machine(cores_per_node=2, tasks_per_node=2, intra_bandwidth=100.0, intra_in_links=links[0],
                      intra_out_links=links[1])
    assert replay(dim(tmp_path, [1, 1], EXCHANGE), machine).makespan == pytest.approx(expected, abs=1e-12)
    record = ('"multi node information" {0, 1, "", 2, 1.0, 0.0, 100.0, 0, %d, %d, 0.0, 1, 1, 0.0};;'
              % links)
    text = cfg(1, 2, 0.0, 0.0).replace('"1 TASKS_PER_NODE"', '"2 TASKS_PER_NODE"').splitlines()
    (tmp_path / "m.cfg").write_text("\n".join(record if "multi node" in line else line for line in text) + "\n")
    m = load_machine(tmp_path / "m.cfg")
    assert (m.intra_in_links, m.intra_out_links, m.in_links, m.out_links) == (*links, 1, 1)
    assert replay(dim(tmp_path, [1, 1], EXCHANGE), m).makespan == pytest.approx(expected, abs=1e-12)


@pytest.mark.fast
def test_within_a_half_duplex_node_a_message_to_a_lower_rank_takes_the_in_link_first(tmp_path):
    """4 ranks on one node, one half-duplex link per rank, 1 MB/s (1 MiB takes 1 s). X (1 to 0)
    runs 0-1 on ranks 1's and 0's links. At 0.5 Y (2 to 1) asks for rank 1's link first (a lower
    rank's in link), busy: it waits holding nothing. At 0.6 W (3 to 2) finds rank 2's link free
    and runs 0.6-1.6. At 1 Y gets rank 1's link and waits for rank 2's until 1.6: 1.6-2.6.
    (Taking its out link first, Y would have held rank 2's link from 0.5 and run 1-2, W 2-3.)"""
    blocks = [f"1:0:0:0.0\n3:0:0:1:{MIB}:1:0:0\n", f"1:1:0:0.0\n2:1:0:0:{MIB}:1:0:2\n3:1:0:2:{MIB}:2:0:0\n",
              f"1:2:0:0.5\n2:2:0:1:{MIB}:2:0:2\n3:2:0:3:{MIB}:3:0:0\n", f"1:3:0:0.6\n2:3:0:2:{MIB}:3:0:2\n"]
    machine = Machine(cores_per_node=4, tasks_per_node=4, intra_bandwidth=1.0, intra_in_links=1)
    assert replay(dim(tmp_path, [1, 1, 1, 1], blocks), machine).task_end == pytest.approx([1.0, 2.6, 1.6, 0.6],
                                                                                         abs=1e-12)


@pytest.mark.fast
def test_an_out_link_is_lent_to_a_transfer_that_can_go(tmp_path):
    """3 nodes, one rank each, one in and one out link per node, 1 MB/s (1 MiB takes 1 s).
    At 0 rank 1 sends X to rank 2 (node 2's in link busy until 1). At 0.5 rank 0 sends Y to
    rank 2: it takes node 0's out link and waits for node 2's in link; then Z to rank 1: node 0
    has no out link left, but node 1's in link is free, so Z borrows Y's (Dimemas' roba_out_link)
    and runs 0.5-1.5, and Y waits first for node 0's out link: 1.5-2.5. Rank 2 ends at 2.5
    (without lending, Y would run 1-2 and Z 2-3)."""
    blocks = [f"1:0:0:0.5\n2:0:0:2:{MIB}:1:0:2\n2:0:0:1:{MIB}:2:0:2\n",
              f"1:1:0:0.0\n2:1:0:2:{MIB}:3:0:2\n3:1:0:0:{MIB}:2:0:0\n",
              f"1:2:0:0.0\n3:2:0:1:{MIB}:3:0:0\n3:2:0:0:{MIB}:1:0:0\n"]
    machine = Machine(nodes=3, inter_bandwidth=1.0, in_links=1, out_links=1)
    assert replay(dim(tmp_path, [1, 1, 1], blocks), machine).task_end == pytest.approx([0.5, 1.5, 2.5], abs=1e-12)


def tareador(*args):
    return subprocess.run([sys.executable, "-m", "tareador", *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def test_ranks_per_node_and_too_few_nodes(tmp_path):
    """The worked two-rank trace (1 s, send 1 MiB, 0.5 s | receive, 1 s) on two_ranks.cfg (2
    nodes of 1 CPU, 100 MB/s, latency 1e-5): 2.01001 s. With both ranks on node 0 its one CPU
    runs all 2.5 s of work, and the message (within the node: no cost) is there before rank 1
    needs it: 2.5 s. Three ranks on 2 nodes at 1 per node: one line naming the fixes."""
    trace = write_dim(tmp_path / "two.dim", "two", [1, 1], TWO_RANKS)
    machine = TWO_RANKS_CFG
    assert json.loads(tareador("replay", trace, "--machine", machine, "--json").stdout)["makespan"] == 2.01001
    r = tareador("replay", trace, "--machine", machine, "--ranks-per-node", "2", "--json")
    assert json.loads(r.stdout)["makespan"] == 2.5
    three = write_dim(tmp_path / "three.dim", "three", [1, 1, 1], ["1:0:0:1.0\n", "1:1:0:1.0\n", "1:2:0:1.0\n"])
    r = tareador("replay", three, "--machine", machine)
    assert (r.returncode, r.stderr) == (2, "tareador: 3 ranks at 1 per node need 3 nodes but the machine has 2; give "
                                           "it more nodes or more ranks per node (tasks_per_node, --ranks-per-node "
                                           "2)\n")
    for bad in ("0", "two", "-1"):
        r = tareador("replay", trace, "--machine", machine, "--ranks-per-node", bad)
        assert r.returncode == 2 and r.stderr.startswith(f"tareador: --ranks-per-node: '{bad}' is not a number")


def test_sweep_table_csv_and_png(tmp_path):
    """The worked trace at bandwidth B and latency L: 1 s + L (the sender's) + 1 MiB / B + 1 s
    (the receiver posted at 0 and paid its L long before): 2.10001 s at 10 MB/s, 2.01001 at 100,
    and 2.011 at 100 MB/s with L = 1e-3. Rows bandwidth by latency; speedups over the first."""
    trace = write_dim(tmp_path / "two.dim", "two", [1, 1], TWO_RANKS)
    r = tareador("replay", trace, "--machine", TWO_RANKS_CFG, "--bandwidth", "10,100",
                 "--latency", "1e-5,1e-3", "-o", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    expected = [(10.0, 1e-5, 2.10001), (10.0, 1e-3, 2.101), (100.0, 1e-5, 2.01001), (100.0, 1e-3, 2.011)]
    rows = list(csv.DictReader((tmp_path / "out" / "two-sweep.csv").open()))
    assert [(float(x["bandwidth_mb_s"]), float(x["latency_s"])) for x in rows] == [e[:2] for e in expected]
    assert [float(x["time_s"]) for x in rows] == pytest.approx([e[2] for e in expected], abs=1e-12)
    assert [float(x["speedup"]) for x in rows] == pytest.approx([2.10001 / e[2] for e in expected], rel=1e-12)
    assert r.stdout.splitlines()[0].split() == ["bandwidth", "MB/s", "latency", "s", "time", "s", "speedup"]
    assert r.stdout.splitlines()[3].split() == ["100", "1e-05", "2.010010000", "1.045"]
    assert (tmp_path / "out" / "two-sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("option,value", [("--bandwidth", "10,,100"), ("--bandwidth", "0"), ("--latency", "-1e-5"),
                                          ("--latency", "fast"), ("--bandwidth", "inf")])
def test_sweep_refuses_what_is_not_a_positive_number(tmp_path, option, value):
    trace = write_dim(tmp_path / "two.dim", "two", [1, 1], TWO_RANKS)
    r = tareador("replay", trace, "--machine", TWO_RANKS_CFG, f"{option}={value}")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
    assert r.stderr.startswith(f"tareador: {option}: ") and "is not a positive number" in r.stderr


@pytest.fixture(scope="module")
def ring(mpi_examples, tmp_path_factory):
    """The ring example traced on 2 ranks under MPICH: one exchange of 512 bytes each way."""
    require(MPICH)
    out = tmp_path_factory.mktemp("ring") / "run"
    r = tareador("mpirun", "-np", 2, "-o", out, "--", mpi_examples(MPICH) / "ring", "64")
    assert r.returncode == 0, r.stderr
    return out


def test_real_ring_sweep_and_half_duplex(ring, tmp_path):
    """One rank per node, no latency: the two 512-byte messages go at once, and at a bandwidth
    that makes them last far longer than the ranks' microseconds of work the makespan is the
    work on the critical path plus one transfer: 512 B / 0.001 MB/s = 0.48828125 s, / 0.01 MB/s
    = 0.048828125 s, so the two times differ by exactly their difference. A half-duplex link
    per node serialises the two transfers: one more transfer time. All ranks on one node, no
    message crosses nodes: the sweep changes nothing, and says so."""
    trace = ring / "authentic.dim"
    (tmp_path / "m.toml").write_text("[cpu]\nnodes = 2\ncores_per_node = 2\n[network]\nin_links = 1\nout_links = 1\n")
    r = tareador("replay", trace, "--machine", tmp_path / "m.toml", "--bandwidth", "0.001,0.01", "--json",
                 "-o", tmp_path)
    slow, fast = json.loads(r.stdout)
    transfer = [512 / (b * MIB) for b in (0.001, 0.01)]
    assert slow["time"] - fast["time"] == pytest.approx(transfer[0] - transfer[1], abs=1e-9)
    assert fast["speedup"] == pytest.approx(slow["time"] / fast["time"], rel=1e-12)
    full = replay(read_dim(trace), Machine(nodes=2, inter_bandwidth=0.001, in_links=1, out_links=1)).makespan
    half = replay(read_dim(trace), Machine(nodes=2, inter_bandwidth=0.001, in_links=1, out_links=0)).makespan
    assert half - full == pytest.approx(transfer[0], abs=1e-9)
    r = tareador("replay", trace, "--machine", tmp_path / "m.toml", "--ranks-per-node", "2", "--bandwidth",
                 "0.001,0.01", "--json", "-o", tmp_path)
    one, other = json.loads(r.stdout)
    assert one["time"] == other["time"] and "no message of" in r.stderr and "crosses nodes" in r.stderr


def test_replay_json_is_what_json_dumps_writes(tmp_path, capsys, monkeypatch):
    """--json writes its thread ends a run at a time (a run of one here, so every separator is
    one between runs): the bytes must be json.dumps' of the whole result. Two ranks of 2 and 1
    threads on one 4-CPU node, each thread one burst, end at their bursts' lengths."""
    monkeypatch.setattr(replay_cli, "JSON_RUN", 1)
    trace = write_dim(tmp_path / "t.dim", "t", [2, 1], ["1:0:0:1.5\n", "1:0:1:0.25\n", "1:1:0:3e-7\n"])
    (tmp_path / "m.toml").write_text("[cpu]\ncores_per_node = 4\n")
    assert main(["replay", str(trace), "--machine", str(tmp_path / "m.toml"), "--ranks-per-node", "2",
                 "--json"]) == 0
    expected = {"makespan": 1.5, "tasks": [{"task": 0, "end": 1.5, "threads": [1.5, 0.25]},
                                           {"task": 1, "end": 3e-7, "threads": [3e-7]}]}
    assert capsys.readouterr().out == json.dumps(expected) + "\n"
