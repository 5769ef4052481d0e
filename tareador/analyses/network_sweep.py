"""What the network costs a trace: replay it once per inter-node bandwidth and latency.

A swept value sets the network between nodes only, as Dimemas' own ``--bandwidth`` and
``--latency`` options do (they override the configuration's network bandwidth and inter-node
startup): the links inside a node are memory, not the network being studied. The speedup of
each configuration is over the first one swept (the first bandwidth with the first latency),
the baseline the user named first, so that a list ordered slow to fast reads as gains.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np

from tareador.analyses.table import Table, Tabular
from tareador.formats.dimemas import GLOBAL_OP, SEND, DimTrace
from tareador.simulation.dimemas_engine import replay
from tareador.simulation.machine import Machine


@dataclass(frozen=True)
class SweepPoint:
    bandwidth: float  # MB/s, inter-node
    latency: float  # s, inter-node
    time: float  # makespan, s
    speedup: float  # over the first point


@dataclass(frozen=True)
class Sweep(Tabular):
    points: list[SweepPoint]
    swept: tuple[str, ...]  # "bandwidth" and/or "latency", what the user gave lists of
    inter_node_messages: int  # messages and global operations the network between nodes times: 0, nothing to sweep

    def table(self) -> Table:
        return Table.of("network_sweep", (("bandwidth_mb_s", "float"), ("latency_s", "float"), ("time_s", "float"),
                                          ("speedup", "float")),
                        ((p.bandwidth, p.latency, p.time, p.speedup) for p in self.points))


def inter_node_messages(trace: DimTrace, machine: Machine) -> int:
    """Sends between tasks of different nodes, and global-operation records when the machine has
    several nodes (Dimemas then times every operation on the inter-node network too)."""
    node = np.array(machine.node_of_tasks(len(trace.threads)), np.int64)
    task_of = np.repeat(np.arange(len(trace.threads)), trace.threads)
    sends = np.flatnonzero(trace.op == SEND)
    crossing = int(np.count_nonzero(node[task_of[trace.gthread[sends]]] != node[trace.a[sends]]))
    return crossing + (int(np.count_nonzero(trace.op == GLOBAL_OP)) if machine.nodes > 1 else 0)


def sweep(trace: DimTrace, machine: Machine, bandwidths: list[float] | None, latencies: list[float] | None,
          progress=None) -> Sweep:
    """Replay ``trace`` on ``machine`` with every (bandwidth, latency) of the lists (None: the
    machine's own); ``progress`` is called once per replay."""
    swept = tuple(name for name, values in (("bandwidth", bandwidths), ("latency", latencies)) if values)
    points, first = [], None
    for b, lat in itertools.product(bandwidths or [machine.inter_bandwidth], latencies or [machine.inter_latency]):
        time = replay(trace, replace(machine, inter_bandwidth=b, inter_latency=lat)).makespan
        first = time if first is None else first
        points.append(SweepPoint(b, lat, time, first / time if time > 0 else 1.0))
        if progress is not None:
            progress(1)
    return Sweep(points, swept, inter_node_messages(trace, machine))
