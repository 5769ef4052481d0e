"""Text tables parsed in bulk with numpy: hundreds of megabytes of CSV or Dimemas records into
integer columns without a Python object per field, for every reader that must scale (the trace
directory's CSV files, .dim traces)."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

# Small chunks keep every temporary array below glibc's mmap threshold, so chunks reuse the
# same memory instead of faulting in fresh pages (which costs more than the parsing).
CHUNK = 4 << 20


def recycle_freed_memory() -> None:
    """Ask glibc to reuse freed blocks up to 64 MiB instead of unmapping them.

    Parsing allocates and frees the same temporaries chunk after chunk; on VMs where a page
    fault costs microseconds, faulting them in again costs more than the parsing itself.
    Without glibc this does nothing.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 64 << 20)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 256 << 20)  # M_TRIM_THRESHOLD
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
