"""Dimemas global operations (record 10): which records make one operation, and how long it takes.

What Dimemas 5.5.0 does (Simulator/model/communic.c GLOBAL_operation, global_op_get_all_buses,
calcula_temps_operacio_global, calcula_fan, close_global_communication; input/file_data_access.c
for the record, model/communic.c new_global_op and input/new_configuration.c for the defaults):

- Record ``10:task:thread:id:comm:root:root_thread:bytes_sent:bytes_received[:sync]``; ``id``
  indexes Dimemas' table of MPI collectives (formats.dimemas.GLOBAL_OPS: 0 MPI_Barrier,
  1 MPI_Bcast, ... 10 MPI_Reduce, 11 MPI_Allreduce, ...). ``root`` is 1 on the root's record
  (any other value: not the root), except for MPI_Reduce where it is the root's task on every
  record. ``comm`` must be defined by a ``d:1:comm:n:task:...`` line; comm 0 is an accelerator
  pseudo-operation Dimemas skips. ``sync`` 1 (the default) is the blocking operation modelled here.
- Synchronisation: every member blocks, off its CPU, until the last one arrives; nothing is paid
  before (no startup on the CPU as for a send). Then the operation takes T and every member
  queues for a CPU again (at the tail, as a woken receiver), in the order they arrived with the
  root moved last.
- The root is the member whose record says so (the last such to arrive), else the last member
  to arrive; only the root's bytes count: FAN_IN moves its bytes sent, FAN_OUT its bytes received.
- T, for a machine of one Dimemas machine (our .cfg files: one "environment information"
  record): each fan has a model, by default the last field of "environment information"
  (1 CONSTANT, 2 LINEAR, 3 LOGARITHMIC; MPI_Reduce always CONSTANT), and a size, by default the
  current one (fan-in the root's bytes sent, fan-out its bytes received); the communications
  file (the third name of the .cfg's "configuration files", simulation/dimemas_config.py) may set
  both per operation: the models 0 (no time), CTE, LIN, LOG and the sizes MIN, MAX, MEAN (their
  sum halved, in whole bytes), 2MAX and S+R (their sum) of the root's bytes sent and received
  (communic.c calcula_fan). With fan(L, B, n) = (L + bytes x ns_per_byte(B)) x factor(n), factor 1
  (CONSTANT), n - 1 (LINEAR), the number of stages of a binary tree ceil(log2 n) (LOGARITHMIC;
  with b limited buses, the sum over stages of ceil(pairs / b)), 0 (model 0):
      T = fan_in(intra) + fan_out(intra) + fan_in(inter) + fan_out(inter)
  where intra uses the intra-node latency and bandwidth with n = the communicator's tasks on its
  node that has most of them (unlimited buses), and inter, only when the machine has more than
  one node (whether or not the communicator spans several), the inter-node latency and bandwidth
  with n = the nodes the communicator spans and the machine's buses. Under CONSTANT every fan
  costs latency + bytes / bandwidth, so even a communicator of one task pays it.
- Resources: when the machine's buses are limited ("environment information" field 6), the
  operation first takes every one of them (even on a machine of one node): those free at once,
  and it waits in the buses' FIFO queue, holding what it got, for those messages hold; messages
  and other operations queue behind it. It holds them for T and frees them just before its
  members go on. Links are not taken within one machine. (engine_loop.c does this, with the
  bus queues of engine_network.c.)

Not modelled, refused with one line: the non-blocking (sync 0, 2) and root-synchronised
(sync 3, which prv2dim writes for MPI_Reduce: the members send to the root point to point)
forms, global operations on communicator 0, and global operations on limited buses shared
by Dimemas' RR or BOOST communication policy (there an operation takes buses messages hold).
"""

from __future__ import annotations

from typing import NoReturn

import numpy as np

from tareador.errors import DimError, MachineError
from tareador.formats.dimemas import GLOP_REDUCE, GLOP_SYNC, DimTrace
from tareador.simulation.machine import MB, Machine

NS = 1e9
NONE, CONSTANT, LINEAR, LOGARITHMIC = 0, 1, 2, 3  # fan models; .cfg "environment information" field 7 gives 1..3
CURRENT, MIN, MAX, MEAN, TWICE_MAX, SUM = range(6)  # fan sizes (Dimemas' GOP_SIZE_*)


