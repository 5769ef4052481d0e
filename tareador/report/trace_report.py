"""The report of one trace directory (``tareador trace``, or one rank of an MPI run).

Everything on the page comes from the earlier stages' public functions: the trace
(``store.load_trace``), its graph (``trace.dag``), the simulations of ``tareador
simulate`` (``analyses.speedup.study``), the what-ifs (``analyses.whatif``), the hints
(``analyses.hints``) and the graph of ``tareador graph`` (``render.graph``). A trace directory
holds no simulation, so every report simulates with its settings and says which.
"""

from __future__ import annotations

from pathlib import Path

from tareador.analyses.speedup import study
from tareador.analyses.whatif import type_names, whatif
from tareador.errors import ReportError
from tareador.render.graph import type_colours
from tareador.report.document import Report
from tareador.report.hints import hints_section
from tareador.report.objects import objects_section
from tareador.report.page import Section, render_page
from tareador.report.schedule import curves_section, timeline_section
from tareador.report.settings import Settings, cores_text
from tareador.report.summary import command_line, trace_summary
from tareador.report.task_graph import graph_section
from tareador.report.whatif import whatif_section
from tareador.simulation.machine import in_nanoseconds
from tareador.taskgraph.durations import measured_dag
from tareador.taskgraph.store import load_trace


def trace_report(directory: str | Path, settings: Settings | None = None) -> Report:
    settings = settings or Settings()
    trace = load_trace(directory)
    dag = trace.dag
    if not dag.n:
        raise ReportError(f"{directory} has no task instances to show")
    unit, machine = "instructions", settings.machine
    if settings.measured:
        unit, machine, dag = "ns", in_nanoseconds(machine), measured_dag(dag, directory)
    policy, cores = settings.trace_policy, list(settings.cores)
    try:
        result = study(dag, cores, policy, machine, unit=unit)
        ranking = whatif(dag, list(settings.factors), cores, policy, machine, unit=unit)
    except ValueError as e:
        raise ReportError(f"{directory}: {e}") from None
    runtime = (f"{result.creation} creation, per task {result.overhead:,} {unit} to start and "
               f"{result.creation_cost:,} {unit} to create")
    simulated = settings.simulated_text("The runs below were", cores_text(cores), policy, runtime)
    types, colours = type_names(dag), type_colours(trace)
    sections = [Section("summary", "Summary"), Section("graph", "Task graph"),
                Section("timeline", "Simulated timeline"), Section("curves", "Speedup, efficiency, parallelism"),
                Section("whatif", "What-if: which task type is worth optimising"),
                Section("hints", "Hints: depend clauses and pragmas"), Section("objects", "Object usage")]
    summary, graph, timeline, curves, what, hints, objects = sections
    trace_summary(summary, trace, ranking, simulated)
    graph_data = graph_section(graph, trace, dag, ranking.path, None if settings.measured else machine.rate,
                               max_nodes=settings.max_nodes, collapse=settings.collapse)
    timeline_section(timeline, dag, result, types, colours)
    curves_section(curves, dag, result)
    whatif_section(what, ranking)
    hints_section(hints, directory, settings.sizes)
    finite = [s for s in result.schedules if s.cores is not None]
    widest = max(finite, key=lambda s: s.cores or 0) if finite else result.schedules[-1]
    objects_section(objects, trace, dag, widest, machine.rate, types, colours)
    title = f"tareador report: {Path(directory).name}"
    page = render_page(title, command_line(trace.summary), sections,
                       {"graph-data": graph_data} if graph_data else {})
    notes = [simulated] + ([f"partial trace: the program {trace.summary.get('ending', 'stopped early')}"]
                           if trace.summary.get("partial") else [])
    return Report(title, page, {f"{s.id}-{k}": m for s in sections for k, m in s.figures.items()}, notes)
