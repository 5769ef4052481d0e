"""Dimemas-model replay: the worked answers of real Dimemas, message semantics, machines."""

from __future__ import annotations

import pytest

from tareador.errors import DimError, MachineError
from tareador.formats.dimemas import read_dim
from tareador.simulation.dimemas_config import parse_cfg
from tareador.simulation.dimemas_engine import replay
from tareador.simulation.machine import Machine, parse_toml
from tareador.simulation.machine_files import BUNDLED, load_machine
from tareador.synthesis.ompss import write_dim_traces
from tests.helpers import THREE_THREADS, TWO_RANKS, cfg, dim, fork_join

pytestmark = pytest.mark.fast  # no program compiled, traced or launched (make test-fast)

NETWORK = Machine(nodes=2, inter_latency=1e-5, inter_bandwidth=100.0, in_links=1, out_links=1)


def test_two_ranks_worked_answer(tmp_path):
    (tmp_path / "m.cfg").write_text(cfg(2, 1, 100.0, 1e-5))
    r = replay(dim(tmp_path, [1, 1], TWO_RANKS), load_machine(tmp_path / "m.cfg"))
    assert r.makespan == 2.01001
    assert r.task_end == [1.50001, 2.01001]  # the sender paid the latency on its CPU


def two_cpus(tmp_path, policy: str, quantum: float | None = None) -> Machine:
    """1 node of 2 CPUs, no latency, instantaneous transfers, a Dimemas scheduler file."""
    sched = tmp_path / "sched.txt"
    sched.write_text(f"Policy: {policy}\nContext switch cost (seconds): 0.0\nBusy wait (seconds):  0.0\n"
                     + (f"Quantum (seconds):  {quantum}\n" if quantum else ""))
    (tmp_path / "m.cfg").write_text(cfg(1, 2, 0.0, 0.0, sched.name))
    return load_machine(tmp_path / "m.cfg")


@pytest.mark.parametrize("policy,quantum,expected", [("FIFO", None, 3.0), ("SS_MPI_CP", None, 3.0),
                                                     ("RR", 0.1, 2.5)])
def test_three_threads_on_two_cpus(tmp_path, policy, quantum, expected):
    r = replay(dim(tmp_path, [3], THREE_THREADS), two_cpus(tmp_path, policy, quantum))
    assert r.makespan == pytest.approx(expected, abs=1e-9)


# Dimemas' scheduling points, on 1 node of 2 CPUs: one thread of one task per Tareador task
# instance, as in ompss.dim. The expected makespans are what Dimemas 5.5.0 computes for these
# traces (the replay before it followed Dimemas' scheduling points computed 4.0 s for the FIFO
# late receive, FIFO handoff and SS_MPI_CP handoff2).
LATE_RECEIVE = [  # thread 2 posts its second receive after thread 1's send parked: the transfer
                  # starts then, thread 2 blocks and queues again at the tail behind thread 4
    "1:0:0:0.0\n20:0:0:7003:1\n1:0:0:1.0\n2:0:0:0:2:1:8002:0:2\n2:0:0:0:3:1:8002:0:2\n",
    "1:0:1:0.0\n20:0:1:7003:1\n1:0:1:0.5\n2:0:1:0:2:1:8002:0:2\n",
    "1:0:2:0.0\n20:0:2:7003:1\n3:0:2:0:0:1:8002:0:0\n3:0:2:0:1:1:8002:0:0\n1:0:2:3.0\n",
    "1:0:3:0.0\n20:0:3:7003:1\n3:0:3:0:0:1:8002:0:0\n1:0:3:1.0\n",
    "1:0:4:0.0\n20:0:4:7003:1\n1:0:4:1.5\n"]
HANDOFF = [  # at t=0 every thread's empty burst is a scheduling point: all of them set their
             # priority and post their receive before any real burst starts
    "1:0:0:0.0\n20:0:0:6999:4\n20:0:0:7003:1\n1:0:0:1.0\n2:0:0:0:2:1:8002:0:2\n",
    "1:0:1:0.0\n20:0:1:6999:2\n20:0:1:7003:1\n1:0:1:2.0\n",
    "1:0:2:0.0\n20:0:2:6999:3\n20:0:2:7003:1\n3:0:2:0:0:1:8002:0:0\n1:0:2:3.0\n",
    "1:0:3:0.0\n20:0:3:6999:1\n20:0:3:7003:1\n1:0:3:1.0\n"]
HANDOFF2 = [  # when a burst ends, its CPU goes to the head of the queue before the receivers its
              # sends wake (their deliveries are later events of the same time) are queued
    "1:0:0:0.0\n20:0:0:6999:3\n20:0:0:7003:1\n3:0:0:0:2:1:8002:0:0\n1:0:0:3.0\n",
    "1:0:1:0.0\n20:0:1:6999:1\n20:0:1:7003:1\n3:0:1:0:3:1:8002:0:0\n1:0:1:1.0\n",
    "1:0:2:0.0\n20:0:2:6999:4\n20:0:2:7003:1\n1:0:2:1.0\n2:0:2:0:0:1:8002:0:2\n",
    "1:0:3:0.0\n20:0:3:6999:2\n20:0:3:7003:1\n1:0:3:0.5\n2:0:3:0:1:1:8002:0:2\n1:0:3:1.5\n"]


