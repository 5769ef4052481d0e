"""The simulated runs of one trace on the page: a timeline per core count, the speedup and
efficiency curves, and the parallelism profile (running and ready instances) per core count.

Every simulation is ``analyses.speedup.study``'s, the same as ``tareador simulate``: the page
draws its schedules (the start and core of every fragment), it does not schedule anything itself.
"""

from __future__ import annotations

import math

import numpy as np

from tareador.analyses.speedup import Study, parallelism_profile
from tareador.render.summary import format_seconds, machine_name, time_unit
from tareador.report import figures
from tareador.report.bars import Bars, aggregate, share
from tareador.report.html import note, table
from tareador.report.page import Section
from tareador.simulation.list_scheduler import Schedule
from tareador.taskgraph.dag import Dag

PROFILE_POINTS = 2_000  # beyond this many steps a profile is drawn as its highest value per bin (2 per pixel)


def schedule_bars(dag: Dag, schedule: Schedule, types: list[str], colours: dict[str, str], scale: float) -> Bars:
    """A bar per fragment on its core (rows top to bottom: core 1, 2, ...); ``types`` is the task
    type of every fragment (main's code as its own type), ``scale`` turns instructions into the
    display unit."""
    kinds = list(dict.fromkeys(sorted(colours)))
    code = {k: i for i, k in enumerate(kinds)}
    busy = schedule.finish > schedule.start
    which = np.flatnonzero(busy)
    return Bars(row=schedule.core[which].astype(np.int64), start=schedule.start[which] * scale,
                end=schedule.finish[which] * scale,
                kind=np.array([code[types[i]] for i in which.tolist()], np.int64), kinds=kinds,
                colours=[colours[k] for k in kinds], rows=[f"core {c + 1}" for c in range(schedule.machine_cores)],
                numbers={"instance": dag.ids[which]})


def ready_times(dag: Dag, schedule: Schedule) -> np.ndarray:
    """When each fragment's predecessors had all ended: it was ready from then until it started."""
    ready = np.zeros(dag.n, np.int64)
    np.maximum.at(ready, dag.dst, schedule.finish[dag.src])
    return ready


def running_and_ready(dag: Dag, schedule: Schedule) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(times, running, ready): from times[k] to times[k+1] running[k] fragments run and ready[k]
    wait for a core (StarVZ's two curves)."""
    run_t, running = parallelism_profile(schedule)
    ready = ready_times(dag, schedule)
    waiting = schedule.start > ready
    t = np.concatenate([ready[waiting], schedule.start[waiting]])
    order = np.argsort(t, kind="stable")
    t = t[order]
    count = np.cumsum(np.concatenate([np.ones(waiting.sum(), np.int64), -np.ones(waiting.sum(), np.int64)])[order])
    times = np.union1d(np.concatenate([[0], run_t]), t)

    def at(steps_t: np.ndarray, values: np.ndarray) -> np.ndarray:
        k = np.searchsorted(steps_t, times, side="right") - 1
        return np.where(k >= 0, values[np.maximum(k, 0)] if len(values) else 0, 0)

    keep = np.concatenate([t[1:] != t[:-1], [True]]) if len(t) else np.zeros(0, bool)
    return times, at(run_t, running), at(t[keep], count[keep])


def thinned(times: np.ndarray, *series: np.ndarray, limit: int = PROFILE_POINTS):
    """At most ``limit`` steps: beyond, the highest value of each of ``limit`` equal bins (a peak
    never disappears), and a note saying so."""
    if len(times) <= limit:
        return times, series, None
    edges = np.linspace(times[0], times[-1], limit + 1)
    starts = np.unique(np.searchsorted(times, edges[:-1], side="right") - 1)
    starts = starts[starts >= 0]
    return (times[starts], tuple(np.maximum.reduceat(s, starts) for s in series),
            f"{len(times):,} steps drawn as the highest value in each of {len(starts):,} bins")


def timeline_section(section: Section, dag: Dag, study: Study, types: list[str], colours: dict[str, str]) -> None:
    """One tab per core count: the cores' timelines."""
    panels, notes = [], []
    for s in study.schedules:
        scale, unit = time_unit(s.makespan / study.rate)
        bars = aggregate(schedule_bars(dag, s, types, colours, scale / study.rate), share(len(study.schedules)))
        if bars.aggregated:
            notes.append(f"{machine_name(s.cores)}: {bars.aggregated}.")
        title = f"{machine_name(s.cores)}, policy {s.policy}: {s.makespan / study.rate * scale:.4g} {unit}"
        panels.append((machine_name(s.cores), figures.timeline(bars, title, unit)))
    for message in notes:
        section.html(note(message, "warning"))
    section.html(note("One row per core, one bar per task fragment coloured by task type (main's own code is "
                      "'main (program)'); hover a bar for its instance, start and length; drag to pan, the "
                      "wheel zooms time."))
    section.figure("timelines", figures.tabs(panels))


def curves_section(section: Section, dag: Dag, study: Study) -> None:
    """Speedup and efficiency against cores; the profile of running and ready fragments per core count."""
    rows = list(study.table())
    finite = [r for r in rows if r["cores"] != math.inf]
    unbounded = next((r["speedup"] for r in rows if r["cores"] == math.inf), None)
    if finite:  # curves need core counts; the unbounded machine alone is its row of the table
        section.figure("scaling", figures.scaling_curves(
            [r["cores"] for r in finite], [r["speedup"] for r in finite], [r["efficiency"] for r in finite], "cores",
            unbounded, f"unbounded cores: {unbounded:.2f}" if unbounded else ""))
    section.html(table(["cores", "time", "speedup", "efficiency", "busy fraction per core"], [
        [r["cores"], format_seconds(r["time"]), f"{r['speedup']:.2f}", f"{r['efficiency']:.3f}",
         f"{r['busy_min']:.2f} .. {r['busy_max']:.2f}"] if r["cores"] != math.inf
        else ["inf", format_seconds(r["time"]), f"{r['speedup']:.2f}", "", f"{r['cores_used']} cores busy at most"]
        for r in rows], numeric_from=0))
    panels = []
    for s in study.schedules:
        scale, unit = time_unit(s.makespan / study.rate)
        times, (running, ready), thin = thinned(*running_and_ready(dag, s))
        title = f"parallelism profile, {machine_name(s.cores)}, policy {s.policy}" + (f" ({thin})" if thin else "")
        panels.append((machine_name(s.cores), figures.profile(times * scale / study.rate,
                                                              {"running": running, "ready, waiting for a core": ready},
                                                              unit, title)))
    section.html("<h3>Parallelism profile</h3>" + note("Fragments running and fragments ready (every input "
                                                        "produced) but waiting for a core, over the simulated run."))
    section.figure("profiles", figures.tabs(panels))
