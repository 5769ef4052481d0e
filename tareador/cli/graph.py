"""``tareador graph DIR``: the task dependency graph of a trace directory."""

from __future__ import annotations

import argparse
import sys

from tareador.render.graph import write_graph
from tareador.render.summary import format_summary
from tareador.taskgraph.store import load_trace


def register(subparsers) -> None:
    p = subparsers.add_parser("graph", help="draw the task dependency graph (DOT and SVG)",
                              description="Write graph.dot and graph.svg (in DIR, or OUTDIR) and print the summary.",
                              epilog="example:\n  tareador graph chol.tareador --png -o /tmp/chol-graph",
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace_dir", metavar="DIR", help="trace directory written by 'tareador trace'")
    p.add_argument("-o", "--output", metavar="OUTDIR", help="where the graph files go (default DIR)")
    p.add_argument("--all-edges", action="store_true", help="also draw transitive edges")
    p.add_argument("--collapse", choices=["auto", "never", "always"], default="auto",
                   help="one node per task type (auto: when there are more than --max-nodes instances)")
    p.add_argument("--max-nodes", type=int, default=300, metavar="N",
                   help="largest graph drawn one node per instance with --collapse auto (default 300)")
    p.add_argument("--show-main", action="store_true",
                   help="also draw the fragments of main (the program's code between tasks); by default main is "
                        "folded and only the order it imposes between tasks is drawn")
    p.add_argument("--png", action="store_true", help="also write graph.png")
    p.set_defaults(func=run)


def run(args) -> int:
    trace = load_trace(args.trace_dir)
    formats = ("dot", "svg", "png") if args.png else ("dot", "svg")
    outputs = write_graph(trace, args.output or args.trace_dir, all_edges=args.all_edges, collapse=args.collapse,
                          max_nodes=args.max_nodes, show_main=args.show_main, formats=formats,
                          report=lambda message: print(f"tareador: {message}", file=sys.stderr, flush=True))
    print(format_summary(trace, outputs))
    return 0
