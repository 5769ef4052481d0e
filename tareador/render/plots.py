"""PNG plots of simulated runs: speedup curve, parallelism profile, Gantt chart by core, what-if bars,
network sweep; and the performance models of task types.

Figures are built with matplotlib's object API on the Agg canvas, so nothing depends on a
display or on pyplot's global state. matplotlib is imported by the first plot (``_figure``), not
with this module: it takes a second, and every command imports this module.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tareador.analyses.explore import Exploration
from tareador.analyses.models import Models
from tareador.analyses.mpi_speedup import MpiStudy
from tareador.analyses.network_sweep import Sweep
from tareador.analyses.speedup import Study, parallelism_profile
from tareador.analyses.whatif import WhatIf
from tareador.files import output_file, printable
from tareador.render.summary import machine_name, time_unit
from tareador.simulation.list_scheduler import Schedule

if TYPE_CHECKING:
    from matplotlib.figure import Figure

GANTT_LIMIT = 100_000  # beyond this many bars a Gantt chart is unreadable and slow to draw
GANTT_CORES = 256  # rows: the image grows with them, idle cores too


def _figure(width: float, height: float) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, path: str | Path) -> Path:
    fig.tight_layout()
    with output_file(path, "wb") as f:
        fig.savefig(f, format="png", dpi=120)
    return Path(path)


def _text(name: str) -> str:
    """A task name as matplotlib shows it literally: an unescaped '$' would make it parse the name
    as mathtext (and fail on most)."""
    return printable(name).replace("$", r"\$")


def _speedup_curve(ax, cores: list[int], speedup, label: str) -> None:
    """Speedup against core counts, beside the ideal (speedup = cores), on a log2 axis of the counts."""
    ax.plot(cores, speedup, "o-", label=label)
    ax.plot(cores, cores, ":", color="grey", label="ideal")
    ax.set_xscale("log", base=2)
    ax.set_xticks(cores, [str(c) for c in cores])


def plot_speedup(study: Study, path: str | Path) -> Path:
    finite = [(s.cores, s.makespan) for s in study.schedules if s.cores is not None]
    fig = _figure(6, 4)
    ax = fig.add_subplot()
    if finite:
        _speedup_curve(ax, [c for c, _ in finite], study.t1 / (np.array([m for _, m in finite]) / study.rate),
                       "simulated")
    ax.axhline(study.parallelism, color="tab:red", ls="--", label=f"parallelism T1/T∞ = {study.parallelism:.2f}")
    ax.set_xlabel("cores")
    ax.set_ylabel("speedup over the sequential run")
    ax.legend()
    return _save(fig, path)


def plot_mpi_speedup(study: MpiStudy, path: str | Path) -> Path:
    """Speedup over the authentic MPI run per count of cores per rank (inf as a dashed line)."""
    rows = list(study.table())
    finite = [r for r in rows if r["cores_per_rank"] != math.inf]
    fig = _figure(6, 4)
    ax = fig.add_subplot()
    if finite:
        _speedup_curve(ax, [r["cores_per_rank"] for r in finite], [r["speedup"] for r in finite],
                       "MPI/OmpSs (ompss.dim)")
    for r in rows:
        if r["cores_per_rank"] == math.inf:
            ax.axhline(r["speedup"], color="tab:red", ls="--", label=f"unbounded cores: {r['speedup']:.2f}")
    ax.set_xlabel("cores per rank")
    ax.set_ylabel("speedup over the authentic MPI run")
    ax.set_title(f"{study.ranks} ranks, {study.ranks_per_node} per node, policy {study.policy}")
    ax.legend()
    return _save(fig, path)


def plot_profile(schedule: Schedule, rate: float, path: str | Path) -> Path:
    times, running = parallelism_profile(schedule)
    scale, unit = time_unit(schedule.makespan / rate)
    fig = _figure(8, 3)
    ax = fig.add_subplot()
    ax.step(times / rate * scale, running, where="post")
    ax.set_xlim(0, schedule.makespan / rate * scale)
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel("running tasks")
    ax.set_title(f"parallelism profile, {schedule.label} cores, {schedule.policy}")
    return _save(fig, path)


def plot_gantt(schedule: Schedule, names: list[str], rate: float, path: str | Path) -> Path | None:
    """One row per core, one bar per instance coloured by task type; None when too many bars or rows."""
    from matplotlib.patches import Patch

    if len(names) > GANTT_LIMIT or schedule.machine_cores > GANTT_CORES:
        return None
    kinds = sorted(set(names))
    colours = {k: f"C{i % 10}" for i, k in enumerate(kinds)}
    cores = schedule.machine_cores
    fig = _figure(10, max(2.5, 0.3 * cores + 1))
    ax = fig.add_subplot()
    scale, unit = time_unit(schedule.makespan / rate)
    start, width = schedule.start / rate * scale, (schedule.finish - schedule.start) / rate * scale
    for c in range(schedule.cores_used):
        on = np.flatnonzero(schedule.core == c)
        ax.broken_barh(list(zip(start[on], width[on])), (c - 0.4, 0.8),
                       facecolors=[colours[names[i]] for i in on.tolist()], edgecolor="black", linewidth=0.2)
    ax.set_yticks(range(cores), [f"core {c + 1}" for c in range(cores)])
    ax.invert_yaxis()
    ax.set_xlim(0, schedule.makespan / rate * scale)
    ax.set_xlabel(f"time ({unit})")
    ax.set_title(f"{schedule.label} cores, {schedule.policy}")
    ax.legend(handles=[Patch(color=colours[k], label=_text(k)) for k in kinds],
              loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return _save(fig, path)


def plot_whatif(result: WhatIf, cores: int | None, path: str | Path) -> Path:
    """Overall speedup of accelerating each task type on one machine, a bar per factor, the most
    beneficial type on top, each labelled with its shares of the work and of the critical path."""
    ranked = result.ranking(cores)
    fig = _figure(8, 1.2 + 0.35 * len(ranked) * (len(result.factors) + 1))
    ax = fig.add_subplot()
    height = 1 / (len(result.factors) + 1)
    y = np.arange(len(ranked))
    for f, k in enumerate(result.factors):
        gain = np.array([100 * (result.benefit(t.name, k, cores) - 1) for t in ranked])
        shown = np.where(np.isinf(gain), np.nan, gain)
        bars = ax.barh(y + (f - (len(result.factors) - 1) / 2) * height, np.nan_to_num(shown), height,
                       label="takes no time" if k == np.inf else f"{k:g}× faster")
        ax.bar_label(bars, [f"{g:+.1f}%" if np.isfinite(g) else "∞" for g in gain], fontsize="x-small", padding=2)
    ax.set_yticks(y, [f"{_text(t.name)}\nwork {100 * result.work_share(t):.1f}%, crit. path "
                      f"{100 * result.critical_share(t):.1f}%" for t in ranked], fontsize="small")
    ax.invert_yaxis()
    ax.margins(x=0.15)
    base = result.baseline[result.cores.index(cores)] / result.rate
    scale, unit = time_unit(base)
    ax.set_xlabel("overall speedup over the unaccelerated run (%)")
    ax.set_title(f"accelerating one task type, {machine_name(cores)}, {result.policy} "
                 f"(unaccelerated {base * scale:.4g} {unit})")
    ax.legend(fontsize="small")
    return _save(fig, path)


def plot_explore(result: Exploration, path: str | Path) -> Path:
    """Simulated speedup of each decomposition the search visited, the best one marked, each
    point labelled with the task type broken to reach the next."""
    steps = result.steps
    fig = _figure(max(6, 0.5 * len(steps)), 4)
    ax = fig.add_subplot()
    ax.plot([s.index for s in steps], [s.speedup for s in steps], "o-",
            label=f"simulated, {machine_name(result.cores)}")
    ax.plot([s.index for s in steps], [s.parallelism for s in steps], ":", color="grey", label="parallelism T1/T∞")
    best = result.best
    ax.plot([best.index], [best.speedup], "*", color="tab:red", markersize=14, label=f"best: step {best.index}")
    for s in steps:
        if s.broken is not None:
            ax.annotate(_text(f"break {s.broken}"), (s.index, s.speedup), textcoords="offset points", xytext=(3, 5),
                        fontsize=7, rotation=30)
    ax.set_xticks([s.index for s in steps])
    ax.set_xlabel("step (decomposition)")
    ax.set_ylabel("speedup over the sequential run")
    ax.legend()
    return _save(fig, path)


def plot_network_sweep(result: Sweep, title: str, path: str | Path) -> Path:
    """Time and speedup against the swept bandwidth (a line per latency), or against the latency
    when only latencies were swept; log x axis, as the values usually span decades."""
    by_bandwidth = "bandwidth" in result.swept
    fig = _figure(10, 4)
    axes = fig.subplots(1, 2)
    lines: dict[float, list] = {}
    for pt in result.points:
        lines.setdefault(pt.latency if by_bandwidth else pt.bandwidth, []).append(pt)
    scale, unit = time_unit(max(pt.time for pt in result.points))
    for key, pts in lines.items():
        x = [pt.bandwidth if by_bandwidth else pt.latency for pt in pts]
        label = (f"latency {key:g} s" if by_bandwidth else f"bandwidth {key:g} MB/s") if len(lines) > 1 else None
        axes[0].plot(x, [pt.time * scale for pt in pts], "o-", label=label)
        axes[1].plot(x, [pt.speedup for pt in pts], "o-", label=label)
    for ax, ylabel in zip(axes, (f"time ({unit})", "speedup over the first configuration")):
        ax.set_xscale("log")
        ax.set_xlabel("inter-node bandwidth (MB/s)" if by_bandwidth else "inter-node latency (s)")
        ax.set_ylabel(ylabel)
        if len(lines) > 1:
            ax.legend(fontsize="small")
    fig.suptitle(_text(title))
    return _save(fig, path)


def plot_patterns(name: str, transfers: list, path: str | Path) -> Path:
    """The thesis' Fig. 5.11 for one transfer class: every element of every message of the class,
    x its index in the message, y when it became final (production, left) or was first read
    (consumption, right) in % of the interval; elements never read are not drawn."""
    fig = _figure(10, 4)
    for ax, side, title in ((fig.add_subplot(1, 2, 1), "production", "production: last write"),
                            (fig.add_subplot(1, 2, 2), "consumption", "consumption: first read")):
        for t in transfers:
            values = 100.0 * getattr(t, side)
            ax.scatter(np.arange(len(values)), values, s=4, alpha=0.5)
        ax.set_xlabel("element of the message")
        ax.set_ylabel(f"% of the {side} interval")
        ax.set_ylim(-2, 102)
        ax.set_title(f"{_text(name)}: {title} ({len(transfers)} messages)")
        ax.grid(True, alpha=0.3)
    return _save(fig, path)


def plot_overlap(study, title: str, path: str | Path) -> Path:
    """Speedup of the overlapped runs over the authentic one against the bandwidth (Fig. 5.14)."""
    fig = _figure(7, 4.5)
    ax = fig.add_subplot(1, 1, 1)
    bandwidths = [p.bandwidth for p in study.points]
    for kind, style in (("real", "o-"), ("ideal", "s--")):
        ax.plot(bandwidths, [p.speedup(kind) for p in study.points], style, label=f"overlap-{kind}")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("bandwidth (MB/s)")
    ax.set_ylabel("speedup over the authentic run")
    ax.set_title(_text(title))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return _save(fig, path)


MODEL_PANELS = 12  # task types drawn, the largest first: more make panels too small to read


def plot_models(result: Models, path: str | Path) -> Path:
    """Duration against bytes accessed, a panel per task type (log-log): the instances, the
    type's model, the outliers in red. Measured nanoseconds when there are, else instructions."""
    unit = "ns" if result.instructions_per_ns else "instructions"
    shown = [m for m in result.types if m.unit == unit][:MODEL_PANELS]
    columns = min(3, max(len(shown), 1))
    rows = max(-(-len(shown) // columns), 1)
    fig = _figure(4.2 * columns, 3.2 * rows)
    for k, m in enumerate(shown):
        ax = fig.add_subplot(rows, columns, k + 1)
        usual = np.ones(len(m.duration), bool)
        usual[m.outliers] = False
        ax.scatter(m.bytes[usual], m.duration[usual], s=12, color="tab:blue", label="instances")
        if len(m.outliers):
            ax.scatter(m.bytes[m.outliers], m.duration[m.outliers], s=24, color="tab:red", marker="x",
                       label=f"outliers ({len(m.outliers)})")
        low, high = max(int(m.bytes.min()), 1), max(int(m.bytes.max()), 1)
        n = np.geomspace(low, max(high, low + 1), 100)
        ax.plot(n, m.fit(n), color="black", lw=1, label=model_formula(m))
        _wide_axis(ax.xaxis, ax.set_xscale, low, high)
        positive = m.duration[m.duration > 0]
        if len(positive):
            _wide_axis(ax.yaxis, ax.set_yscale, int(positive.min()), int(positive.max()))
        ax.set_title(_text(m.name), fontsize=10)
        ax.set_xlabel("bytes accessed")
        ax.set_ylabel(unit)
        ax.legend(fontsize=7)
    return _save(fig, path)


def _wide_axis(axis, set_scale, low: int, high: int) -> None:
    """Log scale over a decade or more; else linear, with few plain labels (log ticks over a
    narrow range overlap)."""
    from matplotlib.ticker import MaxNLocator, ScalarFormatter

    if high >= 10 * low:
        set_scale("log")
    else:
        axis.set_major_locator(MaxNLocator(4))
        axis.set_major_formatter(ScalarFormatter(useOffset=False))


def model_formula(m) -> str:
    """a * n^b + c as text, or the constant of a type whose duration does not depend on its size
    (the median when its instances all touch the same bytes)."""
    f = m.fit
    if f.constant:
        return f"{f.c:.4g} ({'one size: the median' if m.bytes.min() == m.bytes.max() else 'constant'})"
    return f"{f.a:.4g} * n^{f.b:.2f}" + (f" + {f.c:.4g}" if f.c else "")