@pytest.mark.parametrize("blocks,policy,expected", [
    (LATE_RECEIVE, "FIFO", 5.0), (LATE_RECEIVE, "SS_MPI_CP", 4.5), (HANDOFF, "FIFO", 5.0),
    (HANDOFF, "SS_MPI_CP", 5.0), (HANDOFF2, "FIFO", 5.0), (HANDOFF2, "SS_MPI_CP", 5.0)])
def test_dimemas_scheduling_points(tmp_path, blocks, policy, expected):
    r = replay(dim(tmp_path, [len(blocks)], blocks), two_cpus(tmp_path, policy))
    assert r.makespan == expected


def test_an_event_between_receive_and_burst_is_a_scheduling_point(tmp_path):
    """Why ompss.dim sets the task type before the receives: after a receive a thread keeps its
    turn only if its next action is a burst. With the 7003 event moved after the receive,
    Dimemas 5.5.0 computes 4.0 s for HANDOFF2 under SS_MPI_CP instead of 5.0 s."""
    moved = [b.replace("20:0:0:7003:1\n3:0:0:0:2:1:8002:0:0\n", "3:0:0:0:2:1:8002:0:0\n20:0:0:7003:1\n")
             .replace("20:0:1:7003:1\n3:0:1:0:3:1:8002:0:0\n", "3:0:1:0:3:1:8002:0:0\n20:0:1:7003:1\n")
             for b in HANDOFF2]
    assert moved != HANDOFF2
    assert replay(dim(tmp_path, [4], moved), two_cpus(tmp_path, "SS_MPI_CP")).makespan == 4.0


def test_messages_of_one_key_match_receives_as_they_arrive(tmp_path):
    """Dimemas matches by (sender, receiver, tag, communicator) when messages meet receives, not
    in send order (Dimemas 5.5.0 computes both makespans below; in send order they would be 6.0
    and 2.0 s). At 1 MB/s, 1 MB takes 1 s."""
    overtaken = ["1:0:0:0.0\n2:0:0:1:1048576:1:0:0\n2:0:0:1:0:1:0:0\n",
                 "1:1:0:0.0\n3:1:0:0:1048576:1:0:0\n1:1:0:5.0\n3:1:0:0:0:1:0:0\n"]
    machine = Machine(nodes=2, inter_bandwidth=1.0)
    assert replay(dim(tmp_path, [1, 1], overtaken), machine).task_end == [0.0, 5.0]  # the empty one came first
    # A rendezvous send goes as soon as a receive of its key waits, even one for an earlier message.
    rendezvous = ["1:0:0:0.0\n2:0:0:1:1048576:1:0:0\n2:0:0:1:8:1:0:1\n1:0:0:1.0\n",
                  "1:1:0:0.0\n3:1:0:0:1048576:1:0:0\n3:1:0:0:8:1:0:0\n"]
    assert replay(dim(tmp_path, [1, 1], rendezvous, "r"), machine).task_end == [1.0, 1.0]


def test_blocking_rendezvous_waits_for_the_receive(tmp_path):
    # Rank 0 sends at 0 with the rendezvous bit; rank 1 posts the receive at 2.0.
    blocks = ["2:0:0:1:8:1:0:1\n1:0:0:1.0\n", "1:1:0:2.0\n3:1:0:0:8:1:0:0\n1:1:0:1.0\n"]
    r = replay(dim(tmp_path, [1, 1], blocks), Machine(nodes=2))
    assert r.task_end == [3.0, 3.0]
    eager = ["2:0:0:1:8:1:0:0\n1:0:0:1.0\n", blocks[1]]
    assert replay(dim(tmp_path, [1, 1], eager, "e"), Machine(nodes=2)).task_end == [1.0, 3.0]


def test_late_receive_pays_the_latency(tmp_path):
    blocks = ["2:0:0:1:0:1:0:0\n", "1:1:0:2.0\n3:1:0:0:0:1:0:0\n"]
    r = replay(dim(tmp_path, [1, 1], blocks), Machine(nodes=2, inter_latency=0.25))
    assert r.task_end == [0.25, 2.25]


def test_irecv_and_wait(tmp_path):
    blocks = ["1:0:0:1.0\n2:0:0:1:1048576:5:0:0\n",
              "3:1:0:0:1048576:5:0:1\n1:1:0:0.5\n3:1:0:0:1048576:5:0:2\n1:1:0:0.25\n"]
    r = replay(dim(tmp_path, [1, 1], blocks), Machine(nodes=2, inter_bandwidth=1.0))
    assert r.task_end == [1.0, 2.25]  # data arrives at 1 + 1 s of transfer, then 0.25 s of work


