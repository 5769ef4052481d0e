"""Trace directory round trip, corrupt files, and the T1/T-inf metrics on hand-made graphs."""

from __future__ import annotations

import pytest

from tareador import load
from tareador.taskgraph.model import Dependency, TaskInstance, TaskTrace
from tareador.taskgraph.store import TraceDirError, save


def fork_join() -> TaskTrace:
    # main(2) creates a(10) and b(30); main fragment 3 (1 instr) reads both.
    tasks = [TaskInstance(0, "main", -1, 0, 2, 2), TaskInstance(1, "a", 0, 2, 12, 10),
             TaskInstance(2, "main", -1, 12, 12, 0), TaskInstance(3, "b", 2, 12, 42, 30),
             TaskInstance(4, "main", -1, 42, 43, 1)]
    deps = [Dependency(1, 4, "RAW", "x", 8), Dependency(3, 4, "RAW", "y", 8), Dependency(1, 3, "WAR", "x", 4)]
    return TaskTrace(tasks, deps, [], {"instances": 2})


def test_metrics_by_hand():
    t = fork_join()
    assert t.t1 == 43
    assert t.tinf == 2 + 0 + 30 + 1  # main, main, b, main: WAR does not constrain
    assert t.parallelism == pytest.approx(43 / 33)
    assert set(t.graph.edges) == {(0, 1), (0, 2), (2, 3), (2, 4), (1, 4), (3, 4), (1, 3)}


def test_round_trip(tmp_path):
    t = fork_join()
    save(t, tmp_path / "d")
    back = load(tmp_path / "d")
    assert back.tasks == t.tasks and back.deps == t.deps and back.summary == t.summary


def test_truncated_and_corrupt_files_are_named(tmp_path):
    save(fork_join(), tmp_path / "d")
    deps = tmp_path / "d" / "deps.csv"
    deps.write_text(deps.read_text()[:-6])
    with pytest.raises(TraceDirError, match=r"deps.csv:\d+: malformed row"):
        load(tmp_path / "d")
    (tmp_path / "d" / "tasks.csv").write_text("garbage\n")
    with pytest.raises(TraceDirError, match="tasks.csv: header"):
        load(tmp_path / "d")
    with pytest.raises(TraceDirError, match="not a trace directory"):
        load(tmp_path / "missing")
