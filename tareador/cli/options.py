"""Option values shared by the commands that simulate or replay, parsed into what they need:
core counts, the machine of --machine, a progress bar.

Parsed here rather than by argparse so that a bad value is one line, not a usage message.
"""

from __future__ import annotations

import sys

from tareador.errors import UserError
from tareador.simulation.machine import MAX_CPUS, Machine
from tareador.simulation.machine_files import load_machine


def core_list(text: str) -> list[int | None]:
    """``--cores``: counts and None for inf."""
    out: list[int | None] = []
    for part in text.split(","):
        part = part.strip().lower()
        if part in ("inf", "infinite", "unbounded"):
            out.append(None)
        elif part.isdigit() and 0 < int(part) <= MAX_CPUS:
            out.append(int(part))
        elif part.isdigit() and int(part) > 0:
            raise UserError(f"--cores: {part} cores are more than the {MAX_CPUS} tareador simulates (it lists every "
                            "core in its results); use inf for an unbounded machine")
        else:
            raise UserError(f"--cores: {part!r} is not a core count; give positive integers or inf, e.g. 1,4,inf")
    return out


def progress_bar(total: int, what: str):
    """A tqdm update callback when a person watches stderr, else None."""
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm  # here, not at the top: `tareador --help` would pay for it

    return tqdm(total=total, desc=what, unit=" tasks", leave=False, file=sys.stderr).update


def load_machine_arg(path: str | None) -> Machine:
    """The machine of ``--machine`` (a default one without), its warnings printed."""
    machine = load_machine(path) if path else Machine()
    for warning in machine.warnings:
        print(f"tareador: warning: {warning}", file=sys.stderr)
    return machine
