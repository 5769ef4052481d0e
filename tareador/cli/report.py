"""``tareador report DIR``: one self-contained HTML page of everything tareador knows about a trace
directory or an MPI run directory."""

from __future__ import annotations

import argparse
import os
import sys
import webbrowser
from pathlib import Path

from tareador.cli.hints import size_names
from tareador.cli.mapping import add_ranks_per_node, with_ranks_per_node
from tareador.cli.options import core_list
from tareador.cli.simulate import add_machine_options, machine_options
from tareador.cli.simulate_mpi import default_cores_per_rank
from tareador.cli.whatif import factor_list
from tareador.errors import UserError
from tareador.report.settings import Settings
from tareador.simulation.policies import DIMEMAS, LIST_SCHEDULER
from tareador.taskgraph.store import is_run

REPORT_NAME = "report.html"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "report", help="one HTML page of everything about a trace or an MPI run, to open or send",
        description="Write one self-contained HTML page (scripts, styles and data inline: it opens offline from "
                    "the file and can be mailed) of a trace directory: summary, task graph, simulated timelines, "
                    "speedup and efficiency, parallelism profile, what-if ranking, hints with pragmas, object "
                    "usage; or of an MPI run's directory: ranks, the replayed run's timeline with MPI calls and "
                    "messages, the cores-per-rank sweep, communication patterns and overlap. Simulations are run "
                    "for the page with the options below (the defaults of 'tareador simulate' and 'whatif').",
        epilog="example:\n  tareador report jacobi.tareador --machine cluster -o jacobi.html",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace_dir", metavar="DIR", help="trace directory ('tareador trace') or MPI run ('tareador mpirun')")
    p.add_argument("-o", "--output", metavar="FILE", help=f"the page to write (default DIR/{REPORT_NAME})")
    p.add_argument("--open", action="store_true", help="open the page in a web browser once written")
    add_machine_options(p)
    add_ranks_per_node(p)
    p.add_argument("--factors", default="2,10,inf", help="what-if acceleration factors (default 2,10,inf)")
    p.add_argument("--size", action="append", default=[], metavar="NAME=VALUE",
                   help="hints: write the number VALUE (and products of two named values) as NAME; repeatable")
    p.add_argument("--max-nodes", type=int, default=300, metavar="N",
                   help="largest task graph drawn one node per instance (default 300; beyond, one node per type)")
    p.add_argument("--collapse", choices=["auto", "never", "always"], default="auto",
                   help="draw the graph one node per task type (auto: beyond --max-nodes instances)")
    p.set_defaults(func=run)


def output_path(args) -> Path:
    """Where the page goes, checked before anything is computed: a directory that does not exist or
    cannot be written is one line, not a traceback minutes later."""
    out = Path(args.output) if args.output else Path(args.trace_dir) / REPORT_NAME
    if out.is_dir():
        raise UserError(f"{out} is a directory: give the file to write, e.g. -o {out / REPORT_NAME}")
    parent = out.parent
    if not parent.is_dir():
        raise UserError(f"cannot write {out}: {parent} is not a directory; create it or write elsewhere with -o FILE")
    if not os.access(parent, os.W_OK | os.X_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise UserError(f"cannot write {out}: permission denied; write elsewhere with -o FILE")
    return out


def settings_of(args, mpi: bool = False):
    """The report's Settings from the command line, with the defaults of 'tareador simulate'
    (of an MPI run when ``mpi``)."""
    machine, cores, _ = machine_options(args, DIMEMAS if mpi else LIST_SCHEDULER)
    machine = with_ranks_per_node(machine, args.ranks_per_node)
    per_rank = core_list(args.cores) if args.cores is not None else default_cores_per_rank(machine, args.machine)
    given = [args.cores, args.policy, args.overhead, args.machine, args.ranks_per_node, args.creation,
             args.creation_cost, args.start_cost]
    return Settings(cores=tuple(cores), cores_per_rank=tuple(per_rank), policy=args.policy, machine=machine,
                    machine_file=args.machine, durations=args.durations, factors=tuple(factor_list(args.factors)),
                    sizes=size_names(args.size), max_nodes=args.max_nodes, collapse=args.collapse,
                    defaults=all(v is None for v in given) and args.durations == "instructions")


def run(args) -> int:
    from tareador.report.run_report import run_report  # here: the pages load Bokeh, which --help need not
    from tareador.report.trace_report import trace_report

    if args.max_nodes < 1:
        raise UserError("--max-nodes must be a positive number of nodes")
    d = Path(args.trace_dir)
    if not d.is_dir():
        raise UserError(f"{d} is not a trace directory: create one with 'tareador trace -o {d} -- ./prog' (or "
                        "'tareador mpirun' for an MPI run)")
    out = output_path(args)
    mpi = is_run(d)
    settings = settings_of(args, mpi)
    single = (("--overhead", args.overhead is not None),
              ("--creation", args.creation is not None), ("--creation-cost", args.creation_cost is not None),
              ("--start-cost", args.start_cost is not None))
    for option, given in single:
        if given and mpi:
            raise UserError(f"{option} does not apply to an MPI run ({d} replays its ompss.dim with the Dimemas "
                            "model); leave it out, or give one rank's directory (DIR/rank-N)")
    if not mpi and args.ranks_per_node is not None:
        raise UserError(f"--ranks-per-node applies to an MPI run's directory; {d} is one process's trace")
    result = run_report(d, settings) if mpi else trace_report(d, settings)
    path = result.save(out)
    for line in result.notes:
        print(f"note: {line}")
    size = path.stat().st_size
    size_text = f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{size / 2**10:.0f} KiB"
    print(f"report: {path} ({size_text}, self-contained: open it from the file, offline)")
    if args.open:
        if not webbrowser.open(path.resolve().as_uri()):
            print(f"tareador: no web browser to open it with; open {path} yourself", file=sys.stderr)
    return 0
