"""Reading and writing the trace directory that ``tareador trace`` produces.

Plain CSV and JSON so that scripts and spreadsheets can use it without tareador:
tasks.csv, deps.csv, objects.csv, summary.json (documented in README.md).
"""

from __future__ import annotations

import csv
import json
from dataclasses import astuple, fields
from pathlib import Path

from tareador.files import output_file, write_text
from tareador.taskgraph.model import (DEPENDENCY_KINDS, Communicator, DataObject, Dependency, MpiCall, TaskInstance,
                                      TaskTrace)

TABLES = {"tasks.csv": TaskInstance, "deps.csv": Dependency, "objects.csv": DataObject}
# What tareador writes into a trace directory (trace, graph, simulate, whatif): a new trace removes
# them all first, so no graph or timeline of an earlier run is left beside it.
OWNED = ("tasks.csv", "deps.csv", "objects.csv", "summary.json", "graph.dot", "graph.svg", "graph.png",
         "simulation-*.prv", "simulation-*.pcf", "simulation-*.row", "simulation-*.json", "speedup.png",
         "profile.png", "gantt.png", "speedup.csv", "profile.csv", "ompss.dim", "ompss.pcf", "authentic.dim",
         "authentic.pcf", "whatif-*.png", "whatif.csv", "mpi.csv", "comms.csv")


class TraceDirError(Exception):
    """A trace directory that is missing, incomplete or corrupt."""


def _write_table(path: Path, cls, rows) -> None:
    with output_file(path, newline="") as f:
        w = csv.writer(f)
        w.writerow([fl.name for fl in fields(cls)])
        w.writerows(astuple(r) for r in rows)


def _read_table(path: Path, cls) -> list:
    if not path.exists():
        raise TraceDirError(f"{path} is missing: run 'tareador trace -o {path.parent} -- ./prog' again")
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


def _check(d: Path, tasks: list[TaskInstance], deps: list[Dependency]) -> None:
    """What every later stage relies on, named by file and line (rows start at line 2)."""
    ids = {}
    for line, t in enumerate(tasks, start=2):
        where = f"{d / 'tasks.csv'}:{line}: task {t.id}"
        if t.id in ids:
            raise TraceDirError(f"{where} appears twice (also line {ids[t.id]}); the file is corrupt")
        ids[t.id] = line
        if t.instructions < 0 or t.end < t.start:
            raise TraceDirError(f"{where} has negative instructions or ends before it starts; the file is corrupt")
    first = {t.id: t for t in tasks}
    for line, t in enumerate(tasks, start=2):
        where = f"{d / 'tasks.csv'}:{line}: task {t.id}"
        if t.parent != -1 and t.parent not in ids:
            raise TraceDirError(f"{where} names parent {t.parent}, which is not in the file; the file is corrupt")
        head = first.get(t.instance)
        if head is None or head.instance != head.id or head.id > t.id or head.parent != t.parent:
            raise TraceDirError(f"{where} names instance {t.instance}, which is not the first fragment of an "
                                "instance with the same parent; the file is corrupt")
    for line, dep in enumerate(deps, start=2):
        where = f"{d / 'deps.csv'}:{line}:"
        if dep.src not in ids or dep.dst not in ids:
            raise TraceDirError(f"{where} dependency {dep.src} -> {dep.dst} names a task that is not in tasks.csv")
        if dep.kind not in DEPENDENCY_KINDS:
            raise TraceDirError(f"{where} unknown dependency kind {dep.kind!r} (RAW, WAR or WAW)")
        if dep.bytes < 0:
            raise TraceDirError(f"{where} negative byte count {dep.bytes}; the file is corrupt")


def save(trace: TaskTrace, directory: str | Path) -> Path:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    for pattern in OWNED:
        for stale in d.glob(pattern):
            if stale.is_symlink() or stale.is_file():
                stale.unlink()
    _write_table(d / "tasks.csv", TaskInstance, trace.tasks)
    _write_table(d / "deps.csv", Dependency, trace.deps)
    _write_table(d / "objects.csv", DataObject, trace.objects)
    write_text(d / "summary.json", json.dumps(trace.summary, indent=2, sort_keys=True) + "\n")
    trace.path = str(d)
    return d


def save_mpi(directory: str | Path, calls: list[MpiCall], comms: list[Communicator]) -> None:
    """A rank's MPI calls and communicators, beside its trace (``save`` first: it clears the directory)."""
    _write_table(Path(directory) / "mpi.csv", MpiCall, calls)
    _write_table(Path(directory) / "comms.csv", Communicator, comms)


def load(directory: str | Path) -> TaskTrace:
    """Load a trace directory written by ``tareador trace`` (the notebook entry point)."""
    d = Path(directory)
    if not d.is_dir():
        raise TraceDirError(f"{d} is not a trace directory: create one with 'tareador trace -o {d} -- ./prog'")
    tables = {name: _read_table(d / name, cls) for name, cls in TABLES.items()}
    _check(d, tables["tasks.csv"], tables["deps.csv"])
    try:
        summary = json.loads((d / "summary.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TraceDirError(f"{d / 'summary.json'} is missing: trace the program again") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise TraceDirError(f"{d / 'summary.json'} is corrupt ({e}); trace the program again") from None
    if not isinstance(summary, dict):
        raise TraceDirError(f"{d / 'summary.json'} is not a JSON object; trace the program again")
    trace = TaskTrace(tables["tasks.csv"], tables["deps.csv"], tables["objects.csv"], summary, str(d))
    try:
        trace.tinf
    except ValueError as e:
        raise TraceDirError(f"{d / 'deps.csv'}: {e}") from None
    return trace
