"""The trace directory's binary form, ``tables/`` (layout: columns.py), written beside the CSVs
and read instead of them: parsing tasks.csv and deps.csv costs about 20 s per million task
instances, mapping their arrays a fraction of a second.

The CSVs stay what users script against, and what tareador falls back on: a directory without
``tables/`` (older, or written by hand) is read from its CSVs. Because a user may edit a CSV or a
file may be damaged, ``tables/manifest.json`` records, when the tables are written, each CSV's
size, modification time and hash and each table's size and hash; a table whose hash or a CSV
whose size or contents differ from the record makes the loader say so in one line and read the
CSVs, never the tables. (A CSV whose time alone changed, a copied directory, is hashed again and
accepted if its contents are those recorded.)
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tareador.files import output_file
from tareador.taskgraph import columns
from tareador.taskgraph.model import DEPENDENCY_KINDS, DataObject, Dependency, Fragment
from tareador.text_columns import Text

MANIFEST = "manifest.json"
VERSION = 1
MIRRORED = ("tasks.csv", "deps.csv", "objects.csv")  # the CSVs the tables hold
OBJECT_KINDS = ("heap", "global", "stack")
LIMIT = columns.NO_PARENT  # u4 columns hold indices below this


@dataclass
class Graph:
    """What tasks.csv and deps.csv hold, as columns (those of ``text_columns.read_csv``)."""

    tasks: dict
    deps: dict
    objects: list[DataObject]


def write(directory: Path, fragments: Sequence[Fragment], deps: Sequence[Dependency],
          objects: Sequence[DataObject]) -> bool:
    """``tables/`` of rows that its layout can hold (fragment ids and object ids their row numbers,
    every dependency's object one of ``objects``), sealed; False, writing nothing, for others."""
    n, ids = len(fragments), np.fromiter((t.id for t in fragments), np.int64, len(fragments))
    row_of = {}
    for o in reversed(objects):
        row_of[o.name] = o.id
    if (not (ids == np.arange(n)).all() or n >= LIMIT or any(o.id != k or o.kind not in OBJECT_KINDS
                                                           for k, o in enumerate(objects))
            or any(d.object not in row_of or d.kind not in DEPENDENCY_KINDS for d in deps)):
        return False
    names: dict[str, int] = {}
    tasks = np.zeros(n, columns.TASKS)
    tasks["name"] = [names.setdefault(t.name, len(names)) for t in fragments]
    for field in ("instance", "start", "end", "instructions"):
        tasks[field] = [getattr(t, field) for t in fragments]
    tasks["parent"] = [columns.NO_PARENT if t.parent < 0 else t.parent for t in fragments]
    table = np.zeros(len(deps), columns.DEPS)
    for field in ("src", "dst", "bytes"):
        table[field] = [getattr(d, field) for d in deps]
    table["object"] = [row_of[d.object] for d in deps]
    table["kind"] = [DEPENDENCY_KINDS.index(d.kind) for d in deps]
    _write_tables(directory, tasks, table, objects, list(names))
    return True


def write_columns(directory: Path, graph: Graph) -> None:
    """``tables/`` of a directory's CSV columns (``store.write_binary_form``), sealed."""
    tasks, deps = graph.tasks, graph.deps
    table = np.zeros(len(tasks["id"]), columns.TASKS)
    table["name"], task_names = _first_seen(tasks["name"])
    for field in ("instance", "start", "end", "instructions"):
        table[field] = tasks[field]
    table["parent"] = np.where(tasks["parent"] < 0, columns.NO_PARENT, tasks["parent"])
    row_of = {o.name: o.id for o in reversed(graph.objects)}
    links = np.zeros(len(deps["src"]), columns.DEPS)
    for field in ("src", "dst", "bytes"):
        links[field] = deps[field]
    links["object"] = np.array([row_of[name] for name in deps["object"].values], np.int64)[deps["object"].codes]
    links["kind"] = np.array([DEPENDENCY_KINDS.index(k) for k in deps["kind"].values], np.int64)[deps["kind"].codes]
    _write_tables(directory, table, links, graph.objects, task_names)


def _first_seen(text: Text) -> tuple[np.ndarray, list[str]]:
    """The column's codes renumbered in the order its values first appear, as the tracer numbers them."""
    used, first = np.unique(text.codes, return_index=True)
    order = used[np.argsort(first)]
    renumber = np.zeros(len(text.values), np.int64)
    renumber[order] = np.arange(len(order))
    return renumber[text.codes], [text.values[c] for c in order.tolist()]


def _write_tables(directory: Path, tasks: np.ndarray, deps: np.ndarray, objects: Sequence[DataObject],
                  task_names: list[str]) -> None:
    out = Path(directory) / columns.DIRECTORY
    out.mkdir(exist_ok=True)
    columns.write_table(out / "tasks.npy", columns.TASKS, iter([tasks]))
    columns.write_table(out / "deps.npy", columns.DEPS, iter([deps]))
    rows = np.zeros(len(objects), columns.OBJECTS)
    rows["address"] = [o.address for o in objects]
    rows["size"] = [o.size for o in objects]
    rows["kind"] = [OBJECT_KINDS.index(o.kind) for o in objects]
    columns.write_table(out / "objects.npy", columns.OBJECTS, iter([rows]))
    columns.write_names(out, {"tasks": task_names, "objects": [o.name for o in objects],
                              "object_sites": [o.site for o in objects], "functions": [], "modules": []})
    seal(directory)


def seal(directory: Path) -> None:
    """Records what ``tables/`` was made from and holds (tables/manifest.json): call it once the
    CSVs and tables are written."""
    d = Path(directory)
    record = {"version": VERSION,
              "csv": {name: _stat(d / name) | {"blake2b": _digest(d / name)} for name in MIRRORED},
              "tables": {p.name: _stat(p) | {"blake2b": _digest(p)} for p in sorted((d / columns.DIRECTORY).iterdir())
                         if p.name != MANIFEST}}
    with output_file(d / columns.DIRECTORY / MANIFEST) as f:
        json.dump(record, f, indent=1)


def read(directory: Path, objects: bool) -> Graph | None:
    """The directory's columns from ``tables/``; None (after one line on stderr saying why, unless
    there is no ``tables/``) where the CSVs must be read instead."""
    d = Path(directory)
    if not (d / columns.DIRECTORY / "tasks.npy").exists():
        return None
    why = _stale(d)
    if why is None:
        try:
            return _graph(d, objects)
        except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
            why = f"is unreadable ({e})"
    print(f"tareador: warning: {d / columns.DIRECTORY} {why}: reading the CSVs instead", file=sys.stderr)
    return None


def _stale(d: Path) -> str | None:
    """Why ``tables/`` may not be what the CSVs say, or None."""
    try:
        record = json.loads((d / columns.DIRECTORY / MANIFEST).read_text())
        if record.get("version") != VERSION:
            return f"is of another version ({record.get('version')}) than this tareador reads ({VERSION})"
        for name, seen in record["csv"].items():
            now = _stat(d / name)
            edited = now["mtime_ns"] != seen["mtime_ns"] and _digest(d / name) != seen["blake2b"]
            if now["size"] != seen["size"] or edited:
                return f"was written from another {name} than the one there now (edited since?)"
        for name, seen in record["tables"].items():
            path = d / columns.DIRECTORY / name
            if _stat(path)["size"] != seen["size"] or _digest(path) != seen["blake2b"]:
                return f"holds a {name} that is not the one written (damaged?)"
    except FileNotFoundError as e:
        return f"lacks {Path(e.filename).name}"
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        return f"has an unreadable {MANIFEST} ({e})"
    return None


def _graph(d: Path, objects: bool) -> Graph:
    tables = d / columns.DIRECTORY
    names = json.loads((tables / "names.json").read_text(encoding="utf-8"))
    tasks, deps = columns.read_table(d, "tasks"), columns.read_table(d, "deps")
    if tasks.dtype != columns.TASKS or deps.dtype != columns.DEPS:
        raise ValueError("its tables are not of the layout this tareador reads")
    parent = tasks["parent"].astype(np.int64)
    task_columns: dict[str, np.ndarray | Text] = {"id": np.arange(len(tasks), dtype=np.int64),
                    "name": Text(tasks["name"].astype(np.int64), names["tasks"]),
                    "parent": np.where(parent == columns.NO_PARENT, -1, parent)}
    for field in ("instance", "start", "end", "instructions"):
        task_columns[field] = tasks[field].astype(np.int64)
    dep_columns: dict[str, np.ndarray | Text] = {field: deps[field].astype(np.int64)
                                                 for field in ("src", "dst", "bytes")}
    dep_columns["kind"] = Text(deps["kind"].astype(np.int64), list(DEPENDENCY_KINDS))
    rows = columns.object_rows(d, names) if objects else []
    if objects:
        dep_columns["object"] = Text(deps["object"].astype(np.int64), [o.name for o in rows])
    return Graph(task_columns, dep_columns, rows)


def _stat(path: Path) -> dict:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _digest(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "blake2b").hexdigest()
