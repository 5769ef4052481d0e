"""The report: one self-contained HTML page per trace directory or MPI run directory.

A rendering stage: it builds the page from the earlier stages' public functions (taskgraph,
formats, replay, analyses, render) and nothing but ``cli`` and ``tareador/__init__.py`` import
it. ``tareador.report`` is the function below, so import this package's modules with
``from tareador.report.page import ...`` (``import tareador.report.page as p`` finds the function).

Charts are Bokeh's, chosen over Plotly for what this page needs: Bokeh draws glyphs on a canvas,
so a timeline of tens of thousands of task bars stays responsive where Plotly's SVG bars do not;
its standalone HTML inlines only the BokehJS bundles the figures use (about 2 MB with tabs and
tables, against plotly.js' 4 MB and more); tabs, linked data sources and arrows from a data
source (messages between ranks) come without writing charting JavaScript; and the same models
display inline in a notebook (``bokeh.io.show`` after ``output_notebook``). The page's own
JavaScript (page.js) only pans the Graphviz SVG, fills the graph's hover panel and copies pragmas.
"""

from __future__ import annotations

from pathlib import Path

from tareador.report.settings import Settings
from tareador.simulation.machine_files import load_machine
from tareador.taskgraph.store import is_run


def report(directory: str | Path, **settings):
    """The report of a trace directory or an MPI run directory, as a ``Report`` (``.save(path)``
    writes the page; a notebook displays it inline). ``settings`` are ``report.settings.Settings``'
    fields (cores, cores_per_rank, policy, machine, durations, factors, sizes, max_nodes, collapse);
    ``machine`` may be a machine file's path or a bundled machine's name. The pages' modules are
    imported here, not with this package: they load Bokeh, a second that no other command pays."""
    from tareador.report.trace_report import trace_report

    if isinstance(settings.get("machine"), (str, Path)):
        settings["machine_file"] = str(settings["machine"])
        settings["machine"] = load_machine(settings["machine"])
    for key in ("cores", "cores_per_rank", "factors"):
        if key in settings:
            settings[key] = tuple(settings[key])
    chosen = Settings(**{"defaults": not settings, **settings})
    if is_run(Path(directory)):
        from tareador.report.run_report import run_report

        return run_report(directory, chosen)
    return trace_report(directory, chosen)
