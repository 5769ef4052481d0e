"""Tracing overhead, against native and the classic Valgrind baselines, in three tables.

Usage: python benchmarks/trace_overhead.py [--only whole|sweep|sparse] [--n N] [--iters K] [--repeat R] [--no-lackey]
                                           [--sweep 1,4,16,64,256] [--sweep-accesses A]
                                           [--sparse-mib 4096] [--touched-kib 1024]

1. A memory-bound kernel (stream_kernel.c) with exactly 3 * N * K 4-byte accesses: whole runs
   of native, tareador, valgrind --tool=none and lackey.
2. The same kernel over working sets from 1 MB to 256 MB (both arrays), whole runs of tareador
   and valgrind --tool=none, with as many passes as make about A accesses (at least one).
3. A huge block barely touched (sparse_kernel.c): seconds and the traced process's peak RSS,
   shadow memory included.

Every run is repeated R times and the fastest kept, as timeit does: on a shared 2-core machine
the other runs measure the neighbours. The sweep also gives CPU seconds (user + system: the
traced process's own, from its summary.json, and valgrind's), which a busy machine inflates far
less than wall time. Prints Markdown tables for docs/costs.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from tareador import load
from tareador.tracing import toolchain
from tareador.tracing.run import trace

HERE = Path(__file__).resolve().parent


def fastest(run, repeat: int) -> float:
    """Seconds of the fastest of ``repeat`` calls of run()."""
    return min(measured(run, repeat))[0]


def measured(run, repeat: int) -> list[tuple[float, float]]:
    """(wall seconds, CPU seconds) of ``repeat`` calls of run(), which returns its CPU seconds."""
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        cpu = run()
        runs.append((time.perf_counter() - start, cpu))
    return runs


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_child(cmd: list[str]) -> float:
    """Runs cmd; its CPU seconds."""
    before = children_cpu()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return children_cpu() - before


def timed(cmd: list[str], repeat: int) -> float:
    return fastest(lambda: run_child(cmd), repeat)


@contextmanager
def output_discarded():
    """Traced programs write to this process's stdout: keep their prints out of the tables."""
    sys.stdout.flush()
    saved = os.dup(1)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 1)
    try:
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def traced(argv: list[str], out: Path, repeat: int) -> float:
    return min(traced_runs(argv, out, repeat))[0]


def traced_runs(argv: list[str], out: Path, repeat: int) -> list[tuple[float, float]]:
    """(wall, CPU of the traced process) of each run."""
    with output_discarded():
        return measured(lambda: trace(argv, out, progress=False).summary["traced_cpu_seconds"], repeat)


def build(name: str, tmp: Path) -> Path:
    exe = tmp / name
    subprocess.run(["cc", "-O1", *shlex.split(toolchain.cflags()), str(HERE / f"{name}.c"), "-o", str(exe),
                    *shlex.split(toolchain.libs())], check=True)
    return exe


def whole_runs(exe: Path, tmp: Path, args) -> None:
    accesses = 3 * args.n * args.iters
    argv = [str(exe), str(args.n), str(args.iters)]
    rows = [("native", timed(argv, args.repeat))]
    full = traced(argv, tmp / "trace", args.repeat)
    rows.append(("tareador trace (whole run: spawn, inject, trace, analyse, write)", full))
    traced_accesses = load(tmp / "trace").summary["accesses"]
    # Frida's spawn, injection and agent compilation cost a fixed ~0.2 s: a one-pass run separates
    # it from the cost per access.
    one_pass = traced([str(exe), str(args.n), "1"], tmp / "trace1", args.repeat)
    marginal = (full - one_pass) / max(accesses - 3 * args.n, 1)
    if shutil.which("valgrind"):
        rows.append(("valgrind --tool=none", timed(["valgrind", "--tool=none", *argv], args.repeat)))
        if not args.no_lackey:
            rows.append(("valgrind --tool=lackey --trace-mem=yes (output discarded, one run)", timed(
                ["valgrind", "--tool=lackey", "--trace-mem=yes", "--log-file=/dev/null", *argv], 1)))
    print(f"kernel: {accesses / 1e6:.0f} M program accesses; tareador analysed {traced_accesses / 1e6:.0f} M "
          f"records (including libc and loop overhead)\n")
    print("| run | time (s) | per access (ns) | vs native |")
    print("|---|---|---|---|")
    native = rows[0][1]
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} | {1e9 * seconds / accesses:.1f} | {seconds / native:.0f}x |")
    print(f"\ntareador: fixed start-up {one_pass - 3 * args.n * marginal:.2f} s, then {1e9 * marginal:.1f} ns "
          "per traced access (dependency analysis included)\n")


