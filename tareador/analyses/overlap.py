"""How much faster a run would be with its messages chunked and overlapped (thesis Fig. 5.14).

The authentic trace and the two overlapped ones (synthesis/overlap.py) are each swept over the
bandwidths of a list with the network sweep (analyses/network_sweep.py: the inter-node bandwidth,
as Dimemas' --bandwidth); each overlapped run's speedup is over the authentic run at the same
bandwidth. The tolerable bandwidth reduction of an overlapped trace is the factor reference / b
for the lowest swept bandwidth b at which it is still at least as fast as the authentic run at
the reference bandwidth (the machine's own): the true factor lies between b and the next lower
value swept; 1 when no swept bandwidth below the reference keeps up; None when the overlapped run
is slower than the authentic one at the reference bandwidth itself: overlap does not pay there
(each chunk pays a message's latency and startup, which can cost more than the overlap saves),
and its slowdown says by how much.
"""

from __future__ import annotations

from dataclasses import dataclass

from tareador.analyses.network_sweep import sweep
from tareador.analyses.table import Table, Tabular
from tareador.formats.dimemas import DimTrace
from tareador.simulation.machine import Machine

TRACES = ("authentic", "real", "ideal")


@dataclass(frozen=True)
class OverlapPoint:
    bandwidth: float  # MB/s, inter-node
    times: dict[str, float]  # makespan of each trace (TRACES), s

    def speedup(self, kind: str) -> float:
        return self.times["authentic"] / self.times[kind] if self.times[kind] > 0 else 1.0


@dataclass(frozen=True)
class OverlapStudy(Tabular):
    points: list[OverlapPoint]
    reference_bandwidth: float
    reference_time: float  # the authentic run at the reference bandwidth
    tolerable: dict[str, float | None]  # overlapped kind -> bandwidth reduction factor; None: overlap does not pay
    slowdown: dict[str, float]  # overlapped kind -> its time / the authentic one's, at the reference bandwidth

    def table(self) -> Table:
        """One row per bandwidth: each trace's time and the overlapped ones' speedups (4 decimals)."""
        return Table.of("overlap", (("bandwidth_mb_s", "float"), *((f"{n}_s", "float") for n in TRACES),
                                    ("speedup_real", "float"), ("speedup_ideal", "float")),
                        ((p.bandwidth, *(p.times[n] for n in TRACES), round(p.speedup("real"), 4),
                          round(p.speedup("ideal"), 4)) for p in self.points))


def overlap_sweep(traces: dict[str, DimTrace], machine: Machine, bandwidths: list[float],
                  progress=None) -> OverlapStudy:
    """``traces`` by name (TRACES) replayed on ``machine`` at every bandwidth."""
    swept = {name: sweep(traces[name], machine, bandwidths, None, progress).points for name in TRACES}
    points = [OverlapPoint(b, {name: swept[name][i].time for name in TRACES}) for i, b in enumerate(bandwidths)]
    reference_time = sweep(traces["authentic"], machine, None, None).points[0].time
    tolerable, slowdown = {}, {}
    for kind in TRACES[1:]:
        own = sweep(traces[kind], machine, None, None).points[0].time
        slowdown[kind] = own / reference_time if reference_time > 0 else 1.0
        keeping = [p.bandwidth for p in points if p.times[kind] <= reference_time * (1 + 1e-9)]
        lowest = min(keeping, default=machine.inter_bandwidth)
        tolerable[kind] = None if own > reference_time * (1 + 1e-9) else \
            machine.inter_bandwidth / lowest if 0 < lowest < machine.inter_bandwidth else 1.0
    return OverlapStudy(points, machine.inter_bandwidth, reference_time, tolerable, slowdown)
