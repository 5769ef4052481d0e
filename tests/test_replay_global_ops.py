"""Dimemas global operations (record 10) in the replay engine: makespans derived by hand from
Dimemas 5.5.0's model (tareador/simulation/global_ops.py states it), the record and its
communicators read and written, and what is not modelled refused in one line.

Units: 1 MiB at 100 MB/s (MB = 2^20 bytes) takes exactly 0.01 s, at 1000 MB/s 0.001 s; every
time below is a whole number of nanoseconds, so the makespans compare exactly.
"""

from __future__ import annotations

import pytest

from tareador.errors import DimError, MachineError
from tareador.formats.dimemas import GLOBAL_OPS, read_dim, write_dim
from tareador.formats.paraver import GROUP_COMMUNICATION, RUNNING, STARTUP_LATENCY
from tareador.simulation.dimemas_config import parse_cfg
from tareador.simulation.dimemas_engine import replay
from tareador.simulation.machine import Machine

pytestmark = pytest.mark.fast  # no program compiled, traced or launched (make test-fast)

MIB = 1 << 20
ALLREDUCE, BCAST, GATHER, REDUCE = (GLOBAL_OPS.index(n) for n in ("MPI_Allreduce", "MPI_Bcast", "MPI_Gather",
                                                                   "MPI_Reduce"))


def glop(task, op, comm, root, sent, received, sync=""):
    return f"10:{task}:0:{op}:{comm}:{root}:0:{sent}:{received}{sync}\n"


def run(tmp_path, blocks, machine, comms=None):
    ntasks = len(blocks)
    comms = comms or {1: tuple(range(ntasks))}
    return replay(read_dim(write_dim(tmp_path / "t.dim", "t", [1] * ntasks, blocks, comms)), machine)


def bursts_around(task, before, after, record):
    return f"1:{task}:0:{before:.9f}\n{record}1:{task}:0:{after:.9f}\n"


def test_allreduce_between_two_nodes(tmp_path):
    """Rank 0 computes 1 s, rank 1 0.5 s, then a 1 MiB Allreduce, then 0.25 s each; one rank per
    node, inter-node latency 1e-5 s and 100 MB/s, intra-node free. The operation starts when rank
    0 arrives (1 s) and takes fan-in + fan-out within the node (0 + 0) and between the nodes
    (1e-5 + 0.01 each way): 0.02002 s. Both ranks then compute 0.25 s: 1.27002 s."""
    blocks = [bursts_around(t, (1.0, 0.5)[t], 0.25, glop(t, ALLREDUCE, 1, 0, MIB, MIB, ":1")) for t in (0, 1)]
    r = run(tmp_path, blocks, Machine(nodes=2, inter_latency=1e-5, inter_bandwidth=100.0))
    assert r.task_end == [1.27002, 1.27002]


def test_members_wait_in_group_communication_in_paraver(tmp_path):
    """The Paraver trace of the same replay, as Dimemas' start_global_op writes it: each rank is
    in state 13 (Group Communication) from its arrival (rank 1 at 0.5 s, rank 0 at 1 s) to the
    operation's start (1 s), then in state 26 (Startup latency) on its CPU for the operation's
    latencies (fan-in and fan-out, 10 us each: 1.00002 s), then in 13 again until the end,
    1.02002 s."""
    blocks = [bursts_around(t, (1.0, 0.5)[t], 0.25, glop(t, ALLREDUCE, 1, 0, MIB, MIB)) for t in (0, 1)]
    trace = read_dim(write_dim(tmp_path / "t.dim", "t", [1, 1], blocks, {1: (0, 1)}))
    states = replay(trace, Machine(nodes=2, inter_latency=1e-5, inter_bandwidth=100.0), record=True).paraver.states
    during = states["begin"] >= 500_000_000
    assert sorted(zip(states["thread"][during].tolist(), states["cpu"][during].tolist(),
                      states["begin"][during].tolist(), states["end"][during].tolist(),
                      states["state"][during].tolist())) == sorted([
        (0, 1, 1_000_000_000, 1_000_020_000, STARTUP_LATENCY),
        (0, 0, 1_000_020_000, 1_020_020_000, GROUP_COMMUNICATION),
        (0, 1, 1_020_020_000, 1_270_020_000, RUNNING),
        (1, 0, 500_000_000, 1_000_000_000, GROUP_COMMUNICATION), (1, 2, 1_000_000_000, 1_000_020_000, STARTUP_LATENCY),
        (1, 0, 1_000_020_000, 1_020_020_000, GROUP_COMMUNICATION), (1, 2, 1_020_020_000, 1_270_020_000, RUNNING)])