def test_one_bus_serialises_transfers(tmp_path):
    blocks = ["2:0:0:2:1048576:1:0:0\n", "2:1:0:2:1048576:2:0:0\n",
              "3:2:0:0:1048576:1:0:0\n3:2:0:1:1048576:2:0:0\n"]
    free = Machine(nodes=3, inter_bandwidth=1.0)
    assert replay(dim(tmp_path, [1, 1, 1], blocks), free).makespan == 1.0
    assert replay(dim(tmp_path, [1, 1, 1], blocks), Machine(nodes=3, inter_bandwidth=1.0, buses=1)).makespan == 2.0
    assert replay(dim(tmp_path, [1, 1, 1], blocks), Machine(nodes=3, inter_bandwidth=1.0, in_links=1)).makespan == 2.0


def test_relative_speed_divides_bursts(tmp_path):
    assert replay(dim(tmp_path, [1], ["1:0:0:3.0\n"]), Machine(relative_speed=2.0)).makespan == 1.5


def test_unmatched_and_deadlocked_traces_name_the_line(tmp_path):
    with pytest.raises(DimError, match=r"t.dim:3: receive without a matching send"):
        replay(dim(tmp_path, [1, 1], ["1:0:0:1.0\n", "3:1:0:0:8:1:0:0\n"]), Machine(nodes=2))
    cross = ["3:0:0:1:8:1:0:0\n2:0:0:1:8:1:0:0\n", "3:1:0:0:8:1:0:0\n2:1:0:0:8:1:0:0\n"]
    with pytest.raises(DimError, match=r"d.dim:2: deadlock: 2 threads never finish"):
        replay(dim(tmp_path, [1, 1], cross, "d"), Machine(nodes=2))


def test_preempting_priorities_are_refused(tmp_path):
    blocks = ["1:0:0:0.0\n20:0:0:6999:0\n1:0:0:1.0\n", "1:0:1:1.0\n"]
    with pytest.raises(DimError, match=r"p.dim:3: priority \(event 6999\) 0: under SS_MPI_CP .* preempts"):
        replay(dim(tmp_path, [2], blocks, "p"), Machine(cores_per_node=2, policy="cp"))
    assert replay(dim(tmp_path, [2], blocks, "p"), Machine(cores_per_node=2)).makespan == 1.0  # FIFO reads none


def test_ompss_dim_replays_to_the_simulated_critical_path(tmp_path):
    trace = fork_join(width=5, work=1234)
    write_dim_traces(trace.dag, tmp_path, 1e9)
    ompss, authentic = read_dim(tmp_path / "ompss.dim"), read_dim(tmp_path / "authentic.dim")
    for policy in ("fifo", "cp"):
        assert replay(ompss, Machine(cores_per_node=64, policy=policy)).makespan == pytest.approx(trace.tinf / 1e9)
        assert replay(ompss, Machine(cores_per_node=2, policy=policy)).makespan == pytest.approx(3 * 1234e-9)
    assert replay(authentic, Machine()).makespan == pytest.approx(trace.t1 / 1e9)


def test_machine_files(tmp_path):
    m = parse_toml('[cpu]\nnodes = 2\ncores_per_node = 8\n[network]\ninter_latency = 1e-5\n'
                   'inter_bandwidth = 100\n[scheduler]\npolicy = "cp"\n')
    assert (m.nodes, m.cores_per_node, m.inter_latency, m.policy) == (2, 8, 1e-5, "cp")
    # The bundled machines: a Dimemas .cfg names its scheduler file relative to itself.
    machines = BUNDLED
    two = load_machine(machines / "two_ranks.cfg")
    # It names no scheduler: replay queues FIFO as Dimemas does, simulate keeps its own default.
    assert (two.nodes, two.cores_per_node, two.inter_latency, two.inter_bandwidth, two.policy) == (2, 1, 1e-5, 100.0,
                                                                                                   None)
    smp = load_machine(machines / "smp_cp.cfg")
    assert (smp.nodes, smp.cores_per_node, smp.policy) == (1, 16, "cp")
    laptop, cluster = load_machine(machines / "laptop.toml"), load_machine(machines / "cluster.toml")
    assert (laptop.cores_per_node, laptop.task_overhead, cluster.nodes * cluster.cores_per_node) == (8, 2000, 64)
    for bad, message in (("[cpu]\ncores = 2\n", "unknown key 'cores'"), ("[gpu]\n", r"unknown section \[gpu\]"),
                         ('[scheduler]\npolicy = "lifo"\n', "policy 'lifo'"),
                         ("[cpu]\nnodes = -1\n", "nodes must be a finite number >= 0"),
                         ("[cpu]\nnodes = inf\n", "nodes must be a finite number >= 0"),
                         ('[scheduler]\npolicy = "rr"\n', "needs a quantum")):
        with pytest.raises(MachineError, match=message):
            parse_toml(bad, "m.toml")
    with pytest.raises(MachineError, match=r"m.cfg:2: not a Dimemas configuration record"):
        parse_cfg("#DIMEMAS_CONFIGURATION\nnonsense\n", "m.cfg")
    with pytest.raises(MachineError,
                       match="3 ranks at 1 per node need 3 nodes but the machine has 2; .*--ranks-per-node 2"):
        Machine(nodes=2).node_of_tasks(3)
