"""What tracing an MPI run costs, per rank, against tracing the same kind of work in one process.

Usage: python benchmarks/mpi_overhead.py [--mpi mpich,openmpi] [--n 1024] [--iters 10] [--repeat 3]

examples/jacobi is the workload (blocked 2D Jacobi, halo exchange with Isend/Irecv/Waitall):
every rank runs the same code on N/P rows, so a P-rank run is P copies of one rank's work plus
the messages. Three tables:

1. Startup: `tareador mpirun` of Jacobi with no iterations (MPI_Init, the exchange-free loop,
   MPI_Finalize): each rank's `tracing_seconds` (its summary.json: spawn, Frida attach, agent,
   MPI_Init under the tracer, decoding; not writing its files) against `mpiexec` of the same
   binary untraced; then its parts, by difference with an empty C program traced alone.
2. Per-rank cost: each rank's CPU seconds (its tracer and its traced program, measured around
   the tracer that the launcher starts for the rank, as `tareador mpirun` starts it), beyond the
   same rank's CPU seconds in a run with no iterations, per traced memory access (the summary's
   `accesses`, what the tracer's work is proportional to); for one rank alone (`-np 1`: the
   sequential reference, the same binary and loop, no messages) and for P ranks. CPU seconds,
   not wall seconds: 4 ranks share the 2 cores of this machine (and other jobs share them too),
   which stretches every rank's wall time but not the CPU its tracing takes. Two things in a
   rank's CPU are not tracing and count against the P-rank runs, so their ratio to one rank is
   an upper bound: the untraced check each rank makes after tareador_OFF (the whole grid, P
   times one rank's share of it), and the MPI library polling inside MPI_Waitall and
   MPI_Finalize while a neighbour waits for a core (MPI ranks busy-wait).
3. The acceptance run: `tareador mpirun -np 4` of the Jacobi example with its defaults, whole
   wall time, for each MPI.

Every run is repeated R times and the fastest kept (the machine is shared). Prints Markdown
tables for docs/costs.md.
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
from tareador.tracing.mpirun import TRACER
from tareador.workers import launch_rank

ROOT = Path(__file__).resolve().parents[1]


def build(mpi, out: Path) -> Path:
    subprocess.run(["make", "-s", "-C", str(ROOT / "examples"), f"MPI={mpi.name}", f"BIN={out}",
                    f"TAREADOR_CFLAGS={toolchain.cflags()}", f"TAREADOR_LIBS={toolchain.libs()}", "jacobi"],
                   check=True)
    return out / mpi.name / "jacobi"


def run_once(cmd: list[str], env: dict | None = None) -> float:
    """Wall seconds of one run."""
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def traced(exe: Path, ranks: int, args: list[str], out: Path, repeat: int) -> dict:
    """The fastest of ``repeat`` traced runs: its wall seconds and each rank's summary."""
    best = None
    for _ in range(repeat):
        cmd = [sys.executable, "-m", "tareador", "mpirun", "-np", str(ranks), "-o", str(out), "--", str(exe), *args]
        wall = run_once(cmd)
        if best is None or wall < best["wall"]:
            ranks_ = [json.loads((out / f"rank-{r}" / "summary.json").read_text()) for r in range(ranks)]
            best = {"wall": wall, "ranks": ranks_}
    return best


def native(mpi, exe: Path, ranks: int, args: list[str], repeat: int) -> float:
    """The untraced run, with the environment `tareador mpirun` gives the launcher (root, more
    ranks than cores)."""
    cmd = mpi.command(ranks, [str(exe), *args])
    return min(run_once(cmd, mpi.env()) for _ in range(repeat))


def startup(mpi, exe: Path, tmp: Path, repeat: int) -> None:
    print(f"\n{mpi.title}: startup, Jacobi with no iterations (N = 8, BS = 1)\n")
    print("| ranks | mpiexec, untraced (s) | tareador mpirun (s) | per rank: tracing_seconds (s) |")
    print("|---|---|---|---|")
    for ranks in (1, 2, 4):
        args = ["8", "1", "0"]
        t = traced(exe, ranks, args, tmp / f"startup-{ranks}", repeat)
        seconds = [s["tracing_seconds"] for s in t["ranks"]]
        print(f"| {ranks} | {native(mpi, exe, ranks, args, repeat):.2f} | {t['wall']:.2f} | "
              f"{min(seconds):.2f} to {max(seconds):.2f} |")