def test_allreduce_within_a_node_pays_no_inter_node_part(tmp_path):
    """The same on one node of 2 CPUs, intra-node 1e-6 s and 1000 MB/s: the machine has one
    node, so only the intra-node fans count, (1e-6 + 0.001) twice: 1 + 0.002002 + 0.25."""
    blocks = [bursts_around(t, (1.0, 0.5)[t], 0.25, glop(t, ALLREDUCE, 1, 0, MIB, MIB)) for t in (0, 1)]
    r = run(tmp_path, blocks, Machine(cores_per_node=2, tasks_per_node=2, intra_latency=1e-6,
                                      intra_bandwidth=1000.0, inter_latency=1.0))
    assert r.makespan == 1.252002


def test_constant_model_charges_a_node_of_one_task(tmp_path):
    """Under the constant model every fan costs latency + bytes / bandwidth whatever the number
    of partners: two nodes of one rank each still pay the intra-node fans. A Bcast of 1 MiB
    from rank 0 (root field 1: it sends 1 MiB, rank 1 receives it); intra 1e-6 s, 1000 MB/s;
    inter 1e-5 s, 100 MB/s: fan-in (1e-6 + 0.001) + fan-out 1e-6 + fan-in (1e-5 + 0.01) +
    fan-out 1e-5 = 0.011022 s after both arrive at 0.5 s."""
    blocks = [bursts_around(0, 0.5, 0.0, glop(0, BCAST, 1, 1, MIB, 0)),
              bursts_around(1, 0.125, 0.0, glop(1, BCAST, 1, 0, 0, MIB))]
    r = run(tmp_path, blocks, Machine(nodes=2, intra_latency=1e-6, intra_bandwidth=1000.0, inter_latency=1e-5,
                                      inter_bandwidth=100.0))
    assert r.makespan == 0.511022


@pytest.mark.parametrize("model, factor", [(1, 1), (2, 3), (3, 2)])
def test_root_bytes_and_the_models_factor(tmp_path, model, factor):
    """A Gather of 1 MiB from each of 4 ranks on one node to rank 2, which arrives first (0.1 s);
    rank 0 arrives last (0.4 s). Only the root's record counts: it sends 1 MiB and receives
    4 MiB, so at 1000 MB/s the fans take 0.001 + 0.004 s (a non-root's would take 0.001 + 0).
    The factor is 1 (constant), partners - 1 = 3 (linear), ceil(log2 4) = 2 (logarithmic):
    makespan 0.4 + 0.005 x factor."""
    arrive = [0.4, 0.3, 0.1, 0.2]
    blocks = [bursts_around(t, arrive[t], 0.0, glop(t, GATHER, 1, int(t == 2), MIB, 4 * MIB if t == 2 else 0))
              for t in range(4)]
    machine = Machine(cores_per_node=4, tasks_per_node=4, intra_bandwidth=1000.0, collective_model=model)
    assert run(tmp_path, blocks, machine).makespan == pytest.approx(0.4 + 0.005 * factor, abs=1e-15)


