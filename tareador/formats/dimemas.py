"""Dimemas traces (.dim): the record layout, a streaming writer and a bulk reader.

What goes into Tareador's own traces (which records make a task instance, a dependency, an MPI
call) is trace synthesis, in ``tareador.synthesis``. The reader turns hundreds of megabytes into
numpy columns with bulk byte operations instead of a Python object per line; only malformed
input falls back to slow paths, to name the line at fault.
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

from tareador.errors import DimError
from tareador.files import output_file, write_text
from tareador.formats.paraver import ParaverRun, pcf_text, task_event_labels, task_type_values
from tareador.formats.text_rows import Rows, integer
from tareador.native import shared_library
from tareador.text_columns import (
    WHOLE_TRACE_REUSE,
    Fields,
    byte_words,
    digit_values,
    line_chunks,
    recycle_freed_memory,
    split_fields,
)

BURST, SEND, RECV, GLOBAL_OP, EVENT, NOOP = 1, 2, 3, 10, 20, 0
SYNC_RENDEZVOUS, SYNC_IMMEDIATE = 1, 2
# Dimemas' global operation ids (record 10): the position in this table (Dimemas 5.5.0
# include/define.h Global_Ops_Labels, the same ids as common_utilities/EventEncoding.h GLOP_ID_*).
GLOBAL_OPS = ("MPI_Barrier", "MPI_Bcast", "MPI_Gather", "MPI_Gatherv", "MPI_Scatter", "MPI_Scatterv",
              "MPI_Allgather", "MPI_Allgatherv", "MPI_Alltoall", "MPI_Alltoallv", "MPI_Reduce", "MPI_Allreduce",
              "MPI_Reduce_scatter", "MPI_Reduce_scatter_block", "MPI_Scan", "MPI_Alltoallw")
GLOP_REDUCE = GLOBAL_OPS.index("MPI_Reduce")
# A record 10's last field: blocking (the default when absent), non-blocking start, its wait,
# and the root-synchronised form prv2dim writes for MPI_Reduce (define.h GLOBAL_OP_*).
GLOP_ASYNC, GLOP_SYNC, GLOP_WAIT, GLOP_ROOT_SYNC = 0, 1, 2, 3
INT_MAX = (1 << 31) - 1
# The communicator of the dependencies between a rank's threads in an MPI run's ompss.dim
# (synthesis/mpi_ompss.py), which the replay makes free: the largest a .dim holds, far above the
# run's own (0.., then their collectives' traffic).
DEPENDENCY_COMM = INT_MAX
OFFSET_DIGITS = 15  # the header's trailer offset is zero-padded so it can be written last
_HEADER = re.compile(rb'#DIMEMAS:"([^"]*)":(\d+)(?:,(\d+))?:(\d+)\(([\d,\s]*)\),(\d+)')


# ----------------------------------------------------------------------------------- writing

def write_dim(path: str | Path, name: str, threads: list[int], blocks: Iterable[str],
              communicators: dict[int, tuple[int, ...]] | None = None) -> Path:
    """Write a trace from the text of each thread's records, threads in (task, thread) order.

    The header's trailer offset is fixed-width, so the body streams out and the header is
    patched at the end; the ``s:`` lines record where each thread's first record starts.
    ``communicators`` (id -> member tasks) become the ``d:1:`` definitions global operations
    (record 10) name; Dimemas reads them between the header and the first record.
    """
    def body(f, pos: int) -> tuple[np.ndarray, int]:
        offsets = []
        for text in blocks:
            data = text.encode("ascii")
            offsets.append(pos)
            f.write(data)
            pos += len(data)
        return np.array(offsets, np.int64), pos

    return _write_dim(Path(path), name, threads, communicators or {}, body)


def write_dim_rows(path: str | Path, name: str, threads: list[int], rows: Rows, first_row: np.ndarray) -> Path:
    """``write_dim`` of records made in bulk (text_rows): thread k's records start at row
    ``first_row[k]`` and run to the next thread's."""
    def body(f, pos: int) -> tuple[np.ndarray, int]:
        ends = np.zeros(rows.count, np.int64)
        written = rows.write(f, ends)
        return pos + np.concatenate([[0], ends[:-1]])[first_row], pos + written

    return _write_dim(Path(path), name, threads, {}, body)


