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
becomes flat arrays once (taskgraph/dag.py); each simulation is then one event loop over them
in C (list_scheduler.c), so a million instances simulate in about a second per core count.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from tareador.native import shared_library
from tareador.simulation.machine import CREATION_MODELS
from tareador.simulation.policies import LIST_SCHEDULER
from tareador.taskgraph.dag import Dag, DependencyCycle, bottom_levels, durations

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
             levels: list[int] | None = None, creation: str = "help-first", creation_cost: int = 0) -> Schedule:
    """Greedy list scheduling (see the module's docstring) of ``dag`` on ``cores`` (None: as many
    as can run at once, so the makespan is exactly the critical path). ``overhead`` is paid by
    each task instance's first fragment, ``creation_cost`` by a creating fragment per task it
    creates (``durations``); ``levels`` lets a sweep compute the bottom levels once."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, not {policy!r}")
    if creation not in CREATION_MODELS:
        raise ValueError(f"creation must be one of {CREATION_MODELS}, not {creation!r}")
    if cores is not None and not (isinstance(cores, int) and cores >= 1):
        raise ValueError(f"cores must be a whole number >= 1, or None for unbounded, not {cores!r}")
    n = dag.n
    duration = durations(dag, overhead, creation_cost)
    offsets, succ = _adjacency(dag)
    out = {name: np.zeros(n, np.int64) for name in ("start", "finish", "core")}
    arrays = dict(out, offsets=offsets, succ=succ, duration=np.ascontiguousarray(duration, np.int64),
                  priority=_priorities(dag, policy, cores, duration, levels),
                  indegree=np.bincount(dag.dst, minlength=n).astype(np.int64),
                  follow=np.ascontiguousarray(dag.next_fragment, np.int64),
                  child=_first_children(dag) if creation == "work-first" else np.full(n, -1, np.int64),
                  continuation=np.ascontiguousarray(~dag.starts_instance, np.uint8))
    callback = _PROGRESS(progress) if progress is not None else _PROGRESS()
    struct = _ScheduleStruct(n=n, limit=n if cores is None else min(cores, n), breadth_first=policy == "bf",
                             progress=callback, **{name: a.ctypes.data for name, a in arrays.items()})
    done = _library().list_schedule(ctypes.byref(struct))
    if done < 0:
        raise MemoryError("the list scheduler ran out of memory")
    if done != n:
        raise DependencyCycle()
    return Schedule(cores=cores, policy=policy, start=out["start"], finish=out["finish"],
                    core=out["core"].astype(np.int32), makespan=int(out["finish"].max(initial=0)))


def _adjacency(dag: Dag) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, successors) as int64 arrays: the edges grouped by source (a Dag's already are)."""
    src, dst = dag.src, dag.dst
    if not bool((src[1:] >= src[:-1]).all()):
        order = np.argsort(src, kind="stable")
        src, dst = src[order], dst[order]
    offsets = np.zeros(dag.n + 1, np.int64)
    np.cumsum(np.bincount(src, minlength=dag.n), out=offsets[1:])
    return offsets, np.ascontiguousarray(dst, np.int64)


def _priorities(dag: Dag, policy: str, cores: int | None, duration: np.ndarray,
                levels: list[int] | None) -> np.ndarray:
    """Each instance's major key in the ready queue, smaller first, its index breaking ties:
    ``cp`` by bottom level, else creation order (``bf`` replaces it by the order instances
    become ready)."""
    if policy != "cp" or cores is None:
        return np.zeros(dag.n, np.int64)
    level = np.asarray(levels if levels is not None else bottom_levels(dag, duration), np.int64)
    return level.max(initial=0) + 1 - level


def _first_children(dag: Dag) -> np.ndarray:
    """The first task instance each fragment created (its lowest index), -1 for none."""
    heads = np.flatnonzero(dag.creator >= 0)
    out = np.full(dag.n, dag.n, np.int64)
    np.minimum.at(out, dag.creator[heads], heads)
    return np.where(out == dag.n, -1, out)


_PROGRESS = ctypes.CFUNCTYPE(None, ctypes.c_int64)


class _ScheduleStruct(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int64), ("limit", ctypes.c_int64), ("offsets", ctypes.c_void_p),
                ("succ", ctypes.c_void_p), ("duration", ctypes.c_void_p), ("priority", ctypes.c_void_p),
                ("indegree", ctypes.c_void_p), ("follow", ctypes.c_void_p), ("child", ctypes.c_void_p),
                ("continuation", ctypes.c_void_p), ("breadth_first", ctypes.c_int), ("start", ctypes.c_void_p),
                ("finish", ctypes.c_void_p), ("core", ctypes.c_void_p), ("progress", _PROGRESS)]


@cache
def _library() -> ctypes.CDLL:
    return shared_library("libtareador_list_scheduler.so", [Path(__file__).with_name("list_scheduler.c")],
                          {"list_schedule": (ctypes.c_int64, [ctypes.POINTER(_ScheduleStruct)])})
