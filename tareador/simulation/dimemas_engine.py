"""Replaying a Dimemas trace on a machine, with Dimemas' point-to-point model.

What the model does (read in the source of Dimemas 5.5.0 and checked against its runs):
- a thread needs one of its node's CPUs to do anything; it gives the CPU up when it blocks
  (receive or wait for a message not yet there, rendezvous send whose receiver is not there yet)
  or ends, and queues for one again when unblocked;
- a thread that gets a CPU spends the scheduler's context-switch cost on it first, each time;
- a send, a receive and a wait cost the thread ``latency`` on its CPU first (an irecv does not),
  then the transfer takes size / bandwidth, after taking the sender's out link, the receiver's
  in link and a bus where those are limited (engine_network.c: half-duplex links, links lent
  between transfers; under Dimemas' RR and BOOST communication policies a message never waits
  for a bus and shares its bandwidth instead);
- a CPU burst takes its time divided by the relative speed, and first by the factor of the
  module (an event) it runs in, if the machine defines one (simulation/modules.py);
- rendezvous sends (sync bit 0, and every message between two threads of one task) start their
  transfer only once a receive waits for them; an immediate send lets the sender go on meanwhile;
- latency and bandwidth are the intra-node ones when both tasks share a node, else inter-node;
  the dependencies between a rank's threads in an MPI run's ompss.dim (communicator
  DEPENDENCY_COMM) take no time and no link or bus, as in the thesis' extended Dimemas;
- a global operation (record 10) blocks its members until the last arrives, takes every
  inter-node bus where they are limited, lasts Dimemas' fan-in/fan-out time of its root's
  bytes, then its members queue for a CPU (simulation/global_ops.py has the model);
- ready threads queue FIFO; ``cp`` (Dimemas SS_MPI_CP) orders them by the priority events 6999
  (higher value first, never-set first in LIFO order); ``rr`` slices bursts by the quantum;
- the scheduling points are Dimemas': every burst (empty ones too) is one, a thread that sends
  or receives without blocking keeps its turn at the head of the queue, a woken receiver queues
  at the tail, and same-time steps happen in Dimemas' order (engine_loop.c lists them).

Sends and receives are paired before the run (MPI order: k-th send of a key with the k-th
receive), which tells the loop when a message's receive was reached; which message a receive
gets is decided in the loop, by key, as Dimemas does. The event loop only touches flat arrays
of numbers. It runs in C (engine_loop.c, built on first use through tareador.native) because it
visits every action of traces with millions of threads; Python plans the run and turns what the
loop recorded into Paraver records.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from tareador.errors import DimError, MachineError
from tareador.formats import mpi_events
from tareador.formats.dimemas import (
    BURST,
    DEPENDENCY_COMM,
    EVENT,
    GLOBAL_OP,
    RECV,
    SEND,
    SYNC_IMMEDIATE,
    SYNC_RENDEZVOUS,
    DimTrace,
)
from tareador.formats.paraver import (
    CONTEXT_SWITCH,
    GROUP_COMMUNICATION,
    PRIORITY_EVENT,
    RUNNING,
    STARTUP_LATENCY,
    TASK_EVENT,
    WAITING_CPU,
    WAITING_MESSAGE,
    ParaverRun,
    nanoseconds,
    pcf_value_labels,
    task_event_labels,
    thread_labels,
)
from tareador.native import shared_library
from tareador.simulation.global_ops import plan_global_ops
from tareador.simulation.machine import MB, Machine
from tareador.simulation.modules import burst_ns
from tareador.simulation.policies import DIMEMAS
from tareador.taskgraph.dag import sorted_unique
from tareador.text_columns import release_freed_memory

A_BURST, A_SEND, A_RECV, A_IRECV, A_WAIT, A_EVENT, A_GLOBAL = range(7)  # enum action in engine_loop.c
POLICIES = {name: DIMEMAS.code(name) for name in DIMEMAS.names}  # enum policy in engine_loop.c
LOOP_NOMEM, LOOP_DONE = -1, 0  # enum status in engine_loop.c
NET_DEST_FIRST, NET_STEALS = 1, 2  # message flags in engine_network.h
NO_PRIORITY = -1  # value of an event action that sets no priority
# Events Dimemas keeps out of its Paraver trace (prv_utils/paraver.cc PARAVER_Event): idle (0),
# preemption (6998) and scheduling priority (6999) are the scheduler's, not the program's.
DIMEMAS_OWN_EVENTS = (0, 6998, PRIORITY_EVENT)
NS = 1e9  # the event loop counts nanoseconds in floats, as Dimemas does: whole ns stay exact
PROGRESS_EVERY = 65536  # finished threads between progress reports
EVENTS_PER_CALL = 1 << 20  # events the loop handles before Python takes a pending Ctrl-C (a few ms)
MAX_SLICES = 1 << 30  # rr: slices of bursts beyond one per burst, about a minute of event loop


@dataclass
class ReplayResult:
    makespan: float  # seconds
    thread_end: np.ndarray  # seconds, per global thread
    threads: list[int]  # threads per task
    paraver: ParaverRun | None = None  # with record=True

    @property
    def recorded(self) -> ParaverRun:
        """The Paraver run of a replay with record=True."""
        if self.paraver is None:
            raise ValueError("the replay was not recorded: replay with record=True")
        return self.paraver

    @property
    def thread_end_by_task(self) -> list[np.ndarray]:
        return np.split(self.thread_end, np.cumsum(self.threads)[:-1])

    @property
    def task_end(self) -> list[float]:
        return [float(ends.max()) for ends in self.thread_end_by_task]

    def __repr__(self) -> str:
        return (f"<ReplayResult makespan {self.makespan:.9g} s, {len(self.threads)} tasks, "
                f"{len(self.thread_end)} threads>")


@dataclass
class _Plan:
    """The trace reduced to what the event loop needs."""

    kind: np.ndarray  # per action
    value: np.ndarray  # burst ns / message index / priority rank set (NO_PRIORITY; 1 = highest value)
    record: np.ndarray  # trace record of each action
    thread_start: np.ndarray  # first action of each thread (+ end)
    node: np.ndarray  # node of each thread
    cpus: int  # CPUs per node the loop keeps: as many as can be busy at once, the machine's or fewer
    key: np.ndarray  # per message, its (sender, receiver, tag, communicator) as a number from 0
    nkeys: int
    latency: np.ndarray  # per message, ns
    transfer: np.ndarray
    rendezvous: np.ndarray
    immediate: np.ndarray
    by_irecv: np.ndarray  # per message: its receive is an irecv
    size: np.ndarray
    tag: np.ndarray
    network: dict[str, np.ndarray] | None  # engine_network.h's struct network_plan arrays; None: all unlimited
    gop_op: np.ndarray  # per global-operation record (an A_GLOBAL action's value), its operation
    gop_root: np.ndarray  # it claims the root
    gop_time: np.ndarray  # ns its operation takes when it is the root (simulation/global_ops.py)
    gop_startup: np.ndarray  # ns of that time that are latencies (only the Paraver states show them)
    op_size: np.ndarray  # per global operation, its members


def _key_groups(first_keys: list[np.ndarray], second_keys: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The records of ``first`` then ``second`` ordered by key (stable: within a key, all of first
    then all of second, in trace order), and where each new key starts in that order."""
    def varies(*parts: np.ndarray) -> bool:
        present = [p for p in parts if len(p)]
        return bool(present) and min(p.min() for p in present) != max(p.max() for p in present)

    # A column the same for all (one tag and communicator, as in ompss.dim) orders nothing.
    cols = [np.concatenate([a, b]) for a, b in zip(first_keys, second_keys) if varies(a, b)]
    if not cols:
        cols = [np.zeros(len(first_keys[0]) + len(second_keys[0]), np.int8)]
    order = np.lexsort(cols[::-1])
    new = np.ones(len(order), bool)
    if len(order) > 1:
        same = np.ones(len(order) - 1, bool)
        for c in cols:
            c = c[order]
            same &= c[1:] == c[:-1]
        new[1:] = ~same
    return order, new


