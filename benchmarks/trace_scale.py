"""`tareador trace` against the number of task instances: time and memory per instance.

Usage: python benchmarks/trace_scale.py [--sizes 32,100,317,1000,3163] [--keep]

Traces wavefront_kernel.c (an N x N wavefront of tasks of a few dozen instructions, N^2
instances and 2 N (N - 1) dependencies) at each size, each trace in a fresh Python process so
that its peak RSS is its own, and prints a Markdown table: wall seconds, CPU seconds of tareador
(spawn, conversion of the tables, the CSVs and tables/) and of the traced process (the analysis),
both processes' peak RSS, and the trace directory's size; then the cost per instance of the
largest run. The agent streams its tables to files while the program runs, so memory should stay
flat in the number of instances but for the analysis' own 16 bytes per fragment.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tareador.tracing import toolchain

HERE = Path(__file__).resolve().parent

ONE_TRACE = """
import json, resource, sys, time
from tareador.tracing.run import trace
started, cpu = time.perf_counter(), time.process_time()
t = trace(sys.argv[1:-1], sys.argv[-1], progress=False)
print(json.dumps({"wall": time.perf_counter() - started, "cpu": time.process_time() - cpu,
                  "traced_cpu": t.summary["traced_cpu_seconds"], "instances": t.summary["instances"],
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "traced_rss": t.summary["traced_peak_rss_mib"]}))
"""


def directory_size(d: Path) -> int:
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="32,100,317,1000", help="N of the N x N wavefronts")
    p.add_argument("--keep", action="store_true", help="keep the trace directories (in a printed temporary dir)")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="tareador-scale-"))
    exe = tmp / "wavefront"
    subprocess.run(["cc", "-O2", *shlex.split(toolchain.cflags()), str(HERE / "wavefront_kernel.c"), "-o", str(exe),
                    *shlex.split(toolchain.libs())], check=True)
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    print("| instances | wall (s) | tareador CPU (s) | traced CPU (s) | tareador peak RSS (MiB) "
          "| traced peak RSS (MiB) | trace directory (MB) |")
    print("|---|---|---|---|---|---|---|")
    last = None
    for n in (int(x) for x in args.sizes.split(",")):
        out = tmp / f"w{n}"
        run = subprocess.run([sys.executable, "-c", ONE_TRACE, str(exe), str(n), str(out)], env=env,
                             capture_output=True, text=True, check=True)
        r = json.loads(run.stdout.splitlines()[-1])
        size = directory_size(out)
        print(f"| {r['instances']:,} | {r['wall']:.1f} | {r['cpu']:.1f} | {r['traced_cpu']:.1f} | {r['rss']:.0f} "
              f"| {r['traced_rss']:.0f} | {size / 1e6:.0f} |", flush=True)
        last = r, size
        if not args.keep:
            shutil.rmtree(out)
    if last:
        r, size = last
        per = 1e6 / r["instances"]
        print(f"\nper instance at {r['instances']:,}: {r['wall'] * per:.1f} µs wall, {r['cpu'] * per:.1f} µs of "
              f"tareador CPU, {r['traced_cpu'] * per:.1f} µs traced CPU, {size / r['instances']:.0f} bytes on disk")
    if args.keep:
        print(f"\ntraces kept in {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
