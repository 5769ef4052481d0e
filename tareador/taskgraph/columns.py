"""The trace directory's tables in binary: ``tables/``, written by ``tareador trace`` beside the
CSVs (which stay what users script against), for reading millions of rows without parsing text.

One NumPy ``.npy`` file per table (``np.load(path, mmap_mode="r")`` maps it), little-endian, row
k of each is row k of its CSV; strings are stored once, in ``names.json``, and indexed:

- ``tasks.npy`` (TASKS): row k is fragment k. name: index into names.json "tasks"; parent: the
  creating fragment, 2^32 - 1 for main's fragments (-1 in tasks.csv); instance, start, end,
  instructions as in tasks.csv; pad: 0.
- ``deps.npy`` (DEPS): src, dst, object (row of objects.npy), kind (0 RAW, 1 WAR, 2 WAW), bytes.
- ``objects.npy`` (OBJECTS): address, size, kind (0 heap, 1 global, 2 stack); names.json
  "objects" and "object_sites" are the name and site columns of objects.csv.
- ``accesses.npy`` (ACCESSES): task, object (row of objects.npy), part, read_lo, read_hi,
  write_lo, write_hi (from the object's start, -1 where none).
- ``calls.npy`` (CALLS): task; function and module: indices into names.json "functions" and
  "modules"; function_offset, site_offset; args: the 8 integer argument words.
- ``names.json``: {"tasks", "objects", "object_sites", "functions", "modules"}: lists of strings.

``Rows`` turns such a table back into the dataclasses of taskgraph.model one row at a time, so a
TaskTrace over millions of fragments costs their arrays, not a Python object per row.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, TypeVar

import numpy as np

from tareador.files import output_file
from tareador.taskgraph.model import DEPENDENCY_KINDS, DataObject, Dependency, Fragment, TaskTrace

DIRECTORY = "tables"
TASKS = np.dtype([("name", "<u4"), ("parent", "<u4"), ("instance", "<u4"), ("pad", "<u4"), ("start", "<u8"),
                  ("end", "<u8"), ("instructions", "<u8")])
DEPS = np.dtype([("src", "<u4"), ("dst", "<u4"), ("object", "<u4"), ("kind", "<u4"), ("bytes", "<u8")])
OBJECTS = np.dtype([("address", "<u8"), ("size", "<u8"), ("kind", "<u4"), ("pad", "<u4")])
ACCESSES = np.dtype([("task", "<u4"), ("object", "<u4"), ("part", "<u4"), ("read_lo", "<i8"), ("read_hi", "<i8"),
                     ("write_lo", "<i8"), ("write_hi", "<i8")])
CALLS = np.dtype([("task", "<u4"), ("function", "<u4"), ("module", "<u4"), ("pad", "<u4"),
                  ("function_offset", "<u8"), ("site_offset", "<u8"), ("args", "<u8", 8)])
NO_PARENT = 0xFFFFFFFF
HEADER_BYTES = 256  # room for any row count: the header is rewritten in place once the rows are in
CHUNK_ROWS = 1 << 16


class TableWriter:
    """An .npy file written a chunk of rows at a time, its row count filled in at the end."""

    def __init__(self, f: IO[bytes], dtype: np.dtype):
        self.f, self.dtype, self.rows = f, dtype, 0
        f.write(self._header())

    def _header(self) -> bytes:
        fields = {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False, "shape": (self.rows,)}
        text = repr(fields).encode("latin1")
        prefix = np.lib.format.MAGIC_PREFIX + bytes([1, 0])
        length = HEADER_BYTES - len(prefix) - 2
        if len(text) >= length:
            raise ValueError(f"the .npy header of {self.dtype} does not fit in {HEADER_BYTES} bytes")
        return prefix + length.to_bytes(2, "little") + text.ljust(length - 1) + b"\n"

    def append(self, rows: np.ndarray) -> None:
        self.f.write(np.ascontiguousarray(rows, self.dtype).tobytes())
        self.rows += len(rows)

    def close(self) -> None:
        self.f.seek(0)
        self.f.write(self._header())


def write_table(path: Path, dtype: np.dtype, chunks: Iterator[np.ndarray]) -> int:
    """Rows from chunks into the .npy file path (atomically); returns the row count."""
    with output_file(path, "wb") as f:
        writer = TableWriter(f, dtype)
        for chunk in chunks:
            writer.append(chunk)
        writer.close()
    return writer.rows


def write_names(directory: Path, names: dict[str, list[str]]) -> None:
    with output_file(directory / "names.json") as f:
        json.dump(names, f)


def read_table(directory: Path, name: str) -> np.ndarray:
    """A table of a trace directory's ``tables/``, mapped (an empty one, which cannot be, read)."""
    path = Path(directory) / DIRECTORY / f"{name}.npy"
    array = np.load(path, mmap_mode="r") if path.stat().st_size > HEADER_BYTES else np.load(path)
    return array


Row = TypeVar("Row")


class Rows(Sequence[Row]):
    """A table's rows as objects made on demand: ``make(index, row values)``. Iterating goes a
    chunk of rows at a time; indexing with a slice gives a list."""

    def __init__(self, table: np.ndarray, make: Callable[[int, tuple], Row]):
        self.table, self.make = table, make

    def __len__(self) -> int:
        return len(self.table)

    def __getitem__(self, index):
        if isinstance(index, slice):
            first, _, step = index.indices(len(self))
            return [self.make(first + k * step, row) for k, row in enumerate(self.table[index].tolist())]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self.make(index, self.table[index].tolist())

    def __iter__(self) -> Iterator[Row]:
        for a in range(0, len(self), CHUNK_ROWS):
            for k, row in enumerate(self.table[a:a + CHUNK_ROWS].tolist()):
                yield self.make(a + k, row)

    def __eq__(self, other) -> bool:
        return (isinstance(other, Sequence) and len(self) == len(other)
                and all(a == b for a, b in zip(self, other, strict=True)))

    __hash__ = None  # type: ignore[assignment]  # unhashable, as a list is (typeshed: object.__hash__ a method)

    def __repr__(self) -> str:
        return f"Rows({len(self)} rows)"


def object_rows(directory: Path, names: dict[str, list[str]]) -> list[DataObject]:
    kinds = ("heap", "global", "stack")
    table = read_table(directory, "objects")
    return [DataObject(i, name, kinds[kind] if kind < len(kinds) else "heap", address, size, site)
            for i, ((address, size, kind, _), name, site) in enumerate(zip(table.tolist(), names["objects"],
                                                                           names["object_sites"], strict=True))]


def open_trace(directory: str | Path, summary: dict) -> TaskTrace:
    """The TaskTrace of a trace directory's ``tables/``: fragments and dependencies made from the
    mapped tables as they are read."""
    d = Path(directory)
    names = json.loads((d / DIRECTORY / "names.json").read_text(encoding="utf-8"))
    objects = object_rows(d, names)
    tasks = names["tasks"]

    def fragment(i: int, row: tuple) -> Fragment:
        name, parent, instance, _, start, end, instructions = row
        return Fragment(i, tasks[name], instance, -1 if parent == NO_PARENT else parent, start, end, instructions)

    def dependency(_: int, row: tuple) -> Dependency:
        src, dst, obj, kind, size = row
        return Dependency(src, dst, DEPENDENCY_KINDS[kind], objects[obj].name, size)

    return TaskTrace(Rows(read_table(d, "tasks"), fragment), Rows(read_table(d, "deps"), dependency), objects,
                     summary, str(d))