def _match(groups: tuple[np.ndarray, np.ndarray], first: np.ndarray, second: np.ndarray, trace: DimTrace,
           unmatched_first: str | None, unmatched_second: str) -> tuple[np.ndarray, np.ndarray]:
    """Pair the k-th record of ``first`` with the k-th record of ``second`` that has the same key
    (``groups``: ``_key_groups`` of their keys).

    ``first``/``second`` are record indices in trace order; returns, for each of ``second``, the
    position in ``first`` of its partner, and for each of ``first`` its key as a number from 0.
    ``unmatched_first=None`` allows leftover ``first`` records (an irecv nobody waits for).
    """
    order, new = groups
    n1 = len(first)
    group = np.cumsum(new) - 1
    start = np.flatnonzero(new)
    s = order >= n1  # of second
    nfirst = np.bincount(group[~s], minlength=len(start))
    nsecond = np.bincount(group[s], minlength=len(start))
    for bad, pos, why in ((nsecond > nfirst, start + 2 * nfirst, unmatched_second),
                          ((nfirst > nsecond) if unmatched_first else np.zeros(0, bool), start + nsecond,
                           unmatched_first)):
        if bad.any():
            g = int(np.flatnonzero(bad)[0])
            at = int(order[pos[g]])
            raise DimError(f"{trace.path}:{trace.line(int(first[at] if at < n1 else second[at - n1]))}: {why}")
    seconds, firsts = np.flatnonzero(s), np.flatnonzero(~s)
    result = np.empty(len(second), np.int64)
    result[order[seconds] - n1] = order[seconds - nfirst[group[seconds]]]
    keys = np.empty(n1, np.int64)
    keys[order[firsts]] = group[firsts]
    return result, keys


