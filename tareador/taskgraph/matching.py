"""What each MPI call is to the run, which send each receive got, and which calls of the ranks
make up each collective.

Point-to-point: MPI's non-overtaking rule makes the k-th send from src to dst on a communicator
with a tag the k-th receive of it, once the tracer has resolved wildcard receives (source and
tag from the status); so matching is per (src, dst, communicator, tag) in call order. A
send-receive is a send and a receive. A peer of -1 (MPI_PROC_NULL) is no message. What is left
over at the end (a partial run, a program that sends what it never receives) is reported, never
dropped.

Collectives: every member of a communicator calls its collectives in the same order, so the k-th
collective call of each member is one operation; members that called another collective or
another root there, or fewer collectives, are reported and the communicator's later collectives
are not grouped.

A communicator is known to each of its ranks by a number of its own; two ranks' numbers are the
same communicator when they list the same members and are the same occurrence of that list in
each rank (MPI_Comm_dup of the world is the second communicator of all ranks, after the world).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from tareador.taskgraph.model import Communicator, MpiCall
from tareador.taskgraph.mpi_calls import (
    BLOCKING_RECEIVES,
    BLOCKING_SENDS,
    COLLECTIVE,
    COLLECTIVES,
    COMPLETION,
    COMPLETIONS,
    IMMEDIATE_RECEIVES,
    IMMEDIATE_SENDS,
    OTHER,
    RECEIVE,
    ROOTED,
    SEND,
    SENDRECVS,
)


@dataclass(frozen=True)
class Message:
    """One row of messages.csv: a point-to-point message matched to its receive."""

    id: int
    src: int  # world ranks
    dst: int
    tag: int
    comm: int  # the communicator's number in the sender's mpi.csv
    bytes: int  # as sent
    send_seq: int  # mpi.csv seq of the send on rank src
    recv_seq: int  # ... of the receive on rank dst


def sides(calls: Sequence[MpiCall]) -> list[str]:
    """What each of one rank's calls (in seq order) is to the run (mpi_calls.FUNCTIONS): SEND,
    RECEIVE, COMPLETION, COLLECTIVE or OTHER. Send-receive rows alternate: the send part, then its receive part."""
    result = []
    pair_open = False
    for c in calls:
        op = c.operation
        if op in SENDRECVS:
            result.append(RECEIVE if pair_open else SEND)
            pair_open = not pair_open
            continue
        pair_open = False
        if op in BLOCKING_SENDS or op in IMMEDIATE_SENDS:
            result.append(SEND)
        elif op in BLOCKING_RECEIVES or op in IMMEDIATE_RECEIVES:
            result.append(RECEIVE)
        elif op in COMPLETIONS:
            result.append(COMPLETION)
        elif op in COLLECTIVES and c.comm >= 0:
            result.append(COLLECTIVE)
        else:
            result.append(OTHER)
    return result


@dataclass(frozen=True)
class Collective:
    """One collective operation: the call of each member, in the communicator's rank order."""

    comm: int  # the run's number for the communicator (Matching.comm_of)
    index: int  # its k-th collective
    operation: str
    root: int  # world rank; -1 for collectives without one
    members: tuple[int, ...]  # world ranks in communicator order
    calls: tuple[MpiCall, ...]


@dataclass
class Matching:
    messages: list[Message]
    unmatched_sends: list[MpiCall]
    unmatched_receives: list[MpiCall]
    collectives: list[Collective]
    # Per collective call that is not part of a complete operation: the communicator, the index,
    # the members and what each member called there (None: nothing).
    unmatched_collectives: list[dict]
    comm_of: dict[tuple[int, int], int]  # (rank, its communicator number) -> the run's number
    communicators: list[tuple[int, ...]]  # members of each of the run's communicators
    by_call: dict[tuple[int, int], Message] = field(default_factory=dict)  # (rank, seq) of a send or receive


def match(calls_by_rank: Sequence[Sequence[MpiCall]], comms_by_rank: Sequence[Sequence[Communicator]]) -> Matching:
    comm_of, communicators = _communicators(comms_by_rank)
    ends: dict[tuple, tuple[list[MpiCall], list[MpiCall]]] = defaultdict(lambda: ([], []))
    collective_calls: dict[int, dict[int, list[MpiCall]]] = defaultdict(lambda: defaultdict(list))
    unmatched_receives = []
    for rank, calls in enumerate(calls_by_rank):
        for c, side in zip(calls, sides(calls)):
            if side == SEND and c.peer >= 0:
                ends[rank, c.peer, comm_of[rank, c.comm], c.tag][0].append(c)
            elif side == RECEIVE and c.peer >= 0:
                ends[c.peer, rank, comm_of[rank, c.comm], c.tag][1].append(c)
            elif side == RECEIVE and c.completed < 0:  # a wildcard receive that never got a message
                unmatched_receives.append(c)
            elif side == COLLECTIVE:
                collective_calls[comm_of[rank, c.comm]][rank].append(c)
    pairs: list[tuple[MpiCall, MpiCall]] = []
    unmatched_sends: list[MpiCall] = []
    for sends, receives in ends.values():
        pairs += zip(sends, receives)
        unmatched_sends += sends[len(receives):]
        unmatched_receives += receives[len(sends):]
    pairs.sort(key=lambda p: (p[0].rank, p[0].seq))
    messages = [Message(i, s.rank, r.rank, s.tag, s.comm, s.bytes, s.seq, r.seq) for i, (s, r) in enumerate(pairs)]
    by_call = {}
    for m in messages:
        by_call[m.src, m.send_seq] = by_call[m.dst, m.recv_seq] = m
    collectives, problems = _collectives(collective_calls, communicators)
    order = lambda c: (c.rank, c.seq)  # noqa: E731
    return Matching(messages, sorted(unmatched_sends, key=order), sorted(unmatched_receives, key=order), collectives,
                    problems, comm_of, communicators, by_call)


def _communicators(comms_by_rank: Sequence[Sequence[Communicator]]) -> tuple[dict, list]:
    """The run's numbering of communicators: in order of first appearance, rank by rank."""
    number: dict[tuple, int] = {}
    comm_of = {}
    for rank, comms in enumerate(comms_by_rank):
        occurrences: dict[tuple, int] = defaultdict(int)
        for c in sorted(comms, key=lambda c: c.comm):
            identity = (c.members, occurrences[c.members])
            occurrences[c.members] += 1
            comm_of[rank, c.comm] = number.setdefault(identity, len(number))
    return comm_of, [members for members, _ in number]


def _collectives(calls: dict[int, dict[int, list[MpiCall]]], communicators: list[tuple[int, ...]]):
    complete, problems = [], []
    for comm in sorted(calls):
        members = communicators[comm]
        per_member = [calls[comm].get(m, []) for m in members]
        broken = False
        for k in range(max(len(c) for c in per_member)):
            at = [c[k] if k < len(c) else None for c in per_member]
            kinds = {(c.operation, c.peer if c.operation in ROOTED else -1) if c else None for c in at}
            kind = next(iter(kinds)) if len(kinds) == 1 else None  # None: the members' calls differ
            broken = broken or kind is None or kind[1] not in members + (-1,)
            if broken:
                problems.append({"comm": comm, "index": k, "members": list(members),
                                 "calls": [c.call if c else None for c in at],
                                 "seqs": [c.seq if c else None for c in at]})
                continue
            assert kind is not None  # one kind, so every member made a call
            operation, root = kind
            complete.append(Collective(comm, k, operation, root, members, tuple(c for c in at if c is not None)))
    return complete, problems
