"""Scale benchmark of the simulators: a layered task graph of 2 M instances, and a 1,024-rank MPI
halo exchange.

Generates a synthetic trace directory (one main fragment per layer creating that layer's tasks,
each task reading two random tasks of the previous layer), then, each in its own process so
that time and peak RSS (ru_maxrss from wait4) are that step's alone:
  simulate  `tareador simulate DIR --cores 64 --json` (trace loading included)
  write     ompss.dim / authentic.dim of the same graph (Tareador's Dimemas traces)
  replay    `tareador replay ompss.dim --machine 64-core machine --json` (parsing included)
and generates the Dimemas trace of an MPI run (not traced): RANKS ranks on a periodic 2D grid,
each iteration a computation burst of about a millisecond (±10 %, so that ranks wait for each
other), an exchange with the 4 neighbours (4 irecvs, 4 immediate isends, a waitall) and an
MPI_Allreduce, replayed on a cluster of 16-core nodes whose nodes have one link each way:
  replay MPI `tareador replay halo.dim --machine cluster --json`

With --baseline TREE (e.g. `git worktree add /tmp/base main`) every step also runs with that
tree's tareador, on the same inputs, in the same run. Times are wall and CPU seconds; say the
load average beside them (printed) when the machine is shared.

    python benchmarks/replay_scale.py [--instances 2000000] [--cores 64] [--ranks 1024]
                                      [--iterations 1000] [--baseline /tmp/base]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from steps import ROOT, Step, load_average, run_step, tareador  # beside this script

TARGETS = {"simulate": (10, 2 << 30), "write .dim": (10, 2 << 30), "replay": (10, 2 << 30),
           "replay MPI": (30, None)}
WRITE_DIM = ("import sys\n"
             "try:\n    from tareador.taskgraph.store import load_dag\n"
             "except ImportError:\n    from tareador.taskgraph.dag import load_dag\n"
             "from tareador.synthesis.ompss import write_dim_traces\n"
             "write_dim_traces(load_dag(sys.argv[1]), sys.argv[1], 1e9)\n")


def generate(directory: Path, instances: int, width: int, seed: int = 1) -> tuple[int, int]:
    """Write tasks.csv/deps.csv/objects.csv/summary.json; returns (instances, dependencies)."""
    rng = np.random.default_rng(seed)
    per = width + 1
    layers = max(1, instances // per)
    n = layers * per
    idx = np.arange(n)
    layer, pos = idx // per, idx % per
    is_main = pos == 0
    instr = np.where(is_main, 100, rng.integers(1_000, 100_000, n))
    parent = np.where(is_main, -1, layer * per)
    instance = np.where(is_main, 0, idx)
    counter = np.concatenate([[0], np.cumsum(instr)[:-1]])
    names = np.where(is_main, "main", np.where(pos % 3 == 0, "stencil", np.where(pos % 3 == 1, "reduce", "update")))
    dst = np.repeat(idx[~is_main & (layer > 0)], 2)
    src = (layer[dst] - 1) * per + 1 + rng.integers(0, width, len(dst))
    pairs = np.unique(np.stack([src, dst], 1), axis=0)
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "tasks.csv").open("w") as f:
        f.write("id,name,instance,parent,start,end,instructions\n")
        f.writelines(f"{i},{m},{k},{p},{c},{c + w},{w}\n" for i, m, k, p, c, w in
                     zip(idx.tolist(), names.tolist(), instance.tolist(), parent.tolist(), counter.tolist(),
                         instr.tolist()))
    with (directory / "deps.csv").open("w") as f:
        f.write("src,dst,kind,object,bytes\n")
        f.writelines(f"{s},{d},RAW,grid,8\n" for s, d in pairs.tolist())
    (directory / "objects.csv").write_text("id,name,kind,address,size,site\n0,grid,heap,4096,1048576,bench.c:1\n")
    (directory / "summary.json").write_text(json.dumps({"instances": int(n - layers), "program": "synthetic"}) + "\n")
    return n, len(pairs)


def generate_halo(path: Path, ranks: int, iterations: int, halo_bytes: int = 8192, seed: int = 1) -> int:
    """An MPI run's authentic.dim-style trace: ``ranks`` on a periodic near-square grid, each
    iteration compute, exchange halos with the 4 neighbours, allreduce. Returns its records.

    A message to the neighbour in direction d carries tag d; a rank receives from the neighbour
    in direction d what that one sent the opposite way. MPI call events (Extrae's types) frame
    the calls as tareador's own traces do.
    """
    from tareador.formats.dimemas import write_dim

    rows = max(d for d in range(1, math.isqrt(ranks) + 1) if ranks % d == 0)
    cols = ranks // rows
    rng = np.random.default_rng(seed)
    compute = rng.uniform(0.9e-3, 1.1e-3, (ranks, iterations))
    opposite = [1, 0, 3, 2]  # north <-> south, west <-> east

    def neighbours(r: int) -> list[int]:
        i, j = divmod(r, cols)
        return [((i - 1) % rows) * cols + j, ((i + 1) % rows) * cols + j, i * cols + (j - 1) % cols,
                i * cols + (j + 1) % cols]

    def block(r: int) -> str:
        nb = neighbours(r)
        irecv = "".join(f"3:{r}:0:{nb[d]}:{halo_bytes}:{opposite[d]}:0:1\n" for d in range(4))
        isend = "".join(f"2:{r}:0:{nb[d]}:{halo_bytes}:{d}:0:2\n" for d in range(4))
        wait = "".join(f"3:{r}:0:{nb[d]}:{halo_bytes}:{opposite[d]}:0:2\n" for d in range(4))
        exchange = (f"20:{r}:0:50000001:4\n{irecv}20:{r}:0:50000001:0\n20:{r}:0:50000001:3\n{isend}"
                    f"20:{r}:0:50000001:0\n20:{r}:0:50000001:6\n{wait}20:{r}:0:50000001:0\n"
                    f"20:{r}:0:50000002:10\n10:{r}:0:11:1:0:0:8:8:1\n20:{r}:0:50000002:0\n")
        return f"1:{r}:0:0.000000000\n" + "".join(f"1:{r}:0:{c:.9f}\n{exchange}" for c in compute[r].tolist())

    write_dim(path, "halo", [1] * ranks, (block(r) for r in range(ranks)), {1: tuple(range(ranks))})
    return ranks * (1 + iterations * 22)


def halo_machine(path: Path, ranks: int) -> Path:
    path.write_text(f"[cpu]\nnodes = {-(-ranks // 16)}\ncores_per_node = 16\ntasks_per_node = 16\n\n"
                    "[network]\nintra_latency = 1e-6\nintra_bandwidth = 1000.0\ninter_latency = 1e-5\n"
                    "inter_bandwidth = 1000.0\nin_links = 1\nout_links = 1\ncollective_model = 3\n")
    return path


def measure(trees: dict[str, Path], trace_dir: Path, machine: Path, halo: Path, halo_m: Path) -> dict[str, list[Step]]:
    """Every step with each tree's tareador, one after the other on the same inputs."""
    results: dict[str, list[Step]] = {}
    py = sys.executable
    for name, tree in trees.items():
        results[name] = [
            run_step("simulate", tareador("simulate", str(trace_dir), "--cores", "64", "--json"), tree),
            run_step("write .dim", [py, "-c", WRITE_DIM, str(trace_dir)], tree),
            run_step("replay", tareador("replay", str(trace_dir / "ompss.dim"), "--machine", str(machine), "--json"),
                     tree),
            run_step("replay MPI", tareador("replay", str(halo), "--machine", str(halo_m), "--json"), tree),
        ]
    return results


def report(results: dict[str, list[Step]], loads: tuple[float, float]) -> None:
    names = list(results)
    head = f"{'step':<11}" + "".join(f" {n + ' time (s)':>16} {'CPU (s)':>8} {'peak RSS (MiB)':>15}" for n in names)
    print(f"{head}  target")
    for k, step in enumerate(results[names[0]]):
        seconds, rss = TARGETS[step.label]
        line = f"{step.label:<11}"
        for n in names:
            s = results[n][k]
            line += (f" {s.seconds:>16.1f} {s.cpu:>8.1f} {s.peak_rss / 2**20:>15.0f}" if s.ok else
                     f" {'failed: ' + s.error:>41.41}")
        met = step.ok and step.seconds <= seconds and (rss is None or step.peak_rss <= rss)
        limit = f"<= {seconds} s" + (f", <= {rss >> 20} MiB" if rss else "")
        print(f"{line}  {limit}: {'met' if met else 'MISSED'} ({names[0]})")
    print(f"load average {loads[0]:.1f} before, {loads[1]:.1f} after")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instances", type=int, default=2_000_000)
    ap.add_argument("--width", type=int, default=2_000, help="task instances per layer")
    ap.add_argument("--cores", type=int, default=64)
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--iterations", type=int, default=1000, help="halo exchanges of the MPI case")
    ap.add_argument("--baseline", type=Path, metavar="TREE", help="also run every step with this tree's tareador")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "replay_scale")
    args = ap.parse_args()

    trace_dir = args.out / "trace"
    t = time.perf_counter()
    n, deps = generate(trace_dir, args.instances, args.width)
    print(f"generated {n} instances, {deps} dependencies in {time.perf_counter() - t:.1f} s ({trace_dir})")
    machine = args.out / "machine.toml"
    machine.write_text(f"[cpu]\ncores_per_node = {args.cores}\ninstructions_per_second = 1e9\n\n"
                       "[scheduler]\npolicy = \"cp\"\n")
    t = time.perf_counter()
    halo = args.out / "halo.dim"
    records = generate_halo(halo, args.ranks, args.iterations)
    print(f"generated {halo}: {args.ranks} ranks, {args.iterations} iterations, {records} records, "
          f"{halo.stat().st_size / 1e6:.0f} MB in {time.perf_counter() - t:.1f} s")
    trees = {"this": ROOT} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    before = load_average()
    results = measure(trees, trace_dir, machine, halo, halo_machine(args.out / "halo.toml", args.ranks))
    report(results, (before, load_average()))
    steps = results["this"]
    if all(s.ok for s in steps):
        simulated = json.loads(steps[0].output)["results"][0]["time"]
        replayed = json.loads(steps[2].output)["makespan"]
        print(f"ompss.dim {(trace_dir / 'ompss.dim').stat().st_size / 1e6:.0f} MB; makespan on {args.cores} cores: "
              f"simulate {simulated:.6f} s, replay {replayed:.6f} s; the MPI run's "
              f"{json.loads(steps[3].output)['makespan']:.6f} s")


if __name__ == "__main__":
    main()
