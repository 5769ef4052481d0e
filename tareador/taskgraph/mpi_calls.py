"""Every MPI function tareador knows by name, in one table (FUNCTIONS), and what it makes of the
MPI calls it does not model (docs/guide/mpi.md: calls not modelled).

A row says what the function is to the run's messages (a send, a receive, a completion, a
collective, ...), how it sends or receives (blocking, immediate, persistent), and how each output
names it: Extrae's Paraver event (type, value) while a rank is in it, Dimemas' global operation
id (record 10) a collective is written as, the point-to-point algorithm synthesis/collectives.py
spells a collective out as, and whether the agent's mpi.c models it (peer, buffers, bytes) or
only records its name. The sets the rest of tareador checks a call against (model.py's
IMMEDIATE_SENDS, matching.py's COLLECTIVES, ...) are views of this table, and a test checks that
mpi.c models exactly the functions the table says it does.

The tracer records every MPI call; the ones it models carry their messages and buffers. Of the
others, most move no data between buffers (MPI_Wtime, MPI_Type_commit, MPI_Comm_group, probes):
their place in time is all there is to them, and leaving them out changes nothing. The rest do
move data (non-blocking and neighbourhood collectives, MPI_Pack, file I/O, ...): a run that made
them lacks messages and dependencies, which the summary counts per call and warns about. One-sided
communication is refused: its transfers complete at a later synchronisation of another rank,
and a run without them would be a different program.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol, TypeVar

# What a function is to the run's messages (a row's kind). A send-receive is a send and a receive;
# a start (MPI_Start, MPI_Startall) is, per persistent request it starts, an immediate send or receive.
SEND, RECEIVE, SENDRECV, COMPLETION, COLLECTIVE, START, OTHER = (
    "send", "receive", "sendrecv", "completion", "collective", "start", "other")
# How a send or receive (or a send-receive) transfers: returns once done, starts what a Wait or
# Test completes, or sets up a persistent request each start of which is an immediate one.
BLOCKING, IMMEDIATE, PERSISTENT = "blocking", "immediate", "persistent"
# Extrae's event types (src/merger/paraver/MPI_EventEncoding.h in bsc-performance-tools/extrae).
P2P_EVENTS, COLLECTIVE_EVENTS, OTHER_EVENTS = 50000001, 50000002, 50000003
# The algorithms of synthesis/collectives.py, by name.
BINOMIAL, DOUBLING, VECTOR_DOUBLING, EMPTY_DOUBLING, LINEAR, RING, PAIRWISE = (
    "binomial tree", "recursive doubling", "recursive doubling of the whole vector",
    "recursive doubling of empty messages", "linear", "ring", "pairwise exchange")


@dataclass(frozen=True)
class MpiFunction:
    """One row of the table; names without the MPI-4 large-count suffix (_c): MPI_Send_c does
    what MPI_Send does."""

    name: str
    kind: str  # SEND, RECEIVE, SENDRECV, COMPLETION, COLLECTIVE, START or OTHER
    mode: str  # BLOCKING, IMMEDIATE or PERSISTENT for sends and receives (their set-up calls too); else ""
    paraver: tuple[int, int]  # Extrae's (event type, value)
    synchronous: bool = False  # a send that completes only once its receive has started
    rooted: bool = False  # a collective with a root (mpi.csv's peer)
    glop: int = -1  # a collective: Dimemas' global operation id (formats.dimemas.GLOBAL_OPS) it is written as
    algorithm: str = ""  # a collective: synthesis/collectives.py's algorithm
    modelled: bool = True  # mpi.c models it (its MODELS table); else the agent records its name only


def _rows(kind: str, mode: str, event_type: int, *rows, **common) -> list[MpiFunction]:
    return [MpiFunction(name, kind, mode, (event_type, value), **common, **(more[0] if more else {}))
            for name, value, *more in rows]


_SYNC = {"synchronous": True}
FUNCTIONS: tuple[MpiFunction, ...] = tuple(
    _rows(SEND, BLOCKING, P2P_EVENTS, ("MPI_Send", 1), ("MPI_Bsend", 33), ("MPI_Ssend", 34, _SYNC), ("MPI_Rsend", 35))
    + _rows(SEND, IMMEDIATE, P2P_EVENTS, ("MPI_Isend", 3), ("MPI_Ibsend", 36), ("MPI_Issend", 37, _SYNC),
            ("MPI_Irsend", 38))
    # In the order of the agent's started rows (agent.js STARTED_ROWS, mpi.c's Persistent.kind).
    + _rows(SEND, PERSISTENT, OTHER_EVENTS, ("MPI_Send_init", 117), ("MPI_Bsend_init", 112),
            ("MPI_Ssend_init", 122, _SYNC), ("MPI_Rsend_init", 121))
    + _rows(RECEIVE, PERSISTENT, OTHER_EVENTS, ("MPI_Recv_init", 116))
    + _rows(RECEIVE, BLOCKING, P2P_EVENTS, ("MPI_Recv", 2), ("MPI_Mrecv", 192))
    + _rows(RECEIVE, IMMEDIATE, P2P_EVENTS, ("MPI_Irecv", 4), ("MPI_Imrecv", 193))
    + _rows(SENDRECV, BLOCKING, P2P_EVENTS, ("MPI_Sendrecv", 41), ("MPI_Sendrecv_replace", 42))
    + _rows(START, "", OTHER_EVENTS, ("MPI_Start", 123), ("MPI_Startall", 124))
    + _rows(COMPLETION, "", P2P_EVENTS, ("MPI_Wait", 5), ("MPI_Waitall", 6), ("MPI_Waitany", 59),
            ("MPI_Waitsome", 60))
    + _rows(COMPLETION, "", OTHER_EVENTS, ("MPI_Test", 39), ("MPI_Testall", 125), ("MPI_Testany", 126),
            ("MPI_Testsome", 128))
    + _rows(COLLECTIVE, "", COLLECTIVE_EVENTS, ("MPI_Barrier", 8, {"glop": 0, "algorithm": EMPTY_DOUBLING}),
            ("MPI_Allreduce", 10, {"glop": 11, "algorithm": DOUBLING}),
            ("MPI_Scan", 30, {"glop": 14, "algorithm": DOUBLING}),
            ("MPI_Exscan", 214, {"glop": 14, "algorithm": DOUBLING}),  # Dimemas has no Exscan: written as a Scan
            ("MPI_Reduce_scatter", 80, {"glop": 12, "algorithm": VECTOR_DOUBLING}),
            ("MPI_Reduce_scatter_block", 168, {"glop": 13, "algorithm": VECTOR_DOUBLING}),
            ("MPI_Allgather", 17, {"glop": 6, "algorithm": RING}),
            ("MPI_Allgatherv", 18, {"glop": 7, "algorithm": RING}),
            ("MPI_Alltoall", 11, {"glop": 8, "algorithm": PAIRWISE}),
            ("MPI_Alltoallv", 12, {"glop": 9, "algorithm": PAIRWISE}))
    + _rows(COLLECTIVE, "", COLLECTIVE_EVENTS, ("MPI_Bcast", 7, {"glop": 1, "algorithm": BINOMIAL}),
            ("MPI_Reduce", 9, {"glop": 10, "algorithm": BINOMIAL}),
            ("MPI_Gather", 13, {"glop": 2, "algorithm": LINEAR}), ("MPI_Gatherv", 14, {"glop": 3, "algorithm": LINEAR}),
            ("MPI_Scatter", 15, {"glop": 4, "algorithm": LINEAR}),
            ("MPI_Scatterv", 16, {"glop": 5, "algorithm": LINEAR}), rooted=True)
    + _rows(OTHER, "", P2P_EVENTS, ("MPI_Iprobe", 62), ("MPI_Mprobe", 190), ("MPI_Improbe", 191))
    + _rows(OTHER, "", P2P_EVENTS, ("MPI_Probe", 61), modelled=False)
    + _rows(OTHER, "", OTHER_EVENTS, ("MPI_Init", 31), ("MPI_Init_thread", 31), ("MPI_Finalize", 32),
            ("MPI_Comm_rank", 19), ("MPI_Comm_size", 20), ("MPI_Comm_create", 21), ("MPI_Comm_dup", 22),
            ("MPI_Comm_split", 23), ("MPI_Comm_free", 25), ("MPI_Comm_split_type", 194), ("MPI_Request_free", 115)))
BY_NAME = MappingProxyType({f.name: f for f in FUNCTIONS})


def named(kind: str, mode: str | None = None, **properties) -> frozenset[str]:
    """The names of the table's functions of a kind (and mode, and properties)."""
    return frozenset(f.name for f in FUNCTIONS if f.kind == kind and mode in (None, f.mode)
                     and all(getattr(f, k) == v for k, v in properties.items()))


