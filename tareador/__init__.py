"""tareador: how much task parallelism would this taskification expose?

The package is a one-way pipeline, one subpackage per stage:
``tracing`` (run the program under Frida) -> ``taskgraph`` (task instances, dependencies,
the trace directory) -> ``formats`` (Dimemas, Paraver, Chrome files) -> ``synthesis`` (the
authentic and artificial traces of a run) -> ``simulation`` (the list scheduler and the Dimemas
engine on a machine) -> ``analyses`` (speedups, profiles, what-ifs) -> ``render`` (graphs and
plots) -> ``report`` (one HTML page of it all), with ``cli`` on top; ``errors`` holds what every
stage may raise. Imports go one way too, ``taskgraph`` (the model every stage shares) below
``tracing``: docs/reference/architecture.md. This module is the API of a notebook:
``tareador.load(dir)``, ``tareador.hints(dir)``, ``tareador.report(dir)``,
``tareador.simulate(trace)``, ``tareador.whatif(trace)``, ``tareador.explore(recording)``,
``tareador.replay(dim)``; every result has ``table()`` and ``to_pandas()``. A trace is a directory
or what ``load`` returned; a machine is a Machine, a file, or a bundled machine's name ("laptop",
"cluster"), default the built-in one.
"""

from __future__ import annotations

import math
from pathlib import Path

from tareador.analyses.explore import DEFAULT_TOLERANCE, DEFAULT_WEIGHTS, Exploration
from tareador.analyses.explore import explore as explore_recording
from tareador.analyses.hints import Hints, load_hints
from tareador.analyses.speedup import Study, study
from tareador.analyses.whatif import WhatIf
from tareador.analyses.whatif import whatif as whatif_dag
from tareador.errors import UserError
from tareador.formats.dimemas import read_dim
from tareador.report import report  # binds over the subpackage: tareador.report(dir)
from tareador.simulation.dimemas_engine import ReplayResult
from tareador.simulation.dimemas_engine import replay as replay_dim
from tareador.simulation.list_scheduler import policy_for
from tareador.simulation.machine import Machine, in_nanoseconds
from tareador.simulation.machine_files import load_machine
from tareador.taskgraph.dag import Dag
from tareador.taskgraph.durations import KINDS as DURATION_KINDS
from tareador.taskgraph.durations import measured_dag
from tareador.taskgraph.model import TaskTrace
from tareador.taskgraph.mpi import MpiRun, load_run
from tareador.taskgraph.store import is_run, load_trace
from tareador.version import __version__

TraceLike = str | Path | TaskTrace
MachineLike = str | Path | Machine | None
DEFAULT_CORES = (1, 2, 4, 8, 16, None)


def load(directory: str | Path) -> TaskTrace | MpiRun:
    """Load what ``tareador trace`` or ``tareador mpirun`` wrote: a TaskTrace, or an MpiRun for a
    directory of ranks (rank-N/ subdirectories)."""
    return load_run(directory) if is_run(Path(directory)) else load_trace(directory)


def hints(directory: str | Path) -> Hints:
    """What each task type reads and writes, as depend clauses (``tareador hints DIR``)."""
    return load_hints(directory)


def simulate(trace: TraceLike, cores=DEFAULT_CORES, machine: MachineLike = None, policy: str | None = None,
             durations: str = "instructions") -> Study:
    """``tareador simulate DIR``: the task-parallel run on each core count (None: unbounded)."""
    m = _machine(machine, durations)
    return study(_dag(trace, durations), list(cores), policy_for(m.policy, policy), m,
                 unit="ns" if durations == "measured" else "instructions")


def whatif(trace: TraceLike, factors=(2, math.inf), cores=DEFAULT_CORES, machine: MachineLike = None,
           policy: str | None = None, types: list[str] | None = None, durations: str = "instructions") -> WhatIf:
    """``tareador whatif DIR``: each task type (or ``types``) made ``factors`` times faster in turn."""
    m = _machine(machine, durations)
    return whatif_dag(_dag(trace, durations), list(factors), list(cores), policy_for(m.policy, policy), m, types=types,
                      unit="ns" if durations == "measured" else "instructions")


def explore(recording: TraceLike, cores: int | None = None, machine: MachineLike = None, policy: str | None = None,
            weights: tuple[float, float, float] = DEFAULT_WEIGHTS, tolerance: float = DEFAULT_TOLERANCE) -> Exploration:
    """``tareador explore DIR``: the walk from main's calls down to sequential code over a
    recording (a directory ``tareador explore -- ./prog`` wrote, or its TaskTrace)."""
    trace = recording if isinstance(recording, TaskTrace) else load_trace(recording)
    m = _machine(machine)
    return explore_recording(trace, cores, m, policy_for(m.policy, policy), weights, tolerance=tolerance)


def replay(dim: str | Path, machine: MachineLike = None) -> ReplayResult:
    """``tareador replay TRACE.dim``: a Dimemas trace on the machine's network."""
    return replay_dim(read_dim(dim), _machine(machine))


def _machine(machine: MachineLike, durations: str = "instructions") -> Machine:
    if durations not in DURATION_KINDS:
        raise UserError(f"durations must be one of {', '.join(DURATION_KINDS)}, not {durations!r}")
    m = machine if isinstance(machine, Machine) else Machine() if machine is None else load_machine(machine)
    return in_nanoseconds(m) if durations == "measured" else m


def _dag(trace: TraceLike, durations: str) -> Dag:
    """The graph of a single process's trace, its weights measured nanoseconds when asked."""
    if not isinstance(trace, TaskTrace) and is_run(Path(trace)):
        raise UserError(f"{trace} is an MPI run: simulate its ranks with tareador.replay(its ompss.dim) or the "
                        "command line's 'tareador simulate DIR'")
    t = trace if isinstance(trace, TaskTrace) else load_trace(trace)
    if durations == "instructions":
        return t.dag
    if t.path is None:
        raise UserError("measured durations are read from a trace directory: pass its path")
    return measured_dag(t.dag, t.path)


__all__ = ["load", "hints", "report", "simulate", "whatif", "explore", "replay", "Machine", "__version__"]
