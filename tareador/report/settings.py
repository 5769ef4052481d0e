"""What a report simulates and draws: the options of ``tareador report``, with their defaults."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tareador.simulation.machine import Machine


@dataclass(frozen=True)
class Settings:
    """The defaults are ``tareador simulate``'s and ``tareador whatif``'s without a machine file."""

    cores: tuple[int | None, ...] = (1, 2, 4, 8, 16, None)  # None: unbounded
    cores_per_rank: tuple[int | None, ...] = (1, 2, 4, 8, None)  # an MPI run's sweep
    policy: str | None = None  # None: the machine's if cp or fifo (MPI: any of its), else cp
    machine: Machine = field(default_factory=Machine)
    machine_file: str | None = None  # where ``machine`` came from, None: the default machine
    overhead: int | None = None  # None: the machine's task_overhead
    factors: tuple[float, ...] = (2, 10, math.inf)
    sizes: dict[str, int] = field(default_factory=dict)  # tareador hints --size
    max_nodes: int = 300
    collapse: str = "auto"
    defaults: bool = True  # no simulation option was given

    @property
    def trace_policy(self) -> str:
        return self.policy or (self.machine.policy if self.machine.policy in ("cp", "fifo") else "cp")

    @property
    def run_policy(self) -> str:
        return self.policy or self.machine.policy or "cp"

    def machine_text(self) -> str:
        m = self.machine
        where = f"machine {self.machine_file}" if self.machine_file else "the default machine"
        return f"{where}: {m.rate:.4g} instructions per second"

    def simulated_text(self, what: str, cores: str, policy: str, overhead: int | None = None) -> str:
        """The sentence saying how the page's runs were simulated, and that it was for this page; an
        ``overhead`` for a trace's list schedules, none for an MPI run's replays."""
        told = "the defaults" if self.defaults else "the options given"
        extra = "" if overhead is None else f", runtime overhead {overhead} instructions per task"
        options = "--overhead" if overhead is not None else "--ranks-per-node"
        return (f"{what} simulated for this report with {told}: {cores}, policy {policy}, {self.machine_text()}"
                f"{extra} (tareador report --cores, --policy, --machine, {options} change them).")


def cores_text(cores, unit: str = "cores") -> str:
    return f"{', '.join('inf' if c is None else str(c) for c in cores)} {unit}"