def startup_parts(exe: Path, tmp: Path, repeat: int) -> None:
    """Where a rank's startup goes, by difference: the Python side alone, the tracer on a C
    program that does nothing (spawn, Frida attach, agent load and compile, writing the trace),
    and the same on one rank of Jacobi with no iterations (MPI_Init and MPI_Finalize under the
    tracer, and the MPI library's start)."""
    empty = tmp / "empty"
    subprocess.run(["cc", *shlex.split(toolchain.cflags()), "-x", "c", "-", "-o", str(empty),
                    *shlex.split(toolchain.libs())], input=b"int main(void) { return 0; }\n", check=True)
    python = min(run_once([sys.executable, "-m", "tareador", "config", "--cflags"]) for _ in range(repeat))
    wall, seconds = float("inf"), float("inf")
    for _ in range(repeat):
        wall = min(wall, run_once([sys.executable, "-m", "tareador", "trace", "-o", str(tmp / "empty.tareador"),
                                   "--", str(empty)]))
        seconds = min(seconds, json.loads((tmp / "empty.tareador" / "summary.json").read_text())["tracing_seconds"])
    mpi = traced(exe, 1, ["8", "1", "0"], tmp / "startup-parts", repeat)["ranks"][0]["tracing_seconds"]
    print("\n| part of a rank's startup | seconds |\n|---|---|")
    print(f"| Python and tareador's imports (`tareador config`) | {python:.2f} |")
    print(f"| tracer on an empty C program: spawn, Frida attach, agent (its `tracing_seconds`) | {seconds:.2f} |")
    print(f"| the same, whole `tareador trace` command (imports, writing the trace) | {wall:.2f} |")
    print(f"| MPI_Init/Finalize under the tracer (1-rank Jacobi, no iterations, minus the empty program) | "
          f"{mpi - seconds:.2f} |")


def rank_cpu(out: Path, command: list[str]) -> int:
    """``--rank-cpu OUT -- COMMAND``, what the launcher starts for each rank: run the rank's
    tracer, then write the CPU seconds it and the program it traced took to OUT/cpu-RANK."""
    status = subprocess.run(command, close_fds=False).returncode  # the launcher's PMI descriptors
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    (out / f"cpu-{launch_rank()}").write_text(f"{usage.ru_utime + usage.ru_stime}\n")
    return status


def ranks_cpu(mpi, exe: Path, ranks: int, args: list[str], out: Path, repeat: int) -> list[tuple[float, int]]:
    """(CPU seconds, traced accesses) of each rank, from the run (of ``repeat``) whose slowest rank
    took least."""
    best = None
    for _ in range(repeat):
        tracer = [sys.executable, *TRACER, "-o", str(out), "--", str(exe), *args]
        command = mpi.command(ranks, [sys.executable, __file__, "--rank-cpu", str(out), "--", *tracer])
        run_once(command, mpi.env())
        got = [(float((out / f"cpu-{r}").read_text()),
                json.loads((out / f"rank-{r}" / "summary.json").read_text())["accesses"]) for r in range(ranks)]
        if best is None or max(got)[0] < max(best)[0]:
            best = got
    return best


def per_rank_cost(mpi, exe: Path, tmp: Path, n: int, iters: int, repeat: int) -> None:
    print(f"\nper rank: Jacobi N = {n} x {n}, BS = 16, {iters} iterations, split over the ranks; CPU per rank\n")
    print("| ranks | accesses per rank (M) | CPU per rank (s) | of which startup (s) | ns per access | vs 1 rank |")
    print("|---|---|---|---|---|---|")
    base = None
    for ranks in (1, 2, 4):
        fixed = min(c for c, _a in ranks_cpu(mpi, exe, ranks, [str(n), "16", "0"], tmp / f"idle-{ranks}", repeat))
        got = ranks_cpu(mpi, exe, ranks, [str(n), "16", str(iters)], tmp / f"jacobi-{ranks}", repeat)
        per_access = max((cpu - fixed) / accesses for cpu, accesses in got) * 1e9
        base = base or per_access
        print(f"| {ranks} | {max(a for _c, a in got) / 1e6:.1f} | {min(c for c, _a in got):.2f} to "
              f"{max(c for c, _a in got):.2f} | {fixed:.2f} | {per_access:.1f} | {per_access / base:.2f}× |")


def acceptance(mpi, exe: Path, tmp: Path, repeat: int) -> None:
    t = traced(exe, 4, [], tmp / "jacobi-default", repeat)
    print(f"| {mpi.title} | `tareador mpirun -np 4 -o DIR -- jacobi` (96 x 96, 4 iterations) | {t['wall']:.2f} | "
          f"{native(mpi, exe, 4, [], repeat):.2f} |")


def main() -> int:
    if sys.argv[1:2] == ["--rank-cpu"]:
        return rank_cpu(Path(sys.argv[2]), sys.argv[4:])
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
            startup(m, exes[m.name], tmp / m.name, args.repeat)
            startup_parts(exes[m.name], tmp / m.name, args.repeat)
            per_rank_cost(m, exes[m.name], tmp / m.name, args.n, args.iters, args.repeat)
        print("\n| MPI | run | wall (s) | untraced (s) |\n|---|---|---|---|")
        for m in mpis:
            acceptance(m, exes[m.name], tmp / m.name, args.repeat)
    print(f"\n(command: {shlex.join(sys.argv)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
