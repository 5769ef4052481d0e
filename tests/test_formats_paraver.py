"""Paraver and Chrome outputs are well-formed: header, record shapes, time order, sections."""

from __future__ import annotations

import json
import re

import numpy as np

from tareador.formats.chrome import write_chrome
from tareador.formats.dimemas import read_dim, write_dim
from tareador.formats.paraver import schedule_run, write_paraver
from tareador.replay.dag import dag_from_trace, simulate
from tareador.replay.engine import replay
from tareador.replay.machine import Machine
from tests.test_replay_dag import fork_join
from tests.test_replay_dimemas import THREE_THREADS, TWO_RANKS

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
    dag = dag_from_trace(fork_join(width=3))
    s = simulate(dag, 2)
    run = schedule_run(dag.names, s.start, s.finish, s.core.astype(np.int64), 2, dag.dep_src, dag.dep_dst,
                       dag.dep_bytes)
    records = check_prv(write_paraver(run, tmp_path / "s.prv")[0], 20, 2)
    assert sum(r[0] == 1 for r in records) == 3  # three leaves run; main's fragments are empty
    assert sorted(r[7] for r in records if r[0] == 2)[-3:] == [2, 2, 2]  # leaf = type 2 after main
    assert [(r[5], r[11], r[13], r[14]) for r in records if r[0] == 3] == [(10, 20, 8, 8002), (10, 20, 8, 8002),
                                                                           (20, 20, 8, 8002)]


def test_replayed_run(tmp_path):
    trace = read_dim(write_dim(tmp_path / "two.dim", "two", [1, 1], TWO_RANKS))
    r = replay(trace, Machine(nodes=2, inter_latency=1e-5, inter_bandwidth=100.0), record=True)
    records = check_prv(write_paraver(r.paraver, tmp_path / "two.prv")[0], 2010010000, 2)
    comm = [x for x in records if x[0] == 3]
    assert comm == [[3, 1, 1, 1, 1, 1000000000, 1000010000, 1, 1, 2, 1, 0, 1010010000, 1048576, 1]]
    trace = read_dim(write_dim(tmp_path / "three.dim", "three", [3], THREE_THREADS))
    r = replay(trace, Machine(cores_per_node=2), record=True)
    records = check_prv(write_paraver(r.paraver, tmp_path / "three.prv")[0], 3000000000, 3)
    assert [x[3:8] for x in records if x[0] == 1 and x[7] == 5] == [[1, 3, 1000000000, 2000000000, 5]]


def test_chrome(tmp_path):
    dag = dag_from_trace(fork_join(width=3))
    s = simulate(dag, 2)
    path = write_chrome(tmp_path / "c.json", "2 cores", dag.names, dag.ids, s.start / 1e3, (s.finish - s.start) / 1e3,
                        s.core, dag.dep_src, dag.dep_dst)
    doc = json.loads(path.read_text())
    slices = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(slices) == 5 and {e["tid"] for e in slices} == {0, 1}
    flows = [e for e in doc["traceEvents"] if e["ph"] in "sf"]
    assert len(flows) == 6 and {e["id"] for e in flows} == {0, 1, 2}
