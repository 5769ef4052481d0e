"""Predicted against measured: tareador simulate's speedup on 2 cores, under each scheduling
policy, beside the speedup of the OpenMP version of the same program on this 2-core machine.

Usage: python benchmarks/predict_vs_real.py [--example cholesky|heat|all] [--repeat R]

The traced program (examples/<name>/<name>.c, with tareador markers) and its OpenMP version
(examples/<name>_omp/<name>_omp.c, the markers replaced by the pragmas `tareador hints` gives)
run the same kernels on the same problem, both built with -O2 -fno-inline. The OpenMP version prints the
wall time of its task region; each thread count runs R times and the fastest counts (the machine
is shared: the slower runs measure the neighbours). Prints a Markdown table for README.md, with the load average, which says whether the machine was
quiet.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from trace_overhead import output_discarded

import tareador
from tareador.simulation.list_scheduler import simulate
from tareador.tracing import toolchain
from tareador.tracing.run import trace

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
# Problem sizes with tasks of a few milliseconds, so that the runtime's cost per task (a few
# microseconds in libgomp) is small beside them; the traced run takes seconds.
SIZES = {"cholesky": ["8", "192"], "heat": ["2048", "512", "10"]}
POLICIES = ("cp", "fifo", "bf")


def build(source: Path, out: Path, flags: list[str], libs: list[str]) -> Path:
    """-fno-inline: each task stays a call of its kernel, as tareador hints needs to name the
    kernel's parameters (inlined, the tiles are named by object), in both versions alike."""
    subprocess.run(["cc", "-O2", "-fno-inline", "-g", *flags, str(source), "-o", str(out), *libs, "-lm"], check=True)
    return out


def predicted(trace_dir: Path, policy: str) -> float:
    out = subprocess.run([sys.executable, "-m", "tareador", "simulate", str(trace_dir), "--cores", "2", "--policy",
                          policy, "--json"], capture_output=True, text=True, check=True).stdout
    return json.loads(out)["results"][0]["speedup"]


def pragma_prediction(trace_dir: Path) -> float:
    """The speedup on 2 cores (bf) of the task graph the generated pragmas give OpenMP."""
    trace = tareador.load(trace_dir)
    dag = tareador.hints(trace_dir).pragma_trace(trace).dag
    return dag.t1 / simulate(dag, 2, "bf").makespan


def measured(exe: Path, args: list[str], repeat: int) -> tuple[float, float]:
    """Fastest wall time of the task region on 1 and on 2 threads over repeat runs of each, the
    two alternating so that both see the same neighbours."""
    best = {1: float("inf"), 2: float("inf")}
    for _ in range(repeat):
        for threads in best:
            env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
            out = subprocess.run([str(exe), *args], capture_output=True, text=True, check=True, env=env).stdout
            best[threads] = min(best[threads], float(re.search(r"seconds=([0-9.]+)", out).group(1)))
    return best[1], best[2]


def compare(name: str, tmp: Path, repeat: int) -> list[str]:
    args = SIZES[name]
    traced_exe = build(EXAMPLES / name / f"{name}.c", tmp / name, shlex.split(toolchain.cflags()),
                       shlex.split(toolchain.libs()))
    omp_exe = build(EXAMPLES / f"{name}_omp" / f"{name}_omp.c", tmp / f"{name}_omp", ["-fopenmp"], [])
    load_before = os.getloadavg()[0]
    one, two = measured(omp_exe, args, repeat)
    real = one / two
    with output_discarded():
        trace([str(traced_exe), *args], tmp / f"{name}.tareador", progress=False)
    rows = [f"| {name} {' '.join(args)} | measured (OpenMP, best of {repeat}: {one * 1e3:.1f} ms on 1 thread, "
            f"{two * 1e3:.1f} ms on 2) | {real:.2f} | | {load_before:.1f} |"]
    for policy in POLICIES:
        s = predicted(tmp / f"{name}.tareador", policy)
        rows.append(f"| | predicted, --policy {policy} | {s:.2f} | {100 * (s - real) / real:+.1f} % | |")
    s = pragma_prediction(tmp / f"{name}.tareador")
    rows.append(f"| | predicted for the generated pragmas (OpenMP's dependences), bf | {s:.2f} | "
                f"{100 * (s - real) / real:+.1f} % | |")
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--example", choices=[*SIZES, "all"], default="all")
    p.add_argument("--repeat", type=int, default=15, help="runs of each thread count; the fastest counts")
    args = p.parse_args()
    names = list(SIZES) if args.example == "all" else [args.example]
    print("| program | speedup on 2 cores | value | vs measured | load average |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            print("\n".join(compare(name, Path(tmp), args.repeat)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
