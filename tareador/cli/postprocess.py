"""``tareador postprocess DIR``: merge the ranks an MPI run traced into the run's own files."""

from __future__ import annotations

import argparse

from tareador.analyses.postprocess import postprocess, run_work
from tareador.errors import UserError
from tareador.render.summary import format_run_summary
from tareador.workers import rank_pool


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "postprocess", help="match the messages of an MPI run's ranks and write the run's files",
        description="Read the rank-N/ directories that 'tareador trace --mpi' wrote under a launcher (e.g. "
                    "srun -n 64 tareador trace --mpi -o run.tareador -- ./app), match sends with receives and "
                    "collectives across ranks, and write mpi.csv, messages.csv, summary.json, authentic.dim and "
                    "ompss.dim at the top of DIR ('tareador mpirun' does this itself). The work of each rank runs "
                    "in a process pool, or across nodes when launched under mpiexec with mpi4py installed "
                    "(mpiexec -n 8 python -m tareador postprocess DIR).",
        epilog="example:\n  tareador postprocess run.tareador",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", metavar="DIR", help="the directory given to 'tareador trace --mpi -o'")
    add_collectives_option(p)
    p.add_argument("--jobs", type=int, metavar="N", help="processes for the per-rank work (default: 1, none besides "
                   "this one, unless the ranks' files hold 64 MB or more: then the CPUs)")
    p.set_defaults(func=run)


def add_collectives_option(p) -> None:
    p.add_argument("--collectives", choices=["dimemas", "p2p"], default="dimemas",
                   help="how authentic.dim writes collectives: as Dimemas global operations (default), or as the "
                        "point-to-point messages of a named algorithm (binomial tree, recursive doubling, ...) for "
                        "networks without collective support")


def run(args) -> int:
    if args.jobs is not None and args.jobs < 1:
        raise UserError(f"--jobs must be at least 1, not {args.jobs}")
    with rank_pool(args.jobs, run_work(args.run_dir)) as starmap:
        if starmap is None:  # another process of an MPI launch: it served process 0, which writes
            return 0
        result = postprocess(args.run_dir, collectives=args.collectives, starmap=starmap)
    print(format_run_summary(result.summary, {"run directory": args.run_dir}))
    return 1 if result.summary["partial"] else 0


