"""Reading and writing the trace directory that ``tareador trace`` produces.

Plain CSV and JSON so that scripts and spreadsheets can use it without tareador:
tasks.csv, deps.csv, objects.csv, summary.json (documented in README.md).
"""

from __future__ import annotations

import csv
import json
from dataclasses import astuple, fields
from pathlib import Path

from tareador.taskgraph.model import DataObject, Dependency, TaskInstance, TaskTrace

TABLES = {"tasks.csv": TaskInstance, "deps.csv": Dependency, "objects.csv": DataObject}


class TraceDirError(Exception):
    """A trace directory that is missing, incomplete or corrupt."""


def _write_table(path: Path, cls, rows) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow([fl.name for fl in fields(cls)])
        w.writerows(astuple(r) for r in rows)


def _read_table(path: Path, cls) -> list:
    if not path.exists():
        raise TraceDirError(f"{path} is missing: run 'tareador trace -o {path.parent} -- ./prog' again")
    converters = [int if fl.type == "int" else str for fl in fields(cls)]
    names = [fl.name for fl in fields(cls)]
    rows = []
    with path.open(newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header != names:
            raise TraceDirError(f"{path}: header {header} is not {','.join(names)}; the file is corrupt")
        for lineno, rec in enumerate(reader, start=2):
            try:
                rows.append(cls(*(c(v) for c, v in zip(converters, rec, strict=True))))
            except (ValueError, TypeError):
                raise TraceDirError(f"{path}:{lineno}: malformed row {rec!r}; the file is truncated or corrupt") from None
    return rows


def save(trace: TaskTrace, directory: str | Path) -> Path:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    _write_table(d / "tasks.csv", TaskInstance, trace.tasks)
    _write_table(d / "deps.csv", Dependency, trace.deps)
    _write_table(d / "objects.csv", DataObject, trace.objects)
    (d / "summary.json").write_text(json.dumps(trace.summary, indent=2, sort_keys=True) + "\n")
    trace.path = str(d)
    return d


def load(directory: str | Path) -> TaskTrace:
    """Load a trace directory written by ``tareador trace`` (the notebook entry point)."""
    d = Path(directory)
    if not d.is_dir():
        raise TraceDirError(f"{d} is not a trace directory: create one with 'tareador trace -o {d} -- ./prog'")
    tables = {name: _read_table(d / name, cls) for name, cls in TABLES.items()}
    try:
        summary = json.loads((d / "summary.json").read_text())
    except FileNotFoundError:
        raise TraceDirError(f"{d / 'summary.json'} is missing: trace the program again") from None
    except json.JSONDecodeError as e:
        raise TraceDirError(f"{d / 'summary.json'} is corrupt ({e}); trace the program again") from None
    return TaskTrace(tables["tasks.csv"], tables["deps.csv"], tables["objects.csv"], summary, str(d))
