"""What `tareador time` costs the program it times: per marker, and per hooked call.

Usage: python benchmarks/timing_overhead.py [--count N] [--repeat R]

Builds benchmarks/timing_overhead.c (cc -O2, linked with the annotation library) and measures
the CPU time of a loop of N empty tasks (the program times its own loop; its thread's CPU time,
as waits for a core on a busy machine would otherwise count):

- markers: tareador_start_task/end_task around nothing, the record off (an ordinary run) and on
  (TAREADOR_TIMING set: the timing run); the difference over 2N markers is what one costs;
- calls: N calls of an empty function, plain and under the timing agent's hooks (a
  --task-function's timing: Frida's Interceptor with native listeners); the difference over N is
  what one hooked call (its entry and its return) costs.

The fastest of R runs each; prints a Markdown table with the load average.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from tareador.tracing import toolchain
from tareador.tracing.functions import resolve
from tareador.tracing.timing import read_record, record_run

SOURCE = Path(__file__).with_suffix(".c")


def loop_seconds(argv: list[str], env: dict, hooks: tuple = ()) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        seconds = Path(tmp) / "seconds"
        record = Path(tmp) / "record"
        if hooks:
            os.environ["LOOP_SECONDS"] = str(seconds)
            try:
                status = record_run(argv, record, hooks, hooks=True)
            finally:
                del os.environ["LOOP_SECONDS"]
            if status != 0 or not record.exists():
                raise SystemExit(f"the hooked run failed (status {status})")
        else:
            subprocess.run(argv, check=True, env={**os.environ, **env, "LOOP_SECONDS": str(seconds)})
            if "TAREADOR_TIMING" in env and not read_record(Path(env["TAREADOR_TIMING"])).names:
                raise SystemExit("the timed run recorded no task")
        return float(seconds.read_text())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=1_000_000, help="empty tasks per run")
    p.add_argument("--repeat", type=int, default=5, help="runs of each; the fastest counts")
    args = p.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "timing_overhead"
        subprocess.run(["cc", "-O2", *shlex.split(toolchain.cflags()), str(SOURCE), "-o", str(exe),
                        *shlex.split(toolchain.libs())], check=True)
        functions = tuple(resolve(str(exe), ["empty_task"]))
        record = str(Path(tmp) / "record")
        best: dict[str, float] = {}
        for _ in range(args.repeat):
            runs = {"markers off": loop_seconds([str(exe), "markers", str(args.count)], {}),
                    "markers on": loop_seconds([str(exe), "markers", str(args.count)], {"TAREADOR_TIMING": record}),
                    "calls": loop_seconds([str(exe), "calls", str(args.count)], {}),
                    "calls hooked": loop_seconds([str(exe), "calls", str(args.count)], {}, functions)}
            best = {k: min(v, best.get(k, v)) for k, v in runs.items()}
    n = args.count
    marker = (best["markers on"] - best["markers off"]) / (2 * n) * 1e9
    hooked = (best["calls hooked"] - best["calls"]) / n * 1e9
    print(f"{n} empty tasks, fastest of {args.repeat} runs, load average {load:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after\n")
    print("| loop | CPU time (ms) | per task (ns) | timing's cost |")
    print("|---|---|---|---|")
    print(f"| markers, record off (an ordinary run) | {best['markers off'] * 1e3:.1f} | "
          f"{best['markers off'] / n * 1e9:.1f} | |")
    print(f"| markers, record on (tareador time) | {best['markers on'] * 1e3:.1f} | {best['markers on'] / n * 1e9:.1f} "
          f"| {marker:.1f} ns per marker |")
    print(f"| calls of an empty function | {best['calls'] * 1e3:.1f} | {best['calls'] / n * 1e9:.1f} | |")
    print(f"| the same calls hooked (--task-function) | {best['calls hooked'] * 1e3:.1f} | "
          f"{best['calls hooked'] / n * 1e9:.1f} | {hooked:.1f} ns per call |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
