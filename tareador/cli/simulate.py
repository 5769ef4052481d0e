"""``tareador simulate DIR``: how fast would the taskified program run on 1..N cores?"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from tareador.analyses.speedup import parallelism_profile, study
from tareador.analyses.table import Table
from tareador.cli import simulate_mpi
from tareador.cli.mapping import add_ranks_per_node
from tareador.cli.options import (
    add_chrome_limit,
    chrome_limit,
    core_list,
    load_machine_arg,
    progress_bar,
    report_split,
    size_text,
)
from tareador.errors import UserError
from tareador.formats.chrome import write_chrome
from tareador.formats.paraver import nanoseconds, schedule_run, write_paraver
from tareador.render.plots import GANTT_CORES, GANTT_LIMIT, plot_gantt, plot_profile, plot_speedup
from tareador.render.results import format_study
from tareador.simulation.machine import CREATION_MODELS, MAX_COUNT, in_nanoseconds
from tareador.simulation.policies import ALL as ALL_POLICIES
from tareador.simulation.policies import LIST_SCHEDULER, Policies
from tareador.synthesis.ompss import write_dim_traces
from tareador.taskgraph.durations import KINDS as DURATION_KINDS
from tareador.taskgraph.durations import measured_dag
from tareador.taskgraph.store import is_run, load_dag


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "simulate", help="simulate the task-parallel run on several core counts",
        description="Schedule the task instances of a trace directory on P cores (greedy list scheduling) and "
                    "report time, speedup over the sequential run and efficiency for each P. Given an MPI run's "
                    "directory (tareador mpirun), replay its MPI/OmpSs trace ompss.dim with P cores per rank on "
                    "the machine's network instead, and report time, speedup over the authentic MPI run "
                    "(authentic.dim, one core per rank) and efficiency (e.g. tareador simulate jacobi.tareador "
                    "--machine cluster).",
        epilog="example:\n  tareador simulate chol.tareador --cores 1,2,4,8,inf --plot "
               "--machine laptop",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace_dir", metavar="DIR", help="trace directory written by 'tareador trace', or an MPI run's "
                   "written by 'tareador mpirun'")
    add_machine_options(p)
    add_ranks_per_node(p)
    p.add_argument("--prv", action="store_true", help="write a Paraver trace of each simulation")
    p.add_argument("--chrome", action="store_true", help="write a Chrome/Perfetto JSON of each simulation")
    add_chrome_limit(p)
    p.add_argument("--plot", action="store_true", help="write speedup.png, profile.png and gantt.png")
    p.add_argument("--csv", action="store_true",
                   help="write speedup.csv (cores,time,speedup,efficiency,cores_used,busy_min,busy_max) and "
                   "profile.csv (time,running) of the widest simulated machine")
    p.add_argument("--dim", action="store_true", help="write ompss.dim and authentic.dim for 'tareador replay'")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p.add_argument("-o", "--output", metavar="OUTDIR", help="where files go (default DIR)")
    p.set_defaults(func=run)


CORES_HELP = ("comma-separated core counts, 'inf' = unbounded (default 1,2,4,8,16,inf; with --machine, the powers "
              "of two up to the machine's cores, its cores, and inf); of an MPI run, cores per rank (default "
              "1,2,4,8,inf; with --machine, up to a node's cores per rank)")


def add_machine_options(p, cores_help: str = CORES_HELP) -> None:
    """The machine a simulation runs on: options shared by every command that simulates."""
    p.add_argument("--cores", help=cores_help)
    p.add_argument("--policy", choices=ALL_POLICIES,
                   help="ready tasks run longest-remaining-path first (cp), in creation order (fifo), in the "
                        "order they became ready (bf, what OpenMP runtimes do; one trace only) or by turns of the "
                        "machine's quantum (rr, Dimemas' round robin; an MPI run only); default: the machine "
                        "file's policy if the simulator has it, else cp")
    p.add_argument("--creation", choices=CREATION_MODELS,
                   help="what a thread does once it created a task: goes on, the task queued (help-first, what "
                        "OpenMP runtimes do), or runs the task, its own continuation queued (work-first, Cilk, "
                        "TBB); default: the machine file's, else help-first")
    p.add_argument("--creation-cost", type=float, metavar="SECONDS",
                   help="seconds the creating core spends per task it creates (default: the machine's, else 0)")
    p.add_argument("--start-cost", type=float, metavar="SECONDS",
                   help="seconds the core that runs a task spends starting and ending it (default: the machine's, "
                        "else 0)")
    p.add_argument("--overhead", type=int, metavar="INSTR",
                   help="runtime cost of each task instance in instructions, on top of the start cost (default: "
                        "the machine's task_overhead)")
    p.add_argument("--durations", choices=DURATION_KINDS, default="instructions",
                   help="what a fragment's time is: its traced instructions at the machine's instructions per "
                        "second (default), or its measured nanoseconds (run 'tareador time DIR' first)")
    p.add_argument("--machine", metavar="FILE", help="machine TOML or Dimemas .cfg (instructions per second, "
                   "relative speed, task overhead, the runtime's costs)")


def machine_options(args, policies: Policies = LIST_SCHEDULER):
    """(machine, core counts, policy) of ``add_machine_options``' arguments, the command line's
    runtime options folded into the machine (in nanoseconds for measured durations), the policy
    one of the simulator's ``policies``; UserError if unusable."""
    if args.overhead is not None and not 0 <= args.overhead <= MAX_COUNT:
        raise UserError(f"--overhead must be >= 0 and at most {MAX_COUNT} instructions")
    machine = load_machine_arg(args.machine)
    if machine.modules:
        raise UserError(f"{args.machine}: its modules (task types made faster) are for replaying Dimemas traces "
                        "(tareador replay, simulate of an MPI run); on one trace 'tareador whatif DIR' tells what a "
                        "faster task type gives")
    changes = {"task_overhead": args.overhead, "creation": args.creation, "creation_cost": args.creation_cost,
               "start_cost": args.start_cost}
    for name in ("creation_cost", "start_cost"):
        value = changes[name]
        if value is not None and not (math.isfinite(value) and 0 <= value < 1):
            raise UserError(f"--{name.replace('_', '-')} must be seconds >= 0 (and below 1), e.g. 2e-7, not {value:g}")
    machine = replace(machine, **{k: v for k, v in changes.items() if v is not None})
    if args.durations == "measured":
        machine = in_nanoseconds(machine)
    cores = core_list(args.cores) if args.cores is not None else default_cores(machine, args.machine is not None)
    policy = policies.choose(machine.policy, args.policy, machine.quantum)
    return machine, cores, policy


