"""Measured durations of a trace's fragments, beside its instruction counts.

``tareador time`` writes ``durations.csv`` into the trace directory (``id,ns,min_ns,max_ns``: per
fragment of tasks.csv, the median over the timing runs and its range) and ``timing.json`` (how
it was measured). Every consumer then works in nanoseconds instead of instructions with no
change of its own: a trace or task graph whose instruction counts are the measured nanoseconds
(and whose instruction counter is the measured clock), on a machine that runs 10^9 of those
units per second (``replay.machine.in_nanoseconds``). Costs a machine gives in seconds stay
seconds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from tareador.errors import DurationsError
from tareador.files import output_file, write_text
from tareador.taskgraph.dag import Dag
from tareador.taskgraph.model import MpiCall, TaskTrace

FILE = "durations.csv"
INFO = "timing.json"
HEADER = "id,ns,min_ns,max_ns"
KINDS = ("instructions", "measured")


@dataclass(frozen=True)
class Durations:
    ids: np.ndarray  # fragment ids, as in tasks.csv
    ns: np.ndarray  # int64 median over the runs
    low: np.ndarray
    high: np.ndarray


def save_durations(directory: str | Path, ids: list[int], runs: np.ndarray, info: dict) -> Path:
    """runs: one row of nanoseconds per timing run, a column per fragment (tasks.csv order)."""
    d = Path(directory)
    median = np.rint(np.median(runs, axis=0)).astype(np.int64)
    low, high = (np.rint(f(runs, axis=0)).astype(np.int64) for f in (np.min, np.max))
    path = d / FILE
    with output_file(path) as f:
        f.write(HEADER + "\n")
        f.writelines(f"{i},{m},{a},{b}\n" for i, m, a, b in zip(ids, median.tolist(), low.tolist(), high.tolist()))
    write_text(d / INFO, json.dumps(info, indent=2, sort_keys=True) + "\n")
    return path


def load_durations(directory: str | Path) -> Durations:
    d = Path(directory)
    path = d / FILE
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise DurationsError(f"{d} has no measured durations ({FILE}): run 'tareador time {d}' first") from None
    except (OSError, UnicodeDecodeError) as e:
        raise DurationsError(f"{path}: cannot read it ({e}); run 'tareador time {d}' again") from None
    if not lines or lines[0] != HEADER:
        raise DurationsError(f"{path}: header is not {HEADER}; run 'tareador time {d}' again")
    rows = []
    for lineno, line in enumerate(lines[1:], start=2):
        fields = line.split(",")
        if len(fields) != 4 or not all(f.isdigit() for f in fields):
            raise DurationsError(f"{path}:{lineno}: malformed row {line!r}; run 'tareador time {d}' again")
        rows.append([int(f) for f in fields])
    table = np.array(rows, np.int64).reshape(-1, 4)
    return Durations(*table.T)


def aligned(durations: Durations, ids: np.ndarray, where: str | Path) -> np.ndarray:
    """The measured nanoseconds of the fragments ``ids``, in that order; DurationsError unless
    durations.csv has exactly those fragments (a trace made again since was not timed)."""
    if len(durations.ids) != len(ids) or not np.array_equal(np.sort(durations.ids), np.sort(ids)):
        raise DurationsError(f"{Path(where) / FILE} does not list the fragments of tasks.csv (traced again since?): "
                             f"run 'tareador time {where}' again")
    order = np.argsort(durations.ids)
    return durations.ns[order][np.searchsorted(durations.ids[order], ids)]


def measured_dag(dag: Dag, directory: str | Path) -> Dag:
    """The task graph with each fragment's measured nanoseconds as its weight."""
    return replace(dag, weight=aligned(load_durations(directory), dag.ids, directory))


class MeasuredClock:
    """The instruction counter turned into measured nanoseconds: fragments are disjoint intervals
    of the counter; in the order they ran, each starts when the ones before it have taken their
    measured time, and a counter inside a fragment is at the same fraction of its time as of its
    instructions (an MPI call a fragment makes). A counter between fragments (outside the
    analysed region) is where the fragment before it ended."""

    def __init__(self, trace: TaskTrace, ns: np.ndarray):
        tasks = trace.fragments
        self.order = sorted(range(len(tasks)), key=lambda k: (tasks[k].start, tasks[k].id))
        self.begin = np.array([tasks[k].start for k in self.order], np.int64)
        self.finish = np.array([tasks[k].end for k in self.order], np.int64)
        self.ns = np.array([int(ns[k]) for k in self.order], np.int64)
        self.start_ns = np.concatenate([[0], np.cumsum(self.ns)[:-1]]).astype(np.int64)
        self.place = {k: i for i, k in enumerate(self.order)}

    def fragment_start(self, k: int) -> int:
        return int(self.start_ns[self.place[k]])

    def at(self, counter: int, fragment: int | None = None) -> int:
        """The clock at ``counter``, inside ``fragment`` (a tasks.csv position) when known."""
        if counter < 0:
            return counter
        i = self.place[fragment] if fragment is not None else int(np.searchsorted(self.begin, counter, "right")) - 1
        if i < 0:
            return 0
        span = self.finish[i] - self.begin[i]
        inside = min(max(counter - self.begin[i], 0), span)
        return int(self.start_ns[i] + (round(self.ns[i] * inside / span) if span else 0))


def measured_trace(trace: TaskTrace, ns: np.ndarray) -> TaskTrace:
    """The trace with each fragment's nanoseconds (tasks.csv order) as its instructions, and the
    instruction counter as the measured clock (``MeasuredClock``)."""
    clock = MeasuredClock(trace, ns)
    tasks = [replace(t, start=clock.fragment_start(k), end=clock.fragment_start(k) + int(ns[k]),
                     instructions=int(ns[k])) for k, t in enumerate(trace.fragments)]
    return TaskTrace(tasks, trace.deps, trace.objects, dict(trace.summary), trace.path)


def measured_calls(trace: TaskTrace, ns: np.ndarray, calls: list[MpiCall]) -> list[MpiCall]:
    """A rank's MPI calls on the measured clock: where each was posted (inside the fragment that
    made it) and completed."""
    clock = MeasuredClock(trace, ns)
    index = {t.id: k for k, t in enumerate(trace.fragments)}
    out = []
    for c in calls:
        posted = clock.at(c.posted, index.get(c.task))
        out.append(replace(c, posted=posted, completed=posted if c.completed == c.posted else clock.at(c.completed)))
    return out


def trace_in_nanoseconds(trace: TaskTrace, directory: str | Path) -> TaskTrace:
    ids = np.fromiter((t.id for t in trace.fragments), np.int64, len(trace.fragments))
    return measured_trace(trace, aligned(load_durations(directory), ids, directory))

