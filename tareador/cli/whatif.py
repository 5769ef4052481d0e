"""``tareador whatif DIR``: which task type is worth optimising, on which machine?"""

from __future__ import annotations

import argparse
import csv
import json
import math
from pathlib import Path

from tareador.analyses.whatif import label, ratio, type_names, whatif
from tareador.cli.options import progress_bar
from tareador.cli.simulate import add_machine_options, machine_options, runtime_line, task_graph, unit_of
from tareador.errors import UserError
from tareador.files import output_file, printable
from tareador.render.plots import plot_whatif
from tareador.render.summary import LABEL, machine_name
from tareador.render.summary import format_seconds as seconds


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
        written.append(_write_csv(out / "whatif.csv", result))
    if args.json:
        print(json.dumps(result.as_json()))
    else:
        print(format_whatif(result))
        if written:
            print(f"written to {out}/: {' '.join(p.name for p in written)}")
    return 0


def format_whatif(result) -> str:
    lines = [f"{'T1 (sequential)':<{LABEL}}{seconds(result.t1 / result.rate)}",
             f"{'T-inf (crit.path)':<{LABEL}}{seconds(result.tinf / result.rate)}",
             runtime_line(result.policy, result.creation, result.overhead, result.creation_cost, result.unit,
                          result.rate),
             "benefit: overall speedup over the unaccelerated run on the same cores; "
             "speedup: over T1, the unaccelerated sequential run"]
    width = max([len(printable(t.name)) for t in result.types] + [9])
    heads = "".join(f"{'x' + _number(k) + ' benefit':>15} {'speedup':>8}" for k in result.factors)
    for c, base in zip(result.cores, result.baseline):
        lines += ["", f"{machine_name(c)}: {seconds(base / result.rate)} unaccelerated, "
                      f"speedup {_number(ratio(result.t1, base), '.2f')}",
                  f"{'task type':<{width}} {'work':>7} {'c.path':>7}{heads}"]
        for t in result.ranking(c):
            cells = [f"{_percent(result.benefit(t.name, k, c)):>15} "
                     f"{_number(ratio(result.t1, result.time(t.name, k, c)), '.2f'):>8}" for k in result.factors]
            lines.append(f"{printable(t.name):<{width}} {100 * result.work_share(t):>6.1f}% "
                         f"{100 * result.critical_share(t):>6.1f}%{''.join(cells)}")
    return "\n".join(lines)


def _number(x: float, spec: str = "g") -> str:
    return "inf" if x == math.inf else format(x, spec)


def _percent(benefit: float) -> str:
    """The thesis' way of saying it: 1.245 times faster is +24.5 %."""
    return "inf" if benefit == math.inf else f"{100 * (benefit - 1):+.1f}%"


def _write_csv(path: Path, result) -> Path:
    rows = result.rows()
    with output_file(path, newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path
