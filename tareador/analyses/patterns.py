"""How early each message is produced and how late it is needed: the thesis' Table 5.1.

A message of n elements is split into K = min(C, n) contiguous chunks (numpy.array_split: sizes
differ by at most one element; a message of one element is one chunk, as the thesis reports its
one-element transfers: every production figure is then the element's, and receiving a quarter
of it means receiving it all). With chunk k complete when its last element is final (r_k, the largest
production fraction in it) and first needed when its first element is first read (m_k, the
smallest consumption fraction in it; a chunk never read counts as needed at the end, 1):

- production, "% of the production interval needed to produce": 1elem = the earliest element's
  final write; quarter = the moment ceil(K/4) chunks are complete, i.e. the ceil(K/4)-th
  smallest r_k; half = ceil(K/2) chunks; whole = all of them (the largest r_k). With K = 4:
  one, two and four chunks. Linear production gives 0 / 25 / 50 / 100 %.
- consumption, "% of the consumption interval that can be passed upon reception of": nothing =
  the first read of any element (min m_k); quarter = with the best ceil(K/4) chunks received the
  rank runs until it reads an element of another chunk: choosing the chunks first needed, that
  is the (ceil(K/4)+1)-th smallest m_k; half = the same with ceil(K/2) chunks (all chunks
  received: 100 %). Linear consumption gives 0 / 25 / 50 %.

Averages per transfer class (a rank pair src -> dst) and overall are plain means of the
messages' figures, as the thesis averages; the distribution (quartiles) is given beside them
because a mean hides bimodal cases.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tareador.errors import PatternsError, UserError
from tareador.taskgraph.mpi import load_run, rank_dirs
from tareador.taskgraph.patterns import (
    RANK_FILE,
    TransferPattern,
    load_rank_patterns,
    save_run_patterns,
    transfer_patterns,
)
from tareador.taskgraph.store import is_run, write_table

FIGURES = ("prod_1elem", "prod_quarter", "prod_half", "prod_whole", "cons_nothing", "cons_quarter", "cons_half")
DEFAULT_CHUNKS = 4


@dataclass(frozen=True)
class MessageFigures:
    """One row of patterns.csv: a transfer's intervals (instructions) and figures (percent)."""

    message: int
    src: int
    dst: int
    tag: int
    bytes: int
    production_interval: int
    consumption_interval: int
    prod_1elem: float
    prod_quarter: float
    prod_half: float
    prod_whole: float
    cons_nothing: float
    cons_quarter: float
    cons_half: float


def check_chunks(chunks: int) -> None:
    if chunks < 1:
        raise PatternsError(f"--chunks {chunks}: a message is split into at least 1 chunk; give C >= 1")


def chunk_ready(production: np.ndarray, chunks: int) -> np.ndarray:
    """r_k per chunk, sorted (chunks with no element, in messages shorter than C, dropped)."""
    return np.sort([p.max() for p in np.array_split(production, chunks) if len(p)])


def chunk_needed(consumption: np.ndarray, chunks: int) -> np.ndarray:
    """m_k per chunk, sorted; a chunk never read is needed at the end (1)."""
    needed = [np.nanmin(c) if np.isfinite(c).any() else 1.0 for c in np.array_split(consumption, chunks) if len(c)]
    return np.sort(needed)


def _kth(values: np.ndarray, k: int) -> float:
    """The k-th smallest (1-based) of values, 1 (the whole interval) past the end."""
    return float(values[k - 1]) if k <= len(values) else 1.0


def _parts(k: int) -> tuple[int, int]:
    """Chunks that make a quarter and a half of a message of k chunks."""
    return math.ceil(k / 4), math.ceil(k / 2)


