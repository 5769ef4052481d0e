"""The replay's Paraver trace: what paramedir needs to keep every record, and task type names."""

from __future__ import annotations

import pytest

from tareador.formats.dimemas import read_dim, write_dim
from tareador.formats.paraver import TASK_EVENT
from tareador.simulation.dimemas_engine import replay
from tareador.simulation.machine import Machine
from tareador.synthesis.ompss import write_dim_traces
from tests.helpers import TWO_RANKS, make

pytestmark = pytest.mark.fast  # no program compiled, traced or launched (make test-fast)


def test_cpus_are_numbered_across_nodes(tmp_path):
    """Paraver drops a record whose CPU is not on its thread's node: rank 1 runs on node 2's
    only CPU, which is CPU 2 of the machine."""
    trace = read_dim(write_dim(tmp_path / "two.dim", "two", [1, 1], TWO_RANKS))
    r = replay(trace, Machine(nodes=2, inter_latency=1e-5, inter_bandwidth=100.0), record=True).paraver
    on_cpu = r.states["cpu"] > 0
    assert set(zip(r.states["thread"][on_cpu].tolist(), r.states["cpu"][on_cpu].tolist())) == {(0, 1), (1, 2)}
    assert (r.comms["cpu"].tolist(), r.comms["rcpu"].tolist()) == ([1], [2])


def test_task_types_are_named_by_the_traces_pcf(tmp_path):
    trace = make([("main", -1, 5), ("alpha", 0, 10), ("beta", 0, 20), ("main", -1, 1)], [(1, 3), (2, 3)])
    written = write_dim_traces(trace.dag, tmp_path, 1e9)
    assert [p.name for p in written] == ["ompss.dim", "ompss.pcf", "authentic.dim", "authentic.pcf"]
    names = {0: "End", 1: "main", 2: "alpha", 3: "beta"}
    for name in ("ompss.dim", "authentic.dim"):
        run = replay(read_dim(tmp_path / name), Machine(cores_per_node=2), record=True).paraver
        assert run.event_labels[TASK_EVENT][1] == names
    (tmp_path / "ompss.pcf").unlink()
    run = replay(read_dim(tmp_path / "ompss.dim"), Machine(cores_per_node=2), record=True).paraver
    assert run.event_labels[TASK_EVENT][1] == {0: "End", 1: "type 1", 2: "type 2", 3: "type 3"}
