"""Reading and writing the trace directory that ``tareador trace`` produces.

Plain CSV and JSON so that scripts and spreadsheets can use it without tareador:
tasks.csv, deps.csv, objects.csv, summary.json (documented in README.md).
"""

from __future__ import annotations

import csv
import json
from dataclasses import fields
from operator import attrgetter
from pathlib import Path

from tareador.errors import TraceDirError
from tareador.files import output_file, write_text
from tareador.taskgraph.model import (
    DEPENDENCY_KINDS,
    Communicator,
    DataObject,
    Dependency,
    Fragment,
    MpiCall,
    TaskTrace,
)

TABLES = {"tasks.csv": Fragment, "deps.csv": Dependency, "objects.csv": DataObject}
# What tareador writes into a trace directory (trace, graph, simulate, whatif, explore): a new trace removes
# them all first, so no graph or timeline of an earlier run is left beside it.
OWNED = ("tasks.csv", "deps.csv", "objects.csv", "summary.json", "graph.dot", "graph.svg", "graph.png",
         "simulation-*.prv", "simulation-*.pcf", "simulation-*.row", "simulation-*.json", "speedup.png",
         "profile.png", "gantt.png", "speedup.csv", "profile.csv", "ompss.dim", "ompss.pcf", "authentic.dim",
         "authentic.pcf", "whatif-*.png", "whatif.csv", "explore.csv", "explore.png", "mpi.csv", "comms.csv",
         "messages.csv", "patterns.npz", "patterns.csv", "patterns-*.png", "overlap-*.dim", "overlap.csv",
         "overlap.png", "accesses.csv", "calls.csv", "durations.csv", "timing.json", "models.csv", "models.png",
         "*-measured.dim", "*-measured.pcf", "tables/*.npy", "tables/names.json")


def write_table(path: Path, cls, rows) -> None:
    names = [fl.name for fl in fields(cls)]
    with output_file(path, newline="") as f:
        w = csv.writer(f)
        w.writerow(names)
        # Not dataclasses.astuple: it deep-copies every field, 3/4 of the time of writing a trace.
        w.writerows(map(attrgetter(*names), rows))


def read_table(path: Path, cls, remedy: str | None = None) -> list:
    if not path.exists():
        remedy = remedy or f"run 'tareador trace -o {path.parent} -- ./prog' again"
        raise TraceDirError(f"{path} is missing: {remedy}")
    converters = [int if fl.type == "int" else str for fl in fields(cls)]
    names = [fl.name for fl in fields(cls)]
    rows = []
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        try:
            header = next(reader, None)
            if header != names:
                raise TraceDirError(f"{path}: header {header} is not {','.join(names)}; the file is corrupt or "
                                    "from another tareador version: trace the program again")
            for lineno, rec in enumerate(reader, start=2):
                try:
                    rows.append(cls(*(c(v) for c, v in zip(converters, rec, strict=True))))
                except (ValueError, TypeError):
                    raise TraceDirError(f"{path}:{lineno}: malformed row {rec!r}; the file is truncated or "
                                        "corrupt") from None
        except UnicodeDecodeError:
            raise TraceDirError(f"{path}:{_first_undecodable_line(path)}: not UTF-8 text; the file is corrupt") from None
    return rows


def _first_undecodable_line(path: Path) -> int:
    """The decoder reads ahead in blocks, so its position does not say which line is at fault."""
    for lineno, line in enumerate(path.read_bytes().split(b"\n"), start=1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            return lineno
    return 0


def _check(d: Path, tasks: list[Fragment], deps: list[Dependency]) -> None:
    """What every later stage relies on, named by file and line (rows start at line 2)."""
    ids = {}
    table = d / "tasks.csv"  # once: a path per row was half of loading a large trace
    for line, t in enumerate(tasks, start=2):
        where = f"{table}:{line}: task {t.id}"
        if t.id in ids:
            raise TraceDirError(f"{where} appears twice (also line {ids[t.id]}); the file is corrupt")
        ids[t.id] = line
        if t.instructions < 0 or t.end < t.start:
            raise TraceDirError(f"{where} has negative instructions or ends before it starts; the file is corrupt")
    first = {t.id: t for t in tasks}
    for line, t in enumerate(tasks, start=2):
        where = f"{table}:{line}: task {t.id}"
        if t.parent != -1 and t.parent not in ids:
            raise TraceDirError(f"{where} names parent {t.parent}, which is not in the file; the file is corrupt")
        head = first.get(t.instance)
        if head is None or head.instance != head.id or head.id > t.id or head.parent != t.parent:
            raise TraceDirError(f"{where} names instance {t.instance}, which is not the first fragment of an "
                                "instance with the same parent; the file is corrupt")
    table = d / "deps.csv"
    for line, dep in enumerate(deps, start=2):
        where = f"{table}:{line}:"
        if dep.src not in ids or dep.dst not in ids:
            raise TraceDirError(f"{where} dependency {dep.src} -> {dep.dst} names a task that is not in tasks.csv")
        if dep.kind not in DEPENDENCY_KINDS:
            raise TraceDirError(f"{where} unknown dependency kind {dep.kind!r} (RAW, WAR or WAW)")
        if dep.bytes < 0:
            raise TraceDirError(f"{where} negative byte count {dep.bytes}; the file is corrupt")


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


def load(directory: str | Path):
    """Load what ``tareador trace`` or ``tareador mpirun`` wrote (the notebook entry point): a
    TaskTrace, or an MpiRun for a directory of ranks (rank-N/ subdirectories)."""
    d = Path(directory)
    if is_run(d):
        from tareador.taskgraph.mpi import load_run

        return load_run(d)
    return load_trace(d)


def is_run(d: Path) -> bool:
    """A run's directory holds its ranks' traces, not one of its own."""
    return d.is_dir() and not (d / "tasks.csv").exists() and any(r.is_dir() for r in d.glob("rank-*"))


def load_trace(directory: str | Path) -> TaskTrace:
    """One traced process: what every command about a single task graph works on."""
    d = Path(directory)
    if is_run(d):
        raise TraceDirError(f"{d} is an MPI run: give one rank's trace, e.g. {d / 'rank-0'}")
    if not d.is_dir():
        raise TraceDirError(f"{d} is not a trace directory: create one with 'tareador trace -o {d} -- ./prog'")
    tables = {name: read_table(d / name, cls) for name, cls in TABLES.items()}
    _check(d, tables["tasks.csv"], tables["deps.csv"])
    summary = read_summary(d / "summary.json", "trace the program again")
    trace = TaskTrace(tables["tasks.csv"], tables["deps.csv"], tables["objects.csv"], summary, str(d))
    try:
        trace.tinf
    except ValueError as e:
        raise TraceDirError(f"{d / 'deps.csv'}: {e}") from None
    return trace


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
