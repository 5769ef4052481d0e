"""tareador: how much task parallelism would this taskification expose?

The package is a one-way pipeline, one subpackage per stage:
``tracing`` (run the program under Frida) -> ``taskgraph`` (task instances, dependencies,
the trace directory) -> ``formats`` (Dimemas, Paraver, Chrome files) -> ``synthesis`` (the
authentic and artificial traces of a run) -> ``simulation`` (the list scheduler and the Dimemas
engine on a machine) -> ``analyses`` (speedups, profiles, what-ifs) -> ``render`` (graphs and
plots) -> ``report`` (one HTML page of it all), with ``cli`` on top; ``errors`` holds what every
stage may raise. Imports go one way too, ``taskgraph`` (the model every stage shares) below
``tracing``: README, How it works. This module is the API of a notebook: ``tareador.load(dir)``,
``tareador.hints(dir)``, ``tareador.report(dir)``.
"""

from __future__ import annotations

from pathlib import Path

from tareador.analyses.hints import Hints, load_hints
from tareador.report import report  # binds over the subpackage: tareador.report(dir)
from tareador.taskgraph.model import TaskTrace
from tareador.taskgraph.mpi import MpiRun, load_run
from tareador.taskgraph.store import is_run, load_trace
from tareador.version import __version__


def load(directory: str | Path) -> TaskTrace | MpiRun:
    """Load what ``tareador trace`` or ``tareador mpirun`` wrote: a TaskTrace, or an MpiRun for a
    directory of ranks (rank-N/ subdirectories)."""
    return load_run(directory) if is_run(Path(directory)) else load_trace(directory)


def hints(directory: str | Path) -> Hints:
    """What each task type reads and writes, as depend clauses (``tareador hints DIR``)."""
    return load_hints(directory)


__all__ = ["load", "hints", "report", "__version__"]
