"""What libgomp costs per task on this machine, as the [runtime] costs of a machine file.

Usage: python benchmarks/runtime_costs.py [--repeat R] [--rounds N]

Builds benchmarks/runtime_costs.c (gcc -O2 -fopenmp) and runs it R times for empty tasks with
and without a depend clause, 2 threads, with libgomp's own wait policy unless --wait-policy says
(as predict_vs_real.py runs the examples): creation is the creating thread's time per task,
start the time of the thread that runs one to start, run and retire it (an empty task). The
fastest of the R runs counts (the machine is shared: slower runs measure the neighbours).
Prints both and the lines to put in a machine file, with the load average.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path(__file__).with_suffix(".c")
ENVIRONMENT = {"OMP_NUM_THREADS": "2"}
# OMP_WAIT_POLICY: libgomp's default (unset) spins a while, then sleeps; passive sleeps at once, so
# every taskwait and every idle spell costs a futex wake-up that tareador's runtime model has no
# term for; active never sleeps. The default is what a user's run does.
WAIT_POLICIES = ("libgomp", "passive", "active")


def wait_policy(policy: str) -> None:
    """Make ``policy`` the OMP_WAIT_POLICY of every run measured from here on."""
    ENVIRONMENT.pop("OMP_WAIT_POLICY", None)
    if policy != "libgomp":
        ENVIRONMENT["OMP_WAIT_POLICY"] = policy


def measure(repeat: int = 5, rounds: int = 2000) -> dict[str, tuple[float, float]]:
    """{"depend": (creation, start), "plain": (...)} in seconds per task, the fastest runs."""
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "runtime_costs"
        subprocess.run(["cc", "-O2", "-fopenmp", str(SOURCE), "-o", str(exe)], check=True)
        best = {"plain": [float("inf")] * 2, "depend": [float("inf")] * 2}
        for _ in range(repeat):
            for kind, flag in (("plain", "0"), ("depend", "1")):
                out = subprocess.run([str(exe), str(rounds), flag], capture_output=True, text=True, check=True,
                                     env={**os.environ, **ENVIRONMENT}).stdout
                values = [float(x) for x in re.findall(r"=([0-9.e+-]+)", out)]
                best[kind] = [min(a, b) for a, b in zip(best[kind], values)]
    return {kind: (v[0], v[1]) for kind, v in best.items()}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=5, help="runs of each kind; the fastest counts")
    p.add_argument("--rounds", type=int, default=2000, help="rounds of 100 tasks per run")
    p.add_argument("--wait-policy", choices=WAIT_POLICIES, default="libgomp", help="OMP_WAIT_POLICY (default unset)")
    args = p.parse_args()
    wait_policy(args.wait_policy)
    load = os.getloadavg()[0]
    costs = measure(args.repeat, args.rounds)
    print(f"libgomp, 2 threads, wait policy {args.wait_policy}, fastest of {args.repeat} runs of "
          f"{args.rounds * 100} empty "
          f"tasks; load average {load:.1f} before, {os.getloadavg()[0]:.1f} after")
    for kind, label in (("plain", "#pragma omp task"), ("depend", "#pragma omp task depend(inout: x[i])")):
        creation, start = costs[kind]
        print(f"  {label:<40} creation {creation * 1e6:.3f} us, start {start * 1e6:.3f} us")
    creation, start = costs["depend"]
    print(f"\n[runtime]\ncreation_cost = {creation:.3g}   # seconds per task created (depend)\n"
          f"start_cost = {start:.3g}      # seconds per task started")
    return 0


if __name__ == "__main__":
    sys.exit(main())
