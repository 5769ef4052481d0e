"""What-if on the page: for each core count, the task types ranked by how much faster the whole
run gets when one of them is made k times faster (``analyses.whatif``, as ``tareador whatif``),
as bars and as a table, one tab per core count."""

from __future__ import annotations

import math

import numpy as np
from bokeh.layouts import column
from bokeh.models import Div, InlineStyleSheet

from tareador.analyses.whatif import WhatIf, ratio
from tareador.render.summary import format_seconds, machine_name
from tareador.report import figures
from tareador.report.html import note, table
from tareador.report.page import Section

TABLE_CSS = """table { border-collapse: collapse; font: 13px system-ui, sans-serif; margin: 4px 0 12px; }
th, td { border: 1px solid #ddd; padding: 2px 8px; text-align: left; }
th { background: #f3f5f8; } td.num { text-align: right; font-variant-numeric: tabular-nums; }"""


def factor_name(k: float) -> str:
    return "takes no time" if k == math.inf else f"{k:g}x faster"


def _percent(benefit: float) -> str:
    return "inf" if benefit == math.inf else f"{100 * (benefit - 1):+.1f}%"


def ranking_table(result: WhatIf, cores: int | None) -> str:
    header = ["rank", "task type", "instances", "share of work", "share of the critical path"]
    for k in result.factors:
        header += [f"{factor_name(k)}: benefit", "speedup over T1"]
    rows = []
    for rank, t in enumerate(result.ranking(cores), 1):
        row = [rank, t.name, f"{t.instances:,}", f"{100 * result.work_share(t):.1f}%",
               f"{100 * result.critical_share(t):.1f}%"]
        for k in result.factors:
            speedup = ratio(result.t1, result.time(t.name, k, cores))
            row += [_percent(result.benefit(t.name, k, cores)), "inf" if speedup == math.inf else f"{speedup:.2f}"]
        rows.append(row)
    return table(header, rows, numeric_from=2)


def whatif_section(section: Section, result: WhatIf) -> None:
    section.html(note("Each task type in turn made k times faster and the whole run simulated again on each "
                      "machine; benefit is the speedup over the unaccelerated run on the same cores (+24.5% is "
                      "1.245x), most beneficial first. On many cores the share of the critical path, not of the "
                      "work, explains the ranking."))
    panels = []
    for c in result.cores:
        ranked = result.ranking(c)
        base = result.baseline[result.cores.index(c)] / result.rate
        series = {factor_name(k): np.array([_finite(100 * (result.benefit(t.name, k, c) - 1)) for t in ranked])
                  for k in result.factors}
        bars = figures.ranked_bars([t.name for t in ranked], series, "overall speedup over the unaccelerated run (%)",
                                   f"{machine_name(c)}, policy {result.policy}: unaccelerated {format_seconds(base)}")
        # disable_math: a task name between $$ stays text (TeX would need MathJax from the network)
        div = Div(text=ranking_table(result, c), disable_math=True, stylesheets=[InlineStyleSheet(css=TABLE_CSS)])
        panels.append((machine_name(c), column(bars, div)))
    section.figure("ranking", figures.tabs(panels))


def _finite(x: float) -> float:
    """An infinite benefit (the run takes no time at all) has no bar; the table says inf."""
    return x if math.isfinite(x) else math.nan
