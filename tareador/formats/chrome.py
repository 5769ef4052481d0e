"""Chrome trace-event JSON of a simulated or replayed run, for chrome://tracing, Perfetto or speedscope.

Written in bulk (text_rows), and never larger than a browser opens: chrome://tracing fails on a
JSON file of 256 MiB (a JavaScript string's limit) and Perfetto's in-browser engine on files not
much larger, so beyond ``max_bytes`` (DEFAULT_MAX_BYTES) the run is split by time into parts that
each open on their own, every part naming its own processes and threads. An arrow whose two ends
fall in different parts is in neither, and the caller is told how many.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tareador.errors import UserError
from tareador.files import output_file, printable
from tareador.formats import mpi_events
from tareador.formats.paraver import TASK_EVENT, ParaverRun
from tareador.formats.text_rows import Rows, fixed, integer, text

DEFAULT_MAX_BYTES = 256_000_000  # below chrome://tracing's 2^28-byte string limit
HEADER = b'{"displayTimeUnit":"ns","traceEvents":[\n'
FOOTER = b"\n]}\n"  # replaces the last event's ",\n"


@dataclass
class ChromeEvents:
    """A run's events as JSON rows, each ending in ",\\n": the data rows (slices and arrow ends)
    0..n-1, then a thread_name row per thread, then a process_name row per process."""

    rows: Rows
    time: np.ndarray  # ns, per data row
    thread: np.ndarray  # per data row, the thread (track) it is on
    arrow: np.ndarray  # per data row, the arrow it is an end of, or -1
    process_of: np.ndarray  # per thread, its process

    @property
    def data(self) -> int:
        return len(self.time)


@dataclass
class ChromeOutput:
    paths: list[Path]
    size: int  # bytes of every part
    unsplit: int  # bytes one file would have taken
    arrows_left_out: int  # arrows between two parts


def _metadata(kind: str, pid, tid, name) -> list:
    return ['{"ph":"M","name":"', kind, '","pid":', pid, ',"tid":', tid, ',"args":{"name":', name, "}},\n"]


def _names(values: list[str]) -> list[str]:
    return [json.dumps(v) for v in values]


def schedule_events(title: str, names: list[str], ids: np.ndarray, start_ns: np.ndarray, end_ns: np.ndarray,
                    core: np.ndarray, dep_src: np.ndarray, dep_dst: np.ndarray) -> ChromeEvents:
    """A simulated run: one track per core, one slice per task instance, an arrow per RAW
    dependency. Arrows start mid-slice because viewers bind an arrow to the slice enclosing its
    timestamp (in tenths of a nanosecond, so the middle of any slice is exact)."""
    kinds = sorted(set(names))
    index = {name: k for k, name in enumerate(kinds)}
    kind = np.fromiter((index[name] for name in names), np.int64, len(names))
    core = np.asarray(core, np.int64)
    start, end = np.asarray(start_ns, np.int64), np.asarray(end_ns, np.int64)
    n, ndeps, ncores = len(start), len(dep_src), int(core.max(initial=-1)) + 1
    mid = start * 10 + (end - start) * 5
    arrow_ids = np.arange(ndeps)
    layouts = [
        ['{"ph":"X","name":', text(kind, _names(kinds)), ',"cat":"task","pid":1,"tid":', integer(core), ',"ts":',
         fixed(start, 3), ',"dur":', fixed(end - start, 3), ',"args":{"id":', integer(ids), "}},\n"],
        ['{"ph":"s","name":"dependency","cat":"dependency","id":', integer(arrow_ids), ',"pid":1,"tid":',
         integer(core[dep_src]), ',"ts":', fixed(mid[dep_src], 4), "},\n"],
        ['{"ph":"f","bp":"e","name":"dependency","cat":"dependency","id":', integer(arrow_ids), ',"pid":1,"tid":',
         integer(core[dep_dst]), ',"ts":', fixed(start[dep_dst], 3), "},\n"],
        _metadata("thread_name", "1", integer(np.arange(ncores)), ['"core ', integer(np.arange(1, ncores + 1)), '"']),
        _metadata("process_name", "1", "0", json.dumps(title)),
    ]
    return _events(layouts, [n, ndeps, ndeps, ncores, 1],
                   time=np.concatenate([start, mid[dep_src] // 10, start[dep_dst]]),
                   thread=np.concatenate([core, core[dep_src], core[dep_dst]]),
                   arrow=np.concatenate([np.full(n, -1), arrow_ids, arrow_ids]), process_of=np.zeros(ncores, np.int64))


def _events(layouts: list, counts: list[int], time, thread, arrow, process_of) -> ChromeEvents:
    """Flattens nested literal lists of ``layouts`` and numbers each layout's rows from 0."""
    def flat(items):
        for item in items:
            if isinstance(item, list):
                yield from flat(item)
            else:
                yield item

    layout_of = np.repeat(np.arange(len(counts), dtype=np.int8), counts)
    source = np.concatenate([np.arange(c) for c in counts]) if counts else np.zeros(0, np.int64)
    return ChromeEvents(Rows([list(flat(layout)) for layout in layouts], source, layout_of), time=time, thread=thread,
                        arrow=arrow, process_of=process_of)


