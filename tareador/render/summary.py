"""The terminal summary students read after tracing: T1, T-inf, parallelism, where work goes."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

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


def plural(n: int, word: str) -> str:
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
    for t in trace.tasks:
        name = PROGRAM if main_apart and t.is_main else t.name
        count[name] += t.is_main or t.starts_instance
        work[name] += t.instructions
    return sorted(((n, count[n], work[n]) for n in count), key=lambda r: (-r[2], r[0]))


def format_summary(trace: TaskTrace, outputs: dict[str, str | Path] | None = None, top: int = 10) -> str:
    s = trace.summary
    main = sum(1 for t in trace.tasks if t.is_main)
    split = len(trace.tasks) - main - trace.instances
    lines = [
        f"{'task instances':<{LABEL}}{trace.instances} of {plural(len(trace.task_types), 'task type')} "
        f"(+ {plural(main, 'fragment')} of main" + (f", + {split} where tasks create tasks)" if split else ")"),
        f"{'T1 (total work)':<{LABEL}}{human(trace.t1)} instructions",
    ]
    if not s.get("annotation_error"):
        lines += [f"{'T-inf (crit.path)':<{LABEL}}{human(trace.tinf)} instructions",
                  f"{'parallelism':<{LABEL}}{trace.parallelism:.2f}"]
    total = trace.t1 or 1
    lines.append(f"{'task type':<24} {'instances':>9} {'instructions':>14} {'share':>7}")
    for name, n, work in work_by_type(trace)[:top]:
        lines.append(f"{printable(name):<24} {n:>9} {human(work):>14} {100 * work / total:>6.1f}%")
    for w in s.get("warnings", []):
        lines.append(f"warning: {w}")
    if s.get("partial"):
        lines.append(f"partial trace: the program {s.get('ending', 'stopped early')}")
    for label, path in (outputs or {}).items():
        lines.append(f"{label}: {path}")
    return "\n".join(lines)
