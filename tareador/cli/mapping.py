"""``--ranks-per-node N``: how a command maps MPI ranks (Dimemas tasks) onto the machine's nodes.

Shared by the commands that replay a Dimemas trace on a machine file; it overrides the file's
``tasks_per_node`` or ``mapping`` (TOML) or its mapping record (.cfg), as Dimemas' command line
overrides the first mapping of its configuration.
"""

from __future__ import annotations

from dataclasses import replace

from tareador.errors import UserError
from tareador.simulation.machine import MAX_COUNT, Machine


def add_ranks_per_node(parser) -> None:
    parser.add_argument("--ranks-per-node", metavar="N",
                        help="ranks (Dimemas tasks) per node, filling node 0 first; overrides the machine "
                             "file's mapping (tasks_per_node, mapping, a .cfg's mapping record)")


def with_ranks_per_node(machine: Machine, text: str | None) -> Machine:
    """The machine with the ``--ranks-per-node`` argument applied (None: as the file says)."""

    if text is None:
        return machine
    if not text.strip().isdigit() or not 0 < int(text) <= MAX_COUNT:
        raise UserError(f"--ranks-per-node: {text!r} is not a number of ranks; give a positive integer, e.g. 4")
    return replace(machine, tasks_per_node=int(text), mapping=(), interleaved=False)
