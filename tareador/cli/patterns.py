"""``tareador patterns DIR``: when the messages of an MPI run are produced and consumed."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from tareador.analyses.patterns import run_patterns, statistics
from tareador.render.plots import plot_patterns
from tareador.render.summary import format_pattern_statistics


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "patterns", help="production and consumption patterns of an MPI run's messages (overlap potential)",
        description="For every point-to-point message of a run traced with 'tareador mpirun': when, in its "
                    "production interval, its elements became final on the sender, and when, in its consumption "
                    "interval, they were first read on the receiver (thesis Table 5.1). Prints the averages per "
                    "transfer class (rank pair) and overall with their quartiles, rewrites DIR/patterns.csv and "
                    "DIR/patterns.npz, and draws one scatter plot per class (DIR/patterns-SRC-DST.png).",
        epilog="example:\n  tareador patterns run.tareador --chunks 8",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", metavar="DIR", help="the run directory of 'tareador mpirun'")
    add_chunks_option(p)
    p.add_argument("--json", action="store_true", help="print the statistics as one JSON object")
    p.add_argument("--no-plots", action="store_true", help="do not draw the scatter plots")
    p.set_defaults(func=run)


def add_chunks_option(p) -> None:
    p.add_argument("--chunks", type=int, default=4, metavar="C",
                   help="chunks a message is split into (default 4: quarter = 1 chunk, half = 2)")


def run(args) -> int:
    d = Path(args.run_dir)
    _, _, transfers, rows = run_patterns(d, args.chunks)
    stats = statistics(rows)
    plots = []
    if not args.no_plots:
        by_class: dict[tuple[int, int], list] = {}
        for t in transfers:
            by_class.setdefault((t.src, t.dst), []).append(t)
        plots = [str(plot_patterns(f"{s}->{r}", group, d / f"patterns-{s}-{r}.png"))
                 for (s, r), group in sorted(by_class.items())]
    if args.json:
        print(json.dumps({"chunks": args.chunks, "messages": len(rows),
                          "classes": [asdict(s) for s in stats], "plots": plots}, indent=2))
    else:
        print(format_pattern_statistics(stats, args.chunks))
        print(f"wrote {d / 'patterns.csv'}, {d / 'patterns.npz'}" + (f" and {len(plots)} plot(s)" if plots else ""))
    return 0