def figures(t: TransferPattern, chunks: int = DEFAULT_CHUNKS) -> MessageFigures:
    check_chunks(chunks)
    ready, needed = chunk_ready(t.production, chunks), chunk_needed(t.consumption, chunks)
    (made_quarter, made_half), (got_quarter, got_half) = _parts(len(ready)), _parts(len(needed))
    pct = lambda x: round(100.0 * x, 2)  # noqa: E731
    return MessageFigures(
        t.message, t.src, t.dst, t.tag, t.bytes, t.production_interval, t.consumption_interval,
        pct(t.production.min()), pct(_kth(ready, made_quarter)), pct(_kth(ready, made_half)), pct(ready[-1]),
        pct(_kth(needed, 1)), pct(_kth(needed, got_quarter + 1)), pct(_kth(needed, got_half + 1)))


@dataclass(frozen=True)
class ClassStatistics:
    """The figures of the messages of one transfer class ('src->dst', or 'all'): means and quartiles."""

    name: str
    messages: int
    mean: dict[str, float]
    quartiles: dict[str, tuple[float, float, float]]  # 25th, 50th, 75th percentile


def _statistics(name: str, rows: Sequence[MessageFigures]) -> ClassStatistics:
    table = {f: np.array([getattr(r, f) for r in rows]) for f in FIGURES}
    return ClassStatistics(name, len(rows), {f: round(float(v.mean()), 2) for f, v in table.items()},
                           {f: _quartiles(v) for f, v in table.items()})


def _quartiles(values: np.ndarray) -> tuple[float, float, float]:
    low, median, high = (round(float(q), 2) for q in np.percentile(values, [25, 50, 75]))
    return low, median, high


def statistics(rows: Sequence[MessageFigures]) -> list[ClassStatistics]:
    """One entry per rank pair, in order, then 'all'; empty without messages."""
    if not rows:
        return []
    classes = defaultdict(list)
    for r in rows:
        classes[(r.src, r.dst)].append(r)
    return [_statistics(f"{s}->{d}", group) for (s, d), group in sorted(classes.items())] + [_statistics("all", rows)]


def write_run_patterns(directory: str | Path, messages, chunks: int = 4, starmap=None):
    """patterns.csv and patterns.npz of a run from its ranks' patterns.npz, each rank's read by
    ``starmap`` (tareador.workers.rank_pool's; default: here, one after the other); returns
    (ranks' RankPatterns, transfers, figures), or None when the run was traced without patterns."""
    d = Path(directory)
    dirs = rank_dirs(d)
    if not dirs or not all((r / RANK_FILE).exists() for r in dirs.values()):
        return None
    items = [(r,) for r in dirs.values()]
    loaded = dict(zip(dirs, starmap(load_rank_patterns, items) if starmap else [load_rank_patterns(*i) for i in items],
                      strict=True))
    ranks = [loaded.get(r) for r in range(max(dirs) + 1)]  # a rank that wrote no trace: None
    transfers = transfer_patterns(messages, ranks)
    rows = [figures(t, chunks) for t in transfers]
    write_table(d / "patterns.csv", MessageFigures, rows)
    save_run_patterns(d / "patterns.npz", transfers)
    return ranks, transfers, rows


def run_patterns(directory: str | Path, chunks: int, collectives_do: bool = False):
    """(MpiRun, ranks' RankPatterns, transfers, figures) of a run directory, patterns.csv/npz
    rewritten with ``chunks``; what cannot be used is a UserError. A run without point-to-point
    messages is one too, unless ``collectives_do`` and it has collectives."""
    d = Path(directory)
    check_chunks(chunks)
    if not is_run(d):
        raise UserError(f"{d} is not the directory of an MPI run (no rank-N/ in it): trace the program with "
                        "'tareador mpirun -np N -o DIR -- ./program'")
    mpi_run = load_run(d)
    written = write_run_patterns(d, mpi_run.messages, chunks)
    if written is None:
        raise UserError(f"{d} holds no patterns (traced before they were recorded): trace it again with "
                        "'tareador mpirun'")
    if not written[1] and not (collectives_do and mpi_run.matching.collectives):
        raise UserError(f"{d}: the run has no point-to-point message with data" +
                        ("" if not collectives_do else " and no collective") + ": nothing to show")
    return mpi_run, *written
