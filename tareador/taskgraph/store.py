"""Reading and writing the trace directory that ``tareador trace`` produces.

Plain CSV and JSON so that scripts and spreadsheets can use it without tareador:
tasks.csv, deps.csv, objects.csv, summary.json (documented in docs/reference/files.md).
"""

from __future__ import annotations

import csv
import json
from dataclasses import fields
from operator import attrgetter
from pathlib import Path

from tareador.errors import TraceDirError
from tareador.files import output_file, write_text
from tareador.taskgraph.dag import Dag, DependencyCycle, build, topological_order
from tareador.taskgraph.model import (
    Communicator,
    DataObject,
    Dependency,
    Fragment,
    MpiCall,
    TaskTrace,
)
from tareador.taskgraph.tables import Tables
from tareador.text_columns import Text, read_csv, recycle_freed_memory

# What tareador writes into a trace directory (trace, graph, simulate, whatif, explore): a new trace removes
# them all first, so no graph or timeline of an earlier run is left beside it.
OWNED = ("tasks.csv", "deps.csv", "objects.csv", "summary.json", "graph.dot", "graph.svg", "graph.png",
         "simulation-*.prv", "simulation-*.pcf", "simulation-*.row", "simulation-*.json", "speedup.png",
         "profile.png", "gantt.png", "speedup.csv", "profile.csv", "ompss.dim", "ompss.pcf", "authentic.dim",
         "authentic.pcf", "whatif-*.png", "whatif.csv", "explore.csv", "explore.png", "mpi.csv", "comms.csv",
         "messages.csv", "patterns.npz", "patterns.csv", "patterns-*.png", "overlap-*.dim", "overlap.csv",
         "overlap.png", "accesses.csv", "calls.csv", "durations.csv", "timing.json", "models.csv", "models.png",
         "*-measured.dim", "*-measured.pcf", "report.html", "tables/*.npy", "tables/names.json")
FRAGMENT = [fl.name for fl in fields(Fragment)]  # the columns of tasks.csv
DEPENDENCY = [fl.name for fl in fields(Dependency)]  # ... of deps.csv


def write_table(path: Path, cls, rows) -> None:
    names = [fl.name for fl in fields(cls)]
    with output_file(path, newline="") as f:
        w = csv.writer(f)
        w.writerow(names)
        # Not dataclasses.astuple: it deep-copies every field, 3/4 of the time of writing a trace.
        w.writerows(map(attrgetter(*names), rows))


def read_table(path: Path, cls, remedy: str | None = None) -> list:
    """The rows of a table of ``cls`` (a dataclass of int, float and str fields, in the file's
    column order)."""
    names = [fl.name for fl in fields(cls)]
    kinds = {fl.name: fl.type for fl in fields(cls)}
    ints, floats = [n for n in names if kinds[n] == "int"], [n for n in names if kinds[n] == "float"]
    columns = read_csv(_present(path, remedy), names, ints, [n for n in names if kinds[n] not in ("int", "float")],
                       floats)
    return list(map(cls, *(columns[n].strings() if isinstance(columns[n], Text) else columns[n].tolist()
                           for n in names)))


def _present(path: Path, remedy: str | None = None) -> Path:
    if not path.exists():
        remedy = remedy or f"run 'tareador trace -o {path.parent} -- ./prog' again"
        raise TraceDirError(f"{path} is missing: {remedy}")
    return path


def remove_owned(d: Path) -> None:
    for pattern in OWNED:
        for stale in d.glob(pattern):
            if stale.is_symlink() or stale.is_file():
                stale.unlink()


def save(trace: TaskTrace, directory: str | Path) -> Path:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    remove_owned(d)
    write_table(d / "tasks.csv", Fragment, trace.fragments)
    write_table(d / "deps.csv", Dependency, trace.deps)
    write_table(d / "objects.csv", DataObject, trace.objects)
    write_text(d / "summary.json", json.dumps(trace.summary, indent=2, sort_keys=True) + "\n")
    trace.path = str(d)
    return d


def save_mpi(directory: str | Path, calls: list[MpiCall], comms: list[Communicator]) -> None:
    """A rank's MPI calls and communicators, beside its trace (``save`` first: it clears the directory)."""
    write_table(Path(directory) / "mpi.csv", MpiCall, calls)
    write_table(Path(directory) / "comms.csv", Communicator, comms)


def is_run(d: Path) -> bool:
    """A run's directory holds its ranks' traces, not one of its own."""
    return d.is_dir() and not (d / "tasks.csv").exists() and any(r.is_dir() for r in d.glob("rank-*"))


def load_trace(directory: str | Path) -> TaskTrace:
    """One traced process: what every command about a single task graph works on, its ``dag``
    built and checked on the way in."""
    d = _trace_dir(directory)
    tasks, deps = _read_graph(d, objects=True)
    objects = read_table(d / "objects.csv", DataObject)
    dag = _checked(d, tasks, deps)
    summary = read_summary(d / "summary.json", "trace the program again")
    fragments = list(map(Fragment, *(tasks[f].strings() if f == "name" else tasks[f].tolist() for f in FRAGMENT)))
    dependencies = list(map(Dependency, deps["src"].tolist(), deps["dst"].tolist(), deps["kind"].strings(),
                            deps["object"].strings(), deps["bytes"].tolist()))
    trace = TaskTrace(fragments, dependencies, objects, summary, str(d))
    trace.dag = dag  # the same rows: built once
    return trace


def load_dag(directory: str | Path) -> Dag:
    """A trace directory's task graph without a Python object per row (``simulate`` and
    ``whatif`` of millions of instances): tasks.csv and deps.csv only, read and checked as
    ``load_trace`` reads and checks them."""
    d = _trace_dir(directory)
    recycle_freed_memory()
    return _checked(d, *_read_graph(d, objects=False))


def _trace_dir(directory: str | Path) -> Path:
    d = Path(directory)
    if is_run(d):
        raise TraceDirError(f"{d} is an MPI run: give one rank's trace, e.g. {d / 'rank-0'}")
    if not d.is_dir():
        raise TraceDirError(f"{d} is not a trace directory: create one with 'tareador trace -o {d} -- ./prog'")
    return d


def _read_graph(d: Path, objects: bool) -> tuple[dict, dict]:
    tasks = read_csv(_present(d / "tasks.csv"), FRAGMENT, [f for f in FRAGMENT if f != "name"], ["name"])
    deps = read_csv(_present(d / "deps.csv"), DEPENDENCY, ["src", "dst", "bytes"],
                    ["kind", "object"] if objects else ["kind"])
    return tasks, deps


def _checked(d: Path, tasks: dict, deps: dict) -> Dag:
    """The graph of the columns, checked row by row and for cycles; TraceDirError naming the file."""
    kind: Text = deps["kind"]
    dag = build(Tables(tasks["id"], tasks["name"].strings(), tasks["instance"], tasks["parent"], tasks["start"],
                       tasks["end"], tasks["instructions"], deps["src"], deps["dst"], kind.codes, kind.values,
                       deps["bytes"]), d)
    try:
        topological_order(dag)
    except DependencyCycle as e:
        raise TraceDirError(f"{d / 'deps.csv'}: {e}") from None
    return dag


def read_summary(path: Path, remedy: str) -> dict:
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TraceDirError(f"{path} is missing: {remedy}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise TraceDirError(f"{path} is corrupt ({e}); {remedy}") from None
    if not isinstance(summary, dict):
        raise TraceDirError(f"{path} is not a JSON object; {remedy}")
    return summary
