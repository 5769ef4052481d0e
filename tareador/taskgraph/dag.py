"""A task trace as flat arrays (``Dag``): task instances as indices in creation order, the
schedule edges as index arrays, and the graph algorithms every simulation and writer shares
(bottom levels, one critical path).

Precedence is exactly that of ``metrics.schedule_edges`` (main's fragments in order, creation
edges, RAW dependencies), built with array operations because the per-object version takes
minutes at the scale of millions of instances; ``load_dag`` reads a trace directory straight
into them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tareador.taskgraph.model import RAW, TaskTrace
from tareador.taskgraph.store import load_trace
from tareador.text_columns import byte_words, line_chunks, recycle_freed_memory, split_fields


@dataclass
class Dag:
    """Task instances as indices 0..n-1 in creation order, edges as index arrays."""

    ids: np.ndarray  # instance id of each index
    counter: np.ndarray  # instruction counter when each instance started (the sequential order)
    names: list[str]
    is_main: np.ndarray  # bool: a fragment of the program's own code
    starts_instance: np.ndarray  # bool: the first fragment of a task instance (or of main)
    weight: np.ndarray  # int64 instructions
    src: np.ndarray  # int64 schedule edges
    dst: np.ndarray
    dep_src: np.ndarray  # RAW data dependencies (a subset of the edges), for drawing communications
    dep_dst: np.ndarray
    dep_bytes: np.ndarray
    next_fragment: np.ndarray  # the next fragment of the same instance (its continuation), -1 after the last
    creator: np.ndarray  # the fragment that created each task instance's first fragment, -1 for the others

    @property
    def n(self) -> int:
        return len(self.weight)

    @property
    def t1(self) -> int:
        return int(self.weight.sum())


def dag_from_trace(trace: TaskTrace) -> Dag:
    tasks, deps = trace.fragments, trace.deps

    def column(rows, attr: str, kind=np.int64) -> np.ndarray:
        return np.fromiter((getattr(r, attr) for r in rows), kind, len(rows))

    return _build(column(tasks, "id"), [t.name for t in tasks], column(tasks, "instance"), column(tasks, "parent"),
                  column(tasks, "start"), column(tasks, "instructions"), column(deps, "src"), column(deps, "dst"),
                  np.fromiter((d.kind == RAW for d in deps), bool, len(deps)), column(deps, "bytes"))


def _build(ids, names, instance, parent, counter, instructions, dep_src, dep_dst, raw, dep_bytes) -> Dag:
    """The precedence of ``schedule_edges`` (metrics.py), built with array operations."""
    n = len(ids)
    order = np.argsort(ids, kind="stable")

    def index(x: np.ndarray, what: str) -> np.ndarray:
        if not len(x):
            return x
        at = np.searchsorted(ids[order], x).clip(max=max(n - 1, 0))
        if n == 0 or (ids[order][at] != x).any():
            raise ValueError(f"{what} names a task id that is not in tasks.csv")
        return order[at]

    if n and ((instructions < 0).any() or (ids[order][1:] == ids[order][:-1]).any()):
        raise ValueError("tasks.csv has negative instruction counts or repeated ids")
    heads = index(instance, "an instance")
    if (instance[heads] != ids[heads]).any():
        raise ValueError("an instance named in tasks.csv is not the first fragment of an instance")
    is_main = parent < 0
    # Fragments of one instance, in id order, each after the previous one.
    by_instance = np.lexsort((ids, instance))
    same = instance[by_instance[1:]] == instance[by_instance[:-1]]
    first = np.ones(n, bool)
    first[by_instance[1:][same]] = False
    # The first fragment of a task instance after the fragment that created it.
    created = np.flatnonzero(first & ~is_main)
    data = raw & (dep_src != dep_dst)
    dsrc, ddst = index(dep_src[data], "a dependency"), index(dep_dst[data], "a dependency")
    src = np.concatenate([by_instance[:-1][same], index(parent[created], "a parent"), dsrc])
    dst = np.concatenate([by_instance[1:][same], created, ddst])
    edges = sorted_unique(src * n + dst)
    pairs, inverse = np.unique(dsrc * n + ddst, return_inverse=True)
    next_fragment = np.full(n, -1, np.int64)
    next_fragment[by_instance[:-1][same]] = by_instance[1:][same]
    creator = np.full(n, -1, np.int64)
    creator[created] = index(parent[created], "a parent")
    return Dag(ids=ids, counter=counter, names=names, is_main=is_main, starts_instance=first, weight=instructions,
               src=edges // n, dst=edges % n, dep_src=pairs // n, dep_dst=pairs % n,
               dep_bytes=np.bincount(inverse, weights=dep_bytes[data], minlength=len(pairs)).astype(np.int64),
               next_fragment=next_fragment, creator=creator)


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique's result by sorting: its hash path is several times slower at millions of values."""
    ordered = np.sort(values)
    return ordered[np.concatenate([np.ones(min(len(ordered), 1), bool), ordered[1:] != ordered[:-1]])]


