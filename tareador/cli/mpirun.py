"""``tareador mpirun -np N -o DIR -- ./prog args``: trace every rank of an MPI program."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tareador.analyses.postprocess import postprocess
from tareador.cli.postprocess import add_collectives_option
from tareador.cli.trace import program_and_output
from tareador.errors import UserError
from tareador.render.summary import format_run_summary
from tareador.system_packages import how_to_install
from tareador.taskgraph.mpi import clear_run, rank_dirs
from tareador.tracing.driver import check_program
from tareador.tracing.mpi_launch import MPIS, linked_mpi
from tareador.tracing.mpirun import launch
from tareador.tracing.run import check_output


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "mpirun", help="trace every rank of an MPI program",
        description="Launch the program with MPI, each rank under its own tracer (tareador trace --mpi), then "
                    "match the messages between the ranks (tareador postprocess) and print the run's summary.",
        epilog="example:\n  tareador mpirun -np 4 -o jacobi.tareador -- examples/bin/mpich/jacobi",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-np", "-n", dest="ranks", required=True, metavar="N", help="number of ranks (may exceed the cores)")
    p.add_argument("--mpi", choices=["mpich", "openmpi"],
                   help="the MPI to launch with (default: the one the program is linked with)")
    p.add_argument("-o", "--output", help="run directory to write (default: <program>.tareador)")
    p.add_argument("--timeout", metavar="S", help="stop the run after S seconds, e.g. a deadlock (each rank's "
                   "partial trace is written, and where each was blocked is said)")
    add_collectives_option(p)
    p.add_argument("program", nargs=argparse.REMAINDER, help="program and its arguments (-- before them is optional)")
    p.set_defaults(func=run)


def _positive(text: str, what: str, kind):

    try:
        value = kind(text)
    except ValueError:
        value = 0
    if not value > 0 or value == float("inf"):
        raise UserError(f"{what} must be a positive {'whole ' * (kind is int)}number, not {text!r}")
    return value


def choose_mpi(asked: str | None, program: str):
    """The MPI to launch with: the one asked for, else the program's; it must be installed and match."""
    linked = linked_mpi(program)
    mpi = MPIS[asked] if asked else linked or next((m for m in MPIS.values() if m.installed()), MPIS["mpich"])
    if linked and linked != mpi:
        raise UserError(f"{program} is built with {linked.title}, which cannot run under {mpi.title}'s launcher: "
                        f"use --mpi {linked.name}, or build it with {mpi.mpicc}")
    if not mpi.installed():
        raise UserError(f"{mpi.title} is not installed (no {mpi.mpiexec} on PATH): {how_to_install(mpi.title)}")
    return mpi


def run(args) -> int:
    argv, output = program_and_output(args, "tareador mpirun -np N -o DIR -- ./prog [args]")
    out = Path(output)
    ranks = _positive(args.ranks, "-np", int)
    timeout = None if args.timeout is None else _positive(args.timeout, "--timeout", float)
    program = check_program(argv)
    check_output(out)  # as trace does, before the run: not an existing file, a directory it can write
    mpi = choose_mpi(args.mpi, program)
    clear_run(out)
    out.mkdir(parents=True, exist_ok=True)
    ending, status = launch(mpi, ranks, argv, out, timeout)
    if not rank_dirs(out):
        raise UserError(f"no rank wrote a trace ({mpi.mpiexec} exited with status {status}; its messages are above)")
    result = postprocess(out, ending, args.collectives)
    s = result.summary
    print(format_run_summary(s, {"run directory": out}))
    if s["partial"]:
        print(f"tareador: the run {s['ending'] or 'did not end normally'}; the partial traces are in {out}",
              file=sys.stderr)
        return 1
    failed = [(r["rank"], r["exit_status"]) for r in s["per_rank"] if r["exit_status"]]
    if failed:
        print(f"tareador: rank {failed[0][0]} exited with status {failed[0][1]}; the traces are complete in {out}",
              file=sys.stderr)
        return failed[0][1]
    return 0
