"""The idealised runtime of ``tareador simulate``: greedy list scheduling of a task trace on P
cores (or unboundedly many), in exact integer instructions.

A task starts the instant a core and its inputs are free, with no dispatch or communication
cost: the model of a task runtime's potential, not of a machine. The Dimemas model of
``tareador replay`` (scheduling points, latencies, links) is simulation/dimemas_engine.py. The trace
becomes flat arrays once (taskgraph/dag.py); each simulation is then one event loop over ints
and heapq, so millions of instances simulate in seconds.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from tareador.taskgraph.dag import Dag, DependencyCycle, bottom_levels, durations, indegrees, successors

POLICIES = ("cp", "fifo", "bf")


@dataclass
class Schedule:
    """One simulated run; times in instructions (seconds = instructions / Machine.rate)."""

    cores: int | None  # None: unbounded
    policy: str
    start: np.ndarray
    finish: np.ndarray
    core: np.ndarray  # 0-based core of each instance
    makespan: int

    @property
    def cores_used(self) -> int:
        return int(self.core.max()) + 1 if len(self.core) else 0

    @property
    def machine_cores(self) -> int:
        """Cores of the simulated machine, idle ones included; as many as ran at once if unbounded."""
        return self.cores if self.cores is not None else self.cores_used

    @property
    def label(self) -> str:
        return "inf" if self.cores is None else str(self.cores)


def simulate(dag: Dag, cores: int | None, policy: str = "cp", overhead: int = 0, progress=None,
             adjacency=None, levels: list[int] | None = None) -> Schedule:
    """Greedy list scheduling: whenever a core is free it takes the best ready instance.

    ``cp`` ranks ready instances by longest remaining path (bottom level), ``fifo`` by creation
    order, ``bf`` by the order they became ready (breadth first: one FIFO ready queue, what libgomp
    and Nanos++ do by default); ties go to creation order. With ``cores=None`` every instance starts as soon as its
    predecessors end, so the makespan is exactly the critical path. ``adjacency`` and ``levels``
    let a sweep over core counts compute them once.
    """
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, not {policy!r}")
    n = dag.n
    duration = durations(dag, overhead)
    offsets, succ = adjacency or successors(dag)
    if policy == "cp" and cores is not None:
        levels = levels or bottom_levels(dag, duration, (offsets, succ))
        top = max(levels, default=0) + 1
        key = [(top - lv) * n + i for i, lv in enumerate(levels)]  # smaller = runs first
    else:
        key = list(range(n))
    dur = duration.tolist()
    indegree = indegrees(dag)
    start = [0] * n
    finish = [0] * n
    core = [0] * n
    ready = [key[i] for i in range(n) if indegree[i] == 0]
    heapq.heapify(ready)
    breadth_first = policy == "bf"
    became_ready = 1  # bf: the k-th instance to become ready later queues with key k * n + index
    running: list[int] = []  # finish * n + index
    # Cores are numbered as they are first needed: every freed core is below next_core, so the
    # lowest free core is the lowest freed one, else next_core, and idle cores cost nothing.
    free: list[int] = []
    limit = n if cores is None else min(cores, n)
    next_core = 0
    now = 0
    done = reported = 0
    push, pop = heapq.heappush, heapq.heappop
    while ready or running:
        while ready and (free or next_core < limit):
            i = pop(ready) % n
            if free:
                c = pop(free)
            else:
                c = next_core
                next_core += 1
            start[i] = now
            finish[i] = f = now + dur[i]
            core[i] = c
            push(running, f * n + i)
        now = running[0] // n
        while running and running[0] // n == now:
            i = pop(running) % n
            push(free, core[i])
            done += 1
            for j in succ[offsets[i]:offsets[i + 1]]:
                indegree[j] -= 1
                if indegree[j] == 0:
                    if breadth_first:
                        push(ready, became_ready * n + j)
                        became_ready += 1
                    else:
                        push(ready, key[j])
        if progress is not None and done >= reported + 65536:
            progress(done - reported)
            reported = done
    if done != n:
        raise DependencyCycle()
    if progress is not None and done > reported:
        progress(done - reported)
    return Schedule(cores=cores, policy=policy, start=np.array(start, np.int64), finish=np.array(finish, np.int64),
                    core=np.array(core, np.int32), makespan=max(finish, default=0))