@dataclass
class _Messages:
    """Sends and receives paired: sends numbered in trace order, each receive and wait given its
    send's number."""

    recvs: np.ndarray  # receive and irecv records
    recv_msg: np.ndarray
    waits: np.ndarray  # wait records
    wait_msg: np.ndarray
    send_key: np.ndarray  # per send, its (sender, receiver, tag, communicator) as a number from 0
    by_irecv: np.ndarray  # per send: an irecv took it


def _messages(trace: DimTrace, task_of: np.ndarray, sends: np.ndarray) -> _Messages:
    op, mode, g, base = trace.op, trace.mode, trace.gthread, trace.task_base
    recvs = np.flatnonzero((op == RECV) & (mode <= 1))
    waits = np.flatnonzero((op == RECV) & (mode >= 2))

    def key(idx: np.ndarray, sending: bool) -> list[np.ndarray]:
        """(per-thread?, sender, receiver, tag, comm): MPI messages match task to task.

        Packed into two int64 columns in that order of significance (ids are below 2^31, tag
        and comm int32), because sorting and comparing few columns is what matching costs.
        """
        own, partner_task, partner_thread = g[idx], trace.a[idx], trace.b[idx]
        threaded = partner_thread >= 0
        if threaded.all():  # between threads (ompss.dim): no task ids to put in
            mine, theirs = own, base[partner_task] + partner_thread
        else:
            mine = np.where(threaded, own, task_of[own])
            theirs = np.where(threaded, base[partner_task] + np.maximum(partner_thread, 0), partner_task)
        sender, receiver = (mine, theirs) if sending else (theirs, mine)
        who = (sender.astype(np.int64) << 31) | receiver
        who |= threaded.astype(np.int64) << 62
        what = (trace.tag[idx].astype(np.int64) << 32) + trace.comm[idx] + (1 << 31)
        return [who, what]

    # The keys are arguments of _key_groups only, so that they are gone before matching.
    recv_msg, send_key = _match(_key_groups(key(sends, True), key(recvs, False)), sends, recvs, trace,
                                "send without a matching receive", "receive without a matching send")
    wait_msg = np.zeros(0, np.int64)
    if len(waits):
        irecvs = recvs[mode[recvs] == 1]
        wait_msg = recv_msg[mode[recvs] == 1][_match(_key_groups(key(irecvs, False), key(waits, False)), irecvs,
                                                     waits, trace, None, "wait without a matching irecv")[0]]
    by_irecv = np.zeros(len(sends), bool)
    by_irecv[recv_msg] = mode[recvs] == 1
    return _Messages(recvs, recv_msg, waits, wait_msg, send_key, by_irecv)


