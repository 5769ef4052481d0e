"""``tareador postprocess DIR``: merge the ranks an MPI run traced into the run's own files."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "postprocess", help="match the messages of an MPI run's ranks and write the run's files",
        description="Read the rank-N/ directories that 'tareador trace --mpi' wrote under a launcher (e.g. "
                    "srun -n 64 tareador trace --mpi -o run.tareador -- ./app), match sends with receives and "
                    "collectives across ranks, and write mpi.csv, messages.csv, summary.json and authentic.dim at "
                    "the top of DIR ('tareador mpirun' does this itself).",
        epilog="example:\n  tareador postprocess run.tareador",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", metavar="DIR", help="the directory given to 'tareador trace --mpi -o'")
    add_collectives_option(p)
    p.set_defaults(func=run)


def add_collectives_option(p) -> None:
    p.add_argument("--collectives", choices=["dimemas", "p2p"], default="dimemas",
                   help="how authentic.dim writes collectives: as Dimemas global operations (default), or as the "
                        "point-to-point messages of a named algorithm (binomial tree, recursive doubling, ...) for "
                        "networks without collective support")


def run(args) -> int:
    from tareador.render.summary import format_run_summary

    result = postprocess(args.run_dir, collectives=args.collectives)
    print(format_run_summary(result.summary, {"run directory": args.run_dir}))
    return 1 if result.summary["partial"] else 0


def postprocess(directory: str | Path, ending: str | None = None, collectives: str = "dimemas"):
    """The run's files, then its authentic Dimemas trace (collectives written as ``collectives``,
    see formats/dimemas_mpi.py); returns the MpiRun."""
    from tareador.cli.patterns import write_run_patterns
    from tareador.formats.dimemas_mpi import write_mpi_authentic
    from tareador.taskgraph.mpi import build_run

    result = build_run(directory, ending)
    write_run_patterns(directory, result.messages)
    write_mpi_authentic(Path(directory) / "authentic.dim", result.ranks, result.calls_by_rank, result.matching,
                        collectives=collectives)
    return result
