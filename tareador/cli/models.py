"""``tareador models DIR``: per task type, duration against bytes accessed, its outliers, and where
instruction counts mislead."""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np

from tareador.analyses.models import models
from tareador.errors import UserError
from tareador.files import output_file, printable
from tareador.render.plots import model_formula, plot_models
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
    written = [_write_csv(out / "models.csv", result), plot_models(result, out / "models.png")]
    if args.json:
        print(json.dumps(as_json(result)))
        return 0
    print(format_models(result))
    print(f"written to {out}/: {' '.join(p.name for p in written)}")
    return 0


def as_json(result) -> dict:
    return {"types": [{"type": m.name, "durations": m.unit, "instances": len(m.instances),
                       "bytes": [int(m.bytes.min()), int(m.bytes.max())], "a": m.fit.a, "b": m.fit.b, "c": m.fit.c,
                       "error": m.fit.error, "outliers": [{"instance": int(m.instances[k]), "bytes": int(m.bytes[k]),
                                                           "duration": int(m.duration[k]), "ratio": m.ratio(k)}
                                                          for k in m.outliers]} for m in result.types],
            "instructions_per_ns": {name or "program": r for name, r in result.instructions_per_ns.items()}}


def format_models(result) -> str:
    lines = ["duration = a * n^b + c, n = bytes an instance accesses; error: root mean square of the relative "
             "residuals; outliers: far from their type's model (Tukey's fences, and over 10 % off)"]
    program = result.instructions_per_ns.get("")
    for m in result.types:
        if m.unit == "instructions":
            lines += ["", f"{printable(m.name)}: {len(m.instances)} instance(s), {int(m.bytes.min())} .. "
                          f"{int(m.bytes.max())} bytes"]
        far = ", ".join(f"#{int(m.instances[k])} ({m.ratio(k):.2f}x, {int(m.bytes[k])} bytes)" for k in m.outliers[:5])
        more = f" and {len(m.outliers) - 5} more" if len(m.outliers) > 5 else ""
        lines.append(f"  {m.unit:<13} {model_formula(m):<40} error {100 * m.fit.error:5.1f} %   outliers: "
                     f"{len(m.outliers)}{': ' + far + more if far else ''}")
        if m.unit == "ns" and m.name in result.instructions_per_ns and program:
            ratio = result.instructions_per_ns[m.name]
            lines.append(f"  instructions per ns: {ratio:.3g} ({ratio / program:.2f}x the program's {program:.3g})")
    if not program:
        lines += ["", "instructions only: run 'tareador time DIR' for measured durations and the instructions : ns "
                      "ratio per type"]
    return "\n".join(lines)


def _write_csv(path: Path, result) -> Path:
    with output_file(path, newline="") as f:
        w = csv.writer(f)
        w.writerow(["type", "durations", "instances", "min_bytes", "max_bytes", "a", "b", "c", "error", "outliers",
                    "instructions_per_ns"])
        for m in result.types:
            w.writerow([m.name, m.unit, len(m.instances), int(m.bytes.min()), int(m.bytes.max()), m.fit.a, m.fit.b,
                        m.fit.c, m.fit.error, ";".join(str(int(m.instances[k])) for k in m.outliers),
                        result.instructions_per_ns.get(m.name, "")])
    return path