def _actions(trace: DimTrace, machine: Machine, sends: np.ndarray, m: _Messages, glops: np.ndarray):
    """(record, kind, value, thread_start) per action of the loop: every burst (an empty one is a
    scheduling point too), send, receive and global operation, and one per run of consecutive
    events: what events change is only whether a thread's next action is a burst, and the
    priority the run leaves set. Built by position, without a column per record."""
    op, g = trace.op, trace.gthread
    events = np.flatnonzero(op == EVENT)
    run_start = _event_runs(events, g)
    keep = (op == BURST) | (op == SEND) | (op == RECV) | (op == GLOBAL_OP)
    keep[events[run_start]] = True
    before = np.zeros(len(op) + 1, np.int64 if len(op) >= 1 << 31 else np.int32)
    np.cumsum(keep, out=before[1:])  # actions before each record
    del keep
    record = np.empty(int(before[-1]), before.dtype)
    kind = np.full(len(record), A_EVENT, np.int8)
    value = np.empty(len(record))
    bursts = np.flatnonzero(op == BURST)
    burst_values = burst_ns(trace, machine.modules, bursts) / machine.relative_speed
    for rows, kinds, values in ((bursts, A_BURST, burst_values),
                                (sends, A_SEND, np.arange(len(sends))),
                                (m.recvs, np.where(trace.mode[m.recvs] == 0, A_RECV, A_IRECV), m.recv_msg),
                                (m.waits, A_WAIT, m.wait_msg), (glops, A_GLOBAL, np.arange(len(glops))),
                                (events[run_start], A_EVENT, _run_priorities(trace, machine, events, run_start))):
        at = before[rows]
        record[at], kind[at], value[at] = rows, kinds, values
    return record, kind, value, before[trace.thread_start]


def plan(trace: DimTrace, machine: Machine) -> _Plan:
    ntasks = len(trace.threads)
    base = trace.task_base
    task_of = np.repeat(np.arange(ntasks), trace.threads)
    node_of_task = np.array(machine.node_of_tasks(ntasks), np.int64)
    mode, g = trace.mode, trace.gthread
    sends = np.flatnonzero(trace.op == SEND)
    m = _messages(trace, task_of, sends)
    glops = np.flatnonzero(trace.op == GLOBAL_OP)
    gop_op, gop_root, gop_time, gop_startup, op_size = plan_global_ops(trace, machine, node_of_task, glops)
    record, kind, value, thread_start = _actions(trace, machine, sends, m, glops)
    send_key, by_irecv = m.send_key, m.by_irecv
    del m

    sender = g[sends]
    dest_task = trace.a[sends]
    src_task = task_of[sender]
    same_node = node_of_task[src_task] == node_of_task[dest_task]
    # Dimemas makes every message between two threads of one task a rendezvous, MPI ones too.
    other_thread = (src_task == dest_task) & (trace.b[sends] != sender - base[src_task])
    latency = np.where(same_node, machine.intra_latency, machine.inter_latency) * NS
    latency[latency < 1] = 0.0  # below Dimemas' resolution
    bandwidth = np.where(same_node, machine.intra_bandwidth, machine.inter_bandwidth)
    ns_per_byte = np.divide(NS / MB, bandwidth, out=np.zeros(len(sends)), where=bandwidth > 0)
    # Dependencies between the threads of a rank in an MPI run's ompss.dim take no time, as in the
    # thesis' extension of Dimemas (synthesis/mpi_ompss.py); the network is the MPI messages'.
    dependency = trace.comm[sends] == DEPENDENCY_COMM
    latency[dependency] = 0.0
    ns_per_byte[dependency] = 0.0
    size = trace.size[sends]
    transfer = ns_per_byte * size
    _check_durations(trace, machine, kind, value, latency, np.concatenate([transfer, gop_time]))
    network = _network(machine, ntasks, node_of_task, src_task, dest_task, same_node)
    if network is not None:  # between threads of one task: no link, and no bus for a dependency
        network["bus"][dependency] = -1
        network |= {"ns_per_byte": ns_per_byte, "size": size.astype(np.float64)}
    node = node_of_task[task_of].astype(np.int32)
    busiest = int(np.bincount(node).max(initial=1))  # threads of the node with most
    return _Plan(kind=kind, value=value, record=record, thread_start=thread_start.astype(np.int64), node=node,
                 cpus=min(machine.cores_per_node, busiest), key=send_key, nkeys=int(send_key.max(initial=-1)) + 1,
                 latency=latency, transfer=transfer, rendezvous=((mode[sends] & SYNC_RENDEZVOUS) > 0) | other_thread,
                 immediate=(mode[sends] & SYNC_IMMEDIATE) > 0, by_irecv=by_irecv, size=size, tag=trace.tag[sends],
                 network=network, gop_op=gop_op, gop_root=gop_root, gop_time=gop_time, op_size=op_size,
                 gop_startup=gop_startup)


