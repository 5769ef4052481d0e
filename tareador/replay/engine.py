"""Replaying a Dimemas trace on a machine, with Dimemas' point-to-point model.

What the model does (checked against Dimemas 5.5.0, see formats.md):
- a thread needs one of its node's CPUs to do anything; it gives the CPU up when it blocks
  (receive or wait for a message not yet there, rendezvous send whose receiver is not there yet)
  or ends, and queues for one again when unblocked;
- a send costs the sender ``latency`` on its CPU, then the transfer takes size / bandwidth (and
  waits for a bus and links when those are limited); a receive costs the receiver ``latency`` on
  its CPU and completes at max(posted + latency, arrival);
- rendezvous sends (sync bit 0, and every message between two threads of one task) start their
  transfer only once the receive is posted; an immediate send lets the sender go on meanwhile;
- latency and bandwidth are the intra-node ones when both tasks share a node, else inter-node;
- ready threads queue FIFO; ``cp`` (Dimemas SS_MPI_CP) orders them by the priority events 6999
  (higher value first, never-set first in LIFO order); ``rr`` slices bursts by the quantum.

Sends and receives are matched before the run (MPI order: k-th send of a key with the k-th
receive), so the event loop only touches flat lists of numbers.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass
from itertools import count

import numpy as np

from tareador.formats.dimemas import BURST, EVENT, RECV, SEND, SYNC_IMMEDIATE, SYNC_RENDEZVOUS, DimError, DimTrace
from tareador.formats.paraver import (PRIORITY_EVENT, RUNNING, WAITING_CPU, WAITING_MESSAGE, ParaverRun)
from tareador.replay.machine import MB, Machine

A_BURST, A_SEND, A_RECV, A_IRECV, A_WAIT, A_PRIORITY = range(6)
NS = 1e9  # the event loop counts nanoseconds in floats, as Dimemas does: whole ns stay exact


@dataclass
class ReplayResult:
    makespan: float  # seconds
    thread_end: np.ndarray  # seconds, per global thread
    threads: list[int]  # threads per task
    paraver: ParaverRun | None = None

    @property
    def task_end(self) -> list[float]:
        bounds = np.cumsum([0, *self.threads])
        return [float(self.thread_end[a:b].max()) for a, b in zip(bounds[:-1], bounds[1:])]


@dataclass
class _Plan:
    """The trace reduced to what the event loop needs."""

    kind: np.ndarray  # per action
    value: np.ndarray  # burst seconds / message index / priority
    record: np.ndarray  # trace record of each action
    thread_start: np.ndarray  # first action of each thread (+ end)
    node: np.ndarray  # node of each thread
    latency: np.ndarray  # per message
    transfer: np.ndarray
    rendezvous: np.ndarray
    immediate: np.ndarray
    size: np.ndarray
    tag: np.ndarray
    pools: list[int]  # capacity of each limited resource
    needs: list[tuple[int, ...]]  # pools each message holds during its transfer


def _match(first_keys: list[np.ndarray], second_keys: list[np.ndarray], first: np.ndarray, second: np.ndarray,
           trace: DimTrace, unmatched_first: str | None, unmatched_second: str) -> np.ndarray:
    """Pair the k-th record of ``first`` with the k-th record of ``second`` that has the same key.

    ``first``/``second`` are record indices in trace order; returns, for each of ``second``, the
    position in ``first`` of its partner. ``unmatched_first=None`` allows leftover ``first``
    records (an irecv nobody waits for).
    """
    n1 = len(first)
    rec = np.concatenate([first, second])
    side = np.concatenate([np.zeros(n1, np.int8), np.ones(len(second), np.int8)])
    cols = [np.concatenate([a, b]) for a, b in zip(first_keys, second_keys)]
    order = np.lexsort([rec, side, *cols[::-1]])
    new = np.ones(len(order), bool)
    if len(order) > 1:
        same = np.ones(len(order) - 1, bool)
        for c in cols:
            c = c[order]
            same &= c[1:] == c[:-1]
        new[1:] = ~same
    group = np.cumsum(new) - 1
    start = np.flatnonzero(new)
    s = side[order]
    nfirst = np.bincount(group[s == 0], minlength=len(start))
    nsecond = np.bincount(group[s == 1], minlength=len(start))
    for bad, pos, why in ((nsecond > nfirst, start + 2 * nfirst, unmatched_second),
                          ((nfirst > nsecond) if unmatched_first else np.zeros(0, bool), start + nsecond,
                           unmatched_first)):
        if bad.any():
            g = int(np.flatnonzero(bad)[0])
            raise DimError(f"{trace.path}:{trace.line(int(rec[order[pos[g]]]))}: {why}")
    seconds = np.flatnonzero(s == 1)
    result = np.empty(len(second), np.int64)
    result[order[seconds] - n1] = order[seconds - nfirst[group[seconds]]]
    return result


def plan(trace: DimTrace, machine: Machine) -> _Plan:
    ntasks = len(trace.threads)
    base = trace.task_base
    task_of = np.repeat(np.arange(ntasks), trace.threads)
    node_of_task = np.array(machine.node_of_tasks(ntasks), np.int64)
    op, mode, g = trace.op, trace.mode, trace.gthread

    sends = np.flatnonzero(op == SEND)
    recvs = np.flatnonzero((op == RECV) & (mode <= 1))
    waits = np.flatnonzero((op == RECV) & (mode >= 2))

    def key(idx: np.ndarray, sending: bool) -> list[np.ndarray]:
        """(per-thread?, sender, receiver, tag, comm): MPI messages match task to task."""
        own, partner_task, partner_thread = g[idx], trace.a[idx], trace.b[idx]
        threaded = partner_thread >= 0
        mine = np.where(threaded, own, task_of[own])
        theirs = np.where(threaded, base[partner_task] + np.maximum(partner_thread, 0), partner_task)
        sender, receiver = (mine, theirs) if sending else (theirs, mine)
        return [threaded.astype(np.int64), sender, receiver, trace.tag[idx], trace.comm[idx]]

    msg = np.full(len(op), -1, np.int64)
    msg[sends] = np.arange(len(sends))
    msg[recvs] = _match(key(sends, True), key(recvs, False), sends, recvs, trace,
                        "send without a matching receive", "receive without a matching send")
    if len(waits):
        irecvs = recvs[mode[recvs] == 1]
        msg[waits] = msg[irecvs[_match(key(irecvs, False), key(waits, False), irecvs, waits, trace, None,
                                       "wait without a matching irecv")]]

    # Actions: everything but events (priority events only when they matter) and empty bursts.
    keep = ((op == BURST) & (trace.secs > 0)) | (op == SEND) | (op == RECV)
    if machine.policy == "cp":
        keep |= (op == EVENT) & (trace.a == PRIORITY_EVENT)
    record = np.flatnonzero(keep)
    kind = np.select([op[record] == BURST, op[record] == SEND, (op[record] == RECV) & (mode[record] == 0),
                      (op[record] == RECV) & (mode[record] == 1), op[record] == RECV],
                     [A_BURST, A_SEND, A_RECV, A_IRECV, A_WAIT], A_PRIORITY)
    value = np.where(kind == A_BURST, trace.secs[record] * NS / machine.relative_speed,
                     np.where(kind == A_PRIORITY, trace.b[record], msg[record]).astype(float))
    thread_start = np.searchsorted(g[record], np.arange(len(trace.thread_start)))

    sender = g[sends]
    dest_task = trace.a[sends]
    src_task = task_of[sender]
    same_node = node_of_task[src_task] == node_of_task[dest_task]
    same_task = (src_task == dest_task) & (trace.b[sends] >= 0)
    latency = np.where(same_node, machine.intra_latency, machine.inter_latency) * NS
    latency[latency < 1] = 0.0  # below Dimemas' resolution
    bandwidth = np.where(same_node, machine.intra_bandwidth, machine.inter_bandwidth)
    ns_per_byte = np.divide(NS / MB, bandwidth, out=np.zeros(len(sends)), where=bandwidth > 0)
    size = trace.size[sends]
    transfer = ns_per_byte * size
    pools, needs = _resources(machine, node_of_task, src_task, dest_task, same_node, same_task)
    return _Plan(kind=kind.astype(np.int8), value=value, record=record, thread_start=thread_start,
                 node=node_of_task[task_of], latency=latency, transfer=transfer,
                 rendezvous=((mode[sends] & SYNC_RENDEZVOUS) > 0) | same_task,
                 immediate=(mode[sends] & SYNC_IMMEDIATE) > 0, size=size, tag=trace.tag[sends], pools=pools,
                 needs=needs)


def _resources(m: Machine, node_of_task, src_task, dest_task, same_node, same_task):
    """Limited buses and links as counted pools; an empty list when everything is unlimited."""
    pools: list[int] = []
    index: dict[tuple, int] = {}

    def pool(name: tuple, capacity: int) -> list[int]:
        if capacity <= 0:
            return []
        if name not in index:
            index[name] = len(pools)
            pools.append(capacity)
        return [index[name]]

    if not any((m.buses, m.in_links, m.out_links, m.intra_buses, m.intra_in_links, m.intra_out_links)):
        return pools, []
    needs = []
    for s, d, local, own in zip(src_task.tolist(), dest_task.tolist(), same_node.tolist(), same_task.tolist()):
        ns, nd = int(node_of_task[s]), int(node_of_task[d])
        if local:
            need = pool(("bus", ns), m.intra_buses)
            if not own:
                need += pool(("out", "task", s), m.intra_out_links) + pool(("in", "task", d), m.intra_in_links)
        else:
            need = pool(("bus",), m.buses) + pool(("out", ns), m.out_links) + pool(("in", nd), m.in_links)
        needs.append(tuple(need))
    return pools, needs


def replay(trace: DimTrace, machine: Machine, record: bool = False, progress=None) -> ReplayResult:
    """Simulate the trace; ``record`` keeps what a Paraver trace of the run needs."""
    p = plan(trace, machine)
    nthreads = len(p.thread_start) - 1
    nmsg = len(p.latency)
    kind, value = p.kind.tolist(), p.value.tolist()
    for i in np.flatnonzero(p.kind != A_BURST).tolist():
        value[i] = int(value[i])
    end_of = p.thread_start[1:].tolist()
    pc = p.thread_start[:-1].tolist()
    node_of = p.node.tolist()
    lat, xfer = p.latency.tolist(), p.transfer.tolist()
    rdv, imm = p.rendezvous.tolist(), p.immediate.tolist()
    needs, inuse, pools = p.needs, [0] * len(p.pools), p.pools
    pending_transfers: list[int] = []
    arrived = bytearray(nmsg)
    posted = bytearray(nmsg)
    waiter = [-1] * nmsg
    parked = [-2] * nmsg  # rendezvous send waiting for its receive: -1 immediate, else the blocked sender
    paid = bytearray(nthreads)
    cpu_of = [-1] * nthreads
    thread_end = [0.0] * nthreads
    policy = machine.policy
    quantum = machine.quantum * NS
    left: dict[int, float] = {}
    nnodes = machine.nodes
    free = [list(range(machine.cores_per_node - 1, -1, -1)) for _ in range(nnodes)]  # stacks: CPU 0 first
    fifo = [deque() for _ in range(nnodes)]
    prio_heap: list[list] = [[] for _ in range(nnodes)]
    # Dimemas' priority is 1/value, lowest first, 0 before all: rank the values once.
    positive = np.unique(p.value[(p.kind == A_PRIORITY) & (p.value > 0)]).astype(np.int64).tolist()
    rank = dict(zip(positive, range(len(positive), 0, -1)))
    rank[0] = 0
    priority = [0] * nthreads
    order = count()
    heap: list = []
    push, pop = heapq.heappush, heapq.heappop
    runnable: deque[int] = deque()
    now = 0.0
    rec = _Recorder(p, nthreads, nmsg) if record else None

    def make_ready(t: int) -> None:
        n = node_of[t]
        if free[n] and not (fifo[n] or prio_heap[n]):
            cpu_of[t] = free[n].pop()
            runnable.append(t)
        elif policy == "cp":
            # One int per entry (tuples compare slowly): priority rank, then arrival order
            # (LIFO for threads without a priority yet, as Dimemas), then the thread.
            seq = next(order)
            push(prio_heap[n], ((priority[t] << 41) + (seq if priority[t] else -seq)) * nthreads + t)
        else:
            fifo[n].append(t)
        if rec:
            rec.ready(t, now)

    def release(t: int) -> None:
        n = node_of[t]
        cpu = cpu_of[t]
        cpu_of[t] = -1
        if fifo[n]:
            nxt = fifo[n].popleft()
        elif prio_heap[n]:
            nxt = pop(prio_heap[n]) % nthreads
        else:
            free[n].append(cpu)
            return
        cpu_of[nxt] = cpu
        runnable.append(nxt)
        if rec:
            rec.state(nxt, -1, rec.queued[nxt], now, WAITING_CPU)

    def deliver(m: int) -> None:
        arrived[m] = 1
        if rec:
            rec.precv[m] = now
        if needs:
            for r in needs[m]:
                inuse[r] -= 1
        w = waiter[m]
        if w >= 0:
            waiter[m] = -1
            if rec:
                rec.state(w, cpu_of[w], rec.blocked[w], now, WAITING_MESSAGE)
            make_ready(w)
        if needs and pending_transfers:
            waiting = pending_transfers[:]
            pending_transfers.clear()
            for q in waiting:
                transfer(q)

    def transfer(m: int) -> None:
        if needs:
            need = needs[m]
            if any(inuse[r] >= pools[r] for r in need):
                pending_transfers.append(m)
                return
            for r in need:
                inuse[r] += 1
        if rec:
            rec.psend[m] = now
        t = xfer[m]
        if t > 0:
            push(heap, (now + t, next(order), -1 - m))
        else:
            deliver(m)

    for t in range(nthreads):
        if pc[t] < end_of[t]:
            make_ready(t)
    finished = reported = 0
    while True:
        while runnable:
            t = runnable.popleft()
            i = pc[t]
            end = end_of[t]
            while True:
                if i == end:
                    pc[t] = end
                    thread_end[t] = now
                    release(t)
                    finished += 1
                    break
                k = kind[i]
                if rec and not paid[t]:
                    rec.reach[i] = now
                if k == A_BURST:
                    d = value[i]
                    if policy == "rr":
                        d = left.pop(t, d)
                        if d > quantum:
                            left[t] = d - quantum
                            d = quantum
                        else:
                            i += 1
                        pc[t] = i
                        push(heap, (now + d, next(order), nthreads + t))
                    else:
                        pc[t] = i + 1
                        push(heap, (now + d, next(order), t))
                    if rec:
                        rec.state(t, cpu_of[t], now, now + d, RUNNING)
                    break
                if k == A_PRIORITY:
                    priority[t] = rank[value[i]]
                    i += 1
                    continue
                m = value[i]
                if k != A_WAIT and lat[m] and not paid[t]:
                    paid[t] = 1
                    pc[t] = i
                    push(heap, (now + lat[m], next(order), t))
                    if rec:
                        rec.state(t, cpu_of[t], now, now + lat[m], RUNNING)
                    break
                paid[t] = 0
                if k == A_SEND:
                    if rec:
                        rec.send(m, t, cpu_of[t], rec.reach[i])
                    if rdv[m] and not posted[m]:
                        if imm[m]:
                            parked[m] = -1
                            i += 1
                            continue
                        parked[m] = t
                        pc[t] = i + 1
                        if rec:
                            rec.blocked[t] = now
                        release(t)
                        break
                    transfer(m)
                    i += 1
                    continue
                if k != A_WAIT:
                    posted[m] = 1
                    if rec:
                        rec.recv(m, t, cpu_of[t], rec.reach[i])
                    s = parked[m]
                    if s != -2:
                        parked[m] = -2
                        transfer(m)
                        if s >= 0:
                            if rec:
                                rec.state(s, -1, rec.blocked[s], now, WAITING_MESSAGE)
                            make_ready(s)
                if k == A_IRECV or arrived[m]:
                    i += 1
                    continue
                waiter[m] = t
                pc[t] = i + 1
                if rec:
                    rec.blocked[t] = now
                release(t)
                break
        if progress is not None and finished >= reported + 65536:
            progress(finished - reported)
            reported = finished
        if not heap:
            break
        now, _, code = pop(heap)
        if code >= nthreads:  # a round-robin slice ended: back to the end of the queue
            t = code - nthreads
            release(t)
            make_ready(t)
        elif code >= 0:
            runnable.append(code)
        else:
            deliver(-1 - code)
    stuck = [t for t in range(nthreads) if pc[t] < end_of[t]]
    if stuck:
        t = stuck[0]
        task, thread = trace.thread_name(t)
        line = trace.line(int(p.record[min(pc[t], end_of[t]) - 1]))
        raise DimError(f"{trace.path}:{line}: deadlock: {len(stuck)} threads never finish, first task {task} "
                       f"thread {thread}, blocked after this record")
    ends = np.array(thread_end) / NS
    return ReplayResult(makespan=float(ends.max(initial=0.0)), thread_end=ends, threads=list(trace.threads),
                        paraver=rec.paraver(trace, machine, ends * NS) if rec else None)


def _ns(times) -> np.ndarray:
    return np.rint(np.asarray(times, float)).astype(np.int64)


class _Recorder:
    """What happened when, for the Paraver trace of a replay (only when asked for)."""

    def __init__(self, p: _Plan, nthreads: int, nmsg: int):
        self.p = p
        self.reach = [0.0] * len(p.kind)
        self.blocked = [0.0] * nthreads
        self.queued = [0.0] * nthreads
        self.states: list[tuple] = []
        self.lsend, self.psend, self.lrecv, self.precv = ([0.0] * nmsg for _ in range(4))
        self.sthread, self.scpu, self.rthread, self.rcpu = ([0] * nmsg for _ in range(4))

    def state(self, t, cpu, begin, end, state):
        if end > begin:
            self.states.append((t, cpu + 1, begin, end, state))

    def ready(self, t, now):
        self.queued[t] = now

    def send(self, m, t, cpu, when):
        self.sthread[m], self.scpu[m], self.lsend[m] = t, cpu + 1, when

    def recv(self, m, t, cpu, when):
        self.rthread[m], self.rcpu[m], self.lrecv[m] = t, cpu + 1, when

    def paraver(self, trace: DimTrace, machine: Machine, ends: np.ndarray) -> ParaverRun:
        """``ends``: thread end times in ns, like every time the recorder keeps."""
        from tareador.formats.paraver import task_event_labels

        st = np.array(self.states, float).reshape(-1, 5)
        # Events happen when the thread gets past the previous action: at the next action's start.
        events = np.flatnonzero(trace.op == EVENT)
        nxt = np.searchsorted(self.p.record, events)
        g = trace.gthread[events]
        same = (nxt < len(self.p.record)) & (trace.gthread[self.p.record[np.minimum(nxt, len(self.p.record) - 1)]] == g)
        reach = np.array(self.reach + [0.0])
        etime = np.where(same, reach[np.minimum(nxt, len(reach) - 1)], ends[g])
        threads = [(task, h, int(self.p.node[base + h])) for task, (base, n) in
                   enumerate(zip(trace.task_base.tolist(), trace.threads)) for h in range(n)]
        values = {int(v): f"type {int(v)}" for v in np.unique(trace.b[events][trace.a[events] == 7003]) if v}
        return ParaverRun(
            end_time=int(_ns(ends.max(initial=0.0))), cpus_per_node=[machine.cores_per_node] * machine.nodes,
            threads=threads,
            states={"thread": st[:, 0].astype(np.int64), "cpu": st[:, 1].astype(np.int64), "begin": _ns(st[:, 2]),
                    "end": _ns(st[:, 3]), "state": st[:, 4].astype(np.int64)},
            events={"thread": g, "cpu": np.zeros(len(g), np.int64), "time": _ns(etime), "type": trace.a[events],
                    "value": trace.b[events]},
            comms={"thread": np.array(self.sthread), "cpu": np.array(self.scpu), "lsend": _ns(self.lsend),
                   "psend": _ns(self.psend), "rthread": np.array(self.rthread), "rcpu": np.array(self.rcpu),
                   "lrecv": _ns(self.lrecv), "precv": _ns(self.precv), "size": self.p.size, "tag": self.p.tag},
            event_labels=task_event_labels({v: k for k, v in values.items()}))
