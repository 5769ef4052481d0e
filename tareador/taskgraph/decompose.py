"""Coarser task decompositions of a traced run, derived from its finest one without tracing again.

``tareador explore`` traces the program once with every candidate function as a (nested) task:
the finest decomposition. Any coarser one, a set of task types, is then obtained by merging:
an instance whose type is not a task in it is folded into its nearest enclosing instance that
is (or into main's code); consecutive fragments of one enclosing instance with no task starting
or ending between them become one fragment, their instructions added up; dependencies map to
the merged fragments, and those inside one fragment vanish.

This is exact because the sequential run is the same whatever the decomposition: the task
boundaries of a coarser one are a subset of the finest one's, so the fragments of the coarser
one are unions of consecutive finest fragments, and the last writer of every byte read is
the same write (a task's writes to its private stack make it their writer, see shadow.c
``analyse``). Two things are not carried over: byte counts of merged
edges add up the bytes each finest fragment read (a byte read by two of them counts twice),
and reads of never-written stack bytes (uninitialised locals) may differ, as the private
stack of a task depends on where tasks start. ``tests/test_explore.py`` checks merged
decompositions against direct traces.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tareador.taskgraph.dag import Dag
from tareador.taskgraph.model import Dependency, Fragment, TaskTrace


@dataclass(frozen=True)
class Recording:
    """The finest decomposition, its graph and its dependencies as arrays, read once for the many
    merges of a search."""

    trace: TaskTrace
    dag: Dag  # trace.dag: ids are indices
    dep_src: np.ndarray
    dep_dst: np.ndarray
    dep_label: np.ndarray  # index into labels
    dep_bytes: np.ndarray
    labels: list[tuple[str, str]]  # (kind, object)


def recording(finest: TaskTrace) -> Recording:
    dag, deps = finest.dag, finest.deps
    m = len(deps)
    if not np.array_equal(dag.ids, np.arange(dag.n)):
        raise ValueError("the trace's fragment ids are not 0, 1, ... in order: it cannot be merged")
    codes: dict[tuple[str, str], int] = {}
    label = np.fromiter((codes.setdefault((d.kind, d.object), len(codes)) for d in deps), np.int64, m)
    return Recording(finest, dag, np.fromiter((d.src for d in deps), np.int64, m),
                     np.fromiter((d.dst for d in deps), np.int64, m),
                     label, np.fromiter((d.bytes for d in deps), np.int64, m), list(codes))


def merge(finest: TaskTrace | Recording, tasks: set[str] | frozenset[str]) -> TaskTrace:
    """The decomposition of the run in which only the instances named in ``tasks`` are tasks."""
    r = finest if isinstance(finest, Recording) else recording(finest)
    rows, dag = r.trace.fragments, r.dag
    n = len(rows)
    ids = np.arange(n)
    is_main = dag.is_main
    kept = is_main | np.fromiter((name in tasks for name in dag.names), bool, n)
    # Each instance's owner: itself if kept, else its creator's owner (pointer jumping: parents
    # are created before their children, so the chains end at main's instance).
    up = np.where(kept, ids, dag.instance[np.where(is_main, ids, dag.parent)])
    while True:
        jumped = up[up]
        if np.array_equal(jumped, up):
            break
        up = jumped
    owner = up[dag.instance]
    new = np.ones(n, bool)
    new[1:] = owner[1:] != owner[:-1]
    merged = np.cumsum(new) - 1
    firsts = np.flatnonzero(new)
    lasts = np.append(firsts[1:] - 1, n - 1)
    heads = owner[firsts]
    merged_instance = merged[heads]
    merged_parent = np.where(is_main[heads], -1, merged[np.where(is_main[heads], 0, dag.parent[heads])])
    work = np.add.reduceat(dag.weight, firsts) if n else dag.weight
    fragments = [Fragment(id=k, name=dag.names[h], instance=i, parent=p, start=rows[f].start, end=rows[last].end,
                              instructions=w)
                 for k, (h, i, p, f, last, w) in enumerate(zip(heads.tolist(), merged_instance.tolist(),
                                                              merged_parent.tolist(), firsts.tolist(),
                                                              lasts.tolist(), work.tolist()))]
    return TaskTrace(fragments, _merged_deps(r, merged), r.trace.objects, {}, None)


def _merged_deps(r: Recording, merged: np.ndarray) -> list[Dependency]:
    """Dependencies between merged fragments, one per (src, dst, kind, object), bytes summed."""
    src, dst = merged[r.dep_src], merged[r.dep_dst]
    between = src != dst
    src, dst, label, size = src[between], dst[between], r.dep_label[between], r.dep_bytes[between]
    order = np.lexsort((label, dst, src))
    src, dst, label, size = src[order], dst[order], label[order], size[order]
    first = np.ones(len(src), bool)
    first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1]) | (label[1:] != label[:-1])
    starts = np.flatnonzero(first)
    total = np.add.reduceat(size, starts) if len(starts) else size
    return [Dependency(s, d, *r.labels[int(lab)], b) for s, d, lab, b in
            zip(src[starts].tolist(), dst[starts].tolist(), label[starts].tolist(), total.tolist())]


def task_tree(finest: TaskTrace) -> tuple[frozenset[str], dict[str, frozenset[str]]]:
    """(the types main creates directly, {type: the types its instances create directly}) of the
    finest decomposition: the tree of potential tasks the search walks down."""
    by_id = {t.id: t for t in finest.fragments}
    top: set[str] = set()
    children: dict[str, set[str]] = {}
    for t in finest.fragments:
        if not t.starts_instance or t.is_main:
            continue
        creator = by_id[t.parent]
        if creator.is_main:
            top.add(t.name)
        else:
            children.setdefault(creator.name, set()).add(t.name)
    return frozenset(top), {k: frozenset(v) for k, v in children.items()}
