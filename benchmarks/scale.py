"""Every stage of tareador from 10^3 to 10^6 task instances: time, peak RSS and how they grow.

The program is a 2D wavefront of N x N tasks of about 400 instructions (cell (i, j) reads its
north and west neighbours), generated as C with markers and traced at N = sqrt(instances).
Each stage runs in its own process (wall and CPU seconds, its peak RSS from wait4):
  trace            tareador trace -o DIR -- wavefront N
  load             tareador.load(DIR) and its task graph (trace.dag)
  simulate         tareador simulate DIR --json (6 core counts: 1, 2, 4, 8, 16, inf)
  simulate+out     tareador simulate DIR --prv --chrome -o OUT (the same, plus 6 Paraver and
                   6 Chrome files; their size is shown, and the writers' own cost per instance
                   is this stage's CPU minus simulate's)
  whatif           tareador whatif DIR
  hints            tareador hints DIR
  graph            tareador graph DIR -o OUT (collapsed by task type at these sizes)
  graph never      tareador graph DIR --collapse never -o OUT (every instance; DOT only past 2000)
and the trace directory's size. A stage that fails or outlives --timeout is reported with its
message and the benchmark goes on. Where tracing fails (today above ~300k instances: Frida's
message limit, issue 18 item 1) the other stages run on the directory the trace would have
written, generated from the pattern of the traced ones (checked equal to the traced directory
at the smallest size) and marked "generated"; its binary form (tables/) is then written from its
CSVs, byte for byte what tracing writes.

With --baseline TREE (e.g. `git worktree add /tmp/base main`) every stage also runs with that
tree's tareador on the same directory, in the same run. Growth slope: the least-squares fit of
log(cost) against log(instances) from 10^4 instances up to that size, 1 = linear (at 10^3 every
stage costs Python's start-up, about 0.25 s, which would flatten the fit). CPU seconds are the steadier figure
on a shared machine; the load average is printed. A second table sets each stage's target of
issue 18 beside what the largest size measured.

    python benchmarks/scale.py [--sizes 1000,10000,100000,1000000] [--baseline /tmp/base]
                               [--timeout 1800] [--stages trace,load,...]
"""

from __future__ import annotations

import argparse
import math
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from steps import ROOT, Step, load_average, run_step, slope, tareador  # beside this script
from wavefront_trace import SOURCE, generate_directory, same_tables

from tareador.taskgraph.store import write_binary_form

STAGES = ("trace", "load", "simulate", "simulate+out", "whatif", "hints", "graph", "graph never")
LOAD = "import sys, tareador\nt = tareador.load(sys.argv[1])\nt.dag\n"


@dataclass
class Size:
    n: int  # the wavefront's side
    instances: int
    trace_dir: Path
    generated: bool = False
    directory_bytes: int = 0
    steps: dict[str, dict[str, Step]] = field(default_factory=dict)  # stage -> tree -> step
    outputs: dict[str, int] = field(default_factory=dict)  # tree -> bytes simulate+out wrote


def build(out: Path) -> Path:
    """The wavefront program, compiled against this checkout's tareador.h and library."""
    from tareador.tracing import toolchain

    source, exe = out / "wavefront.c", out / "wavefront"
    source.write_text(SOURCE)
    subprocess.run(["cc", "-g", "-O0", *toolchain.cflags().split(), str(source), "-o", str(exe),
                    *toolchain.libs().split()], check=True)
    return exe


def stage_argv(stage: str, trace_dir: Path, out: Path, exe: Path, n: int) -> list[str]:
    return {
        "trace": tareador("trace", "--no-progress", "-o", str(trace_dir), "--", str(exe), str(n)),
        "load": [sys.executable, "-c", LOAD, str(trace_dir)],
        "simulate": tareador("simulate", str(trace_dir), "--json"),
        "simulate+out": tareador("simulate", str(trace_dir), "--prv", "--chrome", "-o", str(out)),
        "whatif": tareador("whatif", str(trace_dir)),
        "hints": tareador("hints", str(trace_dir)),
        "graph": tareador("graph", str(trace_dir), "-o", str(out)),
        "graph never": tareador("graph", str(trace_dir), "--collapse", "never", "-o", str(out)),
    }[stage]