def test_reduce_is_always_constant_and_names_its_root_by_task(tmp_path):
    """MPI_Reduce's root field is the root's task on every record: task 1, which receives 1 MiB
    (the others send it). Dimemas times Reduce with the constant model whatever the machine's:
    on one node at 1000 MB/s, (0 + 0) + (0 + 0.001) after the last arrives at 0.5 s: 0.501 s,
    where the linear model of this machine would double it (3 partners, factor 2)."""
    blocks = [bursts_around(0, 0.5, 0.0, glop(0, REDUCE, 1, 1, MIB, 0)),
              bursts_around(1, 0.25, 0.0, glop(1, REDUCE, 1, 1, 0, MIB)),
              bursts_around(2, 0.25, 0.0, glop(2, REDUCE, 1, 1, MIB, 0))]
    machine = Machine(cores_per_node=3, tasks_per_node=3, intra_bandwidth=1000.0, collective_model=2)
    assert run(tmp_path, blocks, machine).makespan == 0.501


@pytest.mark.parametrize("root, ends", [(0, [2.0, 1.5]), (-1, [1.5, 2.0]), (1, [1.5, 2.0])])
def test_members_queue_for_the_cpu_in_arrival_order_root_last(tmp_path, root, ends):
    """Two tasks share one CPU; each computes 0.5 s, enters a Barrier, computes 0.5 s. Task 0
    runs first (0-0.5) and waits; task 1 runs (0.5-1), arrives last, and the operation takes no
    time. The members queue in arrival order with the root moved last: with task 0 the root
    (root field 1), task 1 runs first (1-1.5) and task 0 after (1.5-2); with no root the last
    to arrive (task 1) is the root, as with task 1 the root: task 0 runs first."""
    blocks = [bursts_around(t, 0.5, 0.5, glop(t, 0, 1, int(t == root), 0, 0)) for t in (0, 1)]
    assert run(tmp_path, blocks, Machine(cores_per_node=1, tasks_per_node=2)).task_end == ends


def test_sub_communicator_operations_do_not_wait_for_others(tmp_path):
    """Tasks 0 and 1 do a Barrier on communicator 2 = {0, 1}, task 2 does nothing: on an ideal
    network they leave when task 1 arrives (0.75 s) and compute 0.25 s: 1 s; task 2 ends at 0.1."""
    blocks = [bursts_around(0, 0.5, 0.25, glop(0, 0, 2, 0, 0, 0)), bursts_around(1, 0.75, 0.25, glop(1, 0, 2, 0, 0, 0)),
              "1:2:0:0.100000000\n"]
    r = run(tmp_path, blocks, Machine(nodes=3), comms={2: (0, 1)})
    assert r.task_end == [1.0, 1.0, 0.1]


@pytest.mark.parametrize("buses, ends", [(0, [0.00101, 0.01101, 0.00202]), (1, [0.00101, 0.01104, 0.01103])])
def test_an_operation_takes_every_bus(tmp_path, buses, ends):
    """Three nodes, inter-node latency 1e-5 s and 100 MB/s. Task 0 pays the latency and sends
    1 MiB to task 1 immediately (0.01 s on the bus, 1e-5 to 0.01001), then computes 1 ms (ends
    0.00101). Tasks 1 and 2 compute 1 ms and do a Barrier (fans of no bytes: 2 x 1e-5 between
    the nodes); task 1 then receives the message (latency 1e-5 on its CPU) and both compute
    1 ms. With unlimited buses the Barrier runs 0.001-0.00102, task 2 ends at 0.00202 and task 1
    waits for the message (0.01001) and ends at 0.01101. With one bus the Barrier waits for the
    message's bus, 0.01001-0.01003: task 2 ends at 0.01103, task 1 at 0.01003 + 1e-5 + 0.001."""
    blocks = ["1:0:0:0.000000000\n2:0:0:1:1048576:5:0:2\n1:0:0:0.001000000\n",
              bursts_around(1, 0.001, 0.0, glop(1, 0, 1, 0, 0, 0)) + "3:1:0:0:1048576:5:0:0\n1:1:0:0.001000000\n",
              bursts_around(2, 0.001, 0.001, glop(2, 0, 1, 0, 0, 0))]
    machine = Machine(nodes=3, inter_latency=1e-5, inter_bandwidth=100.0, buses=buses)
    assert run(tmp_path, blocks, machine, comms={1: (1, 2)}).task_end == pytest.approx(ends, abs=1e-15)


