"""The terminal summary students read after tracing: T1, T-inf, parallelism, where work goes."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from tareador.files import printable
from tareador.taskgraph.model import PROGRAM, TaskTrace

LABEL = 18  # width of the label column of the summaries, so their values line up


def human(n: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f}"


def time_unit(seconds: float) -> tuple[float, str]:
    """(scale, unit) that puts a simulated time in a readable range: traced kernels last
    nanoseconds to minutes of simulated time."""
    for scale, unit in ((1.0, "s"), (1e3, "ms"), (1e6, "µs")):
        if seconds * scale >= 1:
            return scale, unit
    return 1e9, "ns"


def machine_name(cores: int | None) -> str:
    return plural("inf" if cores is None else cores, "core")


def plural(n: int | str, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def format_seconds(t: float) -> str:
    scale, unit = time_unit(t)
    return f"{t * scale:.4g} {unit}"


def work_by_type(trace: TaskTrace, main_apart: bool = False) -> list[tuple[str, int, int]]:
    """(type, instances, instructions), largest share first; main's code included as one type
    whose instances are its fragments (a task instance's fragments count once). ``main_apart``
    keys main's code as "main (program)", apart from a task that happens to be named main."""
    count: dict[str, int] = defaultdict(int)
    work: dict[str, int] = defaultdict(int)
    for t in trace.fragments:
        name = PROGRAM if main_apart and t.is_main else t.name
        count[name] += t.is_main or t.starts_instance
        work[name] += t.instructions
    return sorted(((n, count[n], work[n]) for n in count), key=lambda r: (-r[2], r[0]))


def format_summary(trace: TaskTrace, outputs: Mapping[str, str | Path] | None = None, top: int = 10) -> str:
    s = trace.summary
    main = sum(1 for t in trace.fragments if t.is_main)
    split = len(trace.fragments) - main - trace.instances
    main_apart = "main" in trace.task_types  # a task named main: its rows apart from main's own code
    owner = "main's own code" if main_apart else "main"
    lines = [
        f"{'task instances':<{LABEL}}{trace.instances} of {plural(len(trace.task_types), 'task type')} "
        f"(+ {plural(main, 'fragment')} of {owner}" + (f", + {split} where tasks create tasks)" if split else ")"),
        f"{'T1 (total work)':<{LABEL}}{human(trace.t1)} instructions",
    ]
    if not s.get("annotation_error"):
        lines += [f"{'T-inf (crit.path)':<{LABEL}}{human(trace.tinf)} instructions",
                  f"{'parallelism':<{LABEL}}{trace.parallelism:.2f}"]
    total = trace.t1 or 1
    lines.append(f"{'task type':<24} {'instances':>9} {'instructions':>14} {'share':>7}")
    for name, n, work in work_by_type(trace, main_apart)[:top]:
        lines.append(f"{printable(name):<24} {n:>9} {human(work):>14} {100 * work / total:>6.1f}%")
    for w in s.get("warnings", []):
        lines.append(f"warning: {w}")
    if s.get("partial"):
        lines.append(f"partial trace: the program {s.get('ending', 'stopped early')}")
    for label, path in (outputs or {}).items():
        lines.append(f"{label}: {path}")
    return "\n".join(lines)


PEER_WORDS = {"send": "to", "receive": "from", "collective": "rooted at"}


def format_call(c: dict) -> str:
    """An MPI call of summary.json, as a reader names it: MPI_Recv from rank 1 (tag 0, mpi.csv seq 3)."""
    text = c["call"]
    if c["peer"] >= 0:
        text += f" {PEER_WORDS.get(c['kind'], 'with')} rank {c['peer']}"
    details = [f"tag {c['tag']}"] * (c["tag"] >= 0) + [f"communicator {c['comm']}"] * (c["comm"] > 0)
    details.append(f"mpi.csv seq {c['seq']}")
    return f"{text} ({', '.join(details)})"


def format_run_summary(s: dict, outputs: dict[str, str | Path] | None = None, top: int = 5) -> str:
    """The terminal summary of an MPI run (summary.json of its directory)."""
    mpi = {"mpich": "MPICH", "openmpi": "Open MPI"}.get(s["mpi"], s["mpi"] or "no MPI")
    lines = [f"{'ranks':<{LABEL}}{s['ranks']} ({mpi})",
             f"{'messages':<{LABEL}}{s['messages']}, {human(s['bytes'])} bytes",
             f"{'collectives':<{LABEL}}{s['collectives']}",
             f"{'rank':>6} {'T1':>10} {'T-inf':>10} {'parallelism':>11} {'instances':>9} {'MPI calls':>9}"]
    for r in s["per_rank"]:
        lines.append(f"{r['rank']:>6} {human(r['t1']):>10} {human(r['tinf']):>10} {r['parallelism']:>11.2f} "
                     f"{r['instances']:>9} {r['mpi_calls']:>9}" + (f"  {r['ending']}" if r["partial"] else ""))
    for w in s["warnings"]:
        lines.append(f"warning: {w}")
    for what in ("sends", "receives"):
        unmatched = s[f"unmatched_{what}"]
        lines += [f"unmatched: rank {c['rank']}: {format_call(c)}" for c in unmatched[:top]]
        if len(unmatched) > top:
            lines.append(f"unmatched: ... {len(unmatched) - top} more {what} in summary.json")
    for r in s["per_rank"]:
        if r["blocked_in"]:
            lines.append(f"rank {r['rank']} stopped inside {format_call(r['blocked_in'])}")
    if s["partial"]:
        lines.append(f"partial run: {'the run ' + s['ending'] if s['ending'] else 'not every rank ran to its end'}")
    for label, path in (outputs or {}).items():
        lines.append(f"{label}: {path}")
    return "\n".join(lines)


def format_pattern_statistics(stats: list, chunks: int) -> str:
    """The thesis' Table 5.1 for a run (analyses/patterns.py's ClassStatistics): means per transfer
    class and overall, then every figure's quartiles over all messages."""
    sides = (("production: % of the production interval needed to produce",
              (("1 elem", "prod_1elem"), ("quarter", "prod_quarter"), ("half", "prod_half"), ("whole", "prod_whole"))),
             ("consumption: % of the consumption interval passed upon reception of",
              (("nothing", "cons_nothing"), ("quarter", "cons_quarter"), ("half", "cons_half"))))
    lines = [f"{plural(stats[-1].messages, 'message')}, {plural(chunks, 'chunk')} each (quarter = "
             f"{plural(-(-chunks // 4), 'chunk')}, half = {plural(-(-chunks // 2), 'chunk')})"]
    for title, columns in sides:
        lines += ["", title, f"{'class':<10}{'messages':>9}" + "".join(f"{c:>9}" for c, _ in columns)]
        lines += [f"{s.name:<10}{s.messages:>9}" + "".join(f"{s.mean[f]:>9.1f}" for _, f in columns) for s in stats]
    everything = stats[-1]
    lines += ["", "distribution over all messages: 25th percentile / median / 75th percentile"]
    lines += [f"  {f:<14}" + " / ".join(f"{q:5.1f}" for q in everything.quartiles[f])
              for _, columns in sides for _, f in columns]
    return "\n".join(lines)


def format_timing(trace, runs, info: dict) -> str:
    """The runs' spread, and per task type its share of the instructions beside its share of the
    measured time: where instruction counts mislead."""
    total = runs.sum(axis=1) / 1e9
    median = np.median(runs, axis=0)
    lines = [f"{'fragments':<{LABEL}}{len(trace.fragments)}, matched one to one in each of {info['runs']} run(s)",
             f"{'analysed region':<{LABEL}}{format_seconds(float(np.median(total)))} median "
             f"({format_seconds(float(total.min()))} .. {format_seconds(float(total.max()))})",
             f"{'event cost':<{LABEL}}{min(info['event_ns']):g} .. {max(info['event_ns']):g} ns per marker, "
             "subtracted (hooked calls: their own calibration)",
             f"{'load average':<{LABEL}}{info['load_average'][0]:.1f} before, {info['load_average'][1]:.1f} after",
             f"{'task type':<18} {'instances':>9} {'instructions':>13} {'measured':>12} {'ns/instr':>9}"]
    types: dict[str, list] = {}
    for t, ns in zip(trace.fragments, median.tolist()):
        row = types.setdefault(PROGRAM if t.is_main else t.name, [0, 0, 0.0])
        row[0] += t.starts_instance and not t.is_main
        row[1] += t.instructions
        row[2] += ns
    work, time = max(trace.t1, 1), max(float(median.sum()), 1.0)
    for name, (count, instr, ns) in sorted(types.items(), key=lambda kv: -kv[1][2]):
        ratio = f"{ns / instr:.3f}" if instr else "-"
        lines.append(f"{printable(name):<18} {count:>9} {100 * instr / work:>12.1f}% {100 * ns / time:>11.1f}% "
                     f"{ratio:>9}")
    return "\n".join(lines)
