"""What if one task type ran k times faster? Which type is worth optimising (thesis ch. 6.1).

A sequential profile points at the type that holds most of the work, but on a parallel machine
the run is limited by what it cannot overlap: in HP Linpack, making ``fact`` (0.49 % of the work)
twice as fast gave 24.5 % overall speedup on 64 cores, while ``update`` (97 %) gave under 10 %.
Neither share of work nor one critical path settles it (a slightly shorter path without the type
takes over), so every type is accelerated in turn and the whole run simulated again on each
machine, as the thesis' environment does; the ranking is by that simulated benefit. The share of
one critical path is reported beside the share of work because it is what explains the ranking.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from tareador.analyses.speedup import runtime_costs, study
from tareador.analyses.table import Table, Tabular, unbounded
from tareador.simulation.machine import Machine
from tareador.taskgraph.dag import Dag, bottom_levels, critical_path, successors
from tareador.taskgraph.model import PROGRAM


@dataclass(frozen=True)
class TaskType:
    name: str  # main's own code is PROGRAM, apart from a task that happens to be named main
    instances: int  # task instances (fragments for main's code)
    work: int  # instructions of all its fragments
    critical: int  # instructions of its fragments on the critical path of ``WhatIf.path``


WHATIF_COLUMNS = (("cores", "count"), ("rank", "int"), ("type", "str"), ("factor", "number"), ("time", "float"),
                  ("benefit", "float"), ("speedup", "float"), ("work_share", "float"),
                  ("critical_path_share", "float"))


@dataclass
class WhatIf(Tabular):
    """Simulated times in instructions; ``rate`` turns them into seconds."""

    types: list[TaskType]  # by work, largest first
    factors: list[float]  # math.inf: the type's fragments take no time at all
    cores: list[int | None]  # None: unbounded
    t1: int
    tinf: int
    path: list[int]  # the critical path the shares are measured on (Dag indices)
    baseline: list[int]  # makespan unaccelerated, per core count
    accelerated: np.ndarray  # int64 makespans, [type (as in types), factor, core count]
    rate: float
    policy: str
    overhead: int  # units each task pays to start (task overhead and the machine's start cost)
    creation_cost: int = 0  # units a fragment pays per task it creates
    creation: str = "help-first"
    unit: str = "instructions"  # or ns: measured durations

    def time(self, name: str, factor: float, cores: int | None) -> int:
        kind = next(k for k, t in enumerate(self.types) if t.name == name)
        return int(self.accelerated[kind, self.factors.index(factor), self.cores.index(cores)])

    def benefit(self, name: str, factor: float, cores: int | None) -> float:
        """Speedup over the unaccelerated run on the same machine, the thesis' "overall speedup"
        (1.245 is 24.5 % faster)."""
        return ratio(self.baseline[self.cores.index(cores)], self.time(name, factor, cores))

    def ranking(self, cores: int | None) -> list[TaskType]:
        """Most beneficial first: by the benefit of the first factor, ties by the next ones, then by
        work and name."""
        return sorted(self.types, key=lambda t: ([-self.benefit(t.name, k, cores) for k in self.factors],
                                                 -t.work, t.name))

    def work_share(self, t: TaskType) -> float:
        return t.work / self.t1 if self.t1 else 0.0

    def critical_share(self, t: TaskType) -> float:
        return t.critical / self.tinf if self.tinf else 0.0

    def table(self) -> Table:
        """One row per machine, task type and factor, ranked per machine; times in seconds."""
        return Table.of("whatif", WHATIF_COLUMNS, (
            (unbounded(c), rank, t.name, k, self.time(t.name, k, c) / self.rate, self.benefit(t.name, k, c),
             ratio(self.t1, self.time(t.name, k, c)), self.work_share(t), self.critical_share(t))
            for c in self.cores for rank, t in enumerate(self.ranking(c), 1) for k in self.factors))

    def as_json(self) -> dict:
        """Times in seconds; an infinite factor, core count or ratio is "inf" (JSON has no infinity)."""
        return {"t1": self.t1 / self.rate, "tinf": self.tinf / self.rate, "policy": self.policy,
                "overhead": self.overhead, "creation_cost": self.creation_cost, "creation": self.creation,
                "durations": self.unit, "instructions_per_second": self.rate,
                "factors": [label(k) for k in self.factors],
                "types": [{"type": t.name, "instances": t.instances, "instructions": t.work,
                           "work_share": self.work_share(t), "critical_path_instructions": t.critical,
                           "critical_path_share": self.critical_share(t)} for t in self.types],
                "unaccelerated": [{"cores": label(c), "time": m / self.rate, "speedup": label(ratio(self.t1, m))}
                                  for c, m in zip(self.cores, self.baseline)],
                "results": self.table().records()}

    def __repr__(self) -> str:
        return (f"<WhatIf {len(self.types)} task types x factors {', '.join(map(str, map(label, self.factors)))} "
                f"x cores {', '.join(str(label(c)) for c in self.cores)}>")


def ratio(before: int, after: int) -> float:
    """before / after; a run that takes no time at all is infinitely faster (or as fast, if the
    other took none either)."""
    if after:
        return before / after
    return math.inf if before else 1.0


def label(x: float | None):
    """A number for JSON and CSV: unbounded (None) and infinite values are "inf"."""
    return "inf" if x is None or x == math.inf else x


def type_names(dag: Dag) -> list[str]:
    """The task type of every fragment, main's own code as PROGRAM."""
    return [PROGRAM if m else n for n, m in zip(dag.names, dag.is_main.tolist())]


