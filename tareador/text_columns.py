"""Text tables parsed in bulk with numpy: hundreds of megabytes of CSV or Dimemas records into
integer columns without a Python object per field, for every reader that must scale (the trace
directory's CSV files, all read by ``read_csv``; .dim traces)."""

from __future__ import annotations

import csv
import ctypes
import io
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tareador.errors import TraceDirError

# Small chunks keep every temporary array below glibc's mmap threshold, so chunks reuse the
# same memory instead of faulting in fresh pages (which costs more than the parsing).
CHUNK = 4 << 20
# Freed blocks up to this size a whole-trace reader keeps for reuse: above a column of a row per
# record of a 2 M-instance replay (22 M records), so that its plan reuses the parser's memory.
WHOLE_TRACE_REUSE = 1 << 30


def recycle_freed_memory(up_to: int = 64 << 20) -> None:
    """Ask glibc to reuse freed blocks up to ``up_to`` bytes instead of unmapping them.

    Parsing allocates and frees the same temporaries chunk after chunk; on VMs where a page
    fault costs microseconds, faulting them in again costs more than the parsing itself. A
    replay's plan makes and drops columns of a row per record (hundreds of MB each), so read_dim
    passes WHOLE_TRACE_REUSE: its freed blocks serve the next ones (measured: a third less system
    time on the 2 M-instance replay), and replay gives them back with ``release_freed_memory``
    before its caller's output, so the peak does not grow. Without glibc this does nothing.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, up_to)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, max(up_to, 256 << 20))  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass


def release_freed_memory() -> None:
    """Give the blocks freed but kept for reuse (``recycle_freed_memory``) back to the system,
    so that what runs next does not count them in its peak memory."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def line_chunks(data: bytes, start: int, stop: int) -> Iterator[tuple[int, int]]:
    """Consecutive ranges of whole lines of about CHUNK bytes covering data[start:stop]."""
    while start < stop:
        end = min(stop, start + CHUNK)
        if end < stop:
            end = data.rindex(b"\n", start, end) + 1
        yield start, end
        start = end


_ASCII_ZEROS = np.uint64(0x3030303030303030)
# _KEEP[n]: the top n bytes of a little-endian word, where an n-digit number ending there sits.
_KEEP = np.array([((1 << 64) - 1) << (8 * (8 - n)) & ((1 << 64) - 1) for n in range(9)], np.uint64)
MAX_DIGITS = 16


