"""Predicted against measured: tareador's speedup on 2 cores, from instruction counts and from
measured durations, under each scheduling policy, beside the speedup of the OpenMP version of
the same program on this 2-core machine.

Usage: python benchmarks/predict_vs_real.py [--example NAME|all] [--repeat R] [--timing-runs T]

Each example is a traced program (examples/<name>/<name>.c, with tareador markers) and its
OpenMP version (examples/<name>_omp/<name>_omp.c, built from that committed source: the markers
replaced by the pragmas `tareador hints` prints, verbatim, which
tests/test_hints.py::test_openmp_examples_use_the_generated_pragmas checks against a fresh
trace), with the same kernels on the same problem, both built -O2 -fno-inline. For each:

- the traced program is traced (instructions) and timed natively T times (`tareador time`: the
  median of each task instance);
- libgomp's own costs are measured once (benchmarks/runtime_costs.py: creating a task with a
  depend clause, starting one) and given to the simulation as the machine's [runtime] costs;
  instructions become seconds at the program's own rate (its instructions over its measured
  time), so that those costs weigh the same against both kinds of durations;
- `simulate --cores 2` (help-first creation, as libgomp) predicts the speedup under cp, fifo and
  bf, from instructions and from the measured durations;
- the OpenMP version runs with OMP_NUM_THREADS=1 and 2, alternating, R times each, with
  libgomp's own wait policy (spin a while, then sleep: what a user's run does); the fastest run
  of each counts (slower runs measure the neighbours). It prints the wall time of its task
  region. `--wait-policy passive` (an idle thread sleeps at once: kinder to a shared machine)
  adds a futex wake-up to every taskwait and idle spell, which the runtime model has no term
  for: heat_blocks 512 128 80 measures 1.75 with it, 1.93 spinning, against 1.98 predicted.

Prints a Markdown table for docs/reference/validation.md with the load average before and after each example:
the measured speedup is only as good as the machine is quiet.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from runtime_costs import ENVIRONMENT, WAIT_POLICIES, wait_policy
from runtime_costs import measure as runtime_costs
from trace_overhead import output_discarded

from tareador.analyses.speedup import study
from tareador.simulation.machine import Machine, in_nanoseconds
from tareador.taskgraph.durations import measured_dag
from tareador.taskgraph.store import load_dag
from tareador.tracing import toolchain
from tareador.tracing.run import trace

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
# Problem sizes with tasks of tenths of milliseconds to milliseconds, large beside libgomp's cost
# per task (a fraction of a microsecond, runtime_costs.py); each traced run takes seconds.
SIZES = {"cholesky": ["8", "192"], "heat_blocks": ["1024", "256", "20"], "sparselu": ["8", "128"],
         "integrate": ["5", "200000"], "chainside": ["32", "100000"]}
POLICIES = ("cp", "fifo", "bf")


def build(source: Path, out: Path, flags: list[str], libs: list[str]) -> Path:
    """-fno-inline: each task stays a call of its kernel, as tareador hints needs to name the
    kernel's parameters (inlined, the tiles are named by object), in both versions alike."""
    subprocess.run(["cc", "-O2", "-fno-inline", "-g", *flags, str(source), "-o", str(out), *libs, "-lm"], check=True)
    return out


def measured(exe: Path, args: list[str], repeat: int) -> tuple[float, float]:
    """Fastest wall time of the task region on 1 and on 2 threads over repeat runs of each, the
    two alternating so that both see the same neighbours."""
    best = {1: float("inf"), 2: float("inf")}
    for _ in range(repeat):
        for threads in best:
            env = {**os.environ, **ENVIRONMENT, "OMP_NUM_THREADS": str(threads)}
            out = subprocess.run([str(exe), *args], capture_output=True, text=True, check=True, env=env).stdout
            if "check=ok" not in out:
                raise SystemExit(f"{exe.name} {' '.join(args)} failed its own check: {out.strip()}")
            best[threads] = min(best[threads], float(re.search(r"seconds=([0-9.]+)", out).group(1)))
    return best[1], best[2]


def predictions(trace_dir: Path, machine: Machine) -> dict[tuple[str, str], float]:
    """{(durations, policy): predicted speedup on 2 cores}; instructions at the program's rate."""
    dag = load_dag(trace_dir)
    timed = measured_dag(dag, trace_dir)
    ns = in_nanoseconds(machine)
    rate = replace(machine, instructions_per_second=dag.t1 / timed.t1 * 1e9)
    out = {}
    for kind, graph, m in (("instructions", dag, rate), ("measured", timed, ns)):
        for policy in POLICIES:
            out[kind, policy] = study(graph, [2], policy, m).table().column("speedup")[0]
    return out


def compare(name: str, tmp: Path, repeat: int, timing_runs: int, machine: Machine) -> list[str]:
    args = SIZES[name]
    traced_exe = build(EXAMPLES / name / f"{name}.c", tmp / name, shlex.split(toolchain.cflags()),
                       shlex.split(toolchain.libs()))
    omp_exe = build(EXAMPLES / f"{name}_omp" / f"{name}_omp.c", tmp / f"{name}_omp", ["-fopenmp"], [])
    directory = tmp / f"{name}.tareador"
    with output_discarded():
        trace([str(traced_exe), *args], directory, progress=False)
    subprocess.run([sys.executable, "-m", "tareador", "time", str(directory), "--repeat", str(timing_runs)],
                   check=True, stdout=subprocess.DEVNULL)
    loads = [os.getloadavg()[0]]
    one, two = measured(omp_exe, args, repeat)
    loads.append(os.getloadavg()[0])
    real = one / two
    predicted = predictions(directory, machine)
    rows = []
    for kind in ("instructions", "measured"):
        cells = [f"{predicted[kind, p]:.2f} ({100 * (predicted[kind, p] - real) / real:+.1f} %)" for p in POLICIES]
        first = (f"| {name} {' '.join(args)} | {real:.2f} ({one * 1e3:.1f} / {two * 1e3:.1f} ms) | "
                 f"{loads[0]:.1f}, {loads[1]:.1f}" if kind == "instructions" else "| | |")
        rows.append(f"{first} | {kind} | {' | '.join(cells)} |")
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--example", choices=[*SIZES, "all"], default="all")
    p.add_argument("--repeat", type=int, default=15, help="runs of each thread count; the fastest counts")
    p.add_argument("--timing-runs", type=int, default=5, help="tareador time --repeat (the median counts)")
    p.add_argument("--wait-policy", choices=WAIT_POLICIES, default="libgomp", help="OMP_WAIT_POLICY (default unset)")
    args = p.parse_args()
    wait_policy(args.wait_policy)
    names = list(SIZES) if args.example == "all" else [args.example]
    creation, start = runtime_costs(repeat=3)["depend"]
    machine = Machine(creation_cost=creation, start_cost=start)
    print(f"libgomp's costs (benchmarks/runtime_costs.py): creation {creation * 1e6:.3f} us, start "
          f"{start * 1e6:.3f} us per task; wait policy {args.wait_policy}; best of {args.repeat} runs per thread "
          "count\n")
    print("| program | measured speedup (1 / 2 threads) | load before, after | durations | cp | fifo | bf |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            print("\n".join(compare(name, Path(tmp), args.repeat, args.timing_runs, machine)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
