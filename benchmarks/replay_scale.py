"""Scale benchmark of the replay engine: a layered task graph of 2 M instances.

Generates a synthetic trace directory (one main fragment per layer creating that layer's tasks,
each task reading two random tasks of the previous layer), then, each in its own process so
that time and peak RSS (ru_maxrss from wait4) are that step's alone:
  simulate  `tareador simulate DIR --cores 64 --json` (trace loading included)
  write     ompss.dim / authentic.dim of the same graph (Tareador's Dimemas traces)
  replay    `tareador replay ompss.dim --machine 64-core machine --json` (parsing included)

    python benchmarks/replay_scale.py [--instances 2000000] [--cores 64]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TARGET_SECONDS, TARGET_BYTES = 30, 4 << 30


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


def measure(label: str, argv: list[str]) -> dict:
    """Run one step in a child; wall time and the child's own peak RSS."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, cwd=ROOT)
    out = child.stdout.read()
    _pid, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    if child.returncode:
        sys.exit(f"{label} failed with status {child.returncode}: {' '.join(argv)}")
    return {"step": label, "seconds": seconds, "peak_rss": usage.ru_maxrss * 1024, "output": out.decode()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instances", type=int, default=2_000_000)
    ap.add_argument("--width", type=int, default=2_000, help="task instances per layer")
    ap.add_argument("--cores", type=int, default=64)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "replay_scale")
    args = ap.parse_args()

    trace_dir = args.out / "trace"
    t = time.perf_counter()
    n, deps = generate(trace_dir, args.instances, args.width)
    print(f"generated {n} instances, {deps} dependencies in {time.perf_counter() - t:.1f} s ({trace_dir})")
    machine = args.out / "machine.toml"
    machine.write_text(f"[cpu]\ncores_per_node = {args.cores}\ninstructions_per_second = 1e9\n\n"
                       "[scheduler]\npolicy = \"cp\"\n")
    py = sys.executable
    steps = [
        measure("simulate", [py, "-m", "tareador", "simulate", str(trace_dir), "--cores", str(args.cores), "--json"]),
        measure("write .dim", [py, "-c", "import sys; from tareador.taskgraph.store import load_dag; "
                "from tareador.synthesis.ompss import write_dim_traces; "
                "write_dim_traces(load_dag(sys.argv[1]), sys.argv[1], 1e9)", str(trace_dir)]),
        measure("replay", [py, "-m", "tareador", "replay", str(trace_dir / "ompss.dim"), "--machine", str(machine),
                           "--json"]),
    ]
    simulated = json.loads(steps[0]["output"])["results"][0]["time"]
    replayed = json.loads(steps[2]["output"])["makespan"]
    size = (trace_dir / "ompss.dim").stat().st_size
    print(f"{'step':<11} {'time (s)':>9} {'peak RSS (MiB)':>15}  target <= {TARGET_SECONDS} s, <= 4096 MiB")
    for s in steps:
        ok = s["seconds"] <= TARGET_SECONDS and s["peak_rss"] <= TARGET_BYTES
        print(f"{s['step']:<11} {s['seconds']:>9.1f} {s['peak_rss'] / 2**20:>15.0f}  {'ok' if ok else 'MISSED'}")
    print(f"ompss.dim {size / 1e6:.0f} MB; makespan on {args.cores} cores: simulate {simulated:.6f} s, "
          f"replay {replayed:.6f} s")


if __name__ == "__main__":
    main()