def _check_durations(trace: DimTrace, machine: Machine, kind, value, latency, transfer) -> None:
    """Refuse what the loop could not finish: times beyond what a double counts, or a round-robin
    quantum that cuts the bursts (latencies are bursts too) into more slices than MAX_SLICES."""
    paying = (kind == A_SEND) | (kind == A_RECV) | (kind == A_WAIT)
    bursts = np.concatenate([value[kind == A_BURST], latency[value[paying].astype(np.int64)]])
    total = bursts.sum()
    if not np.isfinite(total + transfer.sum()):
        raise MachineError(f"{trace.path}: on this machine its bursts, latencies and transfers take longer than "
                           "can be counted; check relative_speed, the latencies and the bandwidths")
    if machine.policy == "rr":
        slices = np.floor(bursts[bursts > 0] / (machine.quantum * NS)).sum()
        if slices > MAX_SLICES:
            raise MachineError(f"{trace.path}: the rr quantum of {machine.quantum:g} s cuts its bursts into "
                               f"{slices:.3g} slices, more than the {MAX_SLICES:.3g} replay simulates in about a "
                               f"minute; use a quantum of at least {2 * total / MAX_SLICES / NS:.2g} s")


def _event_runs(events: np.ndarray, gthread: np.ndarray) -> np.ndarray:
    """Which of the event records (trace order) start a run of consecutive events of a thread."""
    start = np.ones(len(events), bool)
    start[1:] = (events[1:] != events[:-1] + 1) | (gthread[events[1:]] != gthread[events[:-1]])
    return start


def _run_priorities(trace: DimTrace, machine: Machine, events: np.ndarray, run_start: np.ndarray) -> np.ndarray:
    """Per run of events, the rank of the priority its last 6999 event sets (NO_PRIORITY: none);
    only SS_MPI_CP (``cp``) reads priorities."""
    result = np.full(int(run_start.sum()), NO_PRIORITY, np.int64)
    setting = np.flatnonzero(trace.a[events] == PRIORITY_EVENT)
    if machine.policy != "cp" or not len(setting):
        return result
    values = trace.b[events[setting]]
    if (values <= 0).any():
        line = trace.line(int(events[setting[np.argmax(values <= 0)]]))
        raise DimError(f"{trace.path}:{line}: priority (event {PRIORITY_EVENT}) {int(values.min())}: under "
                       "SS_MPI_CP a value <= 0 preempts running threads, which replay does not model")
    run = (np.cumsum(run_start) - 1)[setting]
    last = np.append(run[1:] != run[:-1], True)
    result[run[last]] = _priority_ranks(values[last])
    return result


def _priority_ranks(values: np.ndarray) -> np.ndarray:
    """Dimemas' priority is 1/value, lowest first (0, never set, before all): rank the values
    so that the loop compares small integers, 1 for the highest value."""
    distinct = sorted_unique(values)
    return len(distinct) - np.searchsorted(distinct, values)


