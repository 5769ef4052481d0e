"""The task graph (``Dag``) and every graph algorithm tareador runs, as functions over it.

One model for every command: T∞ of a trace (``TaskTrace.tinf``), the list scheduler, what-if,
explore, the Dimemas and Paraver writers and the drawing all work on a ``Dag``: the fragments
as indices 0..n-1 (the rows of tasks.csv, in order) and the schedule's precedence constraints
as index arrays, built with array operations from the checked columns of tasks.csv and deps.csv
(``tables.py``) because a graph of objects takes minutes at millions of instances.

The precedence is that of model.py: the fragments of one instance in id order, each after the
previous one; the first fragment of a task instance after the fragment that created it; RAW
dependencies. The per-fragment loops index Python lists (``csr``), what they do fastest.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import numpy as np

from tareador.native import shared_library
from tareador.taskgraph.tables import Tables, check, is_row_numbers


@dataclass
class Dag:
    """Fragments as indices 0..n-1 in row order, the schedule's edges as index arrays."""

    ids: np.ndarray  # fragment id of each index
    counter: np.ndarray  # instruction counter when each fragment started (the sequential order)
    names: list[str]
    instance: np.ndarray  # int64: index of the first fragment of each one's instance
    parent: np.ndarray  # int64: index of the fragment that created each one's instance; -1 for main's
    next_fragment: np.ndarray  # int64: the next fragment of the same instance (its continuation), -1 after the last
    weight: np.ndarray  # int64 instructions
    src: np.ndarray  # int64 schedule edges
    dst: np.ndarray
    dep_src: np.ndarray  # RAW data dependencies (a subset of the edges), for drawing communications
    dep_dst: np.ndarray
    dep_bytes: np.ndarray

    @property
    def n(self) -> int:
        return len(self.weight)

    @property
    def t1(self) -> int:
        return int(self.weight.sum())

    @property
    def is_main(self) -> np.ndarray:
        """bool: a fragment of the program's own code, not of a task (a task may be named main)."""
        return self.parent < 0

    @property
    def starts_instance(self) -> np.ndarray:
        """bool: the first fragment of a task instance (or of main)."""
        return self.instance == np.arange(self.n)

    @property
    def creator(self) -> np.ndarray:
        """int64: the fragment that created each task instance's first fragment, -1 for the others."""
        return np.where(self.starts_instance & ~self.is_main, self.parent, -1)

    def __repr__(self) -> str:
        return f"<Dag {self.n} fragments, {len(self.src)} schedule edges, {len(self.dep_src)} dependencies>"


class DependencyCycle(ValueError):
    """Precedence with a cycle: no run can follow it. Not a trace tareador writes; the loader
    reports it as a corrupt deps.csv."""

    def __init__(self) -> None:
        super().__init__("dependency cycle between task instances: the trace is inconsistent")


def build(t: Tables, directory: Path | None = None) -> Dag:
    """The graph of the tables, checked first (``tables.check``: messages name ``directory``'s files)."""
    check(t, directory)
    n = len(t.ids)
    order = np.argsort(t.ids, kind="stable")
    ordered = t.ids[order]
    row_numbers = is_row_numbers(t.ids)

    def index(x: np.ndarray) -> np.ndarray:
        return x if row_numbers or not len(x) else order[np.searchsorted(ordered, x)]

    instance = index(t.instance)
    is_main = t.parent < 0
    parent = np.full(n, -1, np.int64)
    parent[~is_main] = index(t.parent[~is_main])
    # Fragments of one instance, in id order, each after the previous one.
    by_instance = np.lexsort((t.ids, instance))
    same = instance[by_instance[1:]] == instance[by_instance[:-1]]
    # The first fragment of a task instance after the fragment that created it.
    created = np.flatnonzero((instance == np.arange(n)) & ~is_main)
    data = t.raw & (t.src != t.dst)
    dsrc, ddst = index(t.src[data]), index(t.dst[data])
    src = np.concatenate([by_instance[:-1][same], parent[created], dsrc])
    dst = np.concatenate([by_instance[1:][same], created, ddst])
    edges = sorted_unique(src * n + dst)
    pairs, inverse = np.unique(dsrc * n + ddst, return_inverse=True)
    next_fragment = np.full(n, -1, np.int64)
    next_fragment[by_instance[:-1][same]] = by_instance[1:][same]
    return Dag(ids=t.ids, counter=t.start, names=t.names, instance=instance, parent=parent,
               next_fragment=next_fragment, weight=t.instructions, src=edges // n, dst=edges % n,
               dep_src=pairs // n, dep_dst=pairs % n,
               dep_bytes=np.bincount(inverse, weights=t.bytes[data], minlength=len(pairs)).astype(np.int64))


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique's result by sorting: its hash path is several times slower at millions of values."""
    ordered = np.sort(values)
    return ordered[np.concatenate([np.ones(min(len(ordered), 1), bool), ordered[1:] != ordered[:-1]])]


def csr(keys: np.ndarray, values: np.ndarray, n: int) -> tuple[list[int], list[int]]:
    """(offsets, values grouped by key) as Python lists, which the per-instance loops index fastest."""
    order = np.argsort(keys, kind="stable")
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=offsets[1:])
    return offsets.tolist(), values[order].tolist()


def successors(dag: Dag) -> tuple[list[int], list[int]]:
    """CSR adjacency as Python lists (indexing lists is what the event loops do fastest)."""
    return csr(dag.src, dag.dst, dag.n)


def indegrees(dag: Dag) -> list[int]:
    """How many predecessors each fragment waits for."""
    return np.bincount(dag.dst, minlength=dag.n).tolist()