def _swar8(words: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Value of the last n (0..8) ASCII digits of each 8-byte word: 8 digits per few integer ops."""
    keep = _KEEP[n]
    w = ((words & keep) | (_ASCII_ZEROS & ~keep)) - _ASCII_ZEROS
    w = (w * np.uint64(10) + (w >> np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
    w = (w * np.uint64(100) + (w >> np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
    return ((w * np.uint64(10000) + (w >> np.uint64(32))) & np.uint64(0xFFFFFFFF)).astype(np.int64)


def digit_values(words: np.ndarray, ends: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Decimal value of the digit runs data[end-length:end] (0..16 digits); ``words[i]`` is the
    little-endian 8-byte word at data[i], so no per-digit gather is needed."""
    low = np.minimum(lengths, 8)
    value = _swar8(words[ends - 8], low)
    high = np.flatnonzero(lengths > 8)
    if len(high):
        value[high] += _swar8(words[ends[high] - 16], lengths[high] - 8) * 10 ** 8
    return value


def byte_words(data: bytes) -> np.ndarray:
    """data[i:i+8] as a little-endian integer for every i: what the digit parser reads."""
    return np.ndarray((max(len(data) - 7, 0),), "<u8", buffer=data, strides=(1,))


@dataclass
class Fields:
    """Lines of ``sep``-delimited fields split in bulk; integer fields already have their value.

    Token arrays are indexed by token; ``first_tok``/``ntok`` by line. A token is an integer
    when it is 1..16 digits with an optional leading '-'; ``odd``/``odd_tok`` list the other
    non-digit characters (and their token) for callers that accept more (decimals, names).
    """

    arr: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    first_tok: np.ndarray
    ntok: np.ndarray
    is_int: np.ndarray
    value: np.ndarray
    odd: np.ndarray
    odd_tok: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        return self.ends - self.starts

    def line_text(self, line: int) -> str:
        a = self.starts[self.first_tok[line]]
        b = self.ends[self.first_tok[line] + self.ntok[line] - 1]
        return bytes(self.arr[a:b]).decode(errors="replace")

    def token_of_line(self, token: int) -> int:
        return int(np.searchsorted(self.first_tok, token, side="right")) - 1


def split_fields(data: bytes, words: np.ndarray, start: int, stop: int, sep: int) -> Fields:
    """Split whole lines data[start:stop] (ending with a newline) without a Python object per field."""
    arr = np.frombuffer(data, np.uint8, stop - start, start)
    nondigit = np.flatnonzero((arr < 48) | (arr > 57))
    char = arr[nondigit]
    is_sep = (char == sep) | (char == 10)
    ends = nondigit[is_sep]
    starts = np.empty_like(ends)
    starts[:1] = 0
    starts[1:] = ends[:-1] + 1
    lengths = ends - starts
    last_tok = np.flatnonzero(char[is_sep] == 10)
    first_tok = np.empty(len(last_tok), np.int64)
    first_tok[:1] = 0
    first_tok[1:] = last_tok[:-1] + 1
    odd = nondigit[~is_sep]
    odd_tok = np.searchsorted(ends, odd)
    tok, first_odd, nodd = np.unique(odd_tok, return_index=True, return_counts=True)
    minus = (arr[odd[first_odd]] == 45) & (odd[first_odd] == starts[tok])
    neg = np.zeros(len(ends), bool)
    neg[tok[minus]] = True
    is_int = (lengths > 0) & (lengths <= MAX_DIGITS)
    is_int[tok] = minus & (nodd == 1) & (lengths[tok] > 1) & (lengths[tok] <= MAX_DIGITS + 1)
    neg &= is_int
    value = np.zeros(len(ends), np.int64)
    sel = np.flatnonzero(is_int)
    value[sel] = digit_values(words, start + ends[sel], lengths[sel] - neg[sel])
    value[neg] *= -1
    return Fields(arr=arr, starts=starts, ends=ends, first_tok=first_tok,
                  ntok=last_tok - first_tok + 1, is_int=is_int, value=value, odd=odd, odd_tok=odd_tok)


@dataclass
class Text:
    """A text column: each row's value as a code into the column's distinct values."""

    codes: np.ndarray
    values: list[str]

    def strings(self) -> list[str]:
        return [self.values[c] for c in self.codes.tolist()]


def read_csv(path: Path, header: Sequence[str], ints: Collection[str], texts: Collection[str],
             floats: Collection[str] = ()) -> dict:
    """The named columns of a CSV file with this header: integer columns as int64 arrays, text
    columns as ``Text``, float columns as float64 arrays; the others are not kept.

    TraceDirError naming the file (and line) of a wrong header, a malformed row or bytes that
    are not UTF-8. Files without quotes or bare carriage returns (all tareador writes, but for
    a name holding a comma or a quote) are split in bulk; the others by the csv module, into
    the same columns: one reader, whichever way the text is cut.
    """
    data = path.read_bytes()
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as e:
            line = data.count(b"\n", 0, e.start) + 1
            raise TraceDirError(f"{path}:{line}: not UTF-8 text; the file is corrupt") from None
    plain = data.replace(b"\r\n", b"\n")
    strings = [*texts, *floats]
    if b'"' in plain or b"\r" in plain:
        columns = _quoted_columns(path, data.decode(), header, ints, strings)
    else:
        columns = _plain_columns(path, plain if plain.endswith(b"\n") or not plain else plain + b"\n", header, ints,
                                 strings)
    for name in floats:
        columns[name] = _float_column(path, data, columns[name])
    return columns


def _float_column(path: Path, data: bytes, column: Text) -> np.ndarray:
    """A text column's values as floats, each distinct text converted once."""
    values = []
    for code, text in enumerate(column.values):
        try:
            values.append(float(text))
        except ValueError:
            line = int(np.argmax(column.codes == code)) + 2
            raise _malformed(path, line, data.decode().splitlines()[line - 1]) from None
    return np.array(values, np.float64)[column.codes]


def _wrong_header(path: Path, first_line: str, header: Sequence[str]) -> TraceDirError:
    found = next(csv.reader(io.StringIO(first_line, newline="")), None)
    return TraceDirError(f"{path}: header {found} is not {','.join(header)}; the file is corrupt or from another "
                         "tareador version: trace the program again")


def _malformed(path: Path, line: int, text: str) -> TraceDirError:
    record = next(csv.reader([text]), [])
    return TraceDirError(f"{path}:{line}: malformed row {record!r}; the file is truncated or corrupt")


def _plain_columns(path: Path, data: bytes, header: Sequence[str], ints: Collection[str],
                   texts: Collection[str]) -> dict:
    first = data.find(b"\n") + 1
    if data[:first - 1] != ",".join(header).encode():
        raise _wrong_header(path, data[:first].decode(), header)
    words = byte_words(data)
    int_at = np.array([header.index(c) for c in ints], np.int64)
    text_at = [header.index(c) for c in texts]
    values: list[list[np.ndarray]] = [[] for _ in ints]
    spans: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in texts]
    line = 2
    for a, b in line_chunks(data, first, len(data)):
        f = split_fields(data, words, a, b, ord(","))
        wrong = np.flatnonzero(f.ntok != len(header))
        if len(wrong):
            raise _malformed(path, line + int(wrong[0]), f.line_text(int(wrong[0])))
        tok = f.first_tok[:, None] + int_at
        chunk = f.value[tok]
        for r, k in zip(*np.nonzero(~f.is_int[tok])):  # past 16 digits, '+5', ' 5': what int() takes
            chunk[r, k] = _python_int(path, f, tok[r, k], line + r)
        for k in range(len(int_at)):
            values[k].append(chunk[:, k])
        for k, at in enumerate(text_at):
            spans[k].append((a + f.starts[f.first_tok + at], a + f.ends[f.first_tok + at]))
        line += len(f.first_tok)
    columns: dict = {c: _join(v) for c, v in zip(ints, values)}
    for c, s in zip(texts, spans):
        columns[c] = _text_column(data, words, _join([a for a, _ in s]), _join([b for _, b in s]))
    return columns


