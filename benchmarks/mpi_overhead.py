"""What tracing an MPI run costs, per rank, against tracing the same kind of work in one process.

Usage: python benchmarks/mpi_overhead.py [--mpi mpich,openmpi] [--n 1024] [--iters 10] [--repeat 3]

examples/jacobi is the workload (blocked 2D Jacobi, halo exchange with Isend/Irecv/Waitall):
every rank runs the same code on N/P rows, so a P-rank run is P copies of one rank's work plus
the messages. Three tables:

1. Startup: `tareador mpirun` of Jacobi with no iterations (MPI_Init, the exchange-free loop,
   MPI_Finalize): each rank's `tracing_seconds` (its summary.json: spawn, Frida attach, agent,
   MPI_Init under the tracer, decoding; not writing its files) against `mpiexec` of the same
   binary untraced; then its parts, by difference with an empty C program traced alone.
2. Per-rank cost: the traced seconds of each rank beyond that startup, per traced memory access
   (the summary's `accesses`, what the tracer's work is proportional to), for one rank alone
   (`-np 1`, the sequential reference: the same binary, the same loop, no messages) and for P
   ranks. With P = 2 each rank has a core of this 2-core machine, so its seconds are its own and
   their ratio to one rank's is the per-rank overhead of tracing MPI; with P = 4 two ranks share
   each core, so a rank's wall seconds are about twice its own. Also shown: the whole run's CPU
   seconds (every process: launcher, tracers, programs, the untraced check each rank makes after
   tareador_OFF, post-processing) per traced access, which sharing cores does not inflate.
3. The acceptance run: `tareador mpirun -np 4` of the Jacobi example with its defaults, whole
   wall time, for each MPI.

Every run is repeated R times and the fastest kept (the machine is shared). Prints Markdown
tables for README.md.
"""

from __future__ import annotations

import argparse
import json
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tareador.tracing import toolchain
from tareador.tracing.mpi_launch import MPIS

ROOT = Path(__file__).resolve().parents[1]


def build(mpi, out: Path) -> Path:
    subprocess.run(["make", "-s", "-C", str(ROOT / "examples"), f"MPI={mpi.name}", f"BIN={out}",
                    f"TAREADOR_CFLAGS={toolchain.cflags()}", f"TAREADOR_LIBS={toolchain.libs()}", "jacobi"],
                   check=True)
    return out / mpi.name / "jacobi"


def run_once(cmd: list[str], env: dict | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of every process it started) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def traced(exe: Path, ranks: int, args: list[str], out: Path, repeat: int) -> dict:
    """The fastest of ``repeat`` traced runs: its wall and CPU seconds and each rank's summary."""
    best = None
    for _ in range(repeat):
        cmd = [sys.executable, "-m", "tareador", "mpirun", "-np", str(ranks), "-o", str(out), "--", str(exe), *args]
        wall, cpu = run_once(cmd)
        if best is None or wall < best["wall"]:
            ranks_ = [json.loads((out / f"rank-{r}" / "summary.json").read_text()) for r in range(ranks)]
            best = {"wall": wall, "cpu": cpu, "ranks": ranks_}
    return best


def native(mpi, exe: Path, ranks: int, args: list[str], repeat: int) -> float:
    """The untraced run, with the environment `tareador mpirun` gives the launcher (root, more
    ranks than cores)."""
    cmd = mpi.command(ranks, [str(exe), *args])
    return min(run_once(cmd, mpi.env())[0] for _ in range(repeat))


def startup(mpi, exe: Path, tmp: Path, repeat: int) -> dict[int, float]:
    print(f"\n{mpi.title}: startup, Jacobi with no iterations (N = 8, BS = 1)\n")
    print("| ranks | mpiexec, untraced (s) | tareador mpirun (s) | per rank: tracing_seconds (s) |")
    print("|---|---|---|---|")
    per_rank = {}
    for ranks in (1, 2, 4):
        args = ["8", "1", "0"]
        t = traced(exe, ranks, args, tmp / f"startup-{ranks}", repeat)
        seconds = [s["tracing_seconds"] for s in t["ranks"]]
        per_rank[ranks] = min(seconds)
        print(f"| {ranks} | {native(mpi, exe, ranks, args, repeat):.2f} | {t['wall']:.2f} | "
              f"{min(seconds):.2f} to {max(seconds):.2f} |")
    return per_rank


