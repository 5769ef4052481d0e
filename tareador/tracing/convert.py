"""The agent's table files (decode.py) into the trace directory: its CSVs and their binary form
``tables/`` (taskgraph.columns), a chunk of rows at a time, so that tareador's memory is that of
a chunk whatever the number of task instances.

The CSVs are byte for byte what csv.writer writes (store.write_table): fields quoted only where
they must be, rows ended by CRLF.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tareador.files import output_file
from tareador.taskgraph import columns
from tareador.taskgraph.model import DEPENDENCY_KINDS, Access, DataObject, Dependency, Fragment, TaskCall
from tareador.taskgraph.store import write_table
from tareador.tracing import decode


def csv_fields(texts: list[str]) -> list[str]:
    """Each text as csv.writer writes it as one field among others."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    fields = []
    for text in texts:
        out.seek(0)
        out.truncate()
        writer.writerow([text, ""])
        fields.append(out.getvalue()[:-2])
    return fields


ACCESS_COLUMNS = ("task", "object", "part", "read_lo", "read_hi", "write_lo", "write_hi")
TEXT_ROWS = 1 << 16  # rows formatted at a time: a Python object per field lives only that long


def _pieces(columns: list[np.ndarray]) -> Iterator[Iterator[tuple]]:
    """The rows of columns as tuples of Python values, TEXT_ROWS at a time (a column's tolist is
    several times faster than a structured array's)."""
    for a in range(0, len(columns[0]), TEXT_ROWS):
        yield zip(*(c[a:a + TEXT_ROWS].tolist() for c in columns), strict=True)


def _header(cls) -> str:
    return ",".join(cls.__dataclass_fields__) + "\r\n"


@dataclass
class TaskFigures:
    """What the summary says of tasks.bin, counted a chunk at a time."""

    fragments: int = 0
    main_fragments: int = 0
    t1: int = 0
    names: list[str] = field(default_factory=list)  # each name code's task type; '?' beyond the agent's names
    starts: Counter = field(default_factory=Counter)  # task instances by task type

    @property
    def instances(self) -> int:
        return sum(self.starts.values())

    @property
    def task_types(self) -> int:
        return len(self.starts)


def task_figures(meta: dict, raw: Path) -> TaskFigures:
    figures = TaskFigures(names=list(meta["names"]))
    for chunk in decode.chunks(raw, "tasks.bin"):
        main = chunk["parent"] == columns.NO_PARENT
        ids = np.arange(figures.fragments, figures.fragments + len(chunk))
        codes = chunk["name"][(chunk["instance"] == ids) & ~main].astype(np.int64)
        figures.fragments += len(chunk)
        figures.main_fragments += int(main.sum())
        figures.t1 += int(chunk["instructions"].sum(dtype=np.uint64))
        if len(codes) and int(codes.max()) >= len(meta["names"]):
            codes = np.minimum(codes, len(meta["names"]))
            figures.names[len(meta["names"]):] = ["?"]
        for code, count in enumerate(np.bincount(codes).tolist()):
            if count:
                figures.starts[figures.names[code]] += count
    return figures


def write_tasks(out: Path, raw: Path, names: list[str]) -> None:
    fields = csv_fields(names)
    last = len(names) - 1
    with output_file(out / "tasks.csv", newline="") as text, output_file(out / columns.DIRECTORY / "tasks.npy",
                                                                           "wb") as binary:
        text.write(_header(Fragment))
        table = columns.TableWriter(binary, columns.TASKS)
        for part in decode.chunks(raw, "tasks.bin"):
            chunk = np.zeros(len(part), columns.TASKS)
            for name in ("parent", "instance", "start", "end", "instructions"):
                chunk[name] = part[name]
            chunk["name"] = np.minimum(part["name"], last)
            parent = np.where(chunk["parent"] == columns.NO_PARENT, -1, chunk["parent"].astype(np.int64))
            for rows in _pieces([np.arange(table.rows, table.rows + len(chunk)), chunk["name"], chunk["instance"],
                                 parent, chunk["start"], chunk["end"], chunk["instructions"]]):
                text.write("".join([f"{i},{fields[n]},{inst},{p},{a},{b},{w}\r\n" for i, n, inst, p, a, b, w in rows]))
            table.append(chunk)
        table.close()


