"""Results as tidy tables: one row per observation, the same typed columns in every row.

A script, a spreadsheet and pandas all read a result the same way only if its shape does not
depend on its values: no column present in some rows only, no number that is sometimes the
string "inf", no ``None`` standing for two different things. So every result of the analyses
(a speedup study, a what-if, an exploration, ...) gives its numbers as a ``Table`` whose columns
are declared once, with their kind, and ``Table`` is the one writer of CSV and JSON records and
the one way to pandas (an optional extra: ``pip install tareador[pandas]``).

Kinds: ``int``, ``float`` (NaN: not defined for that row, e.g. the efficiency of an unbounded
machine), ``count`` (an int, or ``math.inf`` for unbounded: core counts), ``number`` (an int or
a float as the user gave it: acceleration factors, 2 or 0.5 or inf) and ``str``. CSV and JSON
write an infinity as ``inf`` and NaN as an empty cell / ``null``; pandas gets float columns for
``count`` and ``number`` (inf stays inf).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from tareador.errors import UserError
from tareador.files import output_file


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


FITS = {"int": _is_int, "float": _is_number, "count": lambda v: _is_int(v) or v == math.inf, "number": _is_number,
        "str": lambda v: isinstance(v, str)}  # kind -> what a cell of it may hold


@dataclass(frozen=True)
class Table:
    """``columns``: (name, kind) pairs; ``rows``: tuples in that order, checked on creation."""

    name: str
    columns: tuple[tuple[str, str], ...]
    rows: tuple[tuple, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "rows", tuple(tuple(_cell(v, kind, self.name, col)
                                                     for v, (col, kind) in zip(r, self.columns, strict=True))
                                               for r in self.rows))

    @classmethod
    def of(cls, name: str, columns: Sequence[tuple[str, str]], rows: Iterable[Sequence]) -> Table:
        return cls(name, tuple(columns), tuple(tuple(r) for r in rows))

    @property
    def names(self) -> list[str]:
        return [c for c, _ in self.columns]

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict]:
        """Rows as dicts of the raw values (inf and NaN as floats)."""
        names = self.names
        return (dict(zip(names, r)) for r in self.rows)

    def column(self, name: str) -> list:
        k = self.names.index(name)
        return [r[k] for r in self.rows]

    def records(self) -> list[dict]:
        """Rows for JSON, which has neither infinity nor NaN: "inf" and null."""
        names = self.names
        return [{c: _json(v) for c, v in zip(names, r)} for r in self.rows]

    def write_csv(self, path: str | Path) -> Path:
        """Header and rows, atomically; floats as Python prints them (exact round trip)."""
        path = Path(path)
        with output_file(path, newline="") as f:
            w = csv.writer(f)
            w.writerow(self.names)
            w.writerows([_text(v) for v in r] for r in self.rows)
        return path

    def to_pandas(self):
        """A pandas.DataFrame with one dtype per column (pandas is the optional extra ``pandas``)."""
        try:
            import pandas as pd
        except ImportError:
            raise UserError("to_pandas needs pandas: pip install 'tareador[pandas]'") from None
        dtypes = {"int": "int64", "float": "float64", "count": "float64", "number": "float64", "str": "object"}
        frame = pd.DataFrame.from_records(list(self.rows), columns=self.names)
        return frame.astype({c: dtypes[k] for c, k in self.columns})

    def __repr__(self) -> str:
        return f"<Table {self.name}: {len(self.rows)} rows x {', '.join(self.names)}>"


class Tabular:
    """A result whose numbers are a Table: ``to_pandas()`` and ``write_csv()`` on the result itself."""

    def table(self) -> Table:
        raise NotImplementedError

    def to_pandas(self):
        return self.table().to_pandas()

    def write_csv(self, path: str | Path) -> Path:
        return self.table().write_csv(path)


def unbounded(cores: int | None) -> float | int:
    """A core count for a table: None (no limit) is inf."""
    return math.inf if cores is None else cores


def _cell(value, kind: str, table: str, column: str):
    """The value in its column's kind; TypeError for what does not fit (a bug, not user input)."""
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if not FITS[kind](value):
        raise TypeError(f"table {table}: column {column} is {kind}, not {value!r}")
    return float(value) if kind == "float" else value


def _json(v):
    if isinstance(v, float):
        if math.isnan(v):
            return None
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    return v


def _text(v) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        return repr(v) if math.isfinite(v) else ("inf" if v > 0 else "-inf")
    return str(v)
