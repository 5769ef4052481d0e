"""The schedule's precedence and T∞ of lists of fragment and dependency rows: what
analyses/hints.py asks of dependency lists of its own making. Both go through the one task
graph (dag.py), like everything else; the rest of tareador asks a trace's ``dag`` directly."""

from __future__ import annotations

from collections.abc import Iterable

from tareador.taskgraph import dag
from tareador.taskgraph.model import Dependency, Fragment, TaskTrace


def schedule_edges(tasks: list[Fragment], deps: Iterable[Dependency]) -> set[tuple[int, int]]:
    """Every precedence constraint of the potential task-parallel run (see model.py), as id pairs."""
    return dag.schedule_edges(TaskTrace(tasks, list(deps), []).dag)


def critical_path_length(tasks: list[Fragment], deps: Iterable[Dependency]) -> int:
    """Longest instruction-weighted path through the schedule constraints."""
    return TaskTrace(tasks, list(deps), []).tinf
