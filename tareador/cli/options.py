"""Option values shared by the commands that simulate or replay, parsed into what they need:
core counts, the machine of --machine, a progress bar, the size past which a Chrome JSON is split.

Parsed here rather than by argparse so that a bad value is one line, not a usage message.
"""

from __future__ import annotations

import sys

from tareador.errors import UserError
from tareador.formats.chrome import DEFAULT_MAX_BYTES
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


def add_chrome_limit(p) -> None:
    p.add_argument("--chrome-max-mb", type=float, metavar="MB",
                   help="split a Chrome JSON larger than this by time into parts that each open in a browser "
                        "(default 256 MB: chrome://tracing fails at 256 MiB)")


def chrome_limit(args) -> int:
    """--chrome-max-mb in bytes (formats.chrome's default if not given); UserError unless positive."""
    if args.chrome_max_mb is None:
        return DEFAULT_MAX_BYTES
    if not 0 < args.chrome_max_mb < float("inf"):
        raise UserError(f"--chrome-max-mb must be a positive size in MB, not {args.chrome_max_mb:g}")
    return int(args.chrome_max_mb * 1e6)


def report_split(output, max_bytes: int) -> None:
    """Says on stderr why a Chrome JSON came out in parts, and what they left out."""
    if len(output.paths) == 1:
        return
    first, last = output.paths[0], output.paths[-1]
    arrows = f"; {output.arrows_left_out} arrows between two parts are in neither" if output.arrows_left_out else ""
    print(f"tareador: {first.name.replace('-part1', '')} would be {size_text(output.unsplit)}, more than "
          f"--chrome-max-mb {max_bytes / 1e6:g} (chrome://tracing fails at 256 MiB): written by time as "
          f"{len(output.paths)} parts that each open on their own, {first.name} .. {last.name}{arrows}",
          file=sys.stderr)


def size_text(nbytes: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} bytes"