def startup_parts(exe: Path, tmp: Path, repeat: int) -> None:
    """Where a rank's startup goes, by difference: the Python side alone, the tracer on a C
    program that does nothing (spawn, Frida attach, agent load and compile, writing the trace),
    and the same on one rank of Jacobi with no iterations (MPI_Init and MPI_Finalize under the
    tracer, and the MPI library's start)."""
    empty = tmp / "empty"
    subprocess.run(["cc", *shlex.split(toolchain.cflags()), "-x", "c", "-", "-o", str(empty),
                    *shlex.split(toolchain.libs())], input=b"int main(void) { return 0; }\n", check=True)
    python = min(run_once([sys.executable, "-m", "tareador", "config", "--cflags"])[0] for _ in range(repeat))
    wall, seconds = float("inf"), float("inf")
    for _ in range(repeat):
        wall = min(wall, run_once([sys.executable, "-m", "tareador", "trace", "-o", str(tmp / "empty.tareador"),
                                   "--", str(empty)])[0])
        seconds = min(seconds, json.loads((tmp / "empty.tareador" / "summary.json").read_text())["tracing_seconds"])
    mpi = traced(exe, 1, ["8", "1", "0"], tmp / "startup-parts", repeat)["ranks"][0]["tracing_seconds"]
    print("\n| part of a rank's startup | seconds |\n|---|---|")
    print(f"| Python and tareador's imports (`tareador config`) | {python:.2f} |")
    print(f"| tracer on an empty C program: spawn, Frida attach, agent (its `tracing_seconds`) | {seconds:.2f} |")
    print(f"| the same, whole `tareador trace` command (imports, writing the trace) | {wall:.2f} |")
    print(f"| MPI_Init/Finalize under the tracer (1-rank Jacobi, no iterations, minus the empty program) | "
          f"{mpi - seconds:.2f} |")


def per_rank_cost(exe: Path, tmp: Path, n: int, iters: int, repeat: int, fixed: dict[int, float]) -> None:
    print(f"\nper rank: Jacobi N = {n} x {n}, BS = 16, {iters} iterations, split over the ranks; "
          "ns per traced access beyond startup\n")
    print("| ranks | accesses per rank (M) | wall per rank (s) | ns/access per rank | vs 1 rank | "
          "whole run: wall (s) | CPU (s) | CPU ns/access | vs 1 rank |")
    print("|---|---|---|---|---|---|---|---|---|")
    base = None
    for ranks in (1, 2, 4):
        t = traced(exe, ranks, [str(n), "16", str(iters)], tmp / f"jacobi-{ranks}", repeat)
        accesses = [s["accesses"] for s in t["ranks"]]
        worst = max((s["tracing_seconds"] - fixed[ranks]) / s["accesses"] * 1e9 for s in t["ranks"])
        cpu = t["cpu"] / sum(accesses) * 1e9
        base = base or (worst, cpu)
        print(f"| {ranks} | {max(accesses) / 1e6:.1f} | {max(s['tracing_seconds'] for s in t['ranks']):.2f} | "
              f"{worst:.1f} | {worst / base[0]:.2f}× | {t['wall']:.2f} | {t['cpu']:.2f} | {cpu:.1f} | "
              f"{cpu / base[1]:.2f}× |")


def acceptance(mpi, exe: Path, tmp: Path, repeat: int) -> None:
    t = traced(exe, 4, [], tmp / "jacobi-default", repeat)
    print(f"| {mpi.title} | `tareador mpirun -np 4 -o DIR -- jacobi` (96 x 96, 4 iterations) | {t['wall']:.2f} | "
          f"{native(mpi, exe, 4, [], repeat):.2f} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mpi", default=",".join(MPIS), help="MPIs to measure (default: both)")
    ap.add_argument("--n", type=int, default=1024, help="grid size of the per-rank table (a multiple of 64)")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    mpis = [MPIS[name] for name in args.mpi.split(",")]
    missing = [m.name for m in mpis if not m.installed()]
    if missing:
        sys.exit(f"mpi_overhead: {', '.join(missing)} not installed; `make deps` installs it")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        exes = {m.name: build(m, tmp / "bin") for m in mpis}
        for m in mpis:
            fixed = startup(m, exes[m.name], tmp / m.name, args.repeat)
            startup_parts(exes[m.name], tmp / m.name, args.repeat)
            per_rank_cost(exes[m.name], tmp / m.name, args.n, args.iters, args.repeat, fixed)
        print("\n| MPI | run | wall (s) | untraced (s) |\n|---|---|---|---|")
        for m in mpis:
            acceptance(m, exes[m.name], tmp / m.name, args.repeat)
    print(f"\n(command: {shlex.join(sys.argv)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