def _write_dim(path: Path, name: str, threads: list[int], comms: dict[int, tuple[int, ...]], body) -> Path:
    """The header, ``body(file, position) -> (each thread's first record's offset, end)``, the
    ``s:`` trailer, then the header again with the trailer's offset."""
    total = sum(threads)
    if min(threads, default=1) < 1:
        raise ValueError(f"every Dimemas task has a thread at least, not {threads}")
    with output_file(path, "wb") as f:
        header = _header_line(name, 0, threads, len(comms))
        header += "".join(f"d:1:{c}:{len(members)}:" + ":".join(map(str, members)) + "\n"
                          for c, members in comms.items())
        f.write(header.encode("ascii"))
        offsets, pos = body(f, len(header))
        if len(offsets) != total:
            raise ValueError(f"{len(offsets)} thread blocks for {total} threads")
        _trailer(threads, offsets).write(f)
        f.seek(0)
        f.write(_header_line(name, pos, threads, len(comms)).encode("ascii"))
    return path


def _trailer(threads: list[int], offsets: np.ndarray) -> Rows:
    """A line ``s:task:offset:offset...`` per task: where each of its threads' records start."""
    counts = np.array(threads, np.int64)
    task = np.repeat(np.arange(len(threads)), counts)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    first = np.zeros(len(task), np.int8)
    first[starts] = 2
    first[starts + counts - 1] += 1
    at = integer(offsets)
    return Rows([[":", at], [":", at, "\n"], ["s:", integer(task), ":", at], ["s:", integer(task), ":", at, "\n"]],
                layout_of=first)


def _header_line(name: str, trailer: int, threads: list[int], ncomms: int) -> str:
    return (f'#DIMEMAS:"{name}":1,{trailer:0{OFFSET_DIGITS}d}:{len(threads)}('
            + ",".join(map(str, threads)) + f"),{ncomms}\n")


def write_task_labels(dim: str | Path, names: list[str], more: dict | None = None) -> Path:
    """TRACE.pcf next to TRACE.dim, naming the task types (event 7003 values) and the event types
    in ``more`` (type -> (label, value labels)): Dimemas copies it into the Paraver trace it
    writes, ``tareador replay`` takes the task names from it."""
    pcf = Path(dim).with_suffix(".pcf")
    labels = task_event_labels(task_type_values(names)) | (more or {})
    return write_text(pcf, pcf_text(ParaverRun(end_time=0, cpus_per_node=[], threads=[], event_labels=labels)))


# ----------------------------------------------------------------------------------- reading

@dataclass
class DimTrace:
    """Records as columns, grouped by thread (``thread_start`` indexes the first of each).

    ``gthread`` numbers threads across tasks in (task, thread) order. Per op the integer columns
    mean: send/recv ``a`` = partner task, ``b`` = partner thread (-1: any thread of the task,
    i.e. an MPI message), ``mode`` = send sync bits / receive type; event ``a`` = type,
    ``b`` = value; global operation (record 10) ``a`` = its id (GLOBAL_OPS), ``comm``,
    ``tag`` = the root field (1: this task is the root; for MPI_Reduce the root's task),
    ``size`` = bytes sent, ``b`` = bytes received, ``mode`` = synchronisation (GLOP_SYNC when
    the record leaves it out). ``secs`` holds burst durations. ``communicators`` are the ``d:1:``
    definitions: id -> member tasks.
    """

    name: str
    threads: list[int]
    op: np.ndarray
    gthread: np.ndarray
    a: np.ndarray
    b: np.ndarray
    size: np.ndarray
    tag: np.ndarray
    comm: np.ndarray
    mode: np.ndarray
    secs: np.ndarray
    thread_start: np.ndarray
    path: str = "<dim>"
    first_line: int = 2  # line of record 0 in the file
    file_order: np.ndarray | None = None  # when records had to be regrouped by thread
    communicators: dict[int, tuple[int, ...]] = field(default_factory=dict)

    @property
    def task_base(self) -> np.ndarray:
        """Global index of each task's thread 0."""
        return np.concatenate([[0], np.cumsum(self.threads)[:-1]]).astype(np.int64)

    def thread_name(self, g: int) -> tuple[int, int]:
        task = int(np.searchsorted(np.cumsum(self.threads), g, side="right"))
        return task, g - int(self.task_base[task])

    def line(self, record: int) -> int:
        """Line of the file a record came from, for messages that point at it."""
        return self.first_line + int(record if self.file_order is None else self.file_order[record])

    def __repr__(self) -> str:
        return f"<DimTrace {self.path}: {len(self.threads)} tasks, {sum(self.threads)} threads, {len(self.op)} records>"


