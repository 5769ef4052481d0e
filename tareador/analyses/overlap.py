"""How much faster a run would be with its messages chunked and overlapped (thesis Fig. 5.14).

The authentic trace and the two overlapped ones (formats/overlap.py) are replayed on the same
machine at every bandwidth of a list; each overlapped run's speedup is over the authentic run at
the same bandwidth. The tolerable bandwidth reduction of an overlapped trace is the factor
reference / b for the lowest swept bandwidth b at which it is still at least as fast as the
authentic run at the reference bandwidth (the machine's own): with a list fine enough between b
and the next lower value, the true factor lies between the two; 1 when no lower bandwidth of the
list keeps up (or none was swept).

The sweep takes the machines and the replay function, so that another network sweep (latency,
buses) can drive it unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

TRACES = ("authentic", "real", "ideal")


@dataclass(frozen=True)
class OverlapPoint:
    bandwidth: float  # MB/s, inter-node
    times: dict[str, float]  # makespan of each trace (TRACES), s

    def speedup(self, kind: str) -> float:
        return self.times["authentic"] / self.times[kind] if self.times[kind] > 0 else 1.0


@dataclass(frozen=True)
class OverlapStudy:
    points: list[OverlapPoint]
    reference_bandwidth: float
    reference_time: float  # the authentic run at the reference bandwidth
    tolerable: dict[str, float]  # overlapped kind -> bandwidth reduction factor


def overlap_sweep(traces: dict, machines: Sequence, bandwidths: Sequence[float], reference, replay_fn: Callable,
                  progress=None) -> OverlapStudy:
    """``traces`` by name (TRACES); ``machines[i]`` the machine with ``bandwidths[i]``; ``reference``
    the machine at its own bandwidth; ``replay_fn(trace, machine)`` the makespan."""
    points = []
    for b, machine in zip(bandwidths, machines):
        points.append(OverlapPoint(b, {name: replay_fn(traces[name], machine) for name in TRACES}))
        if progress is not None:
            progress(1)
    reference_time = replay_fn(traces["authentic"], reference)
    tolerable = {}
    for kind in TRACES[1:]:
        keeping = [p.bandwidth for p in points if p.times[kind] <= reference_time * (1 + 1e-9)]
        lowest = min(keeping, default=reference.inter_bandwidth)
        tolerable[kind] = reference.inter_bandwidth / lowest if 0 < lowest < reference.inter_bandwidth else 1.0
    return OverlapStudy(points, reference.inter_bandwidth, reference_time, tolerable)