def sweep(exe: Path, tmp: Path, args) -> None:
    print("| working set (MB) | accesses (M) | tareador (ns/access) | valgrind --tool=none (ns/access) | ratio "
          "| CPU: tareador | CPU: valgrind | CPU ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for mb in (int(x) for x in args.sweep.split(",")):
        n = (mb << 20) // 8  # two arrays of 4-byte ints
        passes = max(1, round(args.sweep_accesses / (3 * n)))
        argv = [str(exe), str(n), str(passes)]
        accesses = 3 * n * passes
        mine = traced_runs(argv, tmp / "sweep", args.repeat)
        theirs = measured(partial(run_child, ["valgrind", "--tool=none", *argv]), args.repeat)
        (wall, cpu), (their_wall, their_cpu) = ([min(x) / accesses for x in zip(*runs, strict=True)]
                                                for runs in (mine, theirs))
        print(f"| {mb} | {accesses / 1e6:.0f} | {1e9 * wall:.1f} | {1e9 * their_wall:.1f} | {wall / their_wall:.1f}x "
              f"| {1e9 * cpu:.1f} | {1e9 * their_cpu:.1f} | {cpu / their_cpu:.2f}x |")
    print()


def sparse(exe: Path, tmp: Path, args) -> None:
    rss = tmp / "rss"
    argv = [str(exe), str(args.sparse_mib), str(args.touched_kib), str(rss)]
    native = timed(argv, args.repeat)
    native_kib = int(rss.read_text().split()[0])
    seconds = traced(argv, tmp / "sparse", args.repeat)
    traced_kib = int(rss.read_text().split()[0])
    print(f"| {args.sparse_mib} MiB allocated, {args.touched_kib} KiB touched | time (s) | peak RSS (MiB) |")
    print("|---|---|---|")
    print(f"| native | {native:.2f} | {native_kib / 1024:.0f} |")
    print(f"| tareador trace | {seconds:.2f} | {traced_kib / 1024:.0f} |")
    print()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1 << 21)
    p.add_argument("--iters", type=int, default=8)
    p.add_argument("--repeat", type=int, default=3, help="runs of each measurement; the fastest counts")
    p.add_argument("--no-lackey", action="store_true", help="skip the slow lackey baseline (run once otherwise)")
    p.add_argument("--only", choices=["whole", "sweep", "sparse"], help="one of the three tables")
    p.add_argument("--sweep", default="1,4,16,64,256", help="working sets in MB")
    p.add_argument("--sweep-accesses", type=int, default=48_000_000, help="about this many accesses per run")
    p.add_argument("--sparse-mib", type=int, default=4096, help="size of the barely touched block")
    p.add_argument("--touched-kib", type=int, default=1024)
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="tareador-bench-"))
    stream = build("stream_kernel", tmp)
    if args.only in (None, "whole"):
        whole_runs(stream, tmp, args)
    if args.only in (None, "sweep") and shutil.which("valgrind"):
        sweep(stream, tmp, args)
    if args.only in (None, "sparse"):
        sparse(build("sparse_kernel", tmp), tmp, args)
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
