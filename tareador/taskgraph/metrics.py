"""Graph construction and the metrics students report: T1, T-infinity, parallelism."""

from __future__ import annotations

from collections.abc import Iterable

import networkx as nx

from tareador.taskgraph.model import RAW, Dependency, Fragment


def schedule_edges(tasks: list[Fragment], deps: Iterable[Dependency]) -> set[tuple[int, int]]:
    """Every precedence constraint of the potential task-parallel run (see model.py)."""
    ids = {t.id for t in tasks}
    edges = {(d.src, d.dst) for d in deps if d.kind == RAW and d.src != d.dst}
    last_fragment: dict[int, int] = {}
    for t in sorted(tasks, key=lambda t: t.id):
        if t.instance in last_fragment:
            edges.add((last_fragment[t.instance], t.id))
        elif t.parent in ids:
            edges.add((t.parent, t.id))
        last_fragment[t.instance] = t.id
    return edges


def critical_path_length(tasks: list[Fragment], deps: Iterable[Dependency]) -> int:
    """Longest instruction-weighted path through the schedule constraints.

    A Kahn sort rather than id order: id order is topological for every trace tareador writes,
    but a hand-made or corrupt one may say otherwise, and that must be reported, not miscounted.
    """
    if not tasks:
        return 0
    index = {t.id: i for i, t in enumerate(tasks)}
    weight = [t.instructions for t in tasks]
    succs: list[list[int]] = [[] for _ in tasks]
    indegree = [0] * len(tasks)
    for s, d in schedule_edges(tasks, deps):
        succs[index[s]].append(index[d])
        indegree[index[d]] += 1
    finish = list(weight)
    ready = [i for i, n in enumerate(indegree) if n == 0]
    while ready:
        i = ready.pop()
        for j in succs[i]:
            finish[j] = max(finish[j], finish[i] + weight[j])
            indegree[j] -= 1
            if indegree[j] == 0:
                ready.append(j)
    if any(indegree):
        raise ValueError("dependency cycle between task instances: the trace is inconsistent")
    return max(finish)


def build_graph(tasks: list[Fragment], deps: Iterable[Dependency]) -> nx.DiGraph:
    deps = list(deps)
    g = nx.DiGraph()
    for t in tasks:
        g.add_node(t.id, name=t.name, instructions=t.instructions, parent=t.parent)
    for d in deps:
        if d.src == d.dst:
            continue
        if not g.has_edge(d.src, d.dst):
            g.add_edge(d.src, d.dst, deps=[], order=False)
        g.edges[d.src, d.dst]["deps"].append(d)
    for s, d in schedule_edges(tasks, deps):
        if not g.has_edge(s, d):
            g.add_edge(s, d, deps=[], order=True)
    return g
