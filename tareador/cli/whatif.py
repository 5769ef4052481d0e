"""``tareador whatif DIR``: which task type is worth optimising, on which machine?"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from tareador.analyses.whatif import label, type_names, whatif
from tareador.cli.options import progress_bar
from tareador.cli.simulate import add_machine_options, machine_options, task_graph, unit_of
from tareador.errors import UserError
from tareador.render.plots import plot_whatif
from tareador.render.results import format_whatif


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "whatif", help="simulate each task type made k times faster: which one is worth optimising",
        description="For each task type, accelerate its instances by each factor and simulate the run on each "
                    "core count; rank the types by the overall speedup they give, beside their share of the work "
                    "and of the critical path.",
        epilog="example:\n  tareador whatif chol.tareador --factors 2,10,inf --cores 1,4,64 --plot",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace_dir", metavar="DIR", help="trace directory written by 'tareador trace'")
    p.add_argument("--factors", default="2,10,inf",
                   help="comma-separated acceleration factors > 0, 'inf' = the type takes no time (default 2,10,inf)")
    p.add_argument("--type", action="append", metavar="NAME", dest="types",
                   help="study only this task type (repeatable; main's own code is 'main (program)')")
    add_machine_options(p)
    p.add_argument("--plot", action="store_true", help="write whatif-P.png, a bar chart per core count P")
    p.add_argument("--csv", action="store_true", help="write whatif.csv, one row per core count, type and factor")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p.add_argument("-o", "--output", metavar="OUTDIR", help="where files go (default DIR)")
    p.set_defaults(func=run)


def factor_list(text: str) -> list[float]:

    out = []
    for part in text.split(","):
        try:
            k = float(part)
        except ValueError:
            k = math.nan
        if not k > 0:
            raise UserError(f"--factors: {part.strip()!r} is not an acceleration factor; give numbers > 0 or inf, "
                            "e.g. 2,10,inf")
        out.append(int(k) if k.is_integer() else k)
    return out


def run(args) -> int:
    factors = factor_list(args.factors)
    machine, cores, policy = machine_options(args)
    try:
        dag = task_graph(args.trace_dir, args.durations)
        if not dag.n:
            raise UserError(f"{args.trace_dir} has no task instances to simulate")
        studied = len(set(args.types or type_names(dag)))
        tick = progress_bar(dag.n * len(cores) * (1 + len(factors) * studied), "simulating")
        result = whatif(dag, factors, cores, policy, machine, None, args.types, tick, unit_of(args.durations))
    except ValueError as e:
        raise UserError(f"{args.trace_dir}: {e}") from None
    out = Path(args.output or args.trace_dir)
    written = []
    if args.plot or args.csv:
        out.mkdir(parents=True, exist_ok=True)
    if args.plot:
        written += [plot_whatif(result, c, out / f"whatif-{label(c)}.png") for c in result.cores]
    if args.csv:
        written.append(result.write_csv(out / "whatif.csv"))
    if args.json:
        print(json.dumps(result.as_json()))
    else:
        print(format_whatif(result))
        if written:
            print(f"written to {out}/: {' '.join(p.name for p in written)}")
    return 0


