"""``tareador explore DIR`` or ``tareador explore -- ./prog args``: search for a task decomposition."""

from __future__ import annotations

import argparse
import shlex
import signal
from pathlib import Path

from tareador.analyses.explore import explore
from tareador.cli.options import core_list
from tareador.cli.simulate import add_machine_options, machine_options
from tareador.cli.trace import function_names
from tareador.errors import UserError
from tareador.render.plots import plot_explore
from tareador.render.results import format_exploration
from tareador.stopping import Stopped
from tareador.taskgraph.durations import trace_in_nanoseconds
from tareador.taskgraph.store import load_trace
from tareador.tracing.run import trace

DEFAULT_CORES = 4


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "explore", help="search which functions to make tasks, from one traced run (thesis ch. 6.3)",
        description="Trace the program once with every function called in the analysed region as a task (or "
                    "those of --candidates), then walk from the coarsest decomposition (main's calls are the tasks) "
                    "down to sequential code, breaking at each step the task type of highest cost, and simulate "
                    "every decomposition on the target machine. DIR: a trace directory recorded by an earlier "
                    "explore (or any trace: its tasks are the candidates).",
        epilog="example:\n  tareador explore --cores 8 -- examples/bin/cholesky 6 32",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", metavar="DIR",
                   help="with a program: the trace directory to record (default <program>.explore); with DIR: "
                        "where explore.csv and explore.png go (default DIR)")
    p.add_argument("--candidates", metavar="NAME[,NAME...]", action="append", default=[],
                   help="the functions that may become tasks (default: every function of the program)")
    p.add_argument("--weights", default="1,1,3", metavar="P1,P2,P3",
                   help="exponents of the length, dependency and concurrency costs (default 1,1,3)")
    p.add_argument("--tolerance", default="1", metavar="PERCENT",
                   help="speedups within this percentage of the highest are ties, which go to fewer task "
                        "instances (default 1)")
    add_machine_options(p, cores_help=f"the one core count of the target machine, 'inf' = unbounded (default "
                                      f"{DEFAULT_CORES}; with --machine, all its cores)")
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr while tracing")
    p.add_argument("target", nargs=argparse.REMAINDER, metavar="DIR | -- PROGRAM [ARGS]",
                   help="a trace directory, or the program and its arguments")
    p.set_defaults(func=run, parser=p)


def weight_list(text: str) -> tuple[float, float, float]:

    parts = text.split(",")
    try:
        weights = tuple(float(x) for x in parts)
    except ValueError:
        weights = ()
    if len(weights) != 3 or not all(0 <= w < float("inf") for w in weights):
        raise UserError(f"--weights: {text!r} is not three numbers >= 0 (exponents of the length, dependency and "
                        "concurrency costs), e.g. 1,1,3")
    return weights


def tolerance_fraction(text: str) -> float:
    """--tolerance 1 or 1%: 0.01."""
    try:
        percent = float(text.strip().removesuffix("%"))
    except ValueError:
        percent = -1.0
    if not 0 <= percent < 100:
        raise UserError(f"--tolerance: {text!r} is not a percentage from 0 to 100, e.g. --tolerance 1 (speedups "
                        "within 1 % of the highest are ties)")
    return percent / 100


def _cores(args, machine) -> int | None:
    if args.cores is None:
        return machine.nodes * machine.cores_per_node if args.machine else DEFAULT_CORES
    cores = core_list(args.cores)
    if len(cores) != 1:
        raise UserError("--cores: explore simulates one target machine: give one core count, e.g. --cores 8")
    return cores[0]


def _record(args, argv: list[str]) -> Path:
    """Trace the program once, every candidate a task; the trace directory. A partial recording
    is not explored: its search would be of a run cut short; stopped by a signal to tareador
    (Ctrl-C, SIGTERM), the command ends as stopped (130, 143)."""
    out = Path(args.output or f"{argv[0].rstrip('/').split('/')[-1]}.explore")
    summary = trace(argv, out, progress=not args.no_progress, task_functions=function_names(args.candidates),
                    explore=True).summary
    if summary["partial"]:
        if summary["signal"] in ("SIGINT", "SIGTERM", "SIGHUP"):
            raise Stopped(signal.Signals[summary["signal"]])
        raise UserError(f"the program {summary['ending']}; its partial recording in {out} is not explored")
    return out


def run(args) -> int:
    target = args.target
    if target[:1] != ["--"] and len(target) >= 1 and Path(target[0]).is_dir():
        args.parser.parse_args(target[1:], namespace=args)  # options after DIR
        if args.target:  # what is left is not an option: it would be ignored
            raise UserError(f"explore DIR takes options only, not {' '.join(args.target)!r}: a program to record "
                            "goes alone after --, e.g. tareador explore -- ./prog args")
        if args.candidates:  # a recording's candidates are fixed: it would search them all regardless
            raise UserError("--candidates chooses the functions a recording makes tasks: give it with a program, "
                            "e.g. tareador explore --candidates f,g -- ./prog (DIR's candidates are its tasks)")
        directory, argv = Path(target[0]), None
    else:
        argv = target[1:] if target[:1] == ["--"] else target
        if not argv:
            raise UserError("give a trace directory or a program: tareador explore DIR, tareador explore -- ./prog")
    weights = weight_list(args.weights)
    tolerance = tolerance_fraction(args.tolerance)
    machine, _, policy = machine_options(args)
    cores = _cores(args, machine)
    if argv is not None and args.durations == "measured":
        raise UserError("--durations measured needs the recording timed first: record it (tareador explore -- "
                        "./prog args), time it (tareador time DIR), then search it "
                        "(tareador explore DIR --durations measured)")
    if argv is not None:
        directory = out = _record(args, argv)
    else:
        out = Path(args.output or directory)
    finest = load_trace(directory)  # one process: an MPI run's directory is refused, naming a rank's
    if not finest.instances:
        candidates = finest.summary.get("explore_candidates")
        if candidates is not None:
            raise UserError(f"no candidate function was called inside the analysed region ({len(candidates)} "
                            "candidates); check tareador_ON/OFF or --candidates")
        raise UserError(f"{directory} has no task instances to explore: record one with tareador explore -- ./prog")
    if args.durations == "measured":
        finest = trace_in_nanoseconds(finest, directory)
    try:
        result = explore(finest, cores, machine, policy, weights, tolerance=tolerance)
    except ValueError as e:
        raise UserError(f"{directory}: {e}") from None
    out.mkdir(parents=True, exist_ok=True)
    written = [result.write_csv(out / "explore.csv"), plot_explore(result, out / "explore.png")]

    command = argv or [finest.summary.get("program", "./prog"), *finest.summary.get("arguments", [])]
    # Only a recording's tasks are functions; another trace's are its markers' names.
    recorded = "explore_candidates" in finest.summary
    print(format_exploration(result, shlex.join(command) if recorded else None,
                             finest.summary.get("explore_libraries")))
    if args.durations == "measured":
        print("T1 and T-inf in nanoseconds: the measured durations (tareador time)")
    print(f"written to {out}/: {' '.join(p.name for p in written)}")
    return 0


