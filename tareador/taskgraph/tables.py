"""tasks.csv and deps.csv as columns, and the one check every task graph passes before it is built.

A trace reaches the task graph (``dag.py``) by one road whether it was read from a directory
(``store.load_trace``, ``store.load_dag``) or made in memory (the tracer, a merged
decomposition, a test): its rows become columns here and ``check`` validates them with one set
of messages, each naming the file and line at fault (rows start at line 2; a trace not yet
written is named by the lines it would have).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tareador.errors import TraceDirError

RAW, WAR, WAW = "RAW", "WAR", "WAW"
DEPENDENCY_KINDS = (RAW, WAR, WAW)


@dataclass
class Tables:
    """The fields of tasks.csv and deps.csv that the task graph needs, one array per field."""

    ids: np.ndarray  # int64 per fragment, in row order
    names: list[str]
    instance: np.ndarray
    parent: np.ndarray
    start: np.ndarray
    end: np.ndarray
    instructions: np.ndarray
    src: np.ndarray  # int64 per dependency, in row order
    dst: np.ndarray
    kind: np.ndarray  # index into kinds
    kinds: list[str]  # the distinct kind texts of the file, valid or not
    bytes: np.ndarray

    @property
    def raw(self) -> np.ndarray:
        """The RAW dependencies: the only kind that orders the schedule."""
        return self.kind == self.kinds.index(RAW) if RAW in self.kinds else np.zeros(len(self.kind), bool)


def tables_of(fragments: Sequence, deps: Sequence) -> Tables:
    """The columns of Fragment and Dependency rows (taskgraph/model.py)."""

    def column(rows: Sequence, attr: str) -> np.ndarray:
        return np.fromiter((getattr(r, attr) for r in rows), np.int64, len(rows))

    codes: dict[str, int] = {}
    kind = np.fromiter((codes.setdefault(d.kind, len(codes)) for d in deps), np.int64, len(deps))
    return Tables(column(fragments, "id"), [t.name for t in fragments], column(fragments, "instance"),
                  column(fragments, "parent"), column(fragments, "start"), column(fragments, "end"),
                  column(fragments, "instructions"), column(deps, "src"), column(deps, "dst"), kind, list(codes),
                  column(deps, "bytes"))


def check(t: Tables, directory: Path | None) -> None:
    """What every later stage relies on; TraceDirError naming the first row at fault.

    Rows are checked in file order, tasks.csv's ids and counts first, then its parents and
    instances, then deps.csv: the row reported is the one a reader going down the files meets
    first. Cycles are not a property of one row: ``dag.topological_order`` finds them.
    """
    tasks = directory / "tasks.csv" if directory else Path("tasks.csv")
    n = len(t.ids)
    rows = np.arange(n)
    order = np.argsort(t.ids, kind="stable")
    ordered = t.ids[order]
    group = np.ones(n, bool)
    group[1:] = ordered[1:] != ordered[:-1]
    first = np.empty(n, np.int64)  # the row where each row's id first appears
    first[order] = order[np.maximum.accumulate(np.where(group, np.arange(n), 0))]
    repeated = first != rows
    bad = repeated | (t.instructions < 0) | (t.end < t.start)
    if bad.any():
        i = int(np.argmax(bad))
        where = f"{tasks}:{i + 2}: task {t.ids[i]}"
        if repeated[i]:
            raise TraceDirError(f"{where} appears twice (also line {first[i] + 2}); the file is corrupt")
        raise TraceDirError(f"{where} has negative instructions or ends before it starts; the file is corrupt")
    orphan = (t.parent != -1) & ~_present(ordered, t.parent)
    head = _rows_of(ordered, order, t.instance)  # the row of each row's instance, -1 if none
    known = head >= 0
    at = np.where(known, head, 0)
    odd = ~known | (t.instance[at] != t.ids[at]) | (t.ids[at] > t.ids) | (t.parent[at] != t.parent)
    bad = orphan | odd
    if bad.any():
        i = int(np.argmax(bad))
        where = f"{tasks}:{i + 2}: task {t.ids[i]}"
        if orphan[i]:
            raise TraceDirError(f"{where} names parent {t.parent[i]}, which is not in the file; the file is corrupt")
        raise TraceDirError(f"{where} names instance {t.instance[i]}, which is not the first fragment of an "
                            "instance with the same parent; the file is corrupt")
    _check_deps(t, ordered, directory / "deps.csv" if directory else Path("deps.csv"))


def _check_deps(t: Tables, ordered: np.ndarray, deps: Path) -> None:
    unknown = ~_present(ordered, t.src) | ~_present(ordered, t.dst)
    invalid = np.array([k not in DEPENDENCY_KINDS for k in t.kinds], bool)[t.kind]
    bad = unknown | invalid | (t.bytes < 0)
    if not bad.any():
        return
    i = int(np.argmax(bad))
    where = f"{deps}:{i + 2}:"
    if unknown[i]:
        raise TraceDirError(f"{where} dependency {t.src[i]} -> {t.dst[i]} names a task that is not in tasks.csv")
    if invalid[i]:
        raise TraceDirError(f"{where} unknown dependency kind {t.kinds[t.kind[i]]!r} (RAW, WAR or WAW)")
    raise TraceDirError(f"{where} negative byte count {t.bytes[i]}; the file is corrupt")


def _rows_of(ordered: np.ndarray, order: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The row holding each id of ``x`` (``ordered`` = the ids sorted, ``order`` their rows), -1 if none."""
    if not len(ordered):
        return np.full(len(x), -1, np.int64)
    at = np.searchsorted(ordered, x).clip(max=len(ordered) - 1)
    return np.where(ordered[at] == x, order[at], -1)


def _present(ordered: np.ndarray, x: np.ndarray) -> np.ndarray:
    return _rows_of(ordered, np.arange(len(ordered)), x) >= 0
