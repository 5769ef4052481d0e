"""``tareador time DIR``: measure how long each traced fragment takes when the program runs natively."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tareador.cli.time_mpi import run as run_mpi
from tareador.cli.time_mpi import timing_target
from tareador.cli.trace import function_names
from tareador.errors import UserError
from tareador.render.summary import format_timing
from tareador.taskgraph.durations import save_durations
from tareador.taskgraph.store import is_run, load_trace
from tareador.tracing.driver import check_program
from tareador.tracing.functions import resolve
from tareador.tracing.timing import fragments as cut
from tareador.tracing.timing import matched, record_run, timed_run
from tareador.workers import launch_rank

DEFAULT_REPEAT = 5


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "time", help="time every task instance of a traced program in native runs (measured durations)",
        description="Run the traced program natively (no memory tracing: the markers note their times, "
                    "--task-function calls and MPI calls are timed through light hooks) --repeat times, match "
                    "each run's fragments one to one with the trace's, and write the median of each fragment's "
                    "time to DIR/durations.csv, for simulate, whatif, explore and models --durations measured. "
                    "The program and its arguments are the traced run's unless given after DIR. Of an MPI run's "
                    "directory, every rank is timed under the same MPI launcher, time inside MPI calls excluded, "
                    "and the run's authentic-measured.dim and ompss-measured.dim are written.",
        epilog="example:\n  tareador time chol.tareador --repeat 5",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=DEFAULT_REPEAT, metavar="N",
                   help=f"timing runs; each fragment's duration is its median over them (default {DEFAULT_REPEAT})")
    p.add_argument("--task-function", metavar="NAME[,NAME...]", action="append", default=[],
                   help="the functions whose calls are tasks (default: those the trace was made with)")
    p.add_argument("--collectives", choices=["dimemas", "p2p"], default="dimemas",
                   help="of an MPI run: how authentic-measured.dim writes collectives (as tareador postprocess)")
    p.add_argument("--rank-records", metavar="DIR", help=argparse.SUPPRESS)  # one rank of an MPI run's timing launch
    p.add_argument("target", nargs=argparse.REMAINDER, metavar="DIR [-- PROGRAM [ARGS]]",
                   help="trace directory written by 'tareador trace' (or an MPI run's), then optionally the program "
                        "to run after -- (default: the traced one, with its arguments)")
    p.set_defaults(func=run, parser=p)


def _target(args) -> None:
    """DIR, options after it, and the program after ``--``, into args.trace_dir and args.program."""
    target = args.target
    if not target or target[0] == "--":
        raise UserError("give the trace directory: tareador time DIR [-- ./prog args]")
    rest = target[1:]
    cut = rest.index("--") if "--" in rest else len(rest)
    args.parser.parse_args(rest[:cut], namespace=args)  # options after DIR
    if args.target:
        raise UserError(f"tareador time DIR takes options, then the program after --, not {' '.join(args.target)!r}")
    args.trace_dir, args.program = target[0], rest[cut + 1:]


def run(args) -> int:
    if args.rank_records:
        return _time_rank(args)
    _target(args)
    if args.repeat < 1:
        raise UserError(f"--repeat must be at least 1, not {args.repeat}")
    d = Path(args.trace_dir)
    if is_run(d):
        return run_mpi(args)

    trace = load_trace(d)
    argv, functions, explore = timing_target(args, trace.summary, d)
    if sys.stderr.isatty():
        print(f"timing {args.repeat} run(s) of {' '.join(argv)}", file=sys.stderr)
    runs, info = timed_runs(argv, functions, explore, trace.fragments, args.repeat)

    path = save_durations(d, [t.id for t in trace.fragments], runs, info)
    print(format_timing(trace, runs, info))
    print(f"wrote {path}")
    return 0


def _time_rank(args) -> int:
    """One rank of ``tareador time RUN_DIR``'s launch (cli/time_mpi.py): its program under the
    timing hooks, MPI calls included, its record written as RECORDS/rank-N."""
    signal.signal(signal.SIGUSR1, lambda signum, frame: None)  # MPICH's notice that another rank failed
    argv = args.target[1:] if args.target[:1] == ["--"] else args.target
    names = function_names(args.task_function)
    functions = tuple(resolve(check_program(argv), names)) if names else ()
    rank = launch_rank() or 0
    return record_run(argv, Path(args.rank_records) / f"rank-{rank}", functions, mpi=True, hooks=True)


def timed_runs(argv: list[str], functions: tuple, explore: bool, fragments: Sequence, repeat: int):
    """(nanoseconds per run and fragment, what timing.json says about them); TimingError when a
    run fails or does not match the trace."""
    loads = [os.getloadavg()[0]]
    rows, costs = [], []
    for k in range(1, repeat + 1):
        record = timed_run(argv, functions, region_only=explore)
        rows.append(matched(cut(record), fragments, k))
        costs.append(round(record.event_cost, 1))
    loads.append(os.getloadavg()[0])
    info = {"runs": repeat, "program": argv[0], "arguments": argv[1:], "task_functions": [f.name for f in functions],
            "event_ns": costs, "load_average": loads, "total_ns": [float(r.sum()) for r in rows]}
    return np.array(rows).reshape(repeat, len(fragments)), info