COLUMNS = {"op": np.int8, "gthread": np.int32, "a": np.int32, "b": np.int64, "size": np.int64,
           "tag": np.int32, "comm": np.int32, "mode": np.int8, "secs": np.float64}


def read_dim(path: str | Path) -> DimTrace:
    path = Path(path)
    recycle_freed_memory(WHOLE_TRACE_REUSE)  # the replay's plan reuses it
    try:
        data = path.read_bytes()
    except OSError as e:
        raise DimError(f"cannot read {path}: {e.strerror}") from None
    first_nl = data.find(b"\n")
    m = _HEADER.match(data, 0, first_nl if first_nl >= 0 else len(data))
    if not m:
        raise DimError(f"{path}:1: not a Dimemas trace header "
                       "(expected #DIMEMAS:\"name\":1,offset:tasks(threads),comms)")
    name = m.group(1).decode(errors="replace")
    threads = [int(x) for x in m.group(5).split(b",") if x.strip()]
    if len(threads) != int(m.group(4)) or min(threads, default=1) < 1:
        raise DimError(f"{path}:1: the header declares {m.group(4).decode()} tasks but lists threads {threads}")
    trailer = int(m.group(3)) if m.group(3) else 0
    if trailer > len(data):
        raise DimError(f"{path}: truncated: the header puts the s: trailer at byte {trailer} but the file has "
                       f"{len(data)} bytes")
    if trailer and not data.startswith(b"s:", trailer):
        raise DimError(f"{path}: the header puts the s: trailer at byte {trailer}, which is not an s: line "
                       "(file edited or truncated?)")
    body_start = first_nl + 1
    body_end = trailer or _find_trailer(data, body_start)
    if body_end > body_start and data[body_end - 1:body_end] != b"\n":
        raise DimError(f"{path}: truncated: the last record before the trailer has no end of line")
    first_line = 2
    communicators: dict[int, tuple[int, ...]] = {}
    while data.startswith(b"d:", body_start):  # communicator definitions precede the records
        end = data.index(b"\n", body_start)
        _read_definition(data[body_start:end], len(threads), communicators, f"{path}:{first_line}")
        body_start = end + 1
        first_line += 1
    base = np.concatenate([[0], np.cumsum(threads)]).astype(np.int64)
    nrec = _records_library().count_lines(data, body_start, body_end)
    cols = {k: np.zeros(nrec, t) for k, t in COLUMNS.items()}
    first_pos = np.full(int(base[-1]), -1, np.int64)
    row = 0
    words = byte_words(data)
    usual = _UsualRecords(cols, first_pos, base)
    all_usual = True
    for pos, stop in line_chunks(data, body_start, body_end):
        lines = usual.parse(data, pos, stop, row)
        all_usual &= lines >= 0
        row += lines if lines >= 0 else _parse_chunk(data, words, pos, stop, row, first_line, base, cols, first_pos,
                                                     path)
    trailer_lines = data[body_end:]
    del data, words, m  # the file, before regrouping (which may copy every column)
    trace = _group_by_thread(name, threads, cols, first_line, path, checked=all_usual)
    trace.communicators = communicators
    _check_trailer(trailer_lines, trace, first_pos, path)
    return trace


