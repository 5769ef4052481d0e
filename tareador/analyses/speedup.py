"""Speedup, efficiency and utilisation over core counts: the numbers of a strong-scaling study.

The reference is the simulated authentic (sequential) run: every instruction on one core with
no runtime overhead, i.e. T1. Times are seconds of the simulated machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tareador.analyses.table import Table, Tabular, unbounded
from tareador.simulation.list_scheduler import Schedule, simulate
from tareador.simulation.machine import Machine
from tareador.taskgraph.dag import Dag, bottom_levels, durations

STUDY_COLUMNS = (("cores", "count"), ("time", "float"), ("speedup", "float"), ("efficiency", "float"),
                 ("cores_used", "int"), ("busy_min", "float"), ("busy_max", "float"))


@dataclass
class Study(Tabular):
    t1: float  # seconds of the sequential run
    tinf: float  # critical path without runtime overhead
    schedules: list[Schedule]
    rate: float  # units (instructions, or ns when measured) per second
    overhead: int  # units each task instance's first fragment pays (task overhead and start cost)
    creation_cost: int = 0  # units a fragment pays per task it creates
    creation: str = "help-first"
    unit: str = "instructions"  # what the durations count: instructions, or ns (measured)

    @property
    def parallelism(self) -> float:
        return self.t1 / self.tinf if self.tinf else 1.0

    def table(self) -> Table:
        """One row per simulated machine; efficiency NaN and cores inf for the unbounded one.
        busy_min/busy_max: the least and most busy core's fraction of the makespan."""
        rows = []
        for s in self.schedules:
            time = s.makespan / self.rate
            speedup = self.t1 / time if time else 1.0
            busy = utilisation(s)
            rows.append((unbounded(s.cores), time, speedup, math.nan if s.cores is None else speedup / s.cores,
                         s.cores_used, float(busy.min()) if len(busy) else 0.0,
                         float(busy.max()) if len(busy) else 0.0))
        return Table.of("speedup", STUDY_COLUMNS, rows)

    def utilisation_table(self) -> Table:
        """The busy fraction of every core of every simulated machine (an unbounded one's cores are
        those it used)."""
        return Table.of("utilisation", (("cores", "count"), ("core", "int"), ("busy", "float")),
                        ((unbounded(s.cores), k, round(u, 4)) for s in self.schedules
                         for k, u in enumerate(utilisation(s).tolist())))

    def as_json(self) -> dict:
        return {"t1": self.t1, "tinf": self.tinf, "parallelism": self.parallelism, "overhead": self.overhead,
                "creation_cost": self.creation_cost, "creation": self.creation, "durations": self.unit,
                "instructions_per_second": self.rate, "results": self.table().records(),
                "utilisation": self.utilisation_table().records()}

    def __repr__(self) -> str:
        return (f"<Study T1 {self.t1:.6g} s, T-inf {self.tinf:.6g} s, parallelism {self.parallelism:.2f}, "
                f"{len(self.schedules)} machines: {', '.join(s.label for s in self.schedules)} cores>")


def study(dag: Dag, cores: list[int | None], policy: str, machine: Machine, overhead: int | None = None,
          progress=None, adjacency=None, unit: str = "instructions") -> Study:
    """Simulate every core count (None = unbounded); priorities are computed once, ``adjacency``
    (``dag.successors``) once for every study of one graph when given. The machine's runtime (creation
    model, costs of creating and starting a task) applies; ``overhead`` (units per task, default
    the machine's task_overhead) adds to its start cost."""
    costs = runtime_costs(machine, overhead)
    levels = bottom_levels(dag, dag.weight, adjacency)
    cp_levels = levels if costs == (0, 0) else bottom_levels(dag, durations(dag, *costs), adjacency)
    schedules = [simulate(dag, c, policy, costs[0], progress, cp_levels, machine.creation, costs[1])
                 for c in cores]
    return Study(t1=dag.t1 / machine.rate, tinf=max(levels, default=0) / machine.rate, schedules=schedules,
                 rate=machine.rate, overhead=costs[0], creation_cost=costs[1], creation=machine.creation, unit=unit)


def runtime_costs(machine: Machine, overhead: int | None = None) -> tuple[int, int]:
    """(units each task pays on the core that starts it, units its creator pays to create it)."""
    per_task = machine.task_overhead if overhead is None else overhead
    return (per_task + machine.seconds_to_units(machine.start_cost), machine.seconds_to_units(machine.creation_cost))


def utilisation(schedule: Schedule) -> np.ndarray:
    """Busy fraction of each core over the makespan."""
    busy = np.bincount(schedule.core, weights=schedule.finish - schedule.start, minlength=schedule.machine_cores)
    return busy / schedule.makespan if schedule.makespan else np.zeros(len(busy))


def parallelism_profile(schedule: Schedule) -> tuple[np.ndarray, np.ndarray]:
    """(times, running): from times[k] until times[k+1], running[k] instances run at once."""
    busy = schedule.finish > schedule.start
    times = np.concatenate([schedule.start[busy], schedule.finish[busy]])
    delta = np.concatenate([np.ones(busy.sum(), np.int64), -np.ones(busy.sum(), np.int64)])
    order = np.argsort(times, kind="stable")
    times, running = times[order], np.cumsum(delta[order])
    last = np.concatenate([times[1:] != times[:-1], [True]])  # the level after all changes at a time
    return times[last], running[last]
