"""The authentic trace of an MPI run: one Dimemas task per rank, as the ranks ran.

Each rank is one thread of CPU bursts (its instructions between MPI calls, the same counter as
tasks.csv, at ``instructions_per_second``) framed by task-type events (7003, as in the other
traces), and its MPI calls as Dimemas records with the real peers, tags and sizes: a blocking
send is a send (MPI_Ssend a rendezvous one), MPI_Isend an immediate send, MPI_Recv a receive,
MPI_Irecv an irecv and the Wait or Test that completed it a wait; a send-receive is an immediate
send then a receive. The run's communicator c carries the program's messages as Dimemas
communicator c.

Collectives are, by default (``collectives="dimemas"``), Dimemas global operations: one record 10
per member, blocking (synchronisation 1), on Dimemas communicator c + 1 (Dimemas skips global
operations on communicator 0), each defined by a ``d:1:`` line. The bytes
sent and received of each member follow what Extrae writes (b: the member's bytes in mpi.csv,
p members, sums over the members): Barrier 0, 0; Bcast root b, 0 and others 0, b; Reduce
others b, 0 and root 0, b; Allreduce, Scan, Exscan (written as MPI_Scan, Dimemas has no Exscan)
and Reduce_scatter b, b; Gather(v) b, 0 and root b, sum b; Scatter(v) (the root's b is what it
scatters) root b, b / p and others 0, b / p; Allgather(v) b, sum b; Alltoall(v) b, sum b / p.
The root field is 1 on the root's record (Bcast, Gather, Scatter), the root's task on every
record of a Reduce (what Dimemas reads there), else 0. Dimemas times these sizes as C ints:
larger ones are written as 2^31 - 1. prv2dim writes MPI_Reduce in its
root-synchronised form (3); the blocking form is written here, which replay models.
``collectives="p2p"`` writes each collective as the point-to-point messages of a named algorithm
instead (synthesis/collectives.py), on a communicator of their own: c + the number of
communicators, as MPI keeps them apart, with the collective's index on its communicator as tag.

Sends and receives that matched nothing (tareador.taskgraph.matching) and incomplete
collectives are left out, so that the trace of a partial run still replays; summary.json lists
them.

Each call's records are framed by the event of the MPI function (formats/mpi_events.py, Extrae's
numbers): its value from the call's first record, 0 after its last, so a replay's timeline
shows which call a rank is in and for how long (a wait lasts until its message arrived).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from tareador.formats import mpi_events
from tareador.formats.dimemas import (
    GLOBAL_OP,
    GLOBAL_OPS,
    GLOP_SYNC,
    INT_MAX,
    RECV,
    SEND,
    SYNC_IMMEDIATE,
    SYNC_RENDEZVOUS,
    write_dim,
    write_task_labels,
)
from tareador.formats.paraver import TASK_EVENT, task_type_values
from tareador.synthesis import collectives
from tareador.taskgraph import matching as roles
from tareador.taskgraph.matching import Matching
from tareador.taskgraph.model import Fragment, MpiCall, TaskTrace
from tareador.taskgraph.mpi_calls import BY_NAME, IMMEDIATE_RECEIVES

IRECV, WAIT = 1, 2  # receive types
COLLECTIVE_FORMS = ("dimemas", "p2p")  # global operations, or point-to-point messages


def write_mpi_authentic(path: str | Path, traces: Sequence[TaskTrace], calls_by_rank: Sequence[Sequence[MpiCall]],
                        matching: Matching, instructions_per_second: float = 1e9,
                        collectives: str = "dimemas", records: list[dict[int, str]] | None = None) -> list[Path]:
    """authentic.dim and its .pcf (task type names) for a run's ranks; ``collectives`` is one of
    COLLECTIVE_FORMS. ``records``: the calls' ``by_rank(call_records(...))`` when the caller has
    them already (postprocess writes ompss.dim from the same), else made here."""
    names = [t.name for trace in traces for t in trace.fragments]
    values = task_type_values(names)
    if records is None:
        records = by_rank(call_records(calls_by_rank, matching, collectives), len(traces))
    blocks = (thread_block(rank, 0, f"1:{rank}:0:0.000000000\n", trace.fragments, calls_by_rank[rank], records[rank],
                           values, instructions_per_second)
              for rank, trace in enumerate(traces))
    return [write_dim(path, "authentic", [1] * len(traces), blocks, communicators(matching, collectives)),
            write_labels(path, names)]


def write_labels(dim: str | Path, names: list[str]) -> Path:
    """TRACE.pcf of a run's trace: its task types and the MPI calls (Extrae's numbers)."""
    return write_task_labels(dim, names, mpi_events.event_labels(mpi_events.TYPE_LABELS))


def communicators(matching: Matching, collectives: str) -> dict[int, tuple[int, ...]]:
    """The Dimemas communicator definitions the collectives' records need: the run's
    communicator c as c + 1, for those global operations use."""
    used = sorted({op.comm for op in matching.collectives}) if collectives == "dimemas" else []
    return {c + 1: matching.communicators[c] for c in used}


def call_records(calls_by_rank: Sequence[Sequence[MpiCall]], matching: Matching,
                 collectives: str = "dimemas") -> dict[tuple[int, int], str]:
    """(rank, seq) -> the Dimemas records (on the rank's thread 0) of each call that sends,
    receives, completes a receive or takes part in a collective (written as ``collectives``, one
    of COLLECTIVE_FORMS), between the call's MPI events: the one place that says what a call is
    in a trace, for every trace of a run (authentic.dim, ompss.dim).

    A send-receive is one call of two rows: its records (send, then receive) are under the seq
    of its send row.
    """
    parts = row_records(calls_by_rank, matching, collectives)
    records = {}
    for rank, calls in enumerate(calls_by_rank):
        texts: dict[int, list[str]] = {}
        operation: dict[int, str] = {}
        opened = -1  # seq of the send row of the send-receive in progress
        for c, side in zip(calls, roles.sides(calls)):
            seq = c.seq
            if c.operation in roles.SENDRECVS:
                if side == roles.SEND:
                    opened = c.seq
                else:
                    seq = opened
            if (rank, c.seq) in parts:
                texts.setdefault(seq, []).append(parts[rank, c.seq])
                operation.setdefault(seq, c.operation)
        for seq, text in texts.items():
            etype, value = mpi_events.CALLS[operation[seq]]
            records[rank, seq] = f"20:{rank}:0:{etype}:{value}\n{''.join(text)}20:{rank}:0:{etype}:0\n"
    return records


def row_records(calls_by_rank: Sequence[Sequence[MpiCall]], matching: Matching,
                collectives: str = "dimemas") -> dict[tuple[int, int], str]:
    """(rank, seq) -> the bare Dimemas records of each row of mpi.csv (a send-receive's two rows
    apart, no MPI events): what the overlapped traces (synthesis/overlap.py) take apart message by
    message before ``call_records`` frames them per call."""
    return _point_to_point(calls_by_rank, matching) | _collectives(matching, collectives)


def by_rank(records: dict[tuple[int, int], str], ranks: int) -> list[dict[int, str]]:
    """``call_records`` split by rank, each rank's by seq."""
    out: list[dict[int, str]] = [{} for _ in range(ranks)]
    for (rank, seq), text in records.items():
        out[rank][seq] = text
    return out


def on_thread(records: str, thread: int) -> str:
    """Records written for a task's thread 0 moved to another of its threads (op:task:thread:...)."""
    if not thread:
        return records
    return "".join(f"{op}:{task}:{thread}:{rest}" for op, task, _, rest in
                   (line.split(":", 3) for line in records.splitlines(keepends=True)))


def _point_to_point(calls_by_rank: Sequence[Sequence[MpiCall]], matching: Matching) -> dict[tuple[int, int], str]:
    """(rank, seq) -> the records of each call that sends, receives or completes a matched message."""
    records = {}
    for rank, calls in enumerate(calls_by_rank):
        started: dict[int, MpiCall] = {}  # request number -> the non-blocking call that started it
        for c, side in zip(calls, roles.sides(calls)):
            m = matching.by_call.get((rank, c.seq))
            if c.nonblocking:
                started[c.requests[0]] = c
            if side == roles.SEND and m:
                sync = (SYNC_RENDEZVOUS if c.rendezvous else 0) | (
                    SYNC_IMMEDIATE if c.nonblocking or c.operation in roles.SENDRECVS else 0)
                records[rank, c.seq] = send_record(rank, m.dst, m.bytes, m.tag, matching.comm_of[rank, c.comm], sync)
            elif side == roles.RECEIVE and m:
                records[rank, c.seq] = receive_record(rank, m.src, m.bytes, m.tag, matching.comm_of[rank, c.comm],
                                                      IRECV if c.nonblocking else 0)
            elif side == roles.COMPLETION:
                waits = [(r, matching.by_call.get((rank, r.seq))) for r in map(started.__getitem__, c.requests)
                         if r.operation in IMMEDIATE_RECEIVES]
                text = "".join(receive_record(rank, m.src, m.bytes, m.tag, matching.comm_of[rank, r.comm], WAIT)
                               for r, m in waits if m)
                if text:
                    records[rank, c.seq] = text
    return records


def send_record(rank: int, dst: int, size: int, tag: int, comm: int, sync: int) -> str:
    return f"{SEND}:{rank}:0:{dst}:{max(size, 0)}:{tag}:{comm}:{sync}\n"


def receive_record(rank: int, src: int, size: int, tag: int, comm: int, kind: int) -> str:
    return f"{RECV}:{rank}:0:{src}:{max(size, 0)}:{tag}:{comm}:{kind}\n"


def _collectives(matching: Matching, form: str) -> dict[tuple[int, int], str]:
    """(rank, seq) -> each member's part of each complete collective, written in ``form`` (one of
    COLLECTIVE_FORMS)."""
    return _global_operations(matching) if form == "dimemas" else _collective_messages(matching)


def _global_operations(matching: Matching) -> dict[tuple[int, int], str]:
    """One record 10 per member (the module docstring gives the fields)."""
    records = {}
    for op in matching.collectives:
        glop = BY_NAME[op.operation].glop
        name = GLOBAL_OPS[glop]  # MPI_Exscan is written as Dimemas' MPI_Scan
        root = op.members.index(op.root) if op.root >= 0 else -1
        sizes = [max(c.bytes, 0) for c in op.calls]
        for i, (rank, call) in enumerate(zip(op.members, op.calls)):
            sent, received = (min(n, INT_MAX) for n in _bytes(name, sizes, i, root))
            root_field = op.root if name == "MPI_Reduce" else int(i == root)
            records[rank, call.seq] = (f"{GLOBAL_OP}:{rank}:0:{glop}:{op.comm + 1}:{root_field}:0:{sent}:{received}:"
                                       f"{GLOP_SYNC}\n")
    return records


def _bytes(operation: str, sizes: list[int], i: int, root: int) -> tuple[int, int]:
    """(bytes sent, bytes received) of member i, as Extrae writes them."""
    b, p, total = sizes[i], len(sizes), sum(sizes)
    if operation == "MPI_Barrier":
        return 0, 0
    if operation == "MPI_Bcast":
        return (b, 0) if i == root else (0, b)
    if operation == "MPI_Reduce":
        return (0, b) if i == root else (b, 0)
    if operation in ("MPI_Gather", "MPI_Gatherv"):
        return b, total if i == root else 0
    if operation in ("MPI_Scatter", "MPI_Scatterv"):
        return sizes[root] if i == root else 0, sizes[root] // p
    if operation in ("MPI_Allgather", "MPI_Allgatherv"):
        return b, total
    if operation in ("MPI_Alltoall", "MPI_Alltoallv"):
        return b, total // p
    return b, b  # Allreduce, Scan, Reduce_scatter(_block)


def _collective_messages(matching: Matching) -> dict[tuple[int, int], str]:
    """(rank, seq) -> the messages of each member's part of each complete collective."""
    records = {}
    offset = len(matching.communicators)
    for op in matching.collectives:
        root = op.members.index(op.root) if op.root >= 0 else 0
        plan = collectives.steps(op.operation, root, [max(c.bytes, 0) for c in op.calls])
        for rank, call, steps in zip(op.members, op.calls, plan):
            text = "".join(receive_record(rank, op.members[peer], size, op.index, op.comm + offset, 0)
                           if kind == collectives.RECV else
                           send_record(rank, op.members[peer], size, op.index, op.comm + offset,
                                 SYNC_IMMEDIATE if kind == collectives.ISEND else 0)
                           for kind, peer, size in steps)
            if text:
                records[rank, call.seq] = text
    return records


def thread_block(rank: int, thread: int, head: str, fragments: Sequence[Fragment], calls: Sequence[MpiCall],
                 texts: dict[int, str], values: dict[str, int], instructions_per_second: float,
                 clock: Callable[[int], int] | None = None, around: dict[tuple[str, int], tuple[str, str]] | None = None
                 ) -> str:
    """A thread that runs ``fragments`` in order, each framed by its type, with the records
    ``texts[seq]`` of each call at its place on the instruction counter, after ``head``.

    ``clock`` maps the counter to the thread's own time (default: the counter itself; a thread
    that skips what other threads run subtracts it). ``around[("f", id)]`` is text to put after a
    fragment's start and after its end, ``around[("c", seq)]`` before and after a call's records
    (the dependency messages of ompss.dim).
    """
    out = [head]
    cursor = 0
    around = around or {}
    clock = clock or (lambda counter: counter)

    def at(counter: int, text: str) -> None:
        nonlocal cursor
        now = clock(counter)
        if now > cursor:
            out.append(f"1:{rank}:{thread}:{(now - cursor) / instructions_per_second:.9f}\n")
            cursor = now
        out.append(text)

    def begin(f: Fragment) -> None:
        at(f.start, f"20:{rank}:{thread}:{TASK_EVENT}:{values[f.name]}\n" + around.get(("f", f.id), ("", ""))[0])

    def end(f: Fragment) -> None:
        at(f.end, f"20:{rank}:{thread}:{TASK_EVENT}:0\n" + around.get(("f", f.id), ("", ""))[1])

    def comes_before(f: Fragment, c: MpiCall) -> bool:
        """Fragments run one after the other; a call outside all of them falls between two."""
        if c.task >= 0:
            return f.id <= c.task
        return f.start < c.posted or f.end <= c.posted

    ahead = iter(sorted(fragments, key=lambda t: t.id))
    pending, running = next(ahead, None), None
    for c in calls:
        text = texts.get(c.seq)
        if text is None:
            continue
        while pending is not None and comes_before(pending, c):
            if running is not None:
                end(running)
            running, pending = pending, next(ahead, None)
            begin(running)
        if running is not None and running.id != c.task:
            end(running)
            running = None
        before, after = around.get(("c", c.seq), ("", ""))
        at(c.posted, before + text + after)
    if running is not None:
        end(running)
    for f in ([pending] if pending is not None else []) + list(ahead):
        begin(f)
        end(f)
    return "".join(out)
