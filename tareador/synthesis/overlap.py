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
Messages without patterns (empty, from MPI_PROC_NULL) keep their authentic records. With a
zero-latency network of unbounded bandwidth the trace replays no slower than the authentic
trace, and exactly as fast when no rank waits for a chunk before the authentic receive would
have returned.

The events are authentic.dim's (synthesis/mpi_authentic.py), so that a timeline shows what ran: the
task-type event 7003 frames each fragment (the trace's .pcf names the types and the MPI calls),
and the MPI event of a call frames the records left at it; a chunk's send is framed as the
MPI_Isend, its receives posted at the original receive as the MPI_Irecv, and its wait as the
MPI_Wait the overlapped program would call there. A chunk sent or waited for where a fragment
starts or ends falls inside the fragment that made its data or reads it.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tareador.formats import mpi_events
from tareador.formats.dimemas import SYNC_IMMEDIATE, write_dim
from tareador.formats.paraver import TASK_EVENT, task_type_values
from tareador.synthesis import collectives
from tareador.synthesis.mpi_authentic import IRECV, WAIT, receive_record, row_records, send_record, write_labels
from tareador.taskgraph import matching as roles
from tareador.taskgraph.model import Fragment
from tareador.taskgraph.patterns import RankPatterns, TransferPattern

KINDS = ("real", "ideal")
AT_CALL, MADE, NEEDED = range(3)  # where a record is: at its call, where its data is made, where it is needed


@dataclass(frozen=True, order=True)
class _Record:
    """Records of a rank's thread at an instruction time; ordered by (counter, seq, order)."""

    counter: int
    seq: int  # the call it comes from
    order: int
    text: str = field(compare=False)
    call: str = field(compare=False)  # the MPI function whose event frames it
    place: int = field(compare=False)  # AT_CALL, MADE, NEEDED
    task: int = field(default=-1, compare=False)  # AT_CALL: the fragment that made the call


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

    def side(member: int, step: int, size: int, receive: bool) -> tuple[np.ndarray, tuple[int, int], int] | None:
        """(times, interval) of the member's buffer when the step can be overlapped, else None."""
        row = rows[member][1 if receive else 0]
        rp = ranks[op.members[member]]
        ok = step > last_send[member] if receive else step < first_receive[member]
        if row is None or not ok or int(rp.columns["bytes"][row]) != size or size == 0:
            return None
        return rp.clamped(row), rp.interval(row), int(rp.columns["element"][row])

    sent: dict[tuple[int, int], list] = {}
    for i, st in enumerate(plan):
        for s, (k, peer, _size) in enumerate(st):
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
            sender, receiver = op.calls[peer], op.calls[j]
            at_call = {"call": op.operation, "place": AT_CALL}
            for size_k, send_k, wait_k in zip(sizes, sends, waits):
                tag = next(tags)
                text = send_record(src, dst, size_k, tag, channel, sync)
                events[src].append(_Record(send_k, sender.seq, 0, text, "MPI_Isend", MADE) if produced else
                                   _Record(send_k, sender.seq, 2 * s, text, **at_call, task=sender.task))
                if n == 1 and not consumed:  # as the algorithm has it: one blocking receive
                    events[dst].append(_Record(at_dst, receiver.seq, 2 * r, receive_record(dst, src, size_k, tag,
                                                                                         channel, 0),
                                               **at_call, task=receiver.task))
                    continue
                events[dst].append(_Record(at_dst, receiver.seq, 2 * r, receive_record(dst, src, size_k, tag, channel,
                                                                                     IRECV), **at_call,
                                           task=receiver.task))
                text = receive_record(dst, src, size_k, tag, channel, WAIT)
                events[dst].append(_Record(wait_k, receiver.seq, 2 * len(plan[j]) + tag, text, "MPI_Wait", NEEDED)
                                   if consumed else
                                   _Record(at_dst, receiver.seq, 2 * r + 1, text, **at_call, task=receiver.task))


def _completions(calls) -> dict[int, int]:
    """Request number -> the seq of the Wait/Test that completed it, in one rank."""
    done: dict[int, int] = {}
    for c, side in zip(calls, roles.sides(calls)):
        if side == roles.COMPLETION:
            for r in c.requests:
                done.setdefault(r, c.seq)
    return done


def _rank_timeline(rank: int, records: list[_Record], fragments: _Fragments, values: dict[str, int], end: int,
                   rate: float) -> str:
    """The rank's thread: its records in order, each framed by its call's MPI event, its fragments
    framed by their task type's, CPU bursts between."""
    out, cursor, frame = [f"1:{rank}:0:0.000000000\n"], 0, None

    def at(counter: int, text: str, call: str | None = None) -> None:
        nonlocal cursor, frame
        if frame is not None and (call, counter) != frame:
            out.append(f"20:{rank}:0:{mpi_events.CALLS[frame[0]][0]}:0\n")
            frame = None
        if counter > cursor:
            out.append(f"1:{rank}:0:{(counter - cursor) / rate:.9f}\n")
            cursor = counter
        if call is not None and frame is None:
            out.append(f"20:{rank}:0:{':'.join(map(str, mpi_events.CALLS[call]))}\n")
            frame = (call, counter)
        out.append(text)

    ahead = iter(sorted(records))
    pending = next(ahead, None)
    for edge, position, value in fragments.boundaries(values):
        while pending is not None and (pending.counter, fragments.place(pending)) < (edge, position):
            at(pending.counter, pending.text, pending.call)
            pending = next(ahead, None)
        at(edge, f"20:{rank}:0:{TASK_EVENT}:{value}\n")
    while pending is not None:
        at(pending.counter, pending.text, pending.call)
        pending = next(ahead, None)
    at(max(end, cursor), "")
    return "".join(out)


class _Fragments:
    """A rank's fragments, which run one after the other in creation order, and where a record
    at one of their boundaries goes. Positions: fragment i starts at i and ends at i + 0.75; a
    record inside it is at i + 0.5, one between it and the next at i + 0.875 (-0.125: before all)."""

    def __init__(self, fragments: Sequence[Fragment]):
        self.fragments = sorted(fragments, key=lambda f: f.id)
        self.starts = [f.start for f in self.fragments]
        self.ends = [f.end for f in self.fragments]
        self.index = {f.id: i for i, f in enumerate(self.fragments)}

    def boundaries(self, values: dict[str, int]):
        """(instruction time, position, task-type event value) of each start and end, in order."""
        for i, f in enumerate(self.fragments):
            yield f.start, float(i), values[f.name]
            yield f.end, i + 0.75, 0

    def place(self, record: _Record) -> float:
        """A call's records are inside the fragment that made it, else after the fragments that
        come before it (started before it, or ended by then); a chunk sent where its data was made
        is in the first fragment running then, one waited for where it is needed in the last."""
        t = record.counter
        if record.place == AT_CALL:
            if record.task in self.index:
                return self.index[record.task] + 0.5
            return max(bisect.bisect_left(self.starts, t), bisect.bisect_right(self.ends, t)) - 0.125
        i = bisect.bisect_left(self.ends, t) if record.place == MADE else bisect.bisect_right(self.starts, t) - 1
        if 0 <= i < len(self.fragments) and self.starts[i] <= t <= self.ends[i]:
            return i + 0.5
        return bisect.bisect_right(self.ends, t) - 0.125


def write_overlap_trace(path: str | Path, run, ranks: Sequence[RankPatterns], transfers: Sequence[TransferPattern],
                        chunks: int, kind: str, instructions_per_second: float = 1e9) -> Path:
    """overlap-``kind``.dim of ``run`` (an MpiRun) from its ranks' patterns and its ``transfers``,
    and its .pcf (the task types and MPI calls)."""
    calls_by_rank, matching = run.calls_by_rank, run.matching
    records = row_records(calls_by_rank, matching, "p2p")
    events: list[list[_Record]] = [[] for _ in calls_by_rank]
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
            events[m.src].append(_Record(at, m.send_seq, 0, send_record(m.src, m.dst, size, tag, channel,
                                                                        SYNC_IMMEDIATE), "MPI_Isend", MADE))
        irecvs = "".join(receive_record(m.dst, m.src, s, tag, channel, IRECV) for s, tag in zip(sizes, tags))
        events[m.dst].append(_Record(receive.posted, m.recv_seq, 0, irecvs, "MPI_Irecv", AT_CALL, receive.task))
        for k, (size, tag, at) in enumerate(zip(sizes, tags, waits)):
            events[m.dst].append(_Record(at, waited_at, 1 + k, receive_record(m.dst, m.src, size, tag, channel, WAIT),
                                         "MPI_Wait", NEEDED))
    collective_tags = itertools.count()
    for op in matching.collectives:
        for rank, call in zip(op.members, op.calls):
            records.pop((rank, call.seq), None)
        _collective_events(op, ranks, chunks, kind, channel + 1, collective_tags, events)
    for (rank, seq), text in records.items():
        if text:
            call = calls_by_rank[rank][seq]
            events[rank].append(_Record(call.posted, seq, 0, text, call.operation, AT_CALL, call.task))
    ends = [max((f.end for f in trace.fragments), default=0) for trace in run.ranks]
    names = [f.name for trace in run.ranks for f in trace.fragments]
    values = task_type_values(names)
    blocks = (_rank_timeline(rank, events[rank], _Fragments(run.ranks[rank].fragments), values, ends[rank],
                             instructions_per_second)
              for rank in range(len(calls_by_rank)))
    dim = write_dim(path, f"overlap-{kind}", [1] * len(calls_by_rank), blocks)
    write_labels(dim, names)
    return dim
