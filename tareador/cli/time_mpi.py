"""``tareador time RUN_DIR``: every rank of an MPI run timed under the MPI's own launcher.

Each rank's program runs under the timing hooks (tracer_agents/timing.js), which take the time
inside MPI calls out of its fragments: a trace counts no instructions there, and a replay models
that time itself (the network, the waits). Every rank's fragments are matched to its trace one to
one; the medians go to rank-N/durations.csv, and the run's traces on the measured clock to
authentic-measured.dim and ompss-measured.dim (analyses/postprocess.py), which ``simulate RUN_DIR
--durations measured`` replays.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from tareador.analyses.postprocess import write_run_traces
from tareador.cli.trace import function_names
from tareador.errors import TimingError, UserError
from tareador.render.summary import format_timing
from tareador.taskgraph.durations import save_durations
from tareador.taskgraph.mpi import load_run
from tareador.tracing.driver import check_program
from tareador.tracing.functions import resolve
from tareador.tracing.mpi_launch import MPIS
from tareador.tracing.timing import fragments, matched, read_record

TIMEOUT = 3600.0  # seconds one launch may take: a deadlocked run would otherwise hang here


def run(args) -> int:
    d = Path(args.trace_dir)
    mpi_run = load_run(d)
    first = mpi_run.ranks[0].summary
    mpi = MPIS.get(mpi_run.summary.get("mpi") or first.get("mpi") or "")
    if mpi is None or not mpi.installed():
        raise UserError(f"{d}: the run's MPI ({mpi_run.summary.get('mpi')}) is not installed: install it with "
                        "'make deps'")
    argv, functions, _ = timing_target(args, first, d / "rank-0")
    size = len(mpi_run.ranks)
    rows: list[list] = [[] for _ in range(size)]
    costs: list[list] = [[] for _ in range(size)]
    loads = [os.getloadavg()[0]]
    for k in range(1, args.repeat + 1):
        with tempfile.TemporaryDirectory(prefix="tareador-time-") as tmp:
            options = [f"--task-function={','.join(f.name for f in functions)}"] if functions else []
            command = mpi.command(size, [sys.executable, "-m", "tareador", "time", "--rank-records", tmp, *options,
                                         "--", *argv])
            try:
                status = subprocess.run(command, env=mpi.env(), stdout=subprocess.DEVNULL, timeout=TIMEOUT).returncode
            except subprocess.TimeoutExpired:
                raise UserError(f"timing run {k} of {d} did not end within {TIMEOUT:g} s") from None
            missing = [r for r in range(size) if not (Path(tmp) / f"rank-{r}").exists()]
            if status != 0 or missing:
                raise UserError(f"timing run {k} of {d} failed (launcher status {status}; no record from rank(s) "
                                f"{', '.join(map(str, missing)) or 'none'}); run the program under {mpi.mpiexec} "
                                "alone to see why")
            for r in range(size):
                record = read_record(Path(tmp) / f"rank-{r}")
                try:
                    rows[r].append(matched(fragments(record), mpi_run.ranks[r].fragments, k))
                except TimingError as e:
                    raise TimingError(f"rank {r}: {e}") from None
                costs[r].append(round(record.event_cost, 1))
    loads.append(os.getloadavg()[0])
    for r, trace in enumerate(mpi_run.ranks):
        runs = np.array(rows[r]).reshape(args.repeat, len(trace.fragments))
        info = {"runs": args.repeat, "program": argv[0], "arguments": argv[1:], "rank": r, "ranks": size,
                "task_functions": [f.name for f in functions], "event_ns": costs[r], "load_average": loads,
                "total_ns": [float(x.sum()) for x in runs]}
        save_durations(d / f"rank-{r}", [t.id for t in trace.fragments], runs, info)
        print(f"rank {r}\n{format_timing(trace, runs, info)}")
    written = write_run_traces(d, mpi_run, args.collectives, lambda f, items: [f(*i) for i in items], measured=True)
    print(f"wrote rank-N/durations.csv and {' '.join(p.name for p in written if p.suffix == '.dim')} in {d}")
    return 0


def timing_target(args, summary: dict, d: Path) -> tuple[list[str], tuple, bool]:
    """(the program's argv, its task functions, whether it is an explore recording) to time a
    trace of, one process's or a rank's (tareador time DIR dispatches here too); UserError when
    the trace cannot be timed."""
    if summary.get("partial"):
        raise UserError(f"{d} is a partial trace (the program {summary.get('ending')}): trace a complete run to time")
    given = args.program
    program = summary.get("program_path") or summary.get("program")
    argv = given or ([program, *summary.get("arguments", [])] if program else [])
    if not argv:
        raise UserError(f"{d}/summary.json names no program: give it, tareador time {d} -- ./prog args")
    explore = "explore_candidates" in summary
    names = (function_names(args.task_function) or summary.get("task_functions")
             or summary.get("explore_candidates") or [])
    return argv, tuple(resolve(check_program(argv), names)) if names else (), explore