# Each MPI_Start(all) of a persistent request is a row of its own, named by the call and the
# request's kind ("MPI_Startall:MPI_Recv_init"): the operation it starts is an Isend's or an Irecv's.
STARTS = tuple(f.name for f in FUNCTIONS if f.kind == START)
PERSISTENT_INITS = tuple(f.name for f in FUNCTIONS if f.mode == PERSISTENT)  # the started rows' order
STARTED = MappingProxyType({f"{start}:{init}": BY_NAME[init] for start in STARTS for init in PERSISTENT_INITS})
STARTED_SENDS = frozenset(name for name, init in STARTED.items() if init.kind == SEND)
STARTED_RECEIVES = frozenset(name for name, init in STARTED.items() if init.kind == RECEIVE)
BLOCKING_SENDS = named(SEND, BLOCKING)
BLOCKING_RECEIVES = named(RECEIVE, BLOCKING)
IMMEDIATE_SENDS = named(SEND, IMMEDIATE) | STARTED_SENDS
IMMEDIATE_RECEIVES = named(RECEIVE, IMMEDIATE) | STARTED_RECEIVES
NONBLOCKING = IMMEDIATE_SENDS | IMMEDIATE_RECEIVES
SYNCHRONOUS_SENDS = frozenset(f.name for f in FUNCTIONS if f.synchronous and f.mode != PERSISTENT) | frozenset(
    name for name, init in STARTED.items() if init.synchronous)