def _join(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


# _LOW[n]: the low n bytes of a little-endian word, where the first n bytes at its address sit.
_LOW = np.array([(1 << (8 * n)) - 1 for n in range(9)], np.uint64)


def _text_column(data: bytes, words: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> Text:
    """The texts data[starts:ends] as codes. Up to 15 bytes (task types, kinds) a text is two
    words compared in bulk; longer ones go through a dict, one Python step each."""
    n = len(starts)
    length = ends - starts
    short = np.flatnonzero((length <= 15) & (starts + 16 <= len(data)))
    at, size = starts[short], length[short]
    low = words[at] & _LOW[np.minimum(size, 8)]
    high = (words[np.minimum(at + 8, max(len(words) - 1, 0))] & _LOW[np.clip(size - 8, 0, 8)]) \
        | (size.astype(np.uint64) << np.uint64(56))
    order = np.lexsort((low, high))
    new = np.ones(len(order), bool)
    new[1:] = (low[order][1:] != low[order][:-1]) | (high[order][1:] != high[order][:-1])
    codes = np.empty(n, np.int64)
    codes[short[order]] = np.cumsum(new) - 1
    # The distinct texts so far, then the rest's (a short text near the end of the file among them).
    seen = {data[i:i + k]: c for c, (i, k) in enumerate(zip(at[order[new]].tolist(), size[order[new]].tolist()))}
    rest = np.setdiff1d(np.arange(n), short, assume_unique=True)
    for k, i, j in zip(rest.tolist(), starts[rest].tolist(), ends[rest].tolist()):
        codes[k] = seen.setdefault(data[i:j], len(seen))
    return Text(codes, [x.decode() for x in seen])


def _python_int(path: Path, f: Fields, token: int, line: int) -> int:
    try:
        value = int(bytes(f.arr[f.starts[token]:f.ends[token]]).decode())
        if -(1 << 63) <= value < 1 << 63:
            return value
    except ValueError:
        pass
    raise _malformed(path, line, f.line_text(f.token_of_line(token)))


def _quoted_columns(path: Path, text: str, header: Sequence[str], ints: Collection[str],
                    texts: Collection[str]) -> dict:
    reader = csv.reader(io.StringIO(text, newline=""))
    if next(reader, None) != list(header):
        raise _wrong_header(path, text[:text.find("\n") + 1] if "\n" in text else text, header)
    int_at = [header.index(c) for c in ints]
    text_at = [header.index(c) for c in texts]
    numbers: list[list[int]] = [[] for _ in ints]
    strings: list[list[str]] = [[] for _ in texts]
    for line, record in enumerate(reader, start=2):
        try:
            if len(record) != len(header):
                raise ValueError
            row = [int(record[i]) for i in int_at]
            if not all(-(1 << 63) <= v < 1 << 63 for v in row):
                raise ValueError
        except ValueError:
            raise TraceDirError(f"{path}:{line}: malformed row {record!r}; the file is truncated or corrupt") from None
        for column, v in zip(numbers, row):
            column.append(v)
        for texts_of, i in zip(strings, text_at):
            texts_of.append(record[i])
    columns: dict = {c: np.array(v, np.int64) for c, v in zip(ints, numbers)}
    for c, s in zip(texts, strings):
        codes: dict[str, int] = {}
        columns[c] = Text(np.fromiter((codes.setdefault(x, len(codes)) for x in s), np.int64, len(s)), list(codes))
    return columns