def _ports(in_links: int, out_links: int, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Out and in link counts and half-duplex flags of ``count`` ports with these link counts:
    exactly one of them 0 makes max(in, out) links shared by both directions, as in Dimemas."""
    hd = (in_links == 0) != (out_links == 0)
    out_cap, in_cap = (max(in_links, out_links),) * 2 if hd else (out_links, in_links)
    return np.full(count, out_cap, np.int64), np.full(count, in_cap, np.int64), np.full(count, hd, np.uint8)


def _network(m: Machine, ntasks: int, node_of_task, src_task, dest_task, same_node) -> dict | None:
    """engine_network.h's struct network_plan, or None when every link and bus is unlimited.

    Ports: each task's links within its node (0 .. ntasks - 1), then each node's links to the
    network. A message within a node takes its node's bus and, between two tasks, the sender's
    out link and the receiver's in link; between nodes, the global bus and the nodes' links.
    Both link counts 0 is unlimited (no port).
    """
    if not any((m.buses, m.in_links, m.out_links, m.intra_buses, m.intra_in_links, m.intra_out_links)):
        return None
    src_node, dest_node = node_of_task[src_task], node_of_task[dest_task]
    between_tasks = same_node & (src_task != dest_task)
    src = np.full(len(src_task), -1, np.int64)
    dst = src.copy()
    intra_hd = (m.intra_in_links == 0) != (m.intra_out_links == 0)
    if m.intra_in_links or m.intra_out_links:
        src = np.where(between_tasks, src_task, src)
        dst = np.where(between_tasks, dest_task, dst)
    if m.in_links or m.out_links:
        src = np.where(same_node, src, ntasks + src_node)
        dst = np.where(same_node, dst, ntasks + dest_node)
    flags = np.where(same_node, 0, NET_STEALS) | np.where(between_tasks & intra_hd & (src_task > dest_task),
                                                          NET_DEST_FIRST, 0)
    bus = np.full(len(src_task), -1, np.int64)
    if m.intra_buses:
        bus = np.where(same_node, src_node, bus)
    if m.buses:
        bus = np.where(same_node, bus, m.nodes)
    task_ports = _ports(m.intra_in_links, m.intra_out_links, ntasks)
    node_ports = _ports(m.in_links, m.out_links, m.nodes)
    out_cap, in_cap, hd = (np.concatenate(pair) for pair in zip(task_ports, node_ports))
    return {"src": src, "dst": dst, "bus": bus, "flags": flags, "out_cap": out_cap, "in_cap": in_cap, "hd": hd,
            "bus_cap": np.array([m.intra_buses] * m.nodes + [m.buses], np.int64)}


def replay(trace: DimTrace, machine: Machine, record: bool = False, progress=None) -> ReplayResult:
    """Simulate the trace; ``record`` keeps what a Paraver trace of the run needs.

    ``progress`` (optional) is called with the number of threads finished since its last call.
    """
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow becomes inf, which plan refuses
        p = plan(trace, machine)
    arrays = _loop_arrays(p, record)
    states = _run_loop(_plan_struct(p, machine, arrays, record), progress)
    pc, thread_end, end_of = arrays["pc"], arrays["thread_end"], p.thread_start[1:]
    assert pc is not None and thread_end is not None  # the loop's outputs, always allocated
    stuck = np.flatnonzero(pc < end_of)
    if len(stuck):
        t = int(stuck[0])
        task, thread = trace.thread_name(t)
        line = trace.line(int(p.record[pc[t]]))
        raise DimError(f"{trace.path}:{line}: deadlock: {len(stuck)} threads never finish, first task {task} "
                       f"thread {thread}, blocked at this record")
    ends = thread_end / NS  # the Paraver trace takes the loop's ns: back from seconds, a tie could move
    result = ReplayResult(makespan=float(ends.max(initial=0.0)), thread_end=ends, threads=list(trace.threads),
                          paraver=_paraver(trace, machine, p, arrays, states, thread_end) if record else None)
    del p, arrays, states
    release_freed_memory()  # what read_dim and the plan kept for reuse, before the caller's output
    return result


# struct plan in engine_loop.c, in its order: int64 scalars, the quantum and the context switch,
# then pointers to the plan's arrays, the loop's outputs and the recorder's (only when recording),
# each of the type the loop reads it as, then struct network_plan (engine_network.h).
_SCALARS = ("nthreads", "nmsg", "nkeys", "nnodes", "cores", "policy", "record", "running",
            "waiting_cpu", "waiting_message", "switching", "startup")
_PLAN_ARRAYS = (("kind", np.int8), ("value", np.float64), ("thread_start", np.int64), ("node", np.int32),
                ("key", np.int32), ("latency", np.float64), ("transfer", np.float64), ("rendezvous", np.bool_),
                ("immediate", np.bool_), ("by_irecv", np.bool_))
_OUTPUTS = (("pc", np.int64), ("thread_end", np.float64))
_RECORDED = (("reach", np.float64), ("lsend", np.float64), ("psend", np.float64), ("lrecv", np.float64),
             ("precv", np.float64), ("sthread", np.int64), ("scpu", np.int64), ("rthread", np.int64),
             ("rcpu", np.int64), ("reach_cpu", np.int64))
_GLOBAL_ARRAYS = (("gop_op", np.int32), ("gop_root", np.bool_), ("gop_time", np.float64), ("op_size", np.int32),
                  ("gop_startup", np.float64))
_NETWORK_ARRAYS = (("src", np.int32), ("dst", np.int32), ("bus", np.int32), ("flags", np.uint8),
                   ("out_cap", np.int64), ("in_cap", np.int64), ("bus_cap", np.int64), ("hd", np.uint8),
                   ("ns_per_byte", np.float64), ("size", np.float64))


class _NetworkPlan(ctypes.Structure):
    _fields_ = [("nports", ctypes.c_int64), ("nbuses", ctypes.c_int64), ("shared", ctypes.c_int64)] + [
        (name, ctypes.c_void_p) for name, _ in _NETWORK_ARRAYS]


class _PlanStruct(ctypes.Structure):
    _fields_ = ([(name, ctypes.c_int64) for name in _SCALARS]
                + [("quantum", ctypes.c_double), ("context_switch", ctypes.c_double)]
                + [(name, ctypes.c_void_p) for name, _ in _PLAN_ARRAYS + _OUTPUTS + _RECORDED]
                + [("nops", ctypes.c_int64), ("gop_pool", ctypes.c_int64), ("group_communication", ctypes.c_int64)]
                + [(name, ctypes.c_void_p) for name, _ in _GLOBAL_ARRAYS]
                + [("net", _NetworkPlan)])


def _loop_arrays(p: _Plan, record: bool) -> dict[str, np.ndarray | None]:
    """The plan's arrays as the loop reads them, and zeroed arrays for it to write into."""
    nthreads, nactions, nmsg = len(p.thread_start) - 1, len(p.kind), len(p.latency)
    arrays: dict[str, np.ndarray | None] = {name: np.ascontiguousarray(getattr(p, name), dtype)
                                            for name, dtype in _PLAN_ARRAYS + _GLOBAL_ARRAYS}
    arrays |= {name: np.zeros(nthreads, dtype) for name, dtype in _OUTPUTS}
    arrays |= {name: np.zeros(nactions if name in ("reach", "reach_cpu") else nmsg, dtype) if record else None
               for name, dtype in _RECORDED}
    arrays |= {"net_" + name: None if p.network is None else np.ascontiguousarray(p.network[name], dtype)
               for name, dtype in _NETWORK_ARRAYS}
    return arrays


def _plan_struct(p: _Plan, machine: Machine, arrays: dict, record: bool) -> _PlanStruct:
    """struct plan pointing into ``arrays``, which must outlive the loop."""
    scalars = dict(nthreads=len(p.thread_start) - 1, nmsg=len(p.latency), nkeys=p.nkeys,
                   nnodes=int(p.node.max(initial=0)) + 1, cores=p.cpus, policy=POLICIES[machine.policy or "fifo"],
                   record=int(record), running=RUNNING, waiting_cpu=WAITING_CPU, waiting_message=WAITING_MESSAGE,
                   switching=CONTEXT_SWITCH, startup=STARTUP_LATENCY, nops=len(p.op_size),
                   gop_pool=machine.nodes if machine.buses else -1,  # _network puts the inter-node bus last
                   group_communication=GROUP_COMMUNICATION)
    pointers = {name: None if a is None else a.ctypes.data for name, a in arrays.items()}
    net = {name[4:]: pointers.pop(name) for name in list(pointers) if name.startswith("net_")}
    sizes = {} if p.network is None else {"nports": len(p.network["out_cap"]), "nbuses": len(p.network["bus_cap"]),
                                          "shared": int(machine.bus_policy == "rr")}
    return _PlanStruct(**scalars, quantum=machine.quantum * NS, context_switch=machine.context_switch * NS,
                       **pointers, net=_NetworkPlan(**sizes, **net))


def _run_loop(struct: _PlanStruct, progress) -> np.ndarray:
    """Run the C loop to the end, pausing to report progress; returns the recorded states."""
    lib = _library()
    loop = lib.loop_new(ctypes.byref(struct))
    if not loop:
        raise MemoryError("not enough memory for the replay's event loop")
    try:
        reported = 0
        while True:
            status = lib.loop_run(loop, reported + PROGRESS_EVERY, EVENTS_PER_CALL)
            if status == LOOP_NOMEM:
                raise MemoryError("the replay's event loop ran out of memory")
            finished = lib.loop_finished(loop)
            if progress is not None and finished > reported:
                progress(finished - reported)
            reported = finished
            if status == LOOP_DONE:
                break
        rows = ctypes.POINTER(ctypes.c_double)()
        n = lib.loop_states(loop, ctypes.byref(rows))
        return np.ctypeslib.as_array(rows, (n, 5)).copy() if n else np.zeros((0, 5))
    finally:
        lib.loop_free(loop)


@cache
def _library() -> ctypes.CDLL:
    """engine_loop.c with engine_network.c, compiled once per version of their sources; never
    contracting operations into fused ones keeps every time the plain double sum the model
    defines, on any target."""
    here = Path(__file__).parent
    return shared_library("libtareador_replay.so", [here / "engine_loop.c", here / "engine_network.c"], {
        "loop_new": (ctypes.c_void_p, [ctypes.POINTER(_PlanStruct)]),
        "loop_run": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]),
        "loop_finished": (ctypes.c_int64, [ctypes.c_void_p]),
        "loop_states": (ctypes.c_int64, [ctypes.c_void_p, ctypes.POINTER(ctypes.POINTER(ctypes.c_double))]),
        "loop_free": (None, [ctypes.c_void_p])}, flags=("-ffp-contract=off",),
        headers=(here / "engine_network.h", here / "engine_alloc.h"))


