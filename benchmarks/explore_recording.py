"""What recording every candidate function costs (tareador explore's one traced run).

Usage: python benchmarks/explore_recording.py [--calls 1000,10000,100000] [--candidates 1,10,100,1000]
                                              [--fixed-calls 10000] [--fixed-candidates 8] [--repeat R]

A generated program with K functions of the same small body (8 loop iterations over its own
global) calls them round-robin, C calls in all, through a table of pointers. Each configuration
is traced twice: plainly (no task, main is one fragment) and as explore records it (every call a
task: 2C + 1 fragments). The difference is the recording's cost: per call, the callout at the
entry, the return stub, two fragments and their dependency counts. Then the search itself
(tareador explore on the recorded directory: one merge and one simulation per step) is timed.
Every run is the fastest of R. Prints Markdown tables for docs/costs.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from trace_overhead import fastest  # beside this script

from tareador import load
from tareador.analyses.explore import explore
from tareador.simulation.machine import Machine
from tareador.tracing.run import trace


def program(k: int) -> str:
    functions = "\n".join(f"NOINLINE void f{i}(int n) {{ for (int j = 0; j < 8; j++) data[{i}] += n + j; }}"
                          for i in range(k))
    table = ", ".join(f"f{i}" for i in range(k))
    return f"""#include <stdlib.h>
#define NOINLINE __attribute__((noinline))
long data[{k}];
{functions}
void (*table[{k}])(int) = {{ {table} }};
int main(int argc, char **argv) {{
  long calls = atol(argv[1]);
  for (long i = 0; i < calls; i++) table[i % {k}]((int) i);
  return data[0] == -1;
}}
"""


def build(k: int, directory: Path) -> Path:
    source, exe = directory / f"calls{k}.c", directory / f"calls{k}"
    source.write_text(program(k))
    subprocess.run(["cc", "-O0", str(source), "-o", str(exe)], check=True)
    return exe


def measure(exe: Path, calls: int, directory: Path, repeat: int) -> tuple[float, float, float, int]:
    """(plain trace s, recording s, search s, steps)."""
    argv = [str(exe), str(calls)]
    plain = fastest(lambda: trace(argv, directory / "plain", progress=False), repeat)
    recorded = fastest(lambda: trace(argv, directory / "explore", progress=False, explore=True), repeat)
    finest = load(directory / "explore")
    steps = []
    search = fastest(lambda: steps.append(len(explore(finest, 4, Machine()).steps)), repeat)
    return plain, recorded, search, steps[-1]


def table(title: str, rows: list[tuple[int, int, float, float, float, int]]) -> str:
    lines = [f"**{title}**", "",
             "| candidates | calls | plain trace (s) | recording (s) | extra per call (µs) | search (s) | steps |",
             "|---|---|---|---|---|---|---|"]
    for k, calls, plain, recorded, search, steps in rows:
        lines.append(f"| {k} | {calls} | {plain:.2f} | {recorded:.2f} | {1e6 * (recorded - plain) / calls:.1f} | "
                     f"{search:.2f} | {steps} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", default="1000,10000,100000")
    parser.add_argument("--candidates", default="1,10,100,1000")
    parser.add_argument("--fixed-calls", type=int, default=10000)
    parser.add_argument("--fixed-candidates", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        saved = os.dup(1)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # the traced programs print nothing, Frida might
        try:
            exe = build(args.fixed_candidates, directory)
            by_calls = [(args.fixed_candidates, c, *measure(exe, c, directory, args.repeat))
                        for c in map(int, args.calls.split(","))]
            by_candidates = [(k, args.fixed_calls, *measure(build(k, directory), args.fixed_calls, directory,
                                                           args.repeat))
                             for k in map(int, args.candidates.split(","))]
        finally:
            os.dup2(saved, 1)
    print(table(f"calls grow, {args.fixed_candidates} candidate functions", by_calls))
    print()
    print(table(f"candidates grow, {args.fixed_calls} calls", by_candidates))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
