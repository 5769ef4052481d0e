"""Text records written in bulk from numpy columns: the Paraver, Chrome and Dimemas writers'
common path.

A Python string per record costs about a microsecond per number, which made the timelines of
a million task instances take minutes; here each record kind is a layout (literal bytes and
fields taken from columns), and text_rows.c writes a chunk of records at a time. ``Rows.ends``
measures the records without writing them, so that a writer can split its output by size or
point at where a record starts before writing anything.
"""

from __future__ import annotations

import copy
import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import IO

import numpy as np

from tareador.native import shared_library

LITERAL, INTEGER, FIXED, REAL, TEXT = range(5)  # enum kind in text_rows.c
CHUNK_ROWS = 1 << 16  # records per call: a few MB of buffer, reused
MAX_DECIMALS = 18


@dataclass(frozen=True)
class Field:
    """One field of a layout: literal ``text``, or a value of ``column`` at the record's source row."""

    kind: int
    column: np.ndarray | None = None
    decimals: int = 0
    text: bytes = b""
    offsets: np.ndarray | None = None  # TEXT: entry e is text[offsets[e]:offsets[e + 1]]

    def bound(self) -> int:
        """The most bytes this field can take in one record."""
        if self.kind == LITERAL:
            return len(self.text)
        if self.kind in (INTEGER, FIXED):
            return 21 + self.decimals
        if self.kind == REAL:
            assert self.column is not None
            finite = self.column[np.isfinite(self.column)]
            largest = float(np.abs(finite).max(initial=0.0))
            return len(f"{largest:.0f}") + 2 + self.decimals + 4
        assert self.offsets is not None
        return int(np.diff(self.offsets).max(initial=0))


def integer(column: np.ndarray) -> Field:
    return Field(INTEGER, np.ascontiguousarray(column, np.int64))


def fixed(column: np.ndarray, decimals: int) -> Field:
    """Integers shown with an implied decimal point: nanoseconds as microseconds with 3 decimals."""
    if not 0 <= decimals <= MAX_DECIMALS:
        raise ValueError(f"decimals must be 0..{MAX_DECIMALS}")
    return Field(FIXED, np.ascontiguousarray(column, np.int64), decimals)


def real(column: np.ndarray, decimals: int) -> Field:
    """Doubles as Python's f"{x:.{decimals}f}" (and C's %.*f) writes them: correctly rounded."""
    if not 0 <= decimals <= MAX_DECIMALS:
        raise ValueError(f"decimals must be 0..{MAX_DECIMALS}")
    return Field(REAL, np.ascontiguousarray(column, np.float64), decimals)


def text(indices: np.ndarray, entries: Sequence[str]) -> Field:
    """Entry ``indices[row]`` of ``entries`` (UTF-8), e.g. the names of task types, escaped already."""
    encoded = [e.encode() for e in entries]
    offsets = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return Field(TEXT, np.ascontiguousarray(indices, np.int64), text=b"".join(encoded), offsets=offsets)


Layout = Sequence[Field | str | bytes]


class _FieldStruct(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int32), ("decimals", ctypes.c_int32), ("column", ctypes.c_void_p),
                ("text", ctypes.c_char_p), ("offsets", ctypes.c_void_p), ("length", ctypes.c_int64)]


class _LayoutStruct(ctypes.Structure):
    _fields_ = [("fields", ctypes.POINTER(_FieldStruct)), ("nfields", ctypes.c_int64)]


class Rows:
    """Records to write: record k in ``layouts[layout_of[k]]`` (layout 0 if None), its fields
    taken at row ``source[k]`` of their columns (k itself if None: as many records as the first
    layout's columns have rows, or as ``layout_of`` has)."""

    def __init__(self, layouts: Sequence[Layout], source: np.ndarray | None = None,
                 layout_of: np.ndarray | None = None):
        fields = [[f if isinstance(f, Field) else Field(LITERAL, text=f.encode() if isinstance(f, str) else f)
                   for f in layout] for layout in layouts]
        if source is not None:
            self.count = len(source)
        elif layout_of is not None:
            self.count = len(layout_of)
        else:
            self.count = min((len(f.column) for f in fields[0] if f.column is not None), default=0)
        self.source = np.ascontiguousarray(np.arange(self.count) if source is None else source, np.int64)
        self.layout_of = None if layout_of is None else np.ascontiguousarray(layout_of, np.int8)
        self.bound = max((sum(f.bound() for f in layout) for layout in fields), default=0)
        self._fields = fields  # the structs below point into these fields' arrays and bytes
        self._structs = [(_FieldStruct * len(layout))(*(_FieldStruct(
            f.kind, f.decimals, None if f.column is None else f.column.ctypes.data, f.text,
            None if f.offsets is None else f.offsets.ctypes.data, len(f.text)) for f in layout))
            for layout in fields]
        self._layouts = (_LayoutStruct * len(fields))(*(_LayoutStruct(s, len(s)) for s in self._structs))

    def take(self, index: np.ndarray) -> Rows:
        """The records at ``index``, in that order (sharing the layouts and their columns)."""
        other = copy.copy(self)
        other.source = np.ascontiguousarray(self.source[index])
        other.layout_of = None if self.layout_of is None else np.ascontiguousarray(self.layout_of[index])
        other.count = len(other.source)
        return other

    def _call(self, first: int, last: int, out, ends) -> int:
        layout_of = None if self.layout_of is None else self.layout_of[first:].ctypes.data
        return _library().format_rows(self._layouts, layout_of, self.source[first:].ctypes.data, last - first, out,
                                      ends)

    def ends(self) -> np.ndarray:
        """Where each record ends in the text, without writing it."""
        ends = np.zeros(self.count, np.int64)
        if self.count:
            self._call(0, self.count, None, ends.ctypes.data)
        return ends

    def write(self, f: IO[bytes], ends: np.ndarray | None = None) -> int:
        """The records into the binary file ``f``, a chunk at a time; returns the bytes written.
        ``ends`` (int64, one per record) gets where each record ends, from the first one's start."""
        buffer = np.empty(max(self.bound, 1) * min(CHUNK_ROWS, max(self.count, 1)), np.uint8)
        written = 0
        for a in range(0, self.count, CHUNK_ROWS):
            b = min(self.count, a + CHUNK_ROWS)
            n = self._call(a, b, buffer.ctypes.data, None if ends is None else ends[a:b].ctypes.data)
            if ends is not None:
                ends[a:b] += written
            f.write(buffer.data[:n])
            written += n
        return written

    def text(self) -> str:
        buffer = np.empty(max(self.bound * self.count, 1), np.uint8)
        n = self._call(0, self.count, buffer.ctypes.data, None) if self.count else 0
        return buffer[:n].tobytes().decode()


@cache
def _library() -> ctypes.CDLL:
    return shared_library("libtareador_rows.so", [Path(__file__).with_name("text_rows.c")], {
        "format_rows": (ctypes.c_int64, [ctypes.POINTER(_LayoutStruct), ctypes.c_void_p, ctypes.c_void_p,
                                         ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p])})