def load_dag(directory: str | Path) -> Dag:
    """A trace directory straight into arrays: millions of rows in seconds.

    Anything unusual (quoted CSV fields, a bad row or id, a missing file) goes through
    ``store.load`` instead, which accepts every valid directory and names the file and line at fault.
    """
    d = Path(directory)
    recycle_freed_memory()
    try:
        tasks = _read_csv(d / "tasks.csv", "id,name,instance,parent,start,end,instructions", (0, 2, 3, 4, 5, 6), 1)
        deps = _read_csv(d / "deps.csv", "src,dst,kind,object,bytes", (0, 1, 4), 2)
        raw = _dependency_kinds(*deps[1])
        (ids, instance, parent, start, _end, instructions), (data, a, b) = tasks
        pieces = [data[i:j] for i, j in zip(a.tolist(), b.tolist())]
        text = {p: p.decode() for p in set(pieces)}
        (src, dst, size), _kinds = deps
        return _build(ids, [text[p] for p in pieces], instance, parent, start, instructions, src, dst, raw, size)
    except (OSError, ValueError):
        return dag_from_trace(load_trace(d))


def _dependency_kinds(data: bytes, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """RAW mask of the kind column; ValueError unless every kind is RAW, WAR or WAW."""
    arr = np.frombuffer(data, np.uint8)
    if not (b - a == 3).all():
        raise ValueError("kind")
    c0, c1, c2 = arr[a], arr[a + 1], arr[a + 2]
    raw = (c0 == ord("R")) & (c1 == ord("A")) & (c2 == ord("W"))
    war_waw = (c0 == ord("W")) & (c1 == ord("A")) & ((c2 == ord("R")) | (c2 == ord("W")))
    if not (raw | war_waw).all():
        raise ValueError("kind")
    return raw


def _read_csv(path: Path, header: str, int_columns: tuple[int, ...], text_column: int):
    """Integer columns and (data, start, end) of one text column of an unquoted CSV; ValueError
    for anything else."""
    data = path.read_bytes()
    first = data.find(b"\n") + 1
    if data[:first].decode().strip() != header or b'"' in data or not data.endswith(b"\n"):
        raise ValueError(path)
    words = byte_words(data)
    ncols = header.count(",") + 1
    ints: list[list[np.ndarray]] = [[] for _ in int_columns]
    text_start, text_end = [], []
    for a, b in line_chunks(data, first, len(data)):
        f = split_fields(data, words, a, b, ord(","))
        if (f.ntok != ncols).any():
            raise ValueError(path)
        tok = f.first_tok[:, None] + np.array(int_columns)
        if not f.is_int[tok].all():
            raise ValueError(path)
        for k in range(len(int_columns)):
            ints[k].append(f.value[tok[:, k]])
        text_start.append(a + f.starts[f.first_tok + text_column])
        text_end.append(a + f.ends[f.first_tok + text_column])
    return [_join(c) for c in ints], (data, _join(text_start), _join(text_end))


def _join(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def csr(keys: np.ndarray, values: np.ndarray, n: int) -> tuple[list[int], list[int]]:
    """(offsets, values grouped by key) as Python lists, which the per-instance loops index fastest."""
    order = np.argsort(keys, kind="stable")
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=offsets[1:])
    return offsets.tolist(), values[order].tolist()


def successors(dag: Dag) -> tuple[list[int], list[int]]:
    """CSR adjacency as Python lists (indexing lists is what the event loops do fastest)."""
    return csr(dag.src, dag.dst, dag.n)


def durations(dag: Dag, overhead: int = 0, creation_cost: int = 0) -> np.ndarray:
    """What each fragment occupies its core for: its own work; a task instance's first fragment
    also the runtime's cost of starting it (``overhead``: the core that runs a task pays it; main's
    fragments are the program itself), and a fragment that creates tasks the cost of creating
    each (paid by the creating core, before the task exists)."""
    out = dag.weight + np.where(dag.starts_instance & ~dag.is_main, overhead, 0)
    if creation_cost:
        made = dag.creator[dag.creator >= 0]
        out = out + creation_cost * np.bincount(made, minlength=dag.n)
    return out


def bottom_levels(dag: Dag, duration: np.ndarray, adjacency=None) -> list[int]:
    """Longest path from each instance to the end, its own duration included."""
    offsets, succ = adjacency or successors(dag)
    indegree = np.bincount(dag.dst, minlength=dag.n).tolist()
    order = [i for i in range(dag.n) if indegree[i] == 0]
    for i in order:  # Kahn: ``order`` grows while we walk it
        for j in succ[offsets[i]:offsets[i + 1]]:
            indegree[j] -= 1
            if indegree[j] == 0:
                order.append(j)
    if len(order) != dag.n:
        raise ValueError("dependency cycle between task instances: the trace is inconsistent")
    level = duration.tolist()
    for i in reversed(order):
        below = succ[offsets[i]:offsets[i + 1]]
        if below:
            level[i] += max([level[j] for j in below])
    return level


def critical_path(dag: Dag, duration: np.ndarray, levels: list[int], adjacency=None) -> list[int]:
    """One longest path, as indices from its first instance to its last. Where several tie, the
    earliest-created instance is taken at each step, so the same trace always gives the same path."""
    if not dag.n:
        return []
    offsets, succ = adjacency or successors(dag)
    dur = duration.tolist()
    i = levels.index(max(levels))
    path = [i]
    while True:
        rest = levels[i] - dur[i]
        following = [j for j in succ[offsets[i]:offsets[i + 1]] if levels[j] == rest]
        if not following:
            return path
        i = min(following)
        path.append(i)