class _UsualRecords:
    """dim_records.c: the usual forms of records parsed in one pass; a chunk with anything else
    goes through ``_parse_chunk``, which takes every form and names what is wrong with a line."""

    class _Columns(ctypes.Structure):
        _fields_ = [(name, ctypes.c_void_p) for name in (*COLUMNS, "first_pos", "base")] + [("ntasks", ctypes.c_int64)]

    def __init__(self, cols: dict[str, np.ndarray], first_pos: np.ndarray, base: np.ndarray):
        self._base = base  # the struct points into it
        self._struct = self._Columns(*(cols[name].ctypes.data for name in COLUMNS), first_pos.ctypes.data,
                                     base.ctypes.data, len(base) - 1)

    def parse(self, data: bytes, start: int, stop: int, row: int) -> int:
        """Lines of data[start:stop] parsed into rows ``row``...; -1 if one is not of a usual form."""
        lines = _records_library().parse_records(data, start, stop, row, ctypes.byref(self._struct))
        return lines if lines >= 0 else -1


@cache
def _records_library() -> ctypes.CDLL:
    return shared_library("libtareador_dim_records.so", [Path(__file__).with_name("dim_records.c")], {
        "parse_records": (ctypes.c_int64, [ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                           ctypes.c_void_p]),
        "count_lines": (ctypes.c_int64, [ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64])})


def _read_definition(line: bytes, ntasks: int, communicators: dict, where: str) -> None:
    """``d:1:id:n:task:...`` defines a communicator; Dimemas skips files (2) and windows (3)."""
    try:
        fields = [int(x) for x in line.split(b":")[1:]]
    except ValueError:
        fields = []
    if fields[:1] in ([2], [3]):
        return
    if len(fields) < 3 or fields[0] != 1:
        raise DimError(f"{where}: not a communicator definition (d:1:id:tasks:task:...): {line[:60]!r}")
    comm, n, members = fields[1], fields[2], tuple(fields[3:])
    if len(members) != n or not all(0 <= m < ntasks for m in members) or len(set(members)) != n:
        raise DimError(f"{where}: communicator {comm} must list {n} distinct tasks of the {ntasks} the header "
                       f"declares, it lists {list(members)}")
    if comm in communicators:
        raise DimError(f"{where}: communicator {comm} is defined twice")
    communicators[comm] = members


def _find_trailer(data: bytes, start: int) -> int:
    at = data.find(b"\ns:", start - 1)
    return len(data) if at < 0 else at + 1


