"""Automatic search for a task decomposition (thesis ch. 6.3), from one traced run.

The walk starts from the coarsest decomposition (the calls main makes are the tasks) and at each
step *breaks* one task type: its instances stop being tasks and the types its instances call
become tasks (a type that calls none becomes sequential code), until no task is left. Which one
is broken is the thesis' heuristic 1: per task type i of the current decomposition,

    cost_i = l_i^p1 / sum_j l_j^p1  +  d_i^p2 / sum_j d_j^p2  +  c_i^p3 / sum_j c_j^p3

l_i the longest instance (its own instructions), d_i the largest number of RAW dependencies of
one instance (distinct instances it depends on or that depend on it, main's code included),
c_i the sum over the time its instances run of time / number of instances running at once
(on the simulated target machine); the highest cost is broken, ties by name. Every visited
decomposition is simulated on the target machine (heuristic 2: the whole walk is made and the
best kept). Speedups within a tolerance of the highest are ties, and ties go to fewer
instances: a finer decomposition 0.03 % faster is not worth its many more tasks, as a
simulated figure is no closer than that to a real run. The best step's idle task types (timers,
set-up code that happened to be functions: in all no more work than the tolerance of its
T-inf, and no speedup lost beyond the tolerance without them) are then dropped from it, the
cheapest first. Each decomposition is a merge of the recorded one
(tareador.taskgraph.decompose), never a new trace.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from tareador.analyses.speedup import parallelism_profile, study
from tareador.analyses.table import Table, Tabular
from tareador.simulation.machine import Machine
from tareador.taskgraph.decompose import Recording, merge, recording, task_tree
from tareador.taskgraph.model import RAW, TaskTrace

METRICS = ("length", "dependencies", "concurrency")
DEFAULT_WEIGHTS = (1.0, 1.0, 3.0)
DEFAULT_TOLERANCE = 0.01  # speedups within 1 % of each other are ties


@dataclass(frozen=True)
class TypeCost:
    name: str
    length: int  # l: instructions of its longest instance
    dependencies: int  # d: most RAW dependencies of one instance
    concurrency: float  # c: instructions of its instances, each divided by how many ran at once
    normalised: tuple[float, float, float]  # the three terms of the cost, each x^p / sum x^p

    @property
    def cost(self) -> float:
        return sum(self.normalised)

    @property
    def dominant(self) -> str:
        """The metric that weighs most in its cost."""
        return METRICS[int(np.argmax(self.normalised))]


@dataclass(frozen=True)
class Step:
    index: int
    tasks: tuple[str, ...]  # the decomposition: its task types, sorted
    instances: int
    t1: int  # instructions
    tinf: int
    time: float  # seconds on the target machine
    speedup: float  # over T1
    costs: tuple[TypeCost, ...]  # of its task types, by name
    broken: str | None  # the type broken to reach the next step (None: sequential code, the end)
    dropped: tuple[str, ...] = ()  # the best only: types of step `index` that changed nothing, not tasks here

    @property
    def parallelism(self) -> float:
        return self.t1 / self.tinf if self.tinf else 1.0

    def cost_of(self, name: str) -> TypeCost:
        return next(c for c in self.costs if c.name == name)


EXPLORATION_COLUMNS = (("step", "int"), ("tasks", "int"), ("instances", "int"), ("t1", "int"), ("tinf", "int"),
                       ("parallelism", "float"), ("time", "float"), ("speedup", "float"), ("broken", "str"),
                       ("dominant", "str"), ("cost_length", "float"), ("cost_dependencies", "float"),
                       ("cost_concurrency", "float"), ("decomposition", "str"))


@dataclass
class Exploration(Tabular):
    steps: list[Step]
    best: Step  # the step of the walk chosen (see best_step), without the types that changed nothing
    cores: int | None
    policy: str
    weights: tuple[float, float, float]
    rate: float
    candidates: tuple[str, ...] = field(default=())  # the types of the recorded (finest) decomposition
    tolerance: float = DEFAULT_TOLERANCE

    def table(self) -> Table:
        """One row per step of the walk; the type it broke, with the normalised terms of its cost
        (empty and NaN at the last step, which breaks nothing)."""
        rows = []
        for s in self.steps:
            cost = s.cost_of(s.broken) if s.broken else None
            rows.append((s.index, len(s.tasks), s.instances, s.t1, s.tinf, round(s.parallelism, 6), s.time,
                         round(s.speedup, 6), s.broken or "", cost.dominant if cost else "",
                         *(tuple(round(x, 6) for x in cost.normalised) if cost else (math.nan,) * 3),
                         ";".join(s.tasks)))
        return Table.of("explore", EXPLORATION_COLUMNS, rows)

    def __repr__(self) -> str:
        return (f"<Exploration {len(self.steps)} steps, best: step {self.best.index} "
                f"({len(self.best.tasks)} task types, speedup {self.best.speedup:.2f})>")


def best_step(steps: list[Step], tolerance: float) -> Step:
    """Of the steps whose speedup is within tolerance (a fraction) of the highest, the one with
    the fewest instances; then the higher speedup, then the earlier step."""
    highest = max(s.speedup for s in steps)
    ties = [s for s in steps if s.speedup >= highest * (1 - tolerance)]
    return min(ties, key=lambda s: (s.instances, -s.speedup, s.index))


def explore(finest: TaskTrace, cores: int | None, machine: Machine, policy: str = "cp",
            weights: tuple[float, float, float] = DEFAULT_WEIGHTS, overhead: int | None = None,
            progress=None, tolerance: float = DEFAULT_TOLERANCE) -> Exploration:
    """The thesis' walk from main's calls down to sequential code over the recorded run."""
    top, children = task_tree(finest)
    recorded = recording(finest)
    current, broken = set(top), set()
    steps: list[Step] = []

    def evaluate(tasks: set[str], index: int) -> Step:
        return _evaluate(index, merge(recorded, tasks), cores, machine, policy, weights, overhead)

    while True:
        step = evaluate(current, len(steps))
        steps.append(step)
        if progress is not None:
            progress(step)
        if step.broken is None:
            break
        broken.add(step.broken)
        current = (current - {step.broken}) | (children.get(step.broken, frozenset()) - broken)
    types = sorted({t.name for t in finest.fragments if not t.is_main})
    best = _without_idle_types(best_step(steps, tolerance), max(s.speedup for s in steps) * (1 - tolerance),
                               tolerance, recorded, evaluate)
    return Exploration(steps, best, cores, policy, (*weights,), machine.rate, tuple(types), tolerance)


def _without_idle_types(step: Step, floor: float, tolerance: float, recorded: Recording, evaluate) -> Step:
    """The step without its idle types: those whose instances do at most tolerance x T-inf of
    work in all, in the step's decomposition (a timer, a descriptor's set-up: their being tasks
    cannot be what makes it fast) and, folded into their creators, keep the speedup at least
    floor. Tried one at a time, the least work first."""
    work: dict[str, int] = {}
    for t in merge(recorded, set(step.tasks)).fragments:
        if not t.is_main:
            work[t.name] = work.get(t.name, 0) + t.instructions
    kept, dropped, best = set(step.tasks), [], step
    for name in sorted(step.tasks, key=lambda n: (work.get(n, 0), n)):
        if work.get(name, 0) > tolerance * step.tinf:
            break
        trial = evaluate(kept - {name}, step.index)
        if trial.speedup >= floor:
            kept.discard(name)
            dropped.append(name)
            best = trial
    return replace(best, broken=None, costs=(), dropped=tuple(sorted(dropped))) if dropped else step


def _evaluate(index: int, trace: TaskTrace, cores: int | None, machine: Machine, policy: str,
              weights: tuple[float, float, float], overhead: int | None) -> Step:
    s = study(trace.dag, [cores], policy, machine, overhead)
    row = next(iter(s.table()))
    costs = _costs(trace, s.schedules[0], weights)
    # Costs are by name: the first of equal costs (to rounding: sums of floats) is broken.
    chosen = max(costs, key=lambda c: round(c.cost, 9), default=None)
    tinf = round(s.tinf * machine.rate)  # the study's longest path, in instructions again
    return Step(index, tuple(sorted(trace.task_types)), trace.instances, trace.t1, tinf, row["time"],
                row["speedup"], costs, chosen.name if chosen else None)


def _costs(trace: TaskTrace, schedule, weights) -> tuple[TypeCost, ...]:
    tasks = trace.fragments
    n = len(tasks)
    instance = np.fromiter((t.instance for t in tasks), np.int64, n)
    work = np.fromiter((t.instructions for t in tasks), np.int64, n)
    own = np.bincount(instance, weights=work, minlength=n)
    # Distinct RAW neighbours of each instance.
    pairs = {(int(instance[d.src]), int(instance[d.dst])) for d in trace.deps if d.kind == RAW}
    pairs = {p for p in pairs if p[0] != p[1]}
    degree = np.zeros(n, np.int64)
    for a, b in pairs:
        degree[a] += 1
        degree[b] += 1
    # Concurrency: integral of 1 / (instances running) over each fragment's run.
    times, running = parallelism_profile(schedule)
    share = np.zeros(len(times))
    if len(times) > 1:
        share[1:] = np.cumsum(np.diff(times) / np.maximum(running[:-1], 1) * (running[:-1] > 0))
    alone = np.interp(schedule.finish, times, share) - np.interp(schedule.start, times, share) if len(times) \
        else np.zeros(n)
    raw: dict[str, list[float]] = {}
    for k, t in enumerate(tasks):
        if t.is_main:
            continue
        entry = raw.setdefault(t.name, [0, 0, 0.0])
        if t.starts_instance:
            entry[0] = max(entry[0], int(own[t.id]))
            entry[1] = max(entry[1], int(degree[t.id]))
        entry[2] += float(alone[k])
    names = sorted(raw)
    values = np.array([raw[name] for name in names], float).reshape(len(names), 3)
    powered = values ** np.array(weights, float)
    totals = powered.sum(axis=0)
    normalised = np.divide(powered, totals, out=np.zeros_like(powered), where=totals > 0)
    return tuple(TypeCost(name, int(values[i, 0]), int(values[i, 1]), float(values[i, 2]),
                          (float(normalised[i, 0]), float(normalised[i, 1]), float(normalised[i, 2])))
                 for i, name in enumerate(names))
