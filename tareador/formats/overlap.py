"""Chunk-overlapped Dimemas traces of an MPI run (thesis ch. 4.2): overlap-real.dim, overlap-ideal.dim.

Every point-to-point message whose patterns were recorded (taskgraph/patterns.py) becomes K
chunk messages (K = min(C, its elements), contiguous elements as in analyses/patterns.py; the
bytes split in proportion). On the sender, chunk k is an immediate send placed where it is
ready, which splits the producing CPU burst there; on the receiver, the K chunk receives are
posted (irecv) at the original receive, and each chunk is waited for where it is needed, which
splits the consuming burst:

- real: chunk k is sent at the instruction time its last element became final, and waited for
  at the first read of any of its elements (never read: at the end of the consumption
  interval, the next receive into the buffer or the rank's end);
- ideal: the same chunks with ideal linear patterns: chunk k sent at (k + 1) / K of the
  production interval, waited for at k / K of the consumption interval.

Chunks travel on a communicator of their own (twice the run's communicators, beyond those of
the point-to-point collectives) with tag message id x C + k, so they match only each other.
Collectives are written as the point-to-point messages of their algorithms (formats/
collectives.py) and are not chunked: their internal transfers have no recorded patterns.
Messages without patterns (empty, from MPI_PROC_NULL) keep their authentic records. The trace
has no task-type events, only the bursts and the communication: with a zero-latency network of
unbounded bandwidth it replays no slower than the authentic trace, and exactly as fast when no
rank waits for a chunk before the authentic receive would have returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tareador.formats.dimemas import SYNC_IMMEDIATE, write_dim
from tareador.formats.dimemas_mpi import IRECV, WAIT, _receive, _send, call_records
from tareador.taskgraph import mpi
from tareador.taskgraph.patterns import TransferPattern

KINDS = ("real", "ideal")


def chunk_plan(t: TransferPattern, chunks: int, kind: str) -> tuple[list[int], list[int], list[int]]:
    """(bytes, send time on src, wait time on dst) of each chunk of a message, in instructions."""
    produced = np.array_split(np.arange(len(t.production)), min(chunks, len(t.production)))
    k = len(produced)
    edges = np.round(np.cumsum([0] + [len(p) for p in produced]) * t.bytes / len(t.production)).astype(np.int64)
    sizes = np.diff(edges).tolist()
    if kind == "ideal":
        sends = [t.production_start + (i + 1) * t.production_interval / k for i in range(k)]
        waits = [t.completion_time + i * t.consumption_interval / k for i in range(k)]
    else:
        ready, read = t.production_times(), t.consumption_times()
        sends = [ready[p].max() for p in produced]
        waits = [read[p].min() if len(p) else t.consumption_end
                 for p in np.array_split(np.arange(len(read)), k)]
    sends = [int(min(max(s, t.production_start), t.send_time)) for s in sends]
    waits = [int(min(max(w, t.completion_time), t.consumption_end)) for w in waits]
    return sizes, sends, waits


def _completions(calls) -> dict[int, int]:
    """Request number -> the seq of the Wait/Test that completed it, in one rank."""
    done = {}
    for c, side in zip(calls, mpi.sides(calls)):
        if side == mpi.COMPLETION:
            for r in c.requests:
                done.setdefault(r, c.seq)
    return done


def _rank_timeline(rank: int, events: list[tuple[int, int, int, str]], end: int, rate: float) -> str:
    """The rank's thread: events (instruction time, seq, order, records) in order, CPU bursts between."""
    out, cursor = [f"1:{rank}:0:0.000000000\n"], 0
    for counter, _, _, text in sorted(events):
        if counter > cursor:
            out.append(f"1:{rank}:0:{(counter - cursor) / rate:.9f}\n")
            cursor = counter
        out.append(text)
    if end > cursor:
        out.append(f"1:{rank}:0:{(end - cursor) / rate:.9f}\n")
    return "".join(out)


def write_overlap_trace(path: str | Path, run, transfers: Sequence[TransferPattern], chunks: int, kind: str,
                        instructions_per_second: float = 1e9) -> Path:
    """overlap-``kind``.dim of ``run`` (an MpiRun) for its ``transfers``."""
    calls_by_rank, matching = run.calls_by_rank, run.matching
    records = call_records(calls_by_rank, matching, "p2p")
    events: list[list[tuple[int, int, int, str]]] = [[] for _ in calls_by_rank]
    completions = [_completions(calls) for calls in calls_by_rank]
    channel = 2 * len(matching.communicators)
    messages = {m.id: m for m in matching.messages}
    for t in transfers:
        m = messages[t.message]
        receive = calls_by_rank[m.dst][m.recv_seq]
        comm = matching.comm_of[m.dst, receive.comm]
        records.pop((m.src, m.send_seq), None)
        records.pop((m.dst, m.recv_seq), None)
        waited_at = m.recv_seq
        if receive.nonblocking:
            waited_at = completions[m.dst].get(receive.requests[0], m.recv_seq)
            line = _receive(m.dst, m.src, m.bytes, m.tag, comm, WAIT)
            if (m.dst, waited_at) in records:
                records[m.dst, waited_at] = records[m.dst, waited_at].replace(line, "", 1)
        sizes, sends, waits = chunk_plan(t, chunks, kind)
        tags = [m.id * chunks + k for k in range(len(sizes))]
        for size, tag, at in zip(sizes, tags, sends):
            events[m.src].append((at, m.send_seq, 0, _send(m.src, m.dst, size, tag, channel, SYNC_IMMEDIATE)))
        events[m.dst].append((receive.posted, m.recv_seq, 0,
                              "".join(_receive(m.dst, m.src, s, tag, channel, IRECV) for s, tag in zip(sizes, tags))))
        for k, (size, tag, at) in enumerate(zip(sizes, tags, waits)):
            events[m.dst].append((at, waited_at, 1 + k, _receive(m.dst, m.src, size, tag, channel, WAIT)))
    for (rank, seq), text in records.items():
        if text:
            events[rank].append((calls_by_rank[rank][seq].posted, seq, 0, text))
    ends = [max((f.end for f in trace.tasks), default=0) for trace in run.ranks]
    blocks = (_rank_timeline(rank, events[rank], ends[rank], instructions_per_second)
              for rank in range(len(calls_by_rank)))
    return write_dim(path, f"overlap-{kind}", [1] * len(calls_by_rank), blocks)
