"""``tareador config``: compiler flags for annotated programs, like pkg-config."""

from __future__ import annotations

import argparse

from tareador.errors import UserError
from tareador.tracing import toolchain


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "config", help="print compiler flags for programs using tareador.h",
        description="Print the flags to compile and link a program annotated with tareador.h.",
        epilog="example:\n  cc -g -O0 $(tareador config --cflags) prog.c -o prog $(tareador config --libs) -lm",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cflags", action="store_true", help="include path for tareador.h")
    p.add_argument("--libs", action="store_true", help="link flags (shared library with rpath)")
    p.add_argument("--static-libs", action="store_true", help="link flags for the static library")
    p.set_defaults(func=run)


def run(args) -> int:

    parts = []
    if args.cflags:
        parts.append(toolchain.cflags())
    if args.libs:
        parts.append(toolchain.libs())
    if args.static_libs:
        parts.append(toolchain.libs(static=True))
    if not parts:
        raise UserError("say what to print: --cflags, --libs or --static-libs")
    print(" ".join(parts))
    return 0