def test_record_and_communicators_round_trip(tmp_path):
    blocks = ["1:0:0:0.000000000\n" + glop(0, ALLREDUCE, 3, 0, 8, 16),
              "1:1:0:0.000000000\n" + glop(1, ALLREDUCE, 3, 0, 8, 16, ":1")]
    path = write_dim(tmp_path / "t.dim", "t", [1, 1], blocks, {3: (1, 0)})
    lines = path.read_text().splitlines()
    assert lines[0].endswith(":2(1,1),1") and lines[1] == "d:1:3:2:1:0"
    t = read_dim(path)
    assert t.communicators == {3: (1, 0)}
    g = t.op == 10
    assert (t.a[g].tolist(), t.comm[g].tolist(), t.tag[g].tolist(), t.size[g].tolist(), t.b[g].tolist(),
            t.mode[g].tolist()) == ([ALLREDUCE] * 2, [3, 3], [0, 0], [8, 8], [16, 16], [1, 1])


@pytest.mark.parametrize("blocks, comms, error", [
    (["1:0:0:0.0\n" + glop(0, 0, 2, 0, 0, 0), "1:1:0:0.0\n" + glop(1, 0, 2, 0, 0, 0)], {1: (0, 1)},
     "t.dim:4: communicator 2 is not defined"),
    (["1:0:0:0.0\n" + glop(0, 0, 1, 0, 0, 0, ":3"), "1:1:0:0.0\n" + glop(1, 0, 1, 0, 0, 0, ":3")], {1: (0, 1)},
     "t.dim:4: global operations with synchronisation 3"),
    (["1:0:0:0.0\n" + glop(0, 0, 1, 0, 0, 0) * 2, "1:1:0:0.0\n" + glop(1, 0, 1, 0, 0, 0)], {1: (0, 1)},
     "deadlock: task 1 calls 1 global operations on communicator 1, task 0 2"),
    (["1:0:0:0.0\n" + glop(0, 0, 1, 0, 0, 0), "1:1:0:0.0\n" + glop(1, 0, 1, 0, 0, 0)], {1: (0,)},
     "t.dim:6: task 1 is not a member of communicator 1"),
    (["1:0:0:0.0\n" + glop(0, 16, 1, 0, 0, 0), "1:1:0:0.0\n"], {1: (0,)}, "global operation id 16 is outside 0..15"),
])
def test_bad_global_operations_are_one_line(tmp_path, blocks, comms, error):
    with pytest.raises(DimError, match=error):
        run(tmp_path, blocks, Machine(nodes=2), comms)


def test_bad_communicator_definition(tmp_path):
    path = tmp_path / "t.dim"
    write_dim(path, "t", [1], ["1:0:0:0.0\n"], {1: (0,)})
    path.write_text(path.read_text().replace("d:1:1:1:0", "d:1:1:1:5"))
    with pytest.raises(DimError, match=r"t.dim:2: communicator 1 must list 1 distinct tasks of the 1"):
        read_dim(path)


def test_what_replay_does_not_model_is_refused(tmp_path):
    blocks = ["1:0:0:0.0\n" + glop(0, 0, 1, 0, 0, 0), "1:1:0:0.0\n" + glop(1, 0, 1, 0, 0, 0)]
    cfg = ('#DIMEMAS_CONFIGURATION\n"environment information" {"", 0, "", 2, 100.0, 1, 1};;\n'
           '"multi node information" {0, 2, "", 1, 1.0, 0.0, 0.0, 0, 0, 0, 0.0, 0, 0, 0.0};;\n'
           '"configuration files" {"", "", "comm.txt", ""};;\n')
    (tmp_path / "comm.txt").write_text("Machine policy: 0 RR\nQuantum size (bytes): 8\n")
    with pytest.raises(MachineError, match="global operations on limited buses that messages share"):
        run(tmp_path, blocks, parse_cfg(cfg, tmp_path / "m.cfg"))
    with pytest.raises(MachineError, match="collective_model must be 1"):
        parse_cfg(cfg.replace("100.0, 1, 1};;", "100.0, 1, 4};;"), tmp_path / "m.cfg")