def plan_global_ops(trace: DimTrace, machine: Machine, node_of_task: np.ndarray, records: np.ndarray):
    """For the global-operation records (trace order): the operation each belongs to, whether it
    claims the root, the ns its operation takes when it is the root and how many of those are
    latencies (Dimemas shows them as a startup); and each operation's number of members.

    The k-th record of a member task on a communicator is that communicator's k-th operation, as
    each member blocks until the operation ends.
    """
    if not len(records):
        return np.zeros(0, np.int32), np.zeros(0, bool), np.zeros(0), np.zeros(0), np.zeros(0, np.int32)
    _check_supported(trace, machine, records)
    task_of = np.repeat(np.arange(len(trace.threads)), trace.threads)
    task, comm, glop = task_of[trace.gthread[records]], trace.comm[records], trace.a[records]
    ops = np.zeros(len(records), np.int64)
    sizes: list[int] = []
    time, startup = np.zeros(len(records)), np.zeros(len(records))
    for c in np.unique(comm).tolist():
        mine = np.flatnonzero(comm == c)
        defined = trace.communicators.get(c)
        if defined is None:
            _fail(trace, records[mine[0]], f"communicator {c} is not defined (a d:1:{c}:... line after the header)")
        members = np.array(defined)
        outside = np.flatnonzero(~np.isin(task[mine], members))
        if len(outside):
            first = mine[outside[0]]
            _fail(trace, records[first], f"task {task[first]} is not a member of communicator {c}")
        threads = np.unique(trace.gthread[records[mine]])
        if len(np.unique(task_of[threads])) < len(threads):
            _fail(trace, records[mine[0]], f"several threads of one task take part in communicator {c}'s operations")
        counts = np.bincount(task[mine], minlength=len(trace.threads))[members]
        if (counts != counts[0]).any():
            short = int(members[np.argmin(counts)])
            _fail(trace, records[mine[-1]], f"deadlock: task {short} calls {counts.min()} global operations on "
                  f"communicator {c}, task {int(members[np.argmax(counts)])} {counts.max()}")
        # k-th record of each member (trace order is thread order, so a stable sort by task keeps k)
        order = mine[np.argsort(task[mine], kind="stable")]
        ops[order] = len(sizes) + np.tile(np.arange(counts[0]), len(members))
        sizes += [len(members)] * int(counts[0])
        time[mine], startup[mine] = _durations(machine, node_of_task[members], glop[mine],
                                               trace.size[records[mine]], trace.b[records[mine]])
    is_root = np.where(glop == GLOP_REDUCE, trace.tag[records] == task, trace.tag[records] == 1)
    return ops.astype(np.int32), is_root, time, startup, np.array(sizes, np.int32)


def _check_supported(trace: DimTrace, machine: Machine, records: np.ndarray) -> None:
    other = np.flatnonzero(trace.mode[records] != GLOP_SYNC)
    if len(other):
        _fail(trace, records[other[0]], f"global operations with synchronisation {trace.mode[records[other[0]]]} "
              "(non-blocking or root-synchronised) are not modelled; only blocking ones (1)")
    pseudo = np.flatnonzero(trace.comm[records] <= 0)
    if len(pseudo):
        _fail(trace, records[pseudo[0]], "a global operation on communicator 0 is Dimemas' accelerator "
              "pseudo-operation, which replay does not model; number communicators from 1")
    if machine.bus_policy == "rr" and machine.buses:
        raise MachineError(f"{trace.path}: global operations on limited buses that messages share (the RR or BOOST "
                           "communication policy) are not modelled; use FIFO, or unlimited buses")


def _fail(trace: DimTrace, record: int, why: str) -> NoReturn:
    raise DimError(f"{trace.path}:{trace.line(int(record))}: {why}")


def _factor(model: np.ndarray, n: int, buses: int) -> np.ndarray:
    """calcula_fan's factor for n partners: LINEAR n - 1, LOGARITHMIC the contention stages, NONE 0."""
    return np.select([model == LINEAR, model == LOGARITHMIC, model == NONE], [float(n - 1), float(_stages(n, buses)),
                                                                              0.0], 1.0)


def _stages(n: int, buses: int) -> int:
    """compute_contention_stage: ceil(log2 n) stages of a binary tree, each split by the buses."""
    log = next((i for i in range(n) if 1 << i >= n), 0)
    if not buses:
        return log
    return sum(-(-len(range((1 << i) - 1, n - 1, 1 << (i + 1))) // buses) for i in range(log))


def _fan(latency_s: float, bandwidth: float, size: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """(startup + size x ns per byte) x factor, in Dimemas' operation order."""
    ns_per_byte = NS / MB / bandwidth if bandwidth else 0.0
    return (latency_s * NS + size.astype(np.float64) * ns_per_byte) * factor


def fans(machine: Machine, glop: np.ndarray) -> list[np.ndarray]:
    """Per record, its operation's fan-in model and size and fan-out model and size."""
    default = np.where(glop == GLOP_REDUCE, CONSTANT, machine.collective_model)
    out = [default, np.full(len(glop), CURRENT), default.copy(), np.full(len(glop), CURRENT)]
    for op, *fan in machine.collective_models:
        for column, value in zip(out, fan, strict=True):
            column[glop == op] = value
    return out


def _fan_bytes(size: np.ndarray, sent: np.ndarray, received: np.ndarray, current: np.ndarray) -> np.ndarray:
    """calcula_fan's message size (a C int) of each record."""
    sent, received = sent.astype(np.int64), received.astype(np.int64)
    return np.select([size == MIN, size == MAX, size == MEAN, size == TWICE_MAX, size == SUM],
                     [np.minimum(sent, received), np.maximum(sent, received), (sent + received) // 2,
                      2 * np.maximum(sent, received), sent + received], current)


def _durations(machine: Machine, nodes: np.ndarray, glop: np.ndarray, sent: np.ndarray, received: np.ndarray):
    """T of each record's operation if that record is the root (see the module docstring), and
    its latency part, the fans' startups times their factors (calcula_fan's ``latencia``)."""
    in_model, in_size, out_model, out_size = fans(machine, glop)
    fan_in, fan_out = _fan_bytes(in_size, sent, received, sent), _fan_bytes(out_size, sent, received, received)
    per_node = np.bincount(nodes)
    places = [(machine.intra_latency, machine.intra_bandwidth, int(per_node.max()), 0)]
    if machine.nodes > 1:
        places.append((machine.inter_latency, machine.inter_bandwidth, int((per_node > 0).sum()), machine.buses))
    total, startup = np.zeros(len(glop)), np.zeros(len(glop))
    for latency, bandwidth, n, buses in places:
        f_in, f_out = _factor(in_model, n, buses), _factor(out_model, n, buses)
        total = total + _fan(latency, bandwidth, fan_in, f_in) + _fan(latency, bandwidth, fan_out, f_out)
        startup = startup + latency * NS * f_in + latency * NS * f_out
    return total, startup

