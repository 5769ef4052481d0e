"""The idealised runtime of ``tareador simulate``: greedy list scheduling of a task trace on P
cores (or unboundedly many), in exact integer units of time (instructions, or nanoseconds when
the durations are measured).

A task starts the instant a core and its inputs are free, with no communication cost and only
the runtime costs the machine names (creating and starting a task): the model of a task
runtime's potential, not of a machine.

Whenever a core is free it takes the best ready fragment. Ready task instances wait in one
queue, ranked by the policy: ``cp`` by longest remaining path (bottom level), ``fifo`` by
creation order, ``bf`` by the order they became ready (breadth first: one FIFO ready queue, what
libgomp and Nanos++ do by default); ties go to creation order. A fragment that ends by creating
a task is followed at once, on its own core, by the creation model's choice: ``help-first``
(libgomp, Nanos++) the creator's next fragment, the child queued; ``work-first`` (Cilk, TBB) the
child, the creator's next fragment queued (a child whose inputs are not ready is queued and the
creator goes on). A creator's next fragment that cannot run then (it waits for data: the
taskwait pattern; or the child took the core) gives the core up and, once ready, goes before
every queued task instance. The Dimemas model of
``tareador replay`` (scheduling points, latencies, links) is simulation/dimemas_engine.py. The trace
becomes flat arrays once (taskgraph/dag.py); each simulation is then one event loop over ints
and heapq, so millions of instances simulate in seconds.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from tareador.simulation.machine import CREATION_MODELS
from tareador.simulation.policies import LIST_SCHEDULER
from tareador.taskgraph.dag import Dag, DependencyCycle, bottom_levels, durations, indegrees, successors

POLICIES = LIST_SCHEDULER.names


def policy_for(machine_policy: str | None, given: str | None = None) -> str:
    """The policy a simulation runs: the one asked for (UserError if the list scheduler has none
    such), else the machine file's when the list scheduler has it (cp, fifo; not Dimemas' rr), else cp."""
    return LIST_SCHEDULER.choose(machine_policy, given)



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

    def __repr__(self) -> str:
        return f"<Schedule {len(self.start)} fragments on {self.label} cores ({self.policy}): makespan {self.makespan}>"


def simulate(dag: Dag, cores: int | None, policy: str = "cp", overhead: int = 0, progress=None,
             adjacency=None, levels: list[int] | None = None, creation: str = "help-first",
             creation_cost: int = 0) -> Schedule:
    """Greedy list scheduling (see the module's docstring) of ``dag`` on ``cores`` (None: as many
    as can run at once, so the makespan is exactly the critical path). ``overhead`` is paid by
    each task instance's first fragment, ``creation_cost`` by a creating fragment per task it
    creates (``durations``); ``adjacency`` and ``levels`` let a sweep compute them once."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, not {policy!r}")
    if creation not in CREATION_MODELS:
        raise ValueError(f"creation must be one of {CREATION_MODELS}, not {creation!r}")
    n = dag.n
    duration = durations(dag, overhead, creation_cost)
    offsets, succ = adjacency or successors(dag)
    key = _priorities(dag, policy, cores, duration, (offsets, succ), levels)
    dur = duration.tolist()
    indegree = indegrees(dag)
    # What an ending fragment's core goes on with: its continuation; work-first, its child first.
    follow = dag.next_fragment.tolist()
    child = _first_children(dag).tolist() if creation == "work-first" else [-1] * n
    continuation = (~dag.starts_instance).tolist()
    start, finish, core, taken = [0] * n, [0] * n, [0] * n, [False] * n
    tasks = [key[i] for i in range(n) if indegree[i] == 0]  # ready task instances, by policy
    heapq.heapify(tasks)
    resumed: list[int] = []  # ready continuations, in the order they became ready: before tasks
    breadth_first = policy == "bf"
    became_ready = 1  # the k-th fragment to become ready later queues with key k * n + index
    running: list[int] = []  # finish * n + index
    # Cores are numbered as they are first needed: every freed core is below next_core, so the
    # lowest free core is the lowest freed one, else next_core, and idle cores cost nothing.
    free: list[int] = []
    limit = n if cores is None else min(cores, n)
    next_core = now = done = reported = 0
    push, pop = heapq.heappush, heapq.heappop

    def run(i: int, c: int) -> None:
        start[i] = now
        finish[i] = f = now + dur[i]
        core[i] = c
        taken[i] = True
        push(running, f * n + i)

    while tasks or resumed or running:
        while (resumed or tasks) and (free or next_core < limit):
            i = pop(resumed if resumed else tasks) % n
            if free:
                run(i, pop(free))
            else:
                run(i, next_core)
                next_core += 1
        now = running[0] // n
        ended, ready = [], []
        while running and running[0] // n == now:
            i = pop(running) % n
            ended.append(i)
            done += 1
            for j in succ[offsets[i]:offsets[i + 1]]:
                indegree[j] -= 1
                if indegree[j] == 0:
                    ready.append(j)
        for i in ended:
            j = child[i] if child[i] >= 0 and indegree[child[i]] == 0 and not taken[child[i]] else follow[i]
            if j >= 0 and indegree[j] == 0 and not taken[j]:
                run(j, core[i])
            else:
                push(free, core[i])
        for j in ready:
            if not taken[j]:
                push(resumed if continuation[j] else tasks,
                     became_ready * n + j if continuation[j] or breadth_first else key[j])
                became_ready += 1
        if progress is not None and done >= reported + 65536:
            progress(done - reported)
            reported = done
    if done != n:
        raise DependencyCycle()
    if progress is not None and done > reported:
        progress(done - reported)
    return Schedule(cores=cores, policy=policy, start=np.array(start, np.int64), finish=np.array(finish, np.int64),
                    core=np.array(core, np.int32), makespan=max(finish, default=0))


def _priorities(dag: Dag, policy: str, cores: int | None, duration: np.ndarray, adjacency,
                levels: list[int] | None) -> list[int]:
    """Each instance's key in the ready queue, smaller first: ``cp`` by bottom level, else
    creation order (``bf`` replaces it by the order instances become ready)."""
    n = dag.n
    if policy != "cp" or cores is None:
        return list(range(n))
    levels = levels or bottom_levels(dag, duration, adjacency)
    top = max(levels, default=0) + 1
    return [(top - lv) * n + i for i, lv in enumerate(levels)]


def _first_children(dag: Dag) -> np.ndarray:
    """The first task instance each fragment created (its lowest index), -1 for none."""
    heads = np.flatnonzero(dag.creator >= 0)
    out = np.full(dag.n, dag.n, np.int64)
    np.minimum.at(out, dag.creator[heads], heads)
    return np.where(out == dag.n, -1, out)