def _parse_chunk(data: bytes, words: np.ndarray, start: int, stop: int, row: int, first_line: int,
                 base: np.ndarray, cols: dict, first_pos: np.ndarray, path) -> int:
    """Parse whole lines data[start:stop] into cols[row:]; returns the number of lines."""
    f = split_fields(data, words, start, stop, 58)
    arr, starts, ends, lengths, first_tok, ntok = f.arr, f.starts, f.ends, f.lengths, f.first_tok, f.ntok
    is_int, value, odd = f.is_int, f.value, f.odd
    nlines = len(first_tok)

    def fail(line_index: int, why: str):
        raise DimError(f"{path}:{first_line + row + line_index}: {why}: {f.line_text(line_index)[:80]!r}")

    op, task, thread = _records(f, base, fail)
    # Every field but the burst duration must be an integer.
    burst_rows = np.flatnonzero(op == BURST)
    burst_tok = first_tok[burst_rows] + 3
    not_int = ~is_int
    not_int[burst_tok] = False
    if not_int.any():
        fail(f.token_of_line(int(np.flatnonzero(not_int)[0])), "a field is not an integer")
    # Bursts written 'I.F' (the usual form) are parsed as exact integers, see _burst_seconds.
    dot_at = np.full(len(ends), -1, np.int64)
    tok, first_odd, nodd = np.unique(f.odd_tok, return_index=True, return_counts=True)
    one_dot = (nodd == 1) & (arr[odd[first_odd]] == 46)
    dot_at[tok[one_dot]] = odd[first_odd[one_dot]]
    secs = _burst_seconds(arr, words, start, starts[burst_tok], lengths[burst_tok], is_int[burst_tok],
                          value[burst_tok], dot_at[burst_tok])
    wrong = np.flatnonzero(np.isnan(secs) | (secs < 0))
    if len(wrong):
        fail(int(burst_rows[wrong[0]]), "the CPU burst duration is not a number of seconds >= 0")

    out = {k: c[row:row + nlines] for k, c in cols.items()}

    def put(column: str, rows: np.ndarray, values, what: str, low: int | None = None, high: int | None = None):
        """Store values in a narrower column, refusing those it cannot hold rather than wrapping
        them (a tag 2^32 + 5 must not match tag 5)."""
        info = np.iinfo(out[column].dtype)
        low, high = info.min if low is None else low, info.max if high is None else high
        bad = np.flatnonzero((values < low) | (values > high))
        if len(bad):
            fail(int(rows[bad[0]]), f"{what} {int(values[bad[0]])} is outside {low}..{high}")
        out[column][rows] = values

    g = base[task] + thread
    out["op"][:], out["gthread"][:] = op, g
    out["secs"][burst_rows] = secs
    for n, thread_aware in ((9, True), (8, False)):
        rows = np.flatnonzero(((op == SEND) | (op == RECV)) & (ntok == n))
        tok = first_tok[rows] + 3
        put("a", rows, value[tok], "partner task", 0, len(base) - 2)
        out["b"][rows] = value[tok + 1] if thread_aware else -1
        tok = tok + thread_aware
        out["size"][rows] = value[tok + 1]
        put("tag", rows, value[tok + 2], "tag")
        put("comm", rows, value[tok + 3], "communicator")
        put("mode", rows, value[tok + 4], "send sync / receive type", 0, 3)
    rows = np.flatnonzero(op == GLOBAL_OP)
    tok = first_tok[rows] + 3  # id:comm:root:root thread:bytes sent:bytes received[:synchronisation]
    put("a", rows, value[tok], "global operation id", 0, len(GLOBAL_OPS) - 1)
    put("comm", rows, value[tok + 1], "communicator")
    put("tag", rows, value[tok + 2], "root")
    put("b", rows, value[tok + 3], "root thread", 0)  # only checked, as Dimemas asserts it
    put("size", rows, value[tok + 4], "bytes sent", 0, INT_MAX)  # Dimemas times them as C ints
    put("b", rows, value[tok + 5], "bytes received", 0, INT_MAX)
    out["mode"][rows] = GLOP_SYNC
    put("mode", rows[ntok[rows] == 10], value[tok[ntok[rows] == 10] + 6], "synchronisation", 0, 3)
    rows = np.flatnonzero(op == EVENT)
    put("a", rows, value[first_tok[rows] + 3], "event type")
    out["b"][rows] = value[first_tok[rows] + 4]
    # Where each thread's records begin in the file, to check the s: trailer against.
    change = np.flatnonzero(np.concatenate([[True], g[1:] != g[:-1]]))[::-1]
    unseen = first_pos[g[change]] < 0
    first_pos[g[change[unseen]]] = start + starts[first_tok[change[unseen]]]
    return nlines


