"""``tareador trace -o DIR -- ./prog args``."""

from __future__ import annotations

import argparse
import signal
import sys

from tareador.errors import UserError
from tareador.render.summary import format_summary
from tareador.tracing.mpi_launch import supervised
from tareador.tracing.run import trace


def register(subparsers) -> None:
    p = subparsers.add_parser("trace", help="run an annotated program under the tracer",
                              description="Run the program under Frida, derive the dependencies between its "
                                          "task instances and write a trace directory.",
                              epilog="example:\n  tareador trace -o chol.tareador -- examples/bin/cholesky 6 32",
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", help="trace directory to write (default: <program>.tareador)")
    p.add_argument("--mpi", action="store_true",
                   help="trace one rank of an MPI launch (run by each rank: mpiexec -n 4 tareador trace --mpi "
                        "-o DIR -- ./prog) into DIR/rank-N")
    p.add_argument("--task-function", metavar="NAME[,NAME...]", action="append", default=[],
                   help="every call of these functions of the program is a task instance, as if "
                        "tareador_start_task/end_task surrounded it (no markers or recompiling needed)")
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    # Everything from the program on is the program's, even options tareador also has (-o).
    p.add_argument("program", nargs=argparse.REMAINDER, help="program and its arguments (-- before them is optional)")
    p.set_defaults(func=run)


def program_and_output(args, usage: str) -> tuple[list[str], str]:
    """The program's argv (a leading ``--`` is optional) and the output directory, by default
    named after the program; UserError when no program is given."""

    argv = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not argv:
        raise UserError(f"no program given: {usage}")
    return argv, args.output or f"{argv[0].rstrip('/').split('/')[-1]}.tareador"


def function_names(values: list[str]) -> list[str]:
    """--task-function f,g --task-function h: f, g, h."""

    names = [n.strip() for v in values for n in v.split(",")]
    if any(not n for n in names):
        raise UserError("--task-function needs function names separated by commas, e.g. --task-function gemm,trsm")
    return names


def run(args) -> int:
    argv, out = program_and_output(args, "tareador trace -o DIR -- ./prog [args]")
    if args.mpi:
        # MPICH's notice that another rank failed (once told not to kill the job, as `tareador
        # mpirun` does) must not end the tracer of this rank. Caught rather than ignored: an
        # ignored signal would stay ignored in the program the tracer starts.
        signal.signal(signal.SIGUSR1, lambda signum, frame: None)
    result = trace(argv, out, progress=not args.no_progress, mpi=args.mpi,
                   task_functions=function_names(args.task_function))
    status = result.summary.get("exit_status")
    if args.mpi and supervised():  # tareador mpirun prints the run's summary, one table for every rank
        return 1 if result.summary["partial"] and status is None else status or 0
    note = None
    if result.summary["partial"]:
        note = f"tareador: the program {result.summary['ending']}; the partial trace is in {result.path}"
    elif status:
        note = f"tareador: the program exited with status {status}; its trace is complete in {result.path}"
    try:
        print(format_summary(result, {"trace directory": str(result.path)}), flush=True)
    finally:  # also when stdout is a pipe already closed (`| head`, which may have ended the program too)
        if note:
            print(note, file=sys.stderr)
    if result.summary["partial"] and status is None:
        return 1
    return status or 0
