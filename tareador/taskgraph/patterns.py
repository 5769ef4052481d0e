"""When the data of each message of an MPI run is produced and consumed (thesis ch. 4.2, 5.4).

``trace --mpi`` records, per rank, every message buffer an MPI call sent or received
(tracer_agents/patterns.c) and writes it to ``rank-N/patterns.npz``: per buffer the call's row
in the rank's mpi.csv, its address, bytes, element size, the call's time, and per element the
raw instruction time of its last write before a send, or of its first read after a receive
completed. This module turns those into one :class:`TransferPattern` per matched point-to-point
message, with each element's time as a fraction of its interval:

- production interval of a send: from the previous send of the same buffer (same address) by
  the rank, or the start of tracing, to this send; an element last written before the interval
  counts as ready at its start (0);
- consumption interval of a receive: from its completion to the next receive into any of its
  bytes, or the rank's end; an element never read in it, or overwritten before being read, is
  not consumed (NaN).
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from tareador.errors import TraceDirError
from tareador.files import output_file

RANK_FILE = "patterns.npz"
UNREAD = np.iinfo(np.uint64).max
OVERWRITTEN = UNREAD - 1
OPEN = UNREAD
FIELDS = ("call", "address", "bytes", "element", "at", "first", "end", "receive")


def save_rank_patterns(directory: str | Path, rows: np.ndarray, times: np.ndarray, end: int) -> None:
    """What patterns.c recorded in one rank; end: the rank's last instruction time (the end of
    watches still open)."""
    with output_file(Path(directory) / RANK_FILE, "wb") as f:
        # numpy's stub lets **arrays bind allow_pickle: bool; FIELDS holds no such name.
        np.savez_compressed(f, times=times, rank_end=np.uint64(end),
                            **{k: np.ascontiguousarray(rows[k]) for k in FIELDS})  # type: ignore[arg-type]


@dataclass(frozen=True)
class RankPatterns:
    """One rank's buffers: arrays indexed alike (FIELDS), the elements' raw times, and where each
    buffer's production interval starts (production_starts)."""

    columns: dict[str, np.ndarray]
    times: np.ndarray
    end: int
    starts: np.ndarray

    @cached_property
    def _rows(self) -> dict[tuple[int, int], int]:
        """(call, receive) -> its first row, built once: row_of is asked for every message, and a
        scan of the columns each time made a run's patterns quadratic in its messages."""
        keys = zip(self.columns["call"].tolist(), self.columns["receive"].tolist())
        return {key: row for row, key in reversed(list(enumerate(keys)))}

    def row_of(self, call: int, receive: bool) -> int | None:
        return self._rows.get((call, int(receive)))

    def elements(self, row: int) -> np.ndarray:
        first = int(self.columns["first"][row])
        n = -(-int(self.columns["bytes"][row]) // int(self.columns["element"][row]))
        return self.times[first:first + n]

    def interval(self, row: int) -> tuple[int, int]:
        """A buffer's production interval (a send) or consumption interval (a receive)."""
        at = int(self.columns["at"][row])
        if not self.columns["receive"][row]:
            return int(self.starts[row]), at
        end = int(self.columns["end"][row])
        return at, self.end if end == OPEN else end

    def clamped(self, row: int) -> np.ndarray:
        """The buffer's element times in instructions within its interval: a send's elements ready
        at its start at the earliest; a receive's never consumed at its end."""
        start, stop = self.interval(row)
        raw = self.elements(row)
        times = np.clip(raw, start, stop).astype(np.int64)
        return np.where(raw >= OVERWRITTEN, stop, times) if self.columns["receive"][row] else times


def load_rank_patterns(directory: Path) -> RankPatterns:
    """One rank's patterns.npz, ready for transfer_patterns: the per-rank part of the work, which
    a process pool (or mpi4py ranks) can run for every rank at once."""
    path = directory / RANK_FILE
    if not path.exists():
        raise TraceDirError(f"{path} is missing: the run was traced without patterns; trace it again with "
                            "'tareador mpirun' (patterns are recorded for every MPI run)")
    try:
        with np.load(path, allow_pickle=False) as f:
            columns = {k: f[k] for k in FIELDS}
            return RankPatterns(columns, f["times"], int(f["rank_end"]), production_starts(columns))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error) as e:
        raise TraceDirError(f"{path} is not a patterns file ({e}); trace the run again") from None