def accelerate(weight: np.ndarray, which: np.ndarray, factor: float) -> np.ndarray:
    """Weights with the ``which`` fragments ``factor`` times faster, to the nearest instruction
    (the simulator counts whole instructions)."""
    out = weight.copy()
    out[which] = 0 if factor == math.inf else np.rint(weight[which] / factor)
    return out


def whatif(dag: Dag, factors: list[float], cores: list[int | None], policy: str = "cp",
           machine: Machine = Machine(), overhead: int | None = None, types: list[str] | None = None,
           progress=None, unit: str = "instructions") -> WhatIf:
    """Simulate the run on every core count with each task type (all of them, or ``types``)
    accelerated by each factor in turn. The runtime overhead of a task is not the task's code,
    so it is not accelerated. ValueError for an unknown type or a factor that is not > 0."""
    bad = [k for k in factors if not k > 0]
    if bad:
        raise ValueError(f"acceleration factors must be numbers > 0, not {bad[0]}")
    start, creation_cost = runtime_costs(machine, overhead)
    names = np.array(type_names(dag), dtype=object)
    known = sorted(set(names.tolist()))
    unknown = [t for t in types or [] if t not in known]
    if unknown:
        raise ValueError(f"unknown task type {unknown[0]!r}; the trace has {', '.join(known)}")
    adjacency = successors(dag)
    levels = bottom_levels(dag, dag.weight, adjacency)
    path = critical_path(dag, dag.weight, levels, adjacency)
    on_path = np.zeros(dag.n, bool)
    on_path[path] = True
    counted = dag.is_main | dag.starts_instance
    table = []
    for name in dict.fromkeys(types or known):
        mine = names == name
        table.append(TaskType(name, int((mine & counted).sum()), int(dag.weight[mine].sum()),
                              int(dag.weight[mine & on_path].sum())))
    table.sort(key=lambda t: (-t.work, t.name))

    def makespans(weight: np.ndarray) -> list[int]:
        run = study(replace(dag, weight=weight), cores, policy, machine, overhead, progress, adjacency)
        return [s.makespan for s in run.schedules]

    return WhatIf(types=table, factors=list(factors), cores=list(cores), t1=dag.t1, tinf=max(levels, default=0),
                  path=path, baseline=makespans(dag.weight),
                  accelerated=np.array([[makespans(accelerate(dag.weight, names == t.name, k)) for k in factors]
                                        for t in table], np.int64).reshape(len(table), len(factors), len(cores)),
                  rate=machine.rate, policy=policy, overhead=start, creation_cost=creation_cost,
                  creation=machine.creation, unit=unit)