def replay_events(title: str, run: ParaverRun) -> ChromeEvents:
    """A replayed Dimemas trace (its Paraver run): a process per Dimemas task (MPI rank), a track
    per thread, a slice from each task-type or MPI call event that sets a value to the next event
    of its type on the thread, and an arrow per message from its logical send to its physical
    receive (where the receiver can have it)."""
    tasks = sorted({t for t, _h, _n in run.threads})
    labels = run.thread_labels or [f"thread {t}.{h}" for t, h, _n in run.threads]
    pid = np.array([t + 1 for t, _h, _n in run.threads], np.int64)
    tid = np.array([h for _t, h, _n in run.threads], np.int64)
    ev = run.events
    keep = np.flatnonzero(np.isin(ev.get("type", np.zeros(0, np.int64)), [TASK_EVENT, *mpi_events.TYPE_LABELS]))
    order = keep[np.lexsort((keep, ev["type"][keep], ev["thread"][keep]))] if len(keep) else keep
    thread, etype, value, when = (np.asarray(ev[k][order], np.int64) for k in ("thread", "type", "value", "time"))
    opens = np.flatnonzero((value[:-1] != 0) & (thread[1:] == thread[:-1]) & (etype[1:] == etype[:-1]))
    labels_of = {t: values for t, (_label, values) in run.event_labels.items()}
    pairs, name = np.unique(np.stack([etype[opens], value[opens]]), axis=1, return_inverse=True)
    names = [printable(labels_of.get(k, {}).get(v, f"{k}:{v}")) for k, v in pairs.T.tolist()]
    cats = np.where(pairs[0] == TASK_EVENT, 0, 1)[name.reshape(-1)] if len(opens) else np.zeros(0, np.int64)
    c = run.comms
    sender, receiver = (np.asarray(c.get(k, np.zeros(0, np.int64)), np.int64) for k in ("thread", "rthread"))
    lsend, precv = (np.asarray(c.get(k, np.zeros(0, np.int64)), np.int64) for k in ("lsend", "precv"))
    nmsg, ids = len(sender), np.arange(len(sender))
    message = [',"name":"message","cat":"message","id":', integer(ids), ',"args":{"bytes":',
               integer(c.get("size", np.zeros(0, np.int64))), ',"tag":', integer(c.get("tag", np.zeros(0, np.int64))),
               "}}"]
    layouts = [
        ['{"ph":"X","name":', text(name.reshape(-1), _names(names)), ',"cat":', text(cats, ['"task"', '"MPI"']),
         ',"pid":', integer(pid[thread[opens]]), ',"tid":', integer(tid[thread[opens]]), ',"ts":',
         fixed(when[opens], 3), ',"dur":', fixed(when[opens + 1] - when[opens], 3), "},\n"],
        ['{"ph":"s","pid":', integer(pid[sender]), ',"tid":', integer(tid[sender]), ',"ts":', fixed(lsend, 3),
         *message, ",\n"],
        ['{"ph":"f","bp":"e","pid":', integer(pid[receiver]), ',"tid":', integer(tid[receiver]), ',"ts":',
         fixed(precv, 3), *message, ",\n"],
        _metadata("thread_name", integer(pid), integer(tid), text(np.arange(len(labels)), _names(labels))),
        _metadata("process_name", integer(np.array(tasks, np.int64) + 1), "0",
                  text(np.arange(len(tasks)), _names([title] if len(tasks) == 1 else [f"rank {t}" for t in tasks]))),
    ]
    process_of = np.searchsorted(np.array(tasks, np.int64), pid - 1)
    return _events(layouts, [len(opens), nmsg, nmsg, len(labels), len(tasks)],
                   time=np.concatenate([when[opens], lsend, precv]), thread=np.concatenate([thread[opens], sender,
                                                                                           receiver]),
                   arrow=np.concatenate([np.full(len(opens), -1), ids, ids]), process_of=process_of)


def write_events(path: str | Path, events: ChromeEvents, max_bytes: int = DEFAULT_MAX_BYTES) -> ChromeOutput:
    """``path``, or beyond ``max_bytes`` PATH-part1.json, PATH-part2.json, ... by time; either
    replaces what an earlier run wrote under the other names."""
    path = Path(path)
    ends = events.rows.ends()
    size = np.diff(ends, prepend=0)
    whole = len(HEADER) + int(ends[-1] if len(ends) else 0) + len(FOOTER) - (2 if len(ends) else 1)
    # names first, then the slices, then each arrow's two ends
    everything = np.concatenate([np.arange(events.data, len(size)), np.argsort(events.arrow, kind="stable")])
    if whole <= max_bytes:
        _remove_parts(path, 0)
        return ChromeOutput([_write_part(path, events.rows, everything)], whole, whole, 0)
    parts, left_out = _split(events, size, max_bytes - len(HEADER) - len(FOOTER) + 2)
    paths = [path.with_name(f"{path.stem}-part{k + 1}{path.suffix}") for k in range(len(parts))]
    written = [_write_part(p, events.rows, rows) for p, rows in zip(paths, parts)]
    _remove_parts(path, len(parts))
    return ChromeOutput(written, sum(p.stat().st_size for p in written), whole, left_out)