def task_graph(directory, durations: str):
    """The trace's task graph, its weights the measured nanoseconds when asked (DurationsError
    when there are none)."""
    dag = load_dag(directory)
    return measured_dag(dag, directory) if durations == "measured" else dag


def default_cores(machine, given: bool) -> list[int | None]:
    """A strong-scaling sweep; a machine file says how far it should go."""
    if not given:
        return [1, 2, 4, 8, 16, None]
    total = machine.nodes * machine.cores_per_node
    return sorted({1 << k for k in range(total.bit_length()) if 1 << k <= total} | {total}) + [None]


def run(args) -> int:
    if is_run(Path(args.trace_dir)):
        return simulate_mpi.run(args)
    if args.ranks_per_node is not None:
        raise UserError(f"--ranks-per-node applies to an MPI run's directory; {args.trace_dir} is one process's trace")

    machine, cores, policy = machine_options(args)
    max_bytes = chrome_limit(args)
    try:
        dag = task_graph(args.trace_dir, args.durations)
        if not dag.n:
            raise UserError(f"{args.trace_dir} has no task instances to simulate")
        out = Path(args.output or args.trace_dir)
        out.mkdir(parents=True, exist_ok=True)
        tick = progress_bar(dag.n * len(cores), "simulating")
        result = study(dag, cores, policy, machine, None, tick, unit=unit_of(args.durations))
    except ValueError as e:
        raise UserError(f"{args.trace_dir}: {e}") from None
    written = _write_outputs(args, out, dag, result, machine, max_bytes)
    if args.json:
        print(json.dumps(result.as_json()))
    else:
        print(format_study(result, policy))
        if written:
            print(f"written to {out}/")
        for kind, paths in written.items():
            size = size_text(sum(p.stat().st_size for p in paths))
            print(f"  {kind + ':':<17}{' '.join(p.name for p in paths)} ({size})")
    return 0


def unit_of(durations: str) -> str:
    """What the simulation counts: instructions, or the measured nanoseconds."""
    return "ns" if durations == "measured" else "instructions"


def _write_outputs(args, out: Path, dag, result, machine, max_bytes: int) -> dict[str, list[Path]]:
    """Files written, by what opens them."""
    written: dict[str, list[Path]] = {}

    def wrote(kind: str, *paths: Path) -> None:
        written.setdefault(kind, []).extend(paths)

    ns = 1e9 / result.rate
    for s in result.schedules:
        if not (args.prv or args.chrome):
            break
        start, finish, core = nanoseconds(s.start * ns), nanoseconds(s.finish * ns), s.core.astype(np.int64)
        if args.prv:
            run = schedule_run(dag.names, start, finish, core, s.machine_cores, dag.dep_src, dag.dep_dst,
                               dag.dep_bytes)
            wrote("Paraver", *write_paraver(run, out / f"simulation-{s.label}.prv"))
        if args.chrome:
            chrome = write_chrome(out / f"simulation-{s.label}.json", f"{s.label} cores, {s.policy}", dag.names,
                                  dag.ids, start, finish, core, dag.dep_src, dag.dep_dst, max_bytes)
            report_split(chrome, max_bytes)
            wrote("Chrome/Perfetto", *chrome.paths)
    if args.plot:
        wrote("plots", plot_speedup(result, out / "speedup.png"))
        unbounded = [s for s in result.schedules if s.cores is None]
        finite = [s for s in result.schedules if s.cores is not None]
        wrote("plots", plot_profile((unbounded or finite)[-1], result.rate, out / "profile.png"))
        widest = max(finite or unbounded, key=lambda s: s.cores_used)
        gantt = plot_gantt(widest, dag.names, result.rate, out / "gantt.png")
        if gantt is None:
            print(f"tareador: no Gantt chart: {dag.n} task instances on {widest.machine_cores} cores are too many to "
                  f"draw (at most {GANTT_LIMIT} instances and {GANTT_CORES} cores)", file=sys.stderr)
        else:
            wrote("plots", gantt)
    if args.csv:
        wrote("CSV", *_write_csv(out, result))
    if args.dim:
        wrote("Dimemas", *write_dim_traces(dag, out, machine.instructions_per_second, result.overhead,
                                           result.creation_cost))
    return written


def _write_csv(out: Path, result) -> list[Path]:
    """The table and the parallelism profile as plain CSV, in seconds, for scripts and spreadsheets."""
    widest = max(result.schedules, key=lambda s: s.cores_used)
    times, running = parallelism_profile(widest)
    profile = Table.of("profile", (("time", "float"), ("running", "int")),
                       zip((times / result.rate).tolist(), running.tolist()))
    return [result.write_csv(out / "speedup.csv"), profile.write_csv(out / "profile.csv")]