@dataclass(frozen=True)
class TransferPattern:
    """One point-to-point message: its elements' production and consumption as fractions of the
    intervals (0..1; NaN: not consumed), and the intervals in instructions."""

    message: int
    src: int
    dst: int
    tag: int
    bytes: int
    production_start: int  # instruction time on src
    send_time: int
    completion_time: int  # on dst
    consumption_end: int
    production: np.ndarray
    consumption: np.ndarray

    @property
    def production_interval(self) -> int:
        return self.send_time - self.production_start

    @property
    def consumption_interval(self) -> int:
        return self.consumption_end - self.completion_time

    def production_times(self) -> np.ndarray:
        """Each element's ready time in instructions on src."""
        return self.production_start + self.production * self.production_interval

    def consumption_times(self) -> np.ndarray:
        """Each element's first read in instructions on dst (the interval's end if never read)."""
        return self.completion_time + np.nan_to_num(self.consumption, nan=1.0) * self.consumption_interval


def production_starts(c: dict[str, np.ndarray]) -> np.ndarray:
    """Per buffer row, where its production interval starts: the previous send from the same
    address (rows are in call order), or 0, the start of tracing."""
    starts = np.zeros(len(c["call"]), dtype=np.uint64)
    last: dict[int, int] = {}
    for i in np.flatnonzero(c["receive"] == 0).tolist():
        address = int(c["address"][i])
        starts[i] = last.get(address, 0)
        last[address] = int(c["at"][i])
    return starts


def _fractions(times: np.ndarray, start: int, stop: int) -> np.ndarray:
    span = stop - start
    if span <= 0:
        return np.zeros(len(times))
    return np.clip((times.astype(np.float64) - start) / span, 0.0, 1.0)


def transfer_patterns(messages: Sequence, ranks: Sequence[RankPatterns | None]) -> list[TransferPattern]:
    """One TransferPattern per message (tareador.taskgraph.matching.Message) whose two buffers were
    recorded (an empty message, or one from MPI_PROC_NULL, has none); ``ranks[r]`` is rank r's,
    None for a rank that wrote no trace."""
    result = []
    for m in messages:
        sender, receiver = ranks[m.src], ranks[m.dst]
        if sender is None or receiver is None:
            continue
        s, r = sender.row_of(m.send_seq, False), receiver.row_of(m.recv_seq, True)
        if s is None or r is None:
            continue
        (start, sent), (completed, end) = sender.interval(s), receiver.interval(r)
        produced = _fractions(sender.clamped(s), start, sent)
        consumed = _fractions(receiver.clamped(r), completed, end)
        consumed[receiver.elements(r) >= OVERWRITTEN] = np.nan
        result.append(TransferPattern(m.id, m.src, m.dst, m.tag, m.bytes, start, sent, completed, end,
                                      produced, consumed))
    return result


def save_run_patterns(path: str | Path, transfers: Sequence[TransferPattern]) -> None:
    """The elements of every transfer, for plots: message ids, then each side's fractions
    concatenated with offsets (elements of message k: values[offsets[k]:offsets[k + 1]])."""
    arrays: dict[str, np.ndarray] = {"message": np.array([t.message for t in transfers], dtype=np.int64)}
    for side in ("production", "consumption"):
        values = [getattr(t, side) for t in transfers]
        arrays[f"{side}_offsets"] = np.concatenate([[0], np.cumsum([len(v) for v in values])]).astype(np.int64)
        arrays[side] = np.concatenate(values) if values else np.zeros(0)
    with output_file(path, "wb") as f:
        np.savez_compressed(f, **arrays)  # type: ignore[arg-type]  # as above: no key is allow_pickle