def _records(f: Fields, base: np.ndarray, fail) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each line's kind, task and thread; ``fail(line, why)`` at the first line of an unknown kind,
    with another number of fields than its kind has, or naming a task or thread the header does not."""
    first_tok, ntok, is_int, value = f.first_tok, f.ntok, f.is_int, f.value
    last = len(f.ends) - 1
    op = np.where(is_int[first_tok], value[first_tok], -1)
    ids_ok = (ntok >= 3) & is_int[np.minimum(first_tok + 1, last)] & is_int[np.minimum(first_tok + 2, last)]
    shape_ok = ((op == BURST) & (ntok == 4)) | (((op == SEND) | (op == RECV)) & ((ntok == 8) | (ntok == 9))) \
        | ((op == EVENT) & (ntok == 5)) | ((op == NOOP) & (ntok == 3)) \
        | ((op == GLOBAL_OP) & ((ntok == 9) | (ntok == 10)))
    problems = np.flatnonzero(~(ids_ok & shape_ok))
    if len(problems):
        i = int(problems[0])
        known = {BURST: 4, SEND: "8 or 9", RECV: "8 or 9", GLOBAL_OP: "9 or 10", EVENT: 5, NOOP: 3}
        o = int(op[i])
        if o not in known or ntok[i] < 3:
            fail(i, "not a record (op:task:thread:...) of a supported kind (0, 1, 2, 3, 10, 20)")
        fail(i, f"a record of kind {o} has {known[o]} fields, this one {int(ntok[i])}")
    task, thread = value[first_tok + 1], value[first_tok + 2]
    bad_id = (task < 0) | (task >= len(base) - 1)
    bad_id |= (thread < 0) | (thread >= np.diff(base)[np.clip(task, 0, len(base) - 2)])
    if bad_id.any():
        fail(int(np.flatnonzero(bad_id)[0]), "task or thread id beyond those the header declares")
    return op, task, thread


def _burst_seconds(arr, words, offset, starts, lengths, is_int, ints, dot) -> np.ndarray:
    """Seconds of burst fields; 'I.F' is exact as (I*10^k+F)/10^k, the rest goes through float().

    One correctly rounded division of two exact integers gives what strtod gives. ``dot`` is
    the position of the token's only non-digit, a '.', or -1.
    """
    secs = np.full(len(starts), np.nan)
    secs[is_int] = ints[is_int]
    ilen, flen = dot - starts, starts + lengths - dot - 1
    fast = np.flatnonzero((dot >= 0) & (ilen + flen <= 15))
    num = digit_values(words, offset + dot[fast], ilen[fast]) * 10 ** flen[fast] \
        + digit_values(words, offset + starts[fast] + lengths[fast], flen[fast])
    secs[fast] = num / 10.0 ** flen[fast]
    for i in np.flatnonzero(np.isnan(secs)).tolist():
        try:
            secs[i] = float(bytes(arr[starts[i]:starts[i] + lengths[i]]))
        except ValueError:
            pass
    return secs


def _group_by_thread(name: str, threads: list[int], cols: dict, first_line: int, path, checked: bool) -> DimTrace:
    """Check partner ids (unless dim_records.c ``checked`` every line), regroup records by thread
    if the file interleaves them."""
    counts = np.array(threads, np.int64)
    op = cols["op"]
    order = None

    def fail_if(mask: np.ndarray, why: str):
        if mask.any():
            i = int(np.flatnonzero(mask)[0])
            raise DimError(f"{path}:{first_line + int(i if order is None else order[i])}: {why}")

    if not checked:
        comm_op = (op == SEND) | (op == RECV)
        a, b = cols["a"], cols["b"]
        outside = (b < -1) | (b >= counts[np.clip(a, 0, len(threads) - 1)])
        fail_if(comm_op & outside, "partner thread outside its task")
        fail_if(comm_op & (cols["size"] < 0), "negative message size")
    g = cols["gthread"]
    if len(g) and (g[1:] < g[:-1]).any():
        order = np.argsort(g, kind="stable")
        cols = {k: v[order] for k, v in cols.items()}
        g = cols["gthread"]
    thread_start = np.zeros(int(counts.sum()) + 1, np.int64)
    np.cumsum(np.bincount(g, minlength=len(thread_start) - 1), out=thread_start[1:])  # g is sorted now
    return DimTrace(name=name, threads=threads, **cols, thread_start=thread_start, path=str(path),
                    first_line=first_line, file_order=order)


def _check_trailer(trailer: bytes, trace: DimTrace, first_pos: np.ndarray, path) -> None:
    """The s: lines must give each thread's first record, or Dimemas reads the wrong records."""
    if (first_pos >= 0).all() and trailer == _trailer(trace.threads, first_pos).text().encode():
        return  # as written here: checked without a number per thread in Python
    lines = trailer.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if not lines:
        return
    if len(lines) != len(trace.threads):
        raise DimError(f"{path}: the s: trailer has {len(lines)} lines for {len(trace.threads)} tasks (truncated?)")
    base = trace.task_base
    for task, line in enumerate(lines):
        fields = line.split(b":")
        try:
            offsets = np.array(fields[2:], np.int64)
            ok = fields[0] == b"s" and int(fields[1]) == task and len(offsets) == trace.threads[task]
        except ValueError:
            ok = False
        if not ok:
            raise DimError(f"{path}: the s: trailer line for task {task} is malformed: {line[:60]!r}")
        expected = first_pos[base[task]:base[task] + len(offsets)]
        wrong = np.flatnonzero((expected >= 0) & (offsets != expected))
        if len(wrong):
            h = int(wrong[0])
            raise DimError(f"{path}: the s: trailer puts task {task} thread {h} at byte {offsets[h]}, but its "
                           f"first record is at byte {expected[h]}")
