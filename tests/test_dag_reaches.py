"""taskgraph.dag.reaches: exact reachability over the array DAG, checked against a plain search."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tareador.taskgraph.dag import Dag, reaches

pytestmark = pytest.mark.fast  # no program compiled, traced or launched (make test-fast)


def dag(n: int, main: list[int], edges: set[tuple[int, int]]) -> Dag:
    e = np.array(sorted(edges), np.int64).reshape(-1, 2)
    instance, parent = np.arange(n), np.zeros(n, np.int64)  # tasks: each its own instance
    instance[main], parent[main] = main[:1] * len(main), -1  # main's fragments: one instance
    none = np.zeros(0, np.int64)
    next_fragment = np.full(n, -1, np.int64)
    next_fragment[main[:-1]] = main[1:]  # main's fragments are one instance's, in order
    return Dag(ids=np.arange(n), counter=np.arange(n), names=["t"] * n, instance=instance, parent=parent,
               next_fragment=next_fragment, weight=np.ones(n, np.int64), src=e[:, 0], dst=e[:, 1],
               dep_src=none, dep_dst=none, dep_bytes=none)


def searched(edges: set[tuple[int, int]], u: int, v: int) -> bool:
    seen, stack = {u}, [u]
    while stack:
        w = stack.pop()
        for a, b in edges:
            if a == w and b not in seen:
                seen.add(b)
                stack.append(b)
    return v in seen


def test_through_mains_chain():
    """main's fragments 0, 2, 5 in a chain; 0 creates task 1, 2 creates 3 (which creates 4), 5
    reads what 1 wrote. 1 reaches 5 and everything after it; 3 reaches only its child 4; 4 does
    not reach 5 (nothing orders them)."""
    edges = {(0, 2), (2, 5), (0, 1), (2, 3), (3, 4), (1, 5), (5, 6)}
    d = dag(7, [0, 2, 5], edges)
    pairs = [(1, 5), (1, 6), (3, 4), (4, 5), (1, 3), (0, 4), (6, 1), (2, 2)]
    got = reaches(d, np.array([u for u, _ in pairs]), np.array([v for _, v in pairs]))
    assert got.tolist() == [True, True, True, False, False, True, False, True]


def test_random_graphs_agree_with_a_search():
    """300 random DAGs in creation order (a third of their nodes main's, chained or not: without
    the chain the shortcut must not be taken), 50 pairs each."""
    rng = random.Random(14)
    for _ in range(300):
        n = rng.randint(1, 40)
        main = [i for i in range(n) if rng.random() < 0.3]
        edges = {(a, b) for a, b in zip(main, main[1:], strict=False)} if rng.random() < 0.5 else set()
        for _ in range(rng.randint(0, 3 * n)):
            a, b = rng.randrange(n), rng.randrange(n)
            if a < b:
                edges.add((a, b))
        pairs = [(rng.randrange(n), rng.randrange(n)) for _ in range(50)]
        got = reaches(dag(n, main, edges), np.array([u for u, _ in pairs]), np.array([v for _, v in pairs]))
        assert got.tolist() == [u == v or searched(edges, u, v) for u, v in pairs]
