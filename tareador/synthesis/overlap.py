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

Collectives are first broken into the point-to-point messages of their algorithms (formats/
collectives.py, as authentic.dim's ``p2p`` form), and each of those transfers is overlapped
where the member's own buffers say when: a send that comes before the member's first receive
in the algorithm and carries its whole send buffer (a Bcast's root, the first exchange of a
recursive doubling, a Gather's contribution) is chunked and sent as the buffer's chunks become
ready; a receive that comes after the member's last send and fills its whole receive buffer (a
Bcast's leaf, a Gather's root, the last exchange of a recursive doubling) is waited for chunk
by chunk where the buffer is first read. The other steps carry data made or needed inside the
collective: they stay at the call, in the algorithm's order, and a transfer with neither side
overlapped stays one message. These chunks go on the next communicator, tagged by a counter.
Messages without patterns (empty, from MPI_PROC_NULL) keep their authentic records. The trace
has no task-type events, only the bursts and the communication: with a zero-latency network of
unbounded bandwidth it replays no slower than the authentic trace, and exactly as fast when no
rank waits for a chunk before the authentic receive would have returned.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tareador.formats.dimemas import SYNC_IMMEDIATE, write_dim
from tareador.synthesis import collectives
from tareador.synthesis.mpi_authentic import IRECV, WAIT, receive_record, row_records, send_record
from tareador.taskgraph import matching as roles
from tareador.taskgraph.patterns import RankPatterns, TransferPattern

KINDS = ("real", "ideal")


def chunk_plan(t: TransferPattern, chunks: int, kind: str) -> tuple[list[int], list[int], list[int]]:
    """(bytes, send time on src, wait time on dst) of each chunk of a message, in instructions."""
    k = min(chunks, len(t.production))
    edges = np.round(np.cumsum([0] + [len(p) for p in np.array_split(t.production, k)]) * t.bytes
                     / len(t.production)).astype(np.int64)
    return (np.diff(edges).tolist(), _spread(t.production_times(), k, False, t.production_start, t.send_time, kind),
            _spread(t.consumption_times(), k, True, t.completion_time, t.consumption_end, kind))


def _spread(times: np.ndarray, k: int, first: bool, start: int, stop: int, kind: str) -> list[int]:
    """One time per chunk of k: real, each chunk's last (first=False) or first (first=True)
    element time; ideal, spread uniformly over [start, stop]."""
    if kind == "ideal":
        return [int(start + (i + (0 if first else 1)) * (stop - start) / k) for i in range(k)]
    parts = np.array_split(times, k)
    return [int((p.min() if first else p.max()) if len(p) else (start if first else stop)) for p in parts]


def _collective_events(op, ranks: Sequence[RankPatterns], chunks: int, kind: str, channel: int, tags,
                       events) -> None:
    """The messages of one collective in its p2p algorithm, the overlappable ones chunked (module
    docstring), appended to each member's events."""
    root = op.members.index(op.root) if op.root >= 0 else 0
    plan = collectives.steps(op.operation, root, [max(c.bytes, 0) for c in op.calls])
    rows = [(ranks[rank].row_of(call.seq, False), ranks[rank].row_of(call.seq, True))
            for rank, call in zip(op.members, op.calls)]
    first_receive = [next((i for i, (k, _, _) in enumerate(st) if k == collectives.RECV), len(st)) for st in plan]
    last_send = [max((i for i, (k, _, _) in enumerate(st) if k != collectives.RECV), default=-1) for st in plan]

    def side(member: int, step: int, size: int, receive: bool):
        """(times, interval) of the member's buffer when the step can be overlapped, else None."""
        row = rows[member][1 if receive else 0]
        rp = ranks[op.members[member]]
        ok = step > last_send[member] if receive else step < first_receive[member]
        if row is None or not ok or int(rp.columns["bytes"][row]) != size or size == 0:
            return None
        return rp.clamped(row), rp.interval(row), int(rp.columns["element"][row])

    sent: dict[tuple[int, int], list] = {}
    for i, st in enumerate(plan):
        for s, (k, peer, size) in enumerate(st):
            if k != collectives.RECV:
                sent.setdefault((i, peer), []).append((s, k))
    received: dict[tuple[int, int], int] = {}
    for j, st in enumerate(plan):
        for r, (k, peer, size) in enumerate(st):
            if k != collectives.RECV:
                continue
            q = received[peer, j] = received.get((peer, j), -1) + 1
            s, send_kind = sent[peer, j][q]
            src, dst = op.members[peer], op.members[j]
            produced, consumed = side(peer, s, size, False), side(j, r, size, True)
            element = (produced or consumed or (None, None, 1))[2]
            n = max(1, min(chunks, size // element)) if (produced or consumed) else 1
            sizes = np.diff(np.round(np.arange(n + 1) * size / n).astype(np.int64)).tolist()
            at_src, at_dst = op.calls[peer].posted, op.calls[j].posted
            sends = _spread(produced[0], n, False, *produced[1], kind) if produced else [at_src] * n
            waits = _spread(consumed[0], n, True, *consumed[1], kind) if consumed else [at_dst] * n
            sync = SYNC_IMMEDIATE if produced or n > 1 or send_kind == collectives.ISEND else 0
            for size_k, send_k, wait_k in zip(sizes, sends, waits):
                tag = next(tags)
                events[src].append((send_k, op.calls[peer].seq, 0 if produced else 2 * s,
                                    send_record(src, dst, size_k, tag, channel, sync)))
                if n == 1 and not consumed:  # as the algorithm has it: one blocking receive
                    events[dst].append((at_dst, op.calls[j].seq, 2 * r, receive_record(dst, src, size_k, tag, channel, 0)))
                    continue
                events[dst].append((at_dst, op.calls[j].seq, 2 * r, receive_record(dst, src, size_k, tag, channel, IRECV)))
                waited = (wait_k, op.calls[j].seq, 2 * len(plan[j]) + tag) if consumed else \
                    (at_dst, op.calls[j].seq, 2 * r + 1)
                events[dst].append((*waited, receive_record(dst, src, size_k, tag, channel, WAIT)))


def _completions(calls) -> dict[int, int]:
    """Request number -> the seq of the Wait/Test that completed it, in one rank."""
    done = {}
    for c, side in zip(calls, roles.sides(calls)):
        if side == roles.COMPLETION:
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


def write_overlap_trace(path: str | Path, run, ranks: Sequence[RankPatterns], transfers: Sequence[TransferPattern],
                        chunks: int, kind: str, instructions_per_second: float = 1e9) -> Path:
    """overlap-``kind``.dim of ``run`` (an MpiRun) from its ranks' patterns and its ``transfers``."""
    calls_by_rank, matching = run.calls_by_rank, run.matching
    records = row_records(calls_by_rank, matching, "p2p")
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
            line = receive_record(m.dst, m.src, m.bytes, m.tag, comm, WAIT)
            if (m.dst, waited_at) in records:
                records[m.dst, waited_at] = records[m.dst, waited_at].replace(line, "", 1)
        sizes, sends, waits = chunk_plan(t, chunks, kind)
        tags = [m.id * chunks + k for k in range(len(sizes))]
        for size, tag, at in zip(sizes, tags, sends):
            events[m.src].append((at, m.send_seq, 0, send_record(m.src, m.dst, size, tag, channel, SYNC_IMMEDIATE)))
        events[m.dst].append((receive.posted, m.recv_seq, 0,
                              "".join(receive_record(m.dst, m.src, s, tag, channel, IRECV) for s, tag in zip(sizes, tags))))
        for k, (size, tag, at) in enumerate(zip(sizes, tags, waits)):
            events[m.dst].append((at, waited_at, 1 + k, receive_record(m.dst, m.src, size, tag, channel, WAIT)))
    tags = itertools.count()
    for op in matching.collectives:
        for rank, call in zip(op.members, op.calls):
            records.pop((rank, call.seq), None)
        _collective_events(op, ranks, chunks, kind, channel + 1, tags, events)
    for (rank, seq), text in records.items():
        if text:
            events[rank].append((calls_by_rank[rank][seq].posted, seq, 0, text))
    ends = [max((f.end for f in trace.fragments), default=0) for trace in run.ranks]
    blocks = (_rank_timeline(rank, events[rank], ends[rank], instructions_per_second)
              for rank in range(len(calls_by_rank)))
    return write_dim(path, f"overlap-{kind}", [1] * len(calls_by_rank), blocks)
