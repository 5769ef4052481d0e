"""``tareador hints DIR``: the depend clauses each task type needs, from one traced run."""

from __future__ import annotations

import argparse
import json

from tareador.analyses.hints import load_hints
from tareador.errors import UserError
from tareador.render.hints import format_hints, hints_json


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "hints", help="what each task type reads and writes, as OpenMP and OmpSs-2 depend clauses",
        description="For every task type, the objects its instances read before writing (in), write (out) or "
                    "both (inout), one list item per region of data (the same start and length in every task "
                    "type), named by the argument that points at it; the pragmas to paste, checked: replayed as "
                    "OpenMP reads them, they must order every dependence the trace recorded; and warnings (the "
                    "dependences they do not order, taskwaits, globals not passed, WAR/WAW that OpenMP keeps).",
        epilog="example:\n  tareador hints chol.tareador --size TS=16",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace_dir", metavar="DIR", help="trace directory written by 'tareador trace'")
    p.add_argument("--size", action="append", default=[], metavar="NAME=VALUE",
                   help="write the number VALUE (and products of two named values) as NAME in sections; repeatable")
    p.add_argument("--json", action="store_true", help="print the hints as one JSON object")
    p.set_defaults(func=run)


def size_names(items: list[str]) -> dict[str, int]:

    sizes = {}
    for item in items:
        name, _, value = item.partition("=")
        if not name.strip().isidentifier() or not value.strip().isdigit() or int(value) < 2:
            raise UserError(f"--size {item!r}: expected NAME=VALUE with VALUE an integer >= 2, e.g. --size TS=16")
        sizes[name.strip()] = int(value)
    return sizes


def run(args) -> int:
    sizes = size_names(args.size)
    h = load_hints(args.trace_dir)
    if not h.types:
        raise UserError(f"{args.trace_dir} has no task instances: mark tasks (or use --task-function) and trace again")
    print(json.dumps(hints_json(h, sizes)) if args.json else format_hints(h, sizes))
    return 0
