"""``tareador models DIR``: per task type, duration against bytes accessed, its outliers, and where
instruction counts mislead."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from tareador.analyses.models import models
from tareador.errors import UserError
from tareador.render.plots import plot_models
from tareador.render.results import format_models
from tareador.taskgraph.durations import FILE, aligned, load_durations
from tareador.taskgraph.model import Access
from tareador.taskgraph.store import load_trace, read_table


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "models", help="fit each task type's duration against the bytes it accesses; list the outliers",
        description="Per task type, fit its instances' durations (instructions, and measured nanoseconds when "
                    "'tareador time DIR' ran) against the bytes each accessed (accesses.csv) as a * n^b + c, print "
                    "the fit and its error, the instances far from their type's model (load imbalance), and the "
                    "ratio of instructions to nanoseconds per type beside the program's (where instruction counts "
                    "mislead); write models.csv and models.png (duration against size, a panel per type).",
        epilog="example:\n  tareador models chol.tareador",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace_dir", metavar="DIR", help="trace directory written by 'tareador trace'")
    p.add_argument("--json", action="store_true", help="print the models as one JSON object")
    p.add_argument("-o", "--output", metavar="OUTDIR", help="where models.csv and models.png go (default DIR)")
    p.set_defaults(func=run)


def run(args) -> int:
    d = Path(args.trace_dir)
    trace = load_trace(d)
    if not trace.instances:
        raise UserError(f"{d} has no task instances to model")
    accesses = read_table(d / "accesses.csv", Access, f"it comes with every trace since tareador hints: trace "
                                                      f"the program again (tareador trace -o {d} -- ./prog)")
    ns = None
    if (d / FILE).exists():
        ids = np.fromiter((t.id for t in trace.fragments), np.int64, len(trace.fragments))
        ns = aligned(load_durations(d), ids, d)
    result = models(trace, accesses, ns)
    out = Path(args.output or d)
    out.mkdir(parents=True, exist_ok=True)
    written = [result.write_csv(out / "models.csv"), plot_models(result, out / "models.png")]
    if args.json:
        print(json.dumps(result.as_json()))
        return 0
    print(format_models(result))
    print(f"written to {out}/: {' '.join(p.name for p in written)}")
    return 0


