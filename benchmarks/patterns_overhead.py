"""What recording communication patterns costs: `trace --mpi` (patterns on) against a plain trace.

Usage: python benchmarks/patterns_overhead.py [--n N] [--iters K] [--repeat R]

The memory-bound kernel of trace_overhead.py (stream_kernel.c: exactly 3 * N * K 4-byte accesses)
traced twice: as a sequential program (patterns off: the default hot path) and with --mpi, which
turns the patterns on (the transform's time record per block, the write-time and watch shadows of
tracer_agents/patterns.c); the kernel makes no MPI call, so the difference is the patterns' cost
on every access. A one-pass run of each separates the fixed start-up from the cost per access.
Every run is repeated R times and the fastest kept. Prints a Markdown table for docs/costs.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trace_overhead import build, fastest, output_discarded  # noqa: E402

from tareador.tracing.run import trace  # noqa: E402


def seconds(argv: list[str], out: Path, mpi: bool, repeat: int) -> float:
    with output_discarded():
        return fastest(lambda: trace(argv, out, progress=False, mpi=mpi), repeat)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1 << 21)
    p.add_argument("--iters", type=int, default=8)
    p.add_argument("--repeat", type=int, default=3, help="runs of each measurement; the fastest counts")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        exe = str(build("stream_kernel", tmp))
        accesses = 3 * args.n * (args.iters - 1)
        print(f"kernel: {3 * args.n * args.iters / 1e6:.0f} M program accesses\n")
        print("| trace | whole run (s) | one pass (s) | per access (ns) |")
        print("|---|---|---|---|")
        per_access = {}
        for name, mpi in (("plain (patterns off)", False), ("--mpi (patterns on)", True)):
            full = seconds([exe, str(args.n), str(args.iters)], tmp / f"full-{mpi}", mpi, args.repeat)
            one = seconds([exe, str(args.n), "1"], tmp / f"one-{mpi}", mpi, args.repeat)
            per_access[mpi] = (full - one) / accesses
            print(f"| {name} | {full:.2f} | {one:.2f} | {1e9 * per_access[mpi]:.1f} |")
        print(f"\npatterns: {per_access[True] / per_access[False]:.2f}x the cost per access of a plain trace")
    return 0


if __name__ == "__main__":
    sys.exit(main())
