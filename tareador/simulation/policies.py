"""The ready-queue policies of each simulator, declared once.

A trace (one process) is simulated by the list scheduler (list_scheduler.py), an MPI run's
Dimemas traces by the Dimemas model (dimemas_engine.py, whose C loop numbers its policies in the
order given here: engine_loop.c's enum policy). A machine file's policy is a Dimemas scheduler
(fifo, cp or rr), which the list scheduler follows when it has it. Every command takes the same
``--policy`` values, and a simulator refuses one it does not have with the same message, naming
what each simulator has.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from tareador.errors import UserError


@dataclass(frozen=True)
class Policies:
    simulator: str  # what runs them, as a user meets it
    names: tuple[str, ...]  # the simulator's numbering (the engine's enum)
    sliced: tuple[str, ...] = ()  # the ones that slice bursts by the machine's quantum
    default: str = "cp"  # without a policy asked for or one of the machine's this simulator has

    def code(self, name: str) -> int:
        return self.names.index(name)

    def choose(self, machine_policy: str | None, given: str | None = None, quantum: float = 0.0) -> str:
        """The policy a simulation runs: the one asked for (UserError if this simulator has no
        such policy, or it needs a quantum the machine has not), else the machine file's when this
        simulator has it, else the default."""
        if given is not None and given not in self.names:
            raise UserError(refusal(given, self))
        if given in self.sliced and quantum <= 0:
            raise UserError(f"--policy {given} slices bursts by the machine's quantum, and the machine has none: give "
                            "--machine a file whose [scheduler] sets quantum (seconds)")
        return given or (machine_policy if machine_policy in self.names else self.default)


LIST_SCHEDULER = Policies("the list scheduler (simulate, whatif, explore and report of one trace)",
                          ("cp", "fifo", "bf"))
DIMEMAS = Policies("the Dimemas model (simulate and report of an MPI run, replay)", ("fifo", "cp", "rr"), ("rr",))
SIMULATORS = (LIST_SCHEDULER, DIMEMAS)
# Every --policy value, for the command line's choices: each simulator refuses the others.
ALL = tuple(dict.fromkeys(name for s in SIMULATORS for name in s.names))
# Dimemas' scheduler files name the policies so (sched/SCH_*.c); SS_MPI_CP is the critical-path one.
DIMEMAS_SCHEDULERS = MappingProxyType({"FIFO": "fifo", "SS_MPI_CP": "cp", "RR": "rr"})


def refusal(given: str, simulator: Policies) -> str:
    """One message for a policy a simulator does not have, naming what each simulator has."""
    others = "; ".join(f"{s.simulator} has {', '.join(s.names)}" for s in SIMULATORS if s is not simulator)
    return f"--policy {given}: {simulator.simulator} has no such policy, only {', '.join(simulator.names)}; {others}"
