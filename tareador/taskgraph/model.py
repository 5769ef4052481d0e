"""The boundary between tracing and everything after it.

A traced run becomes a list of task instances in creation order, a list of dependencies
between them and the data objects the dependencies go through. Time is measured in executed
instructions, which is deterministic from run to run, unlike wall-clock time under Frida.

Scheduling semantics every later stage relies on:
- rows named ``main`` are fragments of the program's sequential thread; they run in id order,
  each after the previous one;
- a task whose ``parent`` is a ``main`` fragment is created when that fragment ends and may
  start no earlier;
- a nested task (parent is another task) is constrained by its data dependencies only;
- only RAW dependencies constrain the schedule; WAR and WAW are reported, not enforced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import networkx as nx

MAIN = "main"
RAW, WAR, WAW = "RAW", "WAR", "WAW"
DEPENDENCY_KINDS = (RAW, WAR, WAW)


@dataclass(frozen=True)
class TaskInstance:
    id: int
    name: str
    parent: int  # -1 for main fragments
    start: int  # global instruction counter when the instance started
    end: int  # ... and when it ended (includes nested children)
    instructions: int  # executed by this instance itself, children excluded

    @property
    def is_main(self) -> bool:
        return self.name == MAIN


@dataclass(frozen=True)
class Dependency:
    src: int
    dst: int
    kind: str  # RAW, WAR or WAW
    object: str  # DataObject.name (unique within a trace)
    bytes: int  # distinct bytes of the object that carry it


@dataclass(frozen=True)
class DataObject:
    id: int
    name: str  # unique: heap blocks get an instance suffix
    kind: str  # heap, global, stack
    address: int
    size: int
    site: str  # allocation site, symbol or frame function


@dataclass
class TaskTrace:
    """A loaded trace directory: what ``tareador.load(dir)`` returns."""

    tasks: list[TaskInstance]
    deps: list[Dependency]
    objects: list[DataObject]
    summary: dict = field(default_factory=dict)
    path: str | None = None

    @cached_property
    def graph(self) -> nx.DiGraph:
        """Task instances as nodes; RAW/WAR/WAW dependencies and main's order as edges.

        Edge attribute ``deps`` lists every Dependency between the pair; ``order`` marks the
        implicit edges (main's sequence, task creation) that no data carries.
        """
        from tareador.taskgraph.metrics import build_graph

        return build_graph(self.tasks, self.deps)

    @property
    def task_types(self) -> list[str]:
        return sorted({t.name for t in self.tasks if not t.is_main})

    @property
    def t1(self) -> int:
        return sum(t.instructions for t in self.tasks)

    @cached_property
    def tinf(self) -> int:
        from tareador.taskgraph.metrics import critical_path_length

        return critical_path_length(self.tasks, self.deps)

    @property
    def parallelism(self) -> float:
        return self.t1 / self.tinf if self.tinf else 1.0