SENDRECVS = named(SENDRECV)
COMPLETIONS = named(COMPLETION)
COLLECTIVES = named(COLLECTIVE)
ROOTED = named(COLLECTIVE, rooted=True)
# Calls that carry no data and need no model: a run's summary does not list them as unmodelled.
BOOKKEEPING = frozenset(f.name for f in FUNCTIONS if f.kind in (OTHER, START) or f.mode == PERSISTENT)

# Calls that move no data between buffers, without the MPI-4 large-count suffix (_c).
NO_DATA = re.compile(
    r"MPI_(Wtime|Wtick|Abort|Initialized|Finalized|Query_thread|Is_thread_main|Get_(count|elements(_x)?|"
    r"processor_name|version|library_version|address)|Address|Type_\w+|Comm_\w+|Group_\w+|Intercomm_\w+|Cart\w*|"
    r"Graph\w*|Dist_graph\w*|Dims_create|Topo_test|Errhandler_\w+|Error_\w+|Add_error_\w+|\w+_errhandler|"
    r"\w+_(get|set|delete)_attr|\w+_(create|free)_keyval|Attr_\w+|Keyval_\w+|Op_\w+|Info_\w+|Probe|Iprobe|Mprobe|"
    r"Improbe|Cancel|Test_cancelled|Request_(free|get_status)|Status_\w+|Buffer_(attach|detach)|Pack_size|"
    r"Pack_external_size|Alloc_mem|Free_mem|Pcontrol|Session_\w+|Win_\w+|"
    r"(Send|Bsend|Ssend|Rsend|Recv)_init|Start|Startall)")
# One-sided communication: the calls that move data between windows.
ONE_SIDED = re.compile(r"MPI_R?(Put|Get|Accumulate|Get_accumulate)|MPI_Fetch_and_op|MPI_Compare_and_swap")


def moves_no_data(call: str) -> bool:
    return NO_DATA.fullmatch(call.removesuffix("_c")) is not None


def one_sided(call: str) -> bool:
    return ONE_SIDED.fullmatch(call.removesuffix("_c")) is not None


class _Call(Protocol):
    @property
    def call(self) -> str: ...


Call = TypeVar("Call", bound=_Call)  # an MpiCall (model.py, which imports this module)


def first_one_sided(calls: Iterable[Call]) -> Call | None:
    """The first call of a one-sided transfer, by rank and order; None if none."""
    return next((c for c in calls if one_sided(c.call)), None)
