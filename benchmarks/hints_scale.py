"""How `tareador hints` grows with the number of task instances, on real traces.

Traces examples/cholesky (NT x NT tiles of 4 x 4: NT(NT+1)(NT+2)/6 instances, every written tile
read first) and examples/heat (nb x nb blocks of 4 x 4 cells, 8 iterations: 16 nb^2 instances,
whose WAR/WAW between tasks are ordered through main's reads) at growing sizes, then runs
`tareador hints DIR --json` on each in its own process: wall time, CPU time (user + system, what
a loaded machine does not inflate) and peak RSS (ru_maxrss and ru_utime/ru_stime from wait4),
CPU µs per instance, and the growth exponent of CPU time between consecutive sizes (1 = linear).

    python benchmarks/hints_scale.py [--cholesky 20,40,60,80] [--heat 16,32,64] [--tree DIR]

--tree runs another checkout's tareador (tracer and hints: its trace format is its own), to
compare with a baseline; traces are kept under --out and reused when present.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(tree: Path, argv: list[str]) -> tuple[float, float, int, str]:
    """python -m tareador argv with tree's code: (seconds, CPU seconds, peak RSS in bytes, stdout)."""
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "tareador", *argv], stdout=subprocess.PIPE, cwd=tree,
                             env={**os.environ, "PYTHONPATH": str(tree)})
    out = child.stdout.read()
    _pid, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status):
        sys.exit(f"tareador {' '.join(argv)} failed")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, out.decode()


def build(tree: Path, name: str, out: Path) -> Path:
    exe = out / name
    if not exe.exists():
        cflags, libs = (run(tree, ["config", option])[3].split() for option in ("--cflags", "--libs"))
        subprocess.run(["cc", "-g", "-O0", *cflags, str(ROOT / "examples" / name / f"{name}.c"), "-o", str(exe), *libs,
                        "-lm"], check=True)
    return exe


def measure(tree: Path, exe: Path, args: list[str], out: Path) -> dict:
    trace_dir = out / f"{exe.name}-{'-'.join(args)}.tareador"
    if not (trace_dir / "summary.json").exists():
        run(tree, ["trace", "-o", str(trace_dir), "--", str(exe), *args])
    summary = json.loads((trace_dir / "summary.json").read_text())
    with (trace_dir / "deps.csv").open() as f:
        kinds = [line.split(",")[2] for line in f][1:]
    seconds, cpu, rss, _ = run(tree, ["hints", str(trace_dir), "--json"])
    return {"program": exe.name, "args": " ".join(args), "instances": summary["instances"],
            "war_waw": sum(k != "RAW" for k in kinds), "seconds": seconds, "cpu": cpu, "rss": rss}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cholesky", default="20,40,60,80", help="tiles a side, comma-separated")
    ap.add_argument("--heat", default="16,32,64", help="blocks a side, comma-separated")
    ap.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose tareador runs (default: this one)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "hints_scale")
    args = ap.parse_args()
    out = args.out / args.tree.resolve().name
    out.mkdir(parents=True, exist_ok=True)
    cases = [("cholesky", [nt, "4"]) for nt in args.cholesky.split(",") if nt] + \
            [("heat", [str(4 * int(nb)), "4", "8"]) for nb in args.heat.split(",") if nb]
    print(f"tareador from {args.tree}; load average {os.getloadavg()[0]:.1f} at the start", flush=True)
    print(f"{'program':<9} {'args':<10} {'instances':>9} {'WAR+WAW':>8} {'wall (s)':>9} {'CPU (s)':>8} "
          f"{'CPU µs/inst':>11} {'peak MiB':>9} {'growth':>7}", flush=True)
    previous: dict[str, dict] = {}
    for name, case in cases:
        r = measure(args.tree, build(args.tree, name, out), case, out)
        before = previous.get(name)
        growth = (f"{math.log(r['cpu'] / before['cpu']) / math.log(r['instances'] / before['instances']):.2f}"
                  if before else "")
        previous[name] = r
        print(f"{name:<9} {r['args']:<10} {r['instances']:>9} {r['war_waw']:>8} {r['seconds']:>9.1f} {r['cpu']:>8.1f} "
              f"{1e6 * r['cpu'] / r['instances']:>11.0f} {r['rss'] / 2**20:>9.0f} {growth:>7}", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end; command: {shlex.join(sys.argv)}")


if __name__ == "__main__":
    main()
