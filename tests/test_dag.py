"""The graph algorithms of taskgraph/dag.py against networkx's, on random traces, and the order
they walk when creation order is not one."""

from __future__ import annotations

import random

import networkx as nx
import numpy as np
import pytest

from tareador.taskgraph.dag import DependencyCycle, bypass_edges, reaches, span, topological_order, transitive_reduction
from tests.helpers import make, random_trace

pytestmark = pytest.mark.fast  # no program compiled, traced or launched (make test-fast)


def graph_of(dag) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(range(dag.n))
    g.add_edges_from(zip(dag.src.tolist(), dag.dst.tolist()))
    return g


def contracted(g: nx.DiGraph, removed: list[int]) -> nx.DiGraph:
    """Each removed node's predecessors joined to its successors, one node after the other."""
    g = g.copy()
    for node in removed:
        g.add_edges_from((p, s) for p in g.predecessors(node) for s in g.successors(node))
        g.remove_node(node)
    return g


def longest(g: nx.DiGraph, weight: list[int]) -> int:
    finish: dict[int, int] = {}
    for node in nx.topological_sort(g):
        finish[node] = weight[node] + max((finish[p] for p in g.predecessors(node)), default=0)
    return max(finish.values(), default=0)


@pytest.mark.parametrize("seed", range(20))
def test_reductions_and_reachability_match_networkx(seed):
    rng = random.Random(seed)
    dag = random_trace(rng, rng.randint(2, 60)).dag
    g = graph_of(dag)
    assert set(transitive_reduction(dag)) == set(nx.transitive_reduction(g).edges)
    assert set(bypass_edges(dag, np.ones(dag.n, bool))) == set(g.edges)
    folded = contracted(g, np.flatnonzero(dag.is_main).tolist())
    assert set(bypass_edges(dag, ~dag.is_main)) == set(folded.edges)
    assert set(transitive_reduction(dag, ~dag.is_main)) == set(nx.transitive_reduction(folded).edges)
    src, dst = np.divmod(np.arange(dag.n * dag.n), dag.n)
    paths = [i == j or nx.has_path(g, i, j) for i, j in zip(src.tolist(), dst.tolist())]
    assert reaches(dag, src, dst).tolist() == paths
    assert span(dag) == longest(g, dag.weight.tolist())


@pytest.mark.parametrize("seed", range(10))
def test_order_where_dependencies_run_against_creation(seed):
    """main creates 8 leaf tasks whose RAW dependencies follow a random order of them: some go
    from a later-created task to an earlier one, so creation order is not a topological one."""
    rng = random.Random(seed)
    rows = [("main", -1, 1)] + [("t", 0, rng.randint(1, 9)) for _ in range(8)] + [("main", -1, 1)]
    ranked = rng.sample(range(1, 9), 8)
    raw = [(ranked[a], ranked[b]) for a in range(8) for b in range(a + 1, 8) if rng.random() < 0.3]
    assert any(s > d for s, d in raw)
    dag = make(rows, raw).dag
    order = list(topological_order(dag))
    position = {node: k for k, node in enumerate(order)}
    assert sorted(order) == list(range(dag.n))
    assert all(position[s] < position[d] for s, d in zip(dag.src.tolist(), dag.dst.tolist()))
    assert span(dag) == longest(graph_of(dag), dag.weight.tolist())


def test_a_cycle_has_no_order():
    t = make([("main", -1, 1), ("a", 0, 1), ("b", 0, 1)], [(1, 2), (2, 1)])
    with pytest.raises(DependencyCycle, match="dependency cycle"):
        topological_order(t.dag)
    with pytest.raises(ValueError, match="dependency cycle"):
        t.tinf  # noqa: B018 (the property raises)
