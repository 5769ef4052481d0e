"""Paraver and Chrome outputs are well-formed: header, record shapes, time order, sections."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from tareador.formats.chrome import write_chrome
from tareador.formats.dimemas import read_dim, write_dim
from tareador.formats.paraver import schedule_run, write_paraver
from tareador.simulation.dimemas_engine import replay
from tareador.simulation.list_scheduler import simulate
from tareador.simulation.machine import Machine
from tests.helpers import THREE_THREADS, TWO_RANKS, fork_join, make

pytestmark = pytest.mark.fast  # no program compiled, traced or launched (make test-fast)

FIELDS = {"1": 8, "2": 8, "3": 15}


def check_prv(path, end_ns: int, threads: int) -> list[list[int]]:
    lines = path.read_text().splitlines()
    header = re.fullmatch(r"#Paraver \(\d\d/\d\d/\d\d at \d\d:\d\d\):(\d+)_ns:(\d+)\(([\d,]+)\):1:(\d+)\((.*)\),0",
                          lines[0])
    assert header and int(header.group(1)) == end_ns
    declared = sum(int(x.split(":")[0]) for x in header.group(5).split(","))
    assert declared == threads
    records = [[int(x) for x in line.split(":")] for line in lines[1:]]
    assert all(len(r) == FIELDS[str(r[0])] for r in records)
    times = [r[5] for r in records]
    assert times == sorted(times)
    assert all(r[6] >= r[5] for r in records if r[0] == 1)
    assert all(1 <= r[4] <= threads and 0 <= r[1] for r in records)
    pcf = path.with_suffix(".pcf").read_text()
    assert "STATES\n" in pcf and "STATES_COLOR\n" in pcf and "EVENT_TYPE\n0    7003    Running task" in pcf
    row = path.with_suffix(".row").read_text()
    assert f"LEVEL THREAD SIZE {threads}" in row and "LEVEL CPU SIZE" in row and "LEVEL NODE SIZE" in row
    return records


def test_simulated_run(tmp_path):
    dag = fork_join(width=3).dag
    s = simulate(dag, 2)
    run = schedule_run(dag.names, s.start, s.finish, s.core.astype(np.int64), 2, dag.dep_src, dag.dep_dst,
                       dag.dep_bytes)
    records = check_prv(write_paraver(run, tmp_path / "s.prv")[0], 20, 2)
    assert sum(r[0] == 1 for r in records) == 3  # three leaves run; main's fragments are empty
    assert sorted(r[7] for r in records if r[0] == 2)[-3:] == [2, 2, 2]  # leaf = type 2 after main
    assert [(r[5], r[11], r[13], r[14]) for r in records if r[0] == 3] == [(10, 20, 8, 8002), (10, 20, 8, 8002),
                                                                           (20, 20, 8, 8002)]


def time_by_task_type(records: list[list[int]]) -> dict[int, int]:
    """Running time per value of event 7003, read as Paraver reads it: records of one thread in
    file order (Paraver's sort by time keeps it among equal times), the last event value at or
    before a state's begin labels the state."""
    value: dict[int, int] = {}
    events = sorted(((r[4], r[5], k, r[7]) for k, r in enumerate(records) if r[0] == 2 and r[6] == 7003))
    by_type: dict[int, int] = {}
    for r in records:
        if r[0] != 1:
            continue
        last = [v for th, t, _k, v in events if th == r[4] and t <= r[5]]
        value = last[-1] if last else 0
        by_type[value] = by_type.get(value, 0) + r[6] - r[5]
    return by_type


def test_task_types_of_back_to_back_instances(tmp_path):
    """On one core, each instance starts the instant the previous one ends: every state must be
    labelled with its own task type, so the time per type is the work of that type."""
    t = make([("main", -1, 0), ("a", 0, 5), ("b", 0, 7), ("a", 0, 3), ("c", 0, 0), ("main", -1, 2)],
             [(1, 2), (2, 3)])
    dag = t.dag
    s = simulate(dag, 1)
    run = schedule_run(dag.names, s.start, s.finish, s.core.astype(np.int64), 1, dag.dep_src, dag.dep_dst,
                       dag.dep_bytes)
    records = check_prv(write_paraver(run, tmp_path / "s.prv")[0], 17, 1)
    types = {"main": 1, "a": 2, "b": 3, "c": 4}
    assert time_by_task_type(records) == {types["a"]: 8, types["b"]: 7, types["main"]: 2}


def test_replayed_run(tmp_path):
    trace = read_dim(write_dim(tmp_path / "two.dim", "two", [1, 1], TWO_RANKS))
    r = replay(trace, Machine(nodes=2, inter_latency=1e-5, inter_bandwidth=100.0), record=True)
    records = check_prv(write_paraver(r.paraver, tmp_path / "two.prv")[0], 2010010000, 2)
    comm = [x for x in records if x[0] == 3]
    assert comm == [[3, 1, 1, 1, 1, 1000000000, 1000010000, 2, 1, 2, 1, 0, 1010010000, 1048576, 1]]  # CPU 2: node 2's
    trace = read_dim(write_dim(tmp_path / "three.dim", "three", [3], THREE_THREADS))
    r = replay(trace, Machine(cores_per_node=2), record=True)
    records = check_prv(write_paraver(r.paraver, tmp_path / "three.prv")[0], 3000000000, 3)
    assert [x[3:8] for x in records if x[0] == 1 and x[7] == 5] == [[1, 3, 1000000000, 2000000000, 5]]


def test_chrome(tmp_path):
    dag = fork_join(width=3).dag
    s = simulate(dag, 2)
    out = write_chrome(tmp_path / "c.json", "2 cores", dag.names, dag.ids, s.start, s.finish, s.core, dag.dep_src,
                       dag.dep_dst)
    assert out.paths == [tmp_path / "c.json"] and out.size == out.unsplit == out.paths[0].stat().st_size
    doc = json.loads(out.paths[0].read_text())
    slices = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(slices) == 5 and {e["tid"] for e in slices} == {0, 1}
    flows = [e for e in doc["traceEvents"] if e["ph"] in "sf"]
    assert len(flows) == 6 and {e["id"] for e in flows} == {0, 1, 2}