def _paraver(trace: DimTrace, machine: Machine, p: _Plan, rec: dict, st: np.ndarray, ends: np.ndarray) -> ParaverRun:
    """The Paraver run from what the loop recorded: ``rec`` per action and message, ``st`` one
    row (thread, cpu + 1, begin, end, state) per state; ``ends``: thread end times in ns, like
    every time the loop keeps. CPUs are numbered across nodes from 1, as Paraver wants them."""
    events = np.flatnonzero(trace.op == EVENT)
    run = np.searchsorted(p.record, events, side="right") - 1  # the event action of each event's run
    g = trace.gthread[events]
    got = rec["rcpu"] > 0  # messages some receive took (an irecv nobody waits for may leave one)
    shown = ~np.isin(trace.a[events], DIMEMAS_OWN_EVENTS)

    def cpu(recorded: np.ndarray) -> np.ndarray:
        """The loop numbers each node's CPUs p.cpus apart, Paraver cores_per_node apart (0: none)."""
        c = recorded.astype(np.int64) - 1
        return np.where(c >= 0, c // p.cpus * machine.cores_per_node + c % p.cpus + 1, 0)

    threads = [(task, h, int(p.node[base + h])) for task, (base, n) in
               enumerate(zip(trace.task_base.tolist(), trace.threads)) for h in range(n)]
    types = _task_types(trace, events)
    return ParaverRun(
        end_time=int(nanoseconds(ends.max(initial=0.0))), cpus_per_node=[machine.cores_per_node] * machine.nodes,
        threads=threads,
        states={"thread": st[:, 0].astype(np.int64), "cpu": cpu(st[:, 1]), "begin": nanoseconds(st[:, 2]),
                "end": nanoseconds(st[:, 3]), "state": st[:, 4].astype(np.int64)},
        events={"thread": g[shown], "cpu": cpu(rec["reach_cpu"][run][shown]),
                "time": nanoseconds(rec["reach"][run][shown]), "type": trace.a[events][shown],
                "value": trace.b[events][shown]},
        comms={"thread": rec["sthread"][got], "cpu": cpu(rec["scpu"][got]), "rthread": rec["rthread"][got],
               "rcpu": cpu(rec["rcpu"][got]), "size": p.size[got], "tag": p.tag[got],
               **{name: nanoseconds(rec[name][got]) for name in ("lsend", "psend", "lrecv", "precv")}},
        event_labels=task_event_labels(types) | mpi_events.event_labels(np.unique(trace.a[events]).tolist()),
        thread_labels=thread_labels(trace.threads, _thread_types(trace, events, types)),
        task_labels=[f"rank {t}" for t in range(len(trace.threads))] if len(trace.threads) > 1 else None)


def _task_types(trace: DimTrace, events: np.ndarray) -> dict[str, int]:
    """Names of the task types (event 7003 values): from the trace's own .pcf when there is one
    (``tareador simulate --dim`` writes it), else "type N"."""
    values = {int(v) for v in np.unique(trace.b[events][trace.a[events] == TASK_EVENT]) if v}
    names = pcf_value_labels(Path(trace.path).with_suffix(".pcf"), TASK_EVENT)
    return {names.get(v, f"type {v}"): v for v in sorted(values)}


def _thread_types(trace: DimTrace, events: np.ndarray, types: dict[str, int]) -> list[str | None]:
    """Per thread, the task type it runs when it runs only one (a task instance's thread), else None."""
    mine = events[(trace.a[events] == TASK_EVENT) & (trace.b[events] != 0)]
    pairs = np.unique(np.stack([trace.gthread[mine], trace.b[mine]]), axis=1)
    single = np.bincount(pairs[0], minlength=len(trace.thread_start) - 1) == 1
    name = {v: n for n, v in types.items()}
    result: list[str | None] = [None] * (len(trace.thread_start) - 1)
    for g, v in pairs[:, single[pairs[0]]].T.tolist():
        result[g] = name[v]
    return result