def run_size(size: Size, trees: dict[str, Path], stages: list[str], exe: Path, out: Path, timeout: float,
             template: Path | None) -> None:
    """Trace with this tree (and the baseline's tracer into a scratch directory), then every
    other stage with each tree on this tree's directory."""
    for stage in stages:
        size.steps[stage] = {}
        for name, tree in trees.items():
            scratch = out / f"{name}-{stage.replace(' ', '-')}"
            shutil.rmtree(scratch, ignore_errors=True)
            target = size.trace_dir if stage == "trace" and name == "this" else scratch
            argv = stage_argv(stage, size.trace_dir if stage != "trace" else target, scratch, exe, size.n)
            if stage != "trace" and not (size.trace_dir / "tasks.csv").exists():
                continue
            step = run_step(stage, argv, tree, timeout)
            size.steps[stage][name] = step
            if stage == "simulate+out" and step.ok:
                size.outputs[name] = sum(p.stat().st_size for p in scratch.iterdir())
            if stage != "trace" or name != "this":
                shutil.rmtree(scratch, ignore_errors=True)
        if stage == "trace" and not size.steps[stage]["this"].ok and template is not None:
            generate_directory(size.trace_dir, size.n, exe, template)
            write_binary_form(size.trace_dir)
            size.generated = True
    if (size.trace_dir / "tasks.csv").exists():
        size.directory_bytes = sum(p.stat().st_size for p in size.trace_dir.rglob("*") if p.is_file())


def report(sizes: list[Size], trees: list[str], stages: list[str], loads: tuple[float, float]) -> None:
    """A Markdown table: per stage and size, each tree's seconds, CPU per instance, peak RSS, and
    this tree's growth slopes; then the writers' cost and the directory sizes."""
    head = ["stage", "instances"]
    for name in trees:
        head += [f"{name}: time (s)", "CPU (s)", "CPU/instance (µs)", "peak RSS (MiB)"]
    head += ["slope CPU", "slope RSS"]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for stage in stages:
        measured = [s for s in sizes if stage in s.steps]
        for k, size in enumerate(measured):
            cells = [stage + (" (generated)" if size.generated and stage != "trace" else ""), f"{size.instances:,}"]
            for name in trees:
                step = size.steps[stage].get(name)
                if step is None:
                    cells += ["no trace", "", "", ""]
                elif not step.ok:
                    cells += [f"failed: {step.error[:90]}", "", "", ""]
                else:
                    cells += [f"{step.seconds:.2f}", f"{step.cpu:.2f}", f"{step.cpu / size.instances * 1e6:.1f}",
                              f"{step.peak_rss / 2**20:.0f}"]
            fitted = [s for s in measured[:k + 1] if s.instances >= FIT_FROM]
            series = [s.steps[stage].get(trees[0]) for s in fitted]
            ns = [s.instances for s in fitted]
            cpu = slope(ns, [st.cpu if st and st.ok else None for st in series])
            rss = slope(ns, [st.peak_rss if st and st.ok else None for st in series])
            cells += ["" if cpu is None else f"{cpu:.2f}", "" if rss is None else f"{rss:.2f}"]
            print("| " + " | ".join(cells) + " |")
    print()
    targets(sizes, stages)
    print()
    writers(sizes, trees)
    for size in sizes:
        if size.directory_bytes:
            print(f"trace directory at {size.instances:,} instances: {size.directory_bytes / 1e6:.1f} MB, "
                  f"{size.directory_bytes / size.instances:.0f} bytes per instance"
                  + (" (generated)" if size.generated else ""))
    print(f"load average {loads[0]:.1f} at the start, {loads[1]:.1f} at the end")


LINEAR = 1.2  # the largest growth slope taken as linear on a noisy machine
FIT_FROM = 10_000  # the smallest size in the growth fits
# stage -> issue 18's target, and how this tree's measurements (every size's step) meet it.
TARGETS = {
    "trace": ("10^6 instances trace (item 1)", lambda size, step, growth: size.instances >= 10**6 and step.ok),
    "load": ("linear", lambda size, step, growth: growth <= LINEAR),
    "simulate": ("load + 6 core counts at 10^6: <= 15 s, <= 3 GB (item 5)",
                 lambda size, step, growth: size.instances >= 10**6 and step.seconds <= 15 and step.peak_rss <= 3e9),
    "simulate+out": ("Paraver + Chrome writers <= 50 us per instance (item 4)",
                     lambda size, step, growth: writer_cost(size, "this") <= 50),
    "whatif": ("linear", lambda size, step, growth: growth <= LINEAR),
    "hints": ("linear (item 2)", lambda size, step, growth: growth <= LINEAR),
    "graph": ("linear", lambda size, step, growth: growth <= LINEAR),
    "graph never": ("no quadratic blow-up past 2000 nodes (item 3)", lambda size, step, growth: growth <= LINEAR),
}


