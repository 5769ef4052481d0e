"""Tracing overhead on a memory-bound kernel, against native and the classic Valgrind baselines.

Usage: python benchmarks/trace_overhead.py [--n N] [--iters K] [--repeat R] [--no-lackey]
Accesses = 3 * N * K (see stream_kernel.c). Each run is repeated R times and the fastest kept,
as timeit does: on a shared 2-core machine the other runs measure the neighbours. Prints a
Markdown table for README.md.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tareador import load
from tareador.tracing import toolchain
from tareador.tracing.run import trace

HERE = Path(__file__).resolve().parent


def fastest(run, repeat: int) -> float:
    """Seconds of the fastest of ``repeat`` calls of run()."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def timed(cmd: list[str], repeat: int) -> float:
    return fastest(lambda: subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
                   repeat)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1 << 21)
    p.add_argument("--iters", type=int, default=8)
    p.add_argument("--repeat", type=int, default=3, help="runs of each measurement; the fastest counts")
    p.add_argument("--no-lackey", action="store_true", help="skip the slow lackey baseline (run once otherwise)")
    args = p.parse_args()
    accesses = 3 * args.n * args.iters
    tmp = Path(tempfile.mkdtemp(prefix="tareador-bench-"))
    exe = tmp / "stream_kernel"
    subprocess.run(["cc", "-O1", *shlex.split(toolchain.cflags()), str(HERE / "stream_kernel.c"), "-o", str(exe),
                    *shlex.split(toolchain.libs())], check=True)
    argv = [str(exe), str(args.n), str(args.iters)]
    rows = [("native", timed(argv, args.repeat))]
    traced = fastest(lambda: trace(argv, tmp / "trace", progress=False), args.repeat)
    rows.append(("tareador trace (Frida, inline recording + in-target analysis)", traced))
    traced_accesses = load(tmp / "trace").summary["accesses"]
    # Frida's spawn, injection and agent compilation cost a fixed ~0.2 s: a one-pass run separates
    # it from the cost per access.
    one_pass = fastest(lambda: trace([str(exe), str(args.n), "1"], tmp / "trace1", progress=False), args.repeat)
    marginal = (traced - one_pass) / max(accesses - 3 * args.n, 1)
    if shutil.which("valgrind"):
        rows.append(("valgrind --tool=none", timed(["valgrind", "--tool=none", *argv], args.repeat)))
        if not args.no_lackey:
            rows.append(("valgrind --tool=lackey --trace-mem=yes", timed(
                ["valgrind", "--tool=lackey", "--trace-mem=yes", "--log-file=/dev/null", *argv], 1)))
    print(f"kernel: {accesses / 1e6:.0f} M program accesses; tareador analysed {traced_accesses / 1e6:.0f} M "
          f"records (including libc and loop overhead)\n")
    print("| run | time (s) | per access (ns) | vs native |")
    print("|---|---|---|---|")
    native = rows[0][1]
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} | {1e9 * seconds / accesses:.1f} | {seconds / native:.0f}x |")
    print(f"\ntareador: fixed start-up {one_pass - 3 * args.n * marginal:.2f} s, then {1e9 * marginal:.1f} ns "
          "per traced access (dependency analysis included)")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