def write_deps(out: Path, raw: Path, objects_raw: np.ndarray, objects: list[DataObject]) -> None:
    fields = csv_fields([o.name for o in objects])
    _, number = decode.listed(objects_raw)
    with output_file(out / "deps.csv", newline="") as text, output_file(out / columns.DIRECTORY / "deps.npy",
                                                                          "wb") as binary:
        text.write(_header(Dependency))
        table = columns.TableWriter(binary, columns.DEPS)
        for chunk in decode.merged_edges(raw, number):
            for rows in _pieces([chunk[c] for c in ("src", "dst", "kind", "object", "bytes")]):
                text.write("".join([f"{a},{b},{DEPENDENCY_KINDS[k]},{fields[o]},{n}\r\n" for a, b, k, o, n in rows]))
            table.append(chunk)
        table.close()


def write_objects(out: Path, objects: list[DataObject]) -> None:
    write_table(out / "objects.csv", DataObject, objects)
    kinds = {kind: code for code, kind in enumerate(decode.OBJECT_KINDS)}
    rows = np.zeros(len(objects), columns.OBJECTS)
    rows["address"] = [o.address for o in objects]
    rows["size"] = [o.size for o in objects]
    rows["kind"] = [kinds[o.kind] for o in objects]
    columns.write_table(out / columns.DIRECTORY / "objects.npy", columns.OBJECTS, iter([rows]))


def write_accesses(out: Path, raw: Path, objects_raw: np.ndarray, objects: list[DataObject]) -> None:
    fields = csv_fields([o.name for o in objects])
    with output_file(out / "accesses.csv", newline="") as text, output_file(
            out / columns.DIRECTORY / "accesses.npy", "wb") as binary:
        text.write(_header(Access))
        table = columns.TableWriter(binary, columns.ACCESSES)
        for chunk in decode.merged_accesses(raw, objects_raw):
            for rows in _pieces([chunk[c] for c in ACCESS_COLUMNS]):
                text.write("".join([f"{t},{fields[o]},{p},{a},{b},{c},{d}\r\n" for t, o, p, a, b, c, d in rows]))
            table.append(chunk)
        table.close()


def call_rows(calls: np.ndarray, sites: dict) -> list[TaskCall]:
    """calls.csv's rows: each call's body by name (its address where no symbol says) and module."""
    rows = []
    for task, _, site, function, args in calls.tolist():
        where, body = sites.get(hex(site), {}), sites.get(hex(function), {})
        rows.append(TaskCall(task, body.get("function") or hex(function), where.get("path", ""),
                             int(body.get("offset", 0)), int(where.get("offset", 0)), ";".join(map(hex, args))))
    return rows


def write_calls(out: Path, raw: Path, sites: dict, names: dict[str, list[str]]) -> None:
    """calls.csv and calls.npy; the functions' and modules' names go to names (names.json)."""
    functions: dict[str, int] = {}
    modules: dict[str, int] = {}
    text_of: dict[str, str] = {}  # a name as a CSV field

    def line(r: TaskCall) -> str:
        for name in (r.function, r.module):
            if name not in text_of:
                text_of[name] = csv_fields([name])[0]
        return f"{r.task},{text_of[r.function]},{text_of[r.module]},{r.function_offset},{r.site_offset},{r.args}\r\n"

    with output_file(out / "calls.csv", newline="") as text, output_file(out / columns.DIRECTORY / "calls.npy",
                                                                           "wb") as binary:
        text.write(_header(TaskCall))
        table = columns.TableWriter(binary, columns.CALLS)
        for part in decode.chunks(raw, "calls.bin", size=TEXT_ROWS):
            rows = call_rows(part, sites)
            chunk = np.zeros(len(rows), columns.CALLS)
            chunk["task"], chunk["args"] = part["task"], part["args"]
            chunk["function"] = [functions.setdefault(r.function, len(functions)) for r in rows]
            chunk["module"] = [modules.setdefault(r.module, len(modules)) for r in rows]
            chunk["function_offset"] = [r.function_offset for r in rows]
            chunk["site_offset"] = [r.site_offset for r in rows]
            text.write("".join(map(line, rows)))
            table.append(chunk)
        table.close()
    names["functions"], names["modules"] = list(functions), list(modules)


def write_all(out: Path, raw: Path, meta: dict, objects_raw: np.ndarray, objects: list[DataObject],
              task_names: list[str]) -> None:
    """Every table of a trace directory from the agent's files in raw."""
    (out / columns.DIRECTORY).mkdir(parents=True, exist_ok=True)
    names = {"tasks": task_names, "objects": [o.name for o in objects], "object_sites": [o.site for o in objects]}
    write_tasks(out, raw, task_names)
    write_deps(out, raw, objects_raw, objects)
    write_objects(out, objects)
    write_accesses(out, raw, objects_raw, objects)
    write_calls(out, raw, meta.get("call_sites", {}), names)
    columns.write_names(out / columns.DIRECTORY, names)