def targets(sizes: list[Size], stages: list[str]) -> None:
    """Each stage's target beside this tree's figures at the largest size it ran."""
    print("| stage | target (issue 18) | at | time (s) | peak RSS (MiB) | growth (CPU) | met |")
    print("|---|---|---|---|---|---|---|")
    for stage in stages:
        measured = [s for s in sizes if s.steps.get(stage, {}).get("this") is not None]
        if not measured:
            continue
        size, step = measured[-1], measured[-1].steps[stage]["this"]
        fitted = [s for s in measured if s.instances >= FIT_FROM]
        growth = slope([s.instances for s in fitted],
                       [s.steps[stage]["this"].cpu if s.steps[stage]["this"].ok else None for s in fitted])
        met = step.ok and TARGETS[stage][1](size, step, growth if growth is not None else 0.0)
        print(f"| {stage} | {TARGETS[stage][0]} | {size.instances:,} | {step.seconds:.1f} | "
              f"{step.peak_rss / 2**20:.0f} | {'' if growth is None else f'{growth:.2f}'} | {'yes' if met else 'NO'} |")


def writer_cost(size: Size, tree: str) -> float:
    """µs per instance of the Paraver and Chrome writers: simulate+out's CPU minus simulate's."""
    both = [size.steps.get(stage, {}).get(tree) for stage in ("simulate", "simulate+out")]
    if not all(s is not None and s.ok for s in both):
        return math.inf
    return (both[1].cpu - both[0].cpu) / size.instances * 1e6


def writers(sizes: list[Size], trees: list[str]) -> None:
    """The Paraver and Chrome writers alone: simulate+out's CPU minus simulate's, and what they wrote."""
    for size in sizes:
        parts = []
        for name in trees:
            cost = writer_cost(size, name)
            if cost < math.inf:
                written = size.outputs.get(name, 0)
                parts.append(f"{name} {cost:.1f} µs per instance, {written / 1e6:.1f} MB "
                             f"({written / size.instances / 1e3:.1f} kB per instance)")
        if parts:
            print(f"Paraver + Chrome writers (6 core counts) at {size.instances:,} instances: " + "; ".join(parts))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000,1000000", help="task instances, comma-separated")
    ap.add_argument("--baseline", type=Path, metavar="TREE", help="also run every stage with this tree's tareador")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds before a stage is stopped (default 1800)")
    ap.add_argument("--stages", default=",".join(STAGES), help=f"comma-separated, of {', '.join(STAGES)}")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "scale")
    args = ap.parse_args()
    stages = [s.strip() for s in args.stages.split(",")]
    if unknown := set(stages) - set(STAGES):
        sys.exit(f"unknown stages {sorted(unknown)}; choose from {', '.join(STAGES)}")
    args.out.mkdir(parents=True, exist_ok=True)
    exe = build(args.out)
    trees = {"this": ROOT} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    before = load_average()
    sizes = []
    template = None
    for count in sorted(int(x) for x in args.sizes.split(",")):
        n = max(1, round(math.sqrt(count)))
        size = Size(n, n * n, args.out / f"wavefront-{n}.tareador")
        shutil.rmtree(size.trace_dir, ignore_errors=True)
        if "trace" not in stages:
            generate_directory(size.trace_dir, n, exe, template or _template(args.out, exe))
            write_binary_form(size.trace_dir)
            size.generated = True
        run_size(size, trees, stages, exe, args.out, args.timeout, template)
        if template is None and not size.generated and (size.trace_dir / "tasks.csv").exists():
            template = size.trace_dir
            check = args.out / "generated-check"
            generate_directory(check, n, exe, template)
            if not same_tables(check, template):
                print(f"warning: the generated directory differs from the traced one at N = {n}", file=sys.stderr)
        print(f"{size.instances:,} instances done (load average {load_average():.1f})", file=sys.stderr, flush=True)
        sizes.append(size)
    report(sizes, list(trees), stages, (before, load_average()))


def _template(out: Path, exe: Path) -> Path:
    """A small traced directory whose calls.csv the generated ones copy (when not tracing)."""
    small = out / "wavefront-template.tareador"
    if not (small / "calls.csv").exists():
        subprocess.run(tareador("trace", "--no-progress", "-o", str(small), "--", str(exe), "4"), cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
    return small


if __name__ == "__main__":
    main()