def _write_part(path: Path, rows: Rows, order: np.ndarray) -> Path:
    with output_file(path, "wb") as f:
        f.write(HEADER)
        if rows.take(order).write(f):
            f.seek(f.tell() - 2)  # the last event's ",\n"
        else:
            f.seek(f.tell() - 1)
        f.write(FOOTER)
    return path


def _remove_parts(path: Path, parts: int) -> None:
    """The unsplit file (when ``parts``) and parts beyond ``parts`` left by an earlier run."""
    stale = [path] if parts else []
    k = parts + 1
    while path.with_name(f"{path.stem}-part{k}{path.suffix}").exists():
        stale.append(path.with_name(f"{path.stem}-part{k}{path.suffix}"))
        k += 1
    for p in stale:
        if p.is_file() and not p.is_symlink():
            os.unlink(p)


def _split(events: ChromeEvents, size: np.ndarray, budget: int) -> tuple[list[np.ndarray], int]:
    """Rows of each part in time order, each part's metadata first: the data rows in time order
    cut where the next row would take the part (its rows, and a name for each thread and
    process it holds) beyond ``budget`` bytes; then arrows cut in two are dropped."""
    n, threads = events.data, len(events.process_of)
    order = np.argsort(events.time, kind="stable")
    thread = events.thread[order]
    process = events.process_of[thread]
    thread_cost = size[n:n + threads][thread]
    process_cost = size[n + threads:][process]
    previous_thread, previous_process = _previous(thread), _previous(process)
    cost = size[:n][order]
    if len(cost) and int((cost + thread_cost + process_cost).max()) > budget:
        raise UserError(f"a Chrome JSON part of at most {budget} bytes cannot hold one event of this run; give a "
                        "larger --chrome-max-mb")
    part = np.empty(n, np.int64)
    first, k = 0, 0
    window = budget // max(int(cost.min(initial=1)), 1) + 1  # rows that can fit in a part, at most
    while first < n:
        rows = slice(first, min(n, first + window))
        grows = cost[rows] + np.where(previous_thread[rows] < first, thread_cost[rows], 0) \
            + np.where(previous_process[rows] < first, process_cost[rows], 0)
        last = first + int(np.searchsorted(np.cumsum(grows), budget, side="right"))
        part[first:last] = k
        first, k = last, k + 1
    where = np.empty(n, np.int64)
    where[order] = part
    arrow = events.arrow
    ends = np.flatnonzero(arrow >= 0)
    by_arrow = ends[np.argsort(arrow[ends], kind="stable")].reshape(-1, 2)
    cut = by_arrow[where[by_arrow[:, 0]] != where[by_arrow[:, 1]]].reshape(-1)
    dropped = np.zeros(n, bool)
    dropped[cut] = True
    parts = []
    for p in range(k):
        rows = order[(part == p) & ~dropped[order]]
        owned = np.unique(events.thread[rows])
        parts.append(np.concatenate([n + owned, n + threads + np.unique(events.process_of[owned]), rows]))
    return parts, len(cut) // 2


def _previous(keys: np.ndarray) -> np.ndarray:
    """For each position, the previous position holding the same key (-1 if none). Keys are
    threads and processes, few: as 16-bit numbers numpy sorts them by radix, in linear time."""
    small = len(keys) and 0 <= int(keys.min()) and int(keys.max()) < 1 << 16
    order = np.argsort(keys.astype(np.uint16) if small else keys, kind="stable")
    previous = np.full(len(keys), -1, np.int64)
    same = keys[order[1:]] == keys[order[:-1]]
    previous[order[1:][same]] = order[:-1][same]
    return previous


def write_chrome(path: str | Path, title: str, names: list[str], ids: np.ndarray, start_ns: np.ndarray,
                 end_ns: np.ndarray, core: np.ndarray, dep_src: np.ndarray, dep_dst: np.ndarray,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> ChromeOutput:
    """A simulated run's JSON (``schedule_events``), split beyond ``max_bytes``."""
    return write_events(path, schedule_events(title, names, ids, start_ns, end_ns, core, dep_src, dep_dst), max_bytes)


def write_replay_chrome(path: str | Path, title: str, run: ParaverRun,
                        max_bytes: int = DEFAULT_MAX_BYTES) -> ChromeOutput:
    """A replayed run's JSON (``replay_events``), split beyond ``max_bytes``."""
    return write_events(path, replay_events(title, run), max_bytes)
