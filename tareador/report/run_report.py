"""The report of an MPI run directory (``tareador mpirun``): its ranks, its replay as a timeline
(MPI calls and messages), the MPI/OmpSs cores-per-rank sweep of ``tareador simulate DIR``, and
the communication patterns and overlap when the run has them.

The replays are ``analyses.mpi_speedup.mpi_study``'s, recorded for Paraver: the authentic run
(authentic.dim, one core per rank) and ompss.dim with each count of cores per rank, on the
machine given, or without one on an ideal network with one rank per node, as ``tareador
simulate`` does.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from tareador.analyses.mpi_speedup import MpiStudy, mpi_study
from tareador.errors import ReportError
from tareador.formats.dimemas import read_dim
from tareador.render.summary import format_seconds, time_unit
from tareador.report import figures
from tareador.report.bars import aggregate, share
from tareador.report.document import Report
from tareador.report.html import note, table
from tareador.report.mpi_timeline import message_arrows, run_bars
from tareador.report.overlap import overlap_section, patterns_section
from tareador.report.page import Section, render_page
from tareador.report.settings import Settings, cores_text
from tareador.report.summary import command_line, run_summary
from tareador.taskgraph.mpi import load_run


def traces(settings: Settings) -> tuple[str, str]:
    """The run's (MPI/OmpSs, authentic) Dimemas traces: on the instruction counter, or on each rank's
    measured clock once 'tareador time' timed the run."""
    suffix = "-measured" if settings.measured else ""
    return f"ompss{suffix}.dim", f"authentic{suffix}.dim"


def _replays(d: Path, settings: Settings) -> tuple[MpiStudy, MpiStudy]:
    """(the authentic run recorded, the MPI/OmpSs sweep recorded)."""
    names = traces(settings)
    ompss, authentic = (read_dim(d / name) for name in names)
    if len(ompss.threads) != len(authentic.threads):
        raise ReportError(f"{d}: {names[0]} has {len(ompss.threads)} ranks, {names[1]} {len(authentic.threads)}: "
                          f"run 'tareador postprocess {d}' again")
    machine = settings.machine
    if settings.machine_file is None:  # the ideal network, one rank per node
        machine = replace(machine, nodes=-(-len(authentic.threads) // (machine.tasks_per_node or 1)))
    policy = settings.run_policy
    reference = mpi_study(authentic, authentic, [1], machine, policy, record=True)
    return reference, mpi_study(ompss, authentic, list(settings.cores_per_rank), machine, policy, record=True)


def _timeline(section: Section, reference: MpiStudy, sweep: MpiStudy) -> None:
    runs = [("MPI run, 1 core per rank", reference.configurations[0])]
    runs += [(f"MPI/OmpSs, {c.label} cores per rank", c) for c in sweep.configurations]
    panels = []
    for title, c in runs:
        scale, unit = time_unit(c.result.makespan)
        bars = aggregate(run_bars(c.result.recorded, scale / 1e9), share(len(runs)))
        arrows = message_arrows(c.result.recorded, scale / 1e9)
        for message in filter(None, (bars.aggregated, arrows.omitted)):
            section.html(note(f"{title}: {message}.", "warning"))
        panels.append((title, figures.timeline(bars, f"{title}: {format_seconds(c.result.makespan)}", unit, arrows)))
    section.html(note("One row per rank (per rank and thread for the MPI/OmpSs run, where every task fragment is a "
                      "thread): computation coloured by task type, MPI calls by function, an arrow per message from "
                      "when it left to when it arrived. Hover a bar; drag to pan, the wheel zooms time."))
    section.figure("timelines", figures.tabs(panels))


def _sweep(section: Section, sweep: MpiStudy) -> None:
    rows = list(sweep.table())
    finite = [r for r in rows if r["cores_per_rank"] != math.inf]
    unbounded = next((r["speedup"] for r in rows if r["cores_per_rank"] == math.inf), None)
    section.html(note(f"Speedup of the MPI/OmpSs run (ompss.dim) over the authentic MPI run "
                      f"({format_seconds(sweep.authentic.makespan)}, 1 core per rank), {sweep.ranks} ranks, "
                      f"{sweep.ranks_per_node} per node, policy {sweep.policy}."))
    if finite:
        section.figure("scaling", figures.scaling_curves(
            [r["cores_per_rank"] for r in finite], [r["speedup"] for r in finite], [r["efficiency"] for r in finite],
            "cores per rank", unbounded, f"unbounded cores: {unbounded:.2f}" if unbounded else ""))
    section.html(table(["cores per rank", "cores per node", "time", "speedup", "efficiency"],
                       [[_count(r["cores_per_rank"]), r["cores_per_node"], format_seconds(r["time"]),
                         f"{r['speedup']:.2f}", "" if math.isnan(r["efficiency"]) else f"{r['efficiency']:.3f}"]
                        for r in rows], numeric_from=0))


def _count(cores: float) -> str:
    return "inf" if cores == math.inf else str(cores)


def run_report(directory: str | Path, settings: Settings | None = None) -> Report:
    settings = settings or Settings()
    d = Path(directory)
    run = load_run(d)
    sections = [Section("summary", "Summary"), Section("timeline", "Timeline of the run"),
                Section("sweep", "Cores per rank: the MPI/OmpSs run"), Section("patterns", "Communication patterns"),
                Section("overlap", "Overlap")]
    summary, timeline, sweep_section, patterns, overlap = sections
    missing = [n for n in traces(settings) if not (d / n).is_file()]
    simulated = None
    if missing:
        remedy = f"tareador time {d}" if settings.measured else f"tareador postprocess {d}"
        why = f"No replay: {d} has no {' or '.join(missing)}: run '{remedy}' first."
        timeline.html(note(why, "missing"))
        sweep_section.html(note(why, "missing"))
    else:
        reference, sweep = _replays(d, settings)
        simulated = settings.simulated_text("The replays below were", cores_text(settings.cores_per_rank,
                                                                                 "cores per rank"), sweep.policy)
        _timeline(timeline, reference, sweep)
        _sweep(sweep_section, sweep)
    run_summary(summary, d, run.summary, simulated)
    summary.html(note(f"Each rank's task graph, hints and what-ifs: tareador report {d / 'rank-0'} (and the other "
                      "ranks' directories)."))
    patterns_section(patterns, run)
    overlap_section(overlap, run)
    title = f"tareador report: {d.name}"
    page = render_page(title, command_line(run.summary), sections, {})
    notes = [n for n in (simulated,) if n] + ([f"partial run: {run.summary.get('ending') or 'not every rank ended'}"]
                                                if run.summary.get("partial") else [])
    return Report(title, page, {f"{s.id}-{k}": m for s in sections for k, m in s.figures.items()}, notes)
