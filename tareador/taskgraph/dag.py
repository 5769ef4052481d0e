"""A task trace as flat arrays (``Dag``): task instances as indices in creation order, the
schedule edges as index arrays, and the graph algorithms every simulation and writer shares
(bottom levels, one critical path).

Precedence is exactly that of ``metrics.schedule_edges`` (main's fragments in order, creation
edges, RAW dependencies), built with array operations because the per-object version takes
minutes at the scale of millions of instances; ``load_dag`` reads a trace directory straight
into them.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import numpy as np

from tareador.native import build, compiler
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
    if forward_sorted(dag):
        return native_bottom_levels(dag, duration).tolist()
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


def indices(dag: Dag, ids: np.ndarray) -> np.ndarray:
    """The indices of fragments named by id (every id must be one of the dag's)."""
    order = np.argsort(dag.ids, kind="stable")
    return order[np.searchsorted(dag.ids[order], ids)]


def with_edges(dag: Dag, src: np.ndarray, dst: np.ndarray) -> Dag:
    """dag with the precedence edges src[k] -> dst[k] (indices) added."""
    n = max(dag.n, 1)
    edges = sorted_unique(np.concatenate([dag.src * n + dag.dst, np.asarray(src, np.int64) * n + dst]))
    return replace(dag, src=edges // n, dst=edges % n)


def span(dag: Dag) -> int:
    """T∞: the heaviest path, in instructions."""
    return max(bottom_levels(dag, dag.weight), default=0)


def reaches(dag: Dag, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Whether index dst[k] can be reached from index src[k], for a batch of pairs.

    Exact, and close to linear in nodes, edges and pairs on task graphs, which hang off one long
    chain (main's fragments): a pair that is an edge is answered at once, and so is one that goes
    through main (the first main fragment src reaches is not after the last one that reaches
    dst); only the rest search forward from their source, never past their furthest target nor
    into main's fragments (what is beyond those is the chain's answer). Edges must go from a
    lower index to a higher one, as they do in creation order.
    """
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    if (dag.src >= dag.dst).any():
        raise ValueError("an edge goes back in creation order: the trace is inconsistent")
    answer = (src == dst) | reaches_directly(dag, src, dst)
    first_main, last_main, chain = _main_bounds(dag)
    answer |= (src < dst) & (first_main[src] <= last_main[dst])
    rest = np.flatnonzero(~answer & (src < dst))
    if len(rest):
        answer[rest] = _search(dag, src[rest], dst[rest], first_main, last_main, chain)
    return answer


def reaches_directly(dag: Dag, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Whether src[k] -> dst[k] is an edge."""
    n = max(dag.n, 1)
    keys, pairs = np.sort(dag.src * n + dag.dst), np.asarray(src, np.int64) * n + dst
    if not len(keys):
        return np.zeros(len(pairs), bool)
    return keys[np.searchsorted(keys, pairs).clip(max=len(keys) - 1)] == pairs


def _main_bounds(dag: Dag) -> tuple[np.ndarray, np.ndarray, list[bool]]:
    """Per index: the first main fragment it reaches (n if none) and the last one that reaches
    it (-1 if none), main's fragments reaching one another in order; and which fragments are that
    chain (main's, as ``_build`` chains them; none if they are not chained)."""
    n = dag.n
    chain = np.flatnonzero(dag.is_main)
    if len(chain) > 1 and not reaches_directly(dag, chain[:-1], chain[1:]).all():
        return np.full(n, n, np.int64), np.full(n, -1, np.int64), [False] * n
    main = dag.is_main.tolist()
    offsets, succ = successors(dag)
    first = [i if main[i] else n for i in range(n)]
    for i in range(n - 1, -1, -1):
        for j in succ[offsets[i]:offsets[i + 1]]:
            if first[j] < first[i]:
                first[i] = first[j]
    p_offsets, pred = csr(dag.dst, dag.src, n)
    last = [i if main[i] else -1 for i in range(n)]
    for i in range(n):
        for j in pred[p_offsets[i]:p_offsets[i + 1]]:
            if last[j] > last[i]:
                last[i] = last[j]
    return np.array(first, np.int64), np.array(last, np.int64), main


def _search(dag: Dag, src: np.ndarray, dst: np.ndarray, first_main: np.ndarray, last_main: np.ndarray,
            chain: list[bool]) -> np.ndarray:
    """reaches() for the pairs the shortcuts leave: one forward search per source."""
    offsets, succ = successors(dag)
    first = first_main.tolist()
    answer = np.zeros(len(src), bool)
    order = np.argsort(src, kind="stable")
    starts = np.flatnonzero(np.concatenate([[True], src[order][1:] != src[order][:-1]]))
    for lo, hi in zip(starts.tolist(), [*starts[1:].tolist(), len(order)], strict=True):
        group = order[lo:hi]
        u, bound = int(src[group[0]]), int(dst[group].max())
        seen, stack, best = {u}, [u], first[u]
        while stack:
            for x in succ[offsets[(w := stack.pop())]:offsets[w + 1]]:
                if x <= bound and x not in seen:
                    seen.add(x)
                    best = min(best, first[x])
                    if not chain[x]:
                        stack.append(x)
        answer[group] = [v in seen or best <= last
                         for v, last in zip(dst[group].tolist(), last_main[dst[group]].tolist(), strict=True)]
    return answer


def forward_sorted(dag: Dag) -> bool:
    """Edges sorted by source, each to a later index (what every trace tareador writes gives):
    then walking the indices backwards is a topological order."""
    src = dag.src
    return bool((src < dag.dst).all() and (src[1:] >= src[:-1]).all())


def native_bottom_levels(dag: Dag, duration: np.ndarray) -> np.ndarray:
    """``bottom_levels`` in C (levels.c), for a ``forward_sorted`` graph."""
    src, dst = (np.ascontiguousarray(a, np.int64) for a in (dag.src, dag.dst))
    duration = np.ascontiguousarray(duration, np.int64)
    level = np.zeros(dag.n, np.int64)
    _levels_library().bottom_levels(dag.n, src.ctypes.data, dst.ctypes.data, len(src), duration.ctypes.data,
                                    level.ctypes.data)
    return level


@cache
def _levels_library() -> ctypes.CDLL:
    source = Path(__file__).with_name("levels.c")
    path = build("libtareador_levels.so", [source], lambda out, tmp: [
        [compiler(), "-O2", "-fPIC", "-shared", "-Wall", str(source), "-o", str(out)]])
    lib = ctypes.CDLL(str(path))
    lib.bottom_levels.restype = None
    lib.bottom_levels.argtypes = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                                  ctypes.c_void_p]
    return lib


def contract(edges: Iterable[tuple[int, int]], nodes: Iterable[int]) -> tuple[set[tuple[int, int]], list[int]]:
    """The graph ``edges`` with ``nodes`` contracted out, one after another, where that adds no
    edges: a node with one predecessor or one successor (or two of each) is replaced by edges
    from each predecessor to each successor; the others stay, as the joins they are. Returns
    (edges, the nodes that stay). Linear in the edges, where contracting every node is quadratic:
    a program that waits for all its tasks before creating the next ones would join each task
    to every later one."""
    succ: dict[int, set[int]] = {}
    pred: dict[int, set[int]] = {}
    for s, d in edges:
        succ.setdefault(s, set()).add(d)
        pred.setdefault(d, set()).add(s)
    kept = []
    for v in nodes:
        before, after = pred.pop(v, set()), succ.pop(v, set())
        if len(before) * len(after) > len(before) + len(after):
            pred[v], succ[v] = before, after
            kept.append(v)
            continue
        for p in before:
            succ[p].discard(v)
            succ[p] |= after
        for s in after:
            pred[s].discard(v)
            pred[s] |= before
    return {(s, d) for s, targets in succ.items() for d in targets}, kept