def topological_order(dag: Dag, adjacency=None) -> Sequence[int]:
    """Every fragment after its predecessors; DependencyCycle if there is no such order.

    Creation order is one for every trace tareador writes (each edge goes to a later fragment)
    and is taken without a sort; a hand-made or corrupt trace may say otherwise, and that must be
    reported, not miscounted.
    """
    if bool((dag.src < dag.dst).all()):
        return range(dag.n)
    offsets, succ = adjacency or successors(dag)
    indegree = indegrees(dag)
    order = [i for i in range(dag.n) if indegree[i] == 0]
    for i in order:  # Kahn: ``order`` grows while we walk it
        for j in succ[offsets[i]:offsets[i + 1]]:
            indegree[j] -= 1
            if indegree[j] == 0:
                order.append(j)
    if len(order) != dag.n:
        raise DependencyCycle()
    return order


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
    level = duration.tolist()
    for i in reversed(topological_order(dag, (offsets, succ))):
        below = succ[offsets[i]:offsets[i + 1]]
        if below:
            level[i] += max([level[j] for j in below])
    return level


def span(dag: Dag) -> int:
    """T∞: the heaviest path, in instructions (what unboundedly many cores take)."""
    return max(bottom_levels(dag, dag.weight), default=0)


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


def schedule_edges(dag: Dag) -> set[tuple[int, int]]:
    """The precedence constraints as (fragment id, fragment id) pairs, the ids of tasks.csv."""
    ids = dag.ids.tolist()
    return {(ids[s], ids[d]) for s, d in zip(dag.src.tolist(), dag.dst.tolist())}


def bypass_edges(dag: Dag, kept: np.ndarray) -> list[tuple[int, int]]:
    """Edges between the ``kept`` fragments, each path through fragments not kept made one edge
    (what contracting the others away leaves): main folded away, its order between tasks stays."""
    offsets, succ = successors(dag)
    keep = kept.tolist()
    through = [0] * dag.n  # of a fragment not kept: the kept ones it reaches through others not kept
    waiting = indegrees(dag)  # ... dropped once its last predecessor took it: main's chain reaches everything
    edges = []
    for i in reversed(topological_order(dag, (offsets, succ))):
        ahead = 0
        for j in succ[offsets[i]:offsets[i + 1]]:
            ahead |= 1 << j if keep[j] else through[j]
            waiting[j] -= 1
            if not waiting[j]:
                through[j] = 0
        if keep[i]:
            edges += [(i, j) for j in _bits(ahead)]
        else:
            through[i] = ahead
    return edges


def transitive_reduction(dag: Dag, kept: np.ndarray | None = None) -> list[tuple[int, int]]:
    """The fewest edges between the ``kept`` fragments (default all) that order them as the
    graph does: an edge implied by a longer path is left out (for drawing)."""
    offsets, succ = successors(dag)
    keep = kept.tolist() if kept is not None else [True] * dag.n
    reach = [0] * dag.n  # the kept fragments each one precedes
    nearest = [0] * dag.n  # ... those among them reached through fragments not kept only
    edges = []
    for i in reversed(topological_order(dag, (offsets, succ))):
        below = ahead = 0
        for j in succ[offsets[i]:offsets[i + 1]]:
            if keep[j]:
                ahead |= 1 << j
                below |= reach[j] | 1 << j
            else:
                ahead |= nearest[j]
                below |= reach[j]
        reach[i], nearest[i] = below, ahead
        if keep[i]:
            implied = 0
            for j in _bits(ahead):
                implied |= reach[j]
            edges += [(i, j) for j in _bits(ahead & ~implied)]
    return edges


def _bits(mask: int) -> list[int]:
    """The indices of the set bits, lowest first."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def indices(dag: Dag, ids: np.ndarray) -> np.ndarray:
    """The indices of fragments named by id (every id must be one of the dag's)."""
    order = np.argsort(dag.ids, kind="stable")
    return order[np.searchsorted(dag.ids[order], ids)]


def with_edges(dag: Dag, src: np.ndarray, dst: np.ndarray) -> Dag:
    """dag with the precedence edges src[k] -> dst[k] (indices) added."""
    n = max(dag.n, 1)
    edges = sorted_unique(np.concatenate([dag.src * n + dag.dst, np.asarray(src, np.int64) * n + dst]))
    return replace(dag, src=edges // n, dst=edges % n)


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
    chain (main's, as ``build`` chains them; none if they are not chained)."""
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
    return shared_library("libtareador_levels.so", [Path(__file__).with_name("levels.c")], {
        "bottom_levels": (None, [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                                 ctypes.c_void_p])})


def contract(dag: Dag, removed: np.ndarray) -> tuple[list[tuple[int, int]], list[int]]:
    """The schedule's edges with the ``removed`` fragments contracted out, in index order, where
    that adds no edge: a fragment with one predecessor or one successor (or two of each) is
    replaced by edges from each predecessor to each successor; the others stay, as the joins they
    are. Returns (edges as index pairs, the removed fragments that stay). Linear in the edges,
    where contracting every one (``bypass_edges``) is quadratic: a program that waits for all its
    tasks before creating the next ones would join each task to every later one."""
    succ: dict[int, set[int]] = {}
    pred: dict[int, set[int]] = {}
    for s, d in zip(dag.src.tolist(), dag.dst.tolist(), strict=True):
        succ.setdefault(s, set()).add(d)
        pred.setdefault(d, set()).add(s)
    stayed = []
    for v in np.flatnonzero(removed).tolist():
        before, after = pred.pop(v, set()), succ.pop(v, set())
        if len(before) * len(after) > len(before) + len(after):
            pred[v], succ[v] = before, after
            stayed.append(v)
            continue
        for p in before:
            succ[p].discard(v)
            succ[p] |= after
        for s in after:
            pred[s].discard(v)
            pred[s] |= before
    return [(s, d) for s, targets in succ.items() for d in targets], stayed
