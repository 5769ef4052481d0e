"""Timeline bars (rows of intervals coloured by kind) and their aggregation for large runs.

A browser draws some tens of thousands of rectangles at interactive speed, and every bar's data
is in the page; a trace of a million task instances would make a page nobody can open. So the
timelines of one section share ``TIMELINE_BARS`` bars (each core count's gets its part), the
object timeline has ``OBJECT_BARS``; beyond its part a timeline is drawn as bins instead: rows
are grouped (at most ``ROW_LIMIT``), time is cut into equal bins so that rows x bins stays within
the part, and each bin shows the kind that was busy longest in it, shaded by how busy it was.
The page says so beside the chart. (Measured on this machine, loaded: a page of six timelines of
50,000 bars took 11 s to draw, one of 50,000 bars 2 s.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

TIMELINE_BARS = 50_000
OBJECT_BARS = 10_000
ROW_LIMIT = 512


@dataclass
class Bars:
    """Intervals in display units; ``kind`` indexes ``kinds`` (legend names) and ``colours``.

    Hover columns are numbers, which the page stores as compact binary arrays: ``numbers`` shown as
    they are, ``codes`` shown as the name their value indexes (one list of names per column)."""

    row: np.ndarray
    start: np.ndarray
    end: np.ndarray
    kind: np.ndarray
    kinds: list[str]
    colours: list[str]
    rows: list[str]  # label of each row, top first
    numbers: dict[str, np.ndarray] = field(default_factory=dict)
    codes: dict[str, tuple[np.ndarray, list[str]]] = field(default_factory=dict)
    alpha: np.ndarray | None = None  # per bar; None: opaque
    aggregated: str | None = None  # how the bars were aggregated, for the page to say

    def __len__(self) -> int:
        return len(self.row)


def share(timelines: int) -> int:
    """The bars each of ``timelines`` timelines of one section may draw."""
    return TIMELINE_BARS // max(timelines, 1)


def aggregate(bars: Bars, limit: int, row_limit: int = ROW_LIMIT) -> Bars:
    """``bars`` itself when within ``limit``, else binned (see the module docstring)."""
    if len(bars) <= limit:
        return bars
    nrows = len(bars.rows)
    group = -(-nrows // row_limit)
    groups = -(-nrows // group)
    nbins = max(limit // groups, 1)
    begin, finish = float(bars.start.min()), float(bars.end.max())
    width = (finish - begin) / nbins or 1.0
    busy = _busy_time(bars.row // group, bars.kind, bars.start - begin, bars.end - begin, width,
                      groups, len(bars.kinds), nbins)  # groups x kinds x bins
    total = busy.sum(axis=1)
    g, b = np.nonzero(total)
    dominant = busy[g, :, b].argmax(axis=1)
    fraction = np.clip(total[g, b] / (width * min(group, nrows)), 0, 1)
    labels = bars.rows if group == 1 else [_group_label(bars.rows, k * group, min((k + 1) * group, nrows))
                                           for k in range(groups)]
    left = begin + b * width
    return Bars(row=g, start=left, end=left + width, kind=dominant, kinds=bars.kinds, colours=bars.colours,
                rows=labels, numbers={"busy %": np.rint(100 * fraction)}, alpha=0.25 + 0.75 * fraction,
                aggregated=f"{len(bars):,} bars are more than the {limit:,} this timeline draws (a page that opens in "
                           f"seconds holds about {TIMELINE_BARS:,}): shown as {nbins:,} time bins of {len(labels):,} "
                           "rows, each bin in the colour of what was busiest in it, shaded by how busy it was")


def _busy_time(row, kind, start, end, width, nrows, nkinds, nbins) -> np.ndarray:
    """Time each (row, kind) spends busy in each bin, exactly: an interval adds its overlap to its
    first and last bins and the whole width to the bins between (a running sum of differences)."""
    key = row * nkinds + kind
    first = np.minimum((start // width).astype(np.int64), nbins - 1)
    last = np.minimum(np.maximum((np.nextafter(end, -np.inf) // width).astype(np.int64), first), nbins - 1)
    out = np.zeros((nrows * nkinds, nbins + 1))
    same = first == last
    np.add.at(out, (key[same], first[same]), end[same] - start[same])
    k, f, la, s, e = key[~same], first[~same], last[~same], start[~same], end[~same]
    np.add.at(out, (k, f), (f + 1) * width - s)
    np.add.at(out, (k, la), e - la * width)
    between = np.zeros_like(out)
    np.add.at(between, (k, f + 1), width)
    np.add.at(between, (k, la), -width)
    out += np.cumsum(between, axis=1)
    return out[:, :nbins].reshape(nrows, nkinds, nbins)


def _group_label(rows: list[str], a: int, b: int) -> str:
    return rows[a] if b - a == 1 else f"{rows[a]} .. {rows[b - 1]}"
