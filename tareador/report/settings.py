"""What a report simulates and draws: the options of ``tareador report``, with their defaults."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tareador.simulation.machine import Machine
from tareador.simulation.policies import DIMEMAS, LIST_SCHEDULER


@dataclass(frozen=True)
class Settings:
    """The defaults are ``tareador simulate``'s and ``tareador whatif``'s without a machine file."""

    cores: tuple[int | None, ...] = (1, 2, 4, 8, 16, None)  # None: unbounded
    cores_per_rank: tuple[int | None, ...] = (1, 2, 4, 8, None)  # an MPI run's sweep
    policy: str | None = None  # None: the machine's if cp or fifo (MPI: any of its), else cp
    machine: Machine = field(default_factory=Machine)
    machine_file: str | None = None  # where ``machine`` came from, None: the default machine
    durations: str = "instructions"  # or "measured": the nanoseconds of 'tareador time' (durations.csv)
    factors: tuple[float, ...] = (2, 10, math.inf)
    sizes: dict[str, int] = field(default_factory=dict)  # tareador hints --size
    max_nodes: int = 300
    collapse: str = "auto"
    defaults: bool = True  # no simulation option was given

    @property
    def trace_policy(self) -> str:
        return LIST_SCHEDULER.choose(self.machine.policy, self.policy)

    @property
    def run_policy(self) -> str:
        return DIMEMAS.choose(self.machine.policy, self.policy, self.machine.quantum)

    @property
    def measured(self) -> bool:
        return self.durations == "measured"

    def machine_text(self) -> str:
        where = f"machine {self.machine_file}" if self.machine_file else "the default machine"
        return f"{where}, " + ("measured durations (ns)" if self.measured else
                               f"{self.machine.rate:.4g} instructions per second")

    def simulated_text(self, what: str, cores: str, policy: str, runtime: str | None = None) -> str:
        """The sentence saying how the page's runs were simulated, and that it was for this page;
        ``runtime``: a trace's task runtime (creation model and costs), none for an MPI run's replays."""
        told = "the defaults" if self.defaults else "the options given"
        extra = f", {runtime}" if runtime else ""
        options = "--durations, --creation, --overhead" if runtime else "--durations, --ranks-per-node"
        return (f"{what} simulated for this report with {told}: {cores}, policy {policy}{extra}, "
                f"{self.machine_text()} (tareador report --cores, --policy, --machine, {options} change them).")


def cores_text(cores, unit: str = "cores") -> str:
    return f"{', '.join('inf' if c is None else str(c) for c in cores)} {unit}"
