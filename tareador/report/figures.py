"""The report's charts as Bokeh models: timelines, curves, ranked bars, scatter plots.

Each function returns a model that the page embeds (page.py) and that a notebook shows with
``bokeh.io.show``. Task and object names only ever reach a chart as data (tooltips, legend
entries drawn on the canvas, tab titles), which Bokeh shows as text, never as markup, and as
axis labels through ``PlainText``: a plain string there between $$ would be typeset as TeX by
MathJax, which BokehJS fetches from the network.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from bokeh.layouts import row
from bokeh.models import (
    Arrow,
    ColumnDataSource,
    CustomJSHover,
    FixedTicker,
    HoverTool,
    Legend,
    LegendItem,
    LinearColorMapper,
    NormalHead,
    PlainText,
    Range1d,
    TabPanel,
    Tabs,
)
from bokeh.plotting import figure

from tareador.files import printable
from tareador.report.bars import Bars

WIDTH = 1100
TOOLS = "xpan,xwheel_zoom,xbox_zoom,reset,save"
TALL_TOOLS = "pan,wheel_zoom,box_zoom,reset,save"  # a timeline of many rows zooms and pans both ways
OUTLINED = 5_000  # bars up to this many get a thin outline, so that neighbours of one type stay apart
CURVE_COLOURS = ("#4477AA", "#EE6677", "#228833", "#CCBB44")


def labels(names: list[str]) -> dict[int, PlainText]:
    """Axis labels of rows 0, 1, ...: the names as plain text, never TeX."""
    return {i: PlainText(printable(name)) for i, name in enumerate(names)}


@dataclass
class Arrows:
    """Messages drawn from (x0, y0) to (x1, y1), rows as y; ``omitted`` says what was left out."""

    x0: np.ndarray
    y0: np.ndarray
    x1: np.ndarray
    y1: np.ndarray
    omitted: str | None = None


def timeline(bars: Bars, title: str, unit: str, arrows: Arrows | None = None) -> figure:
    """One row per core (rank, thread, object), a bar per interval coloured by kind, hover for what
    it is; pan and zoom along time. One glyph for all bars, whose columns are numbers: names (rows,
    kinds, codes) travel once and a formatter looks them up for the tooltip."""
    nrows = max(len(bars.rows), 1)
    tall = nrows > 40
    fig = figure(width=WIDTH, height=int(min(max(90 + 24 * nrows, 180), 900)), title=printable(title),
                 tools=TALL_TOOLS if tall else TOOLS, active_drag="pan" if tall else "xpan",
                 active_scroll="wheel_zoom" if tall else "xwheel_zoom", y_range=Range1d(nrows - 0.5, -0.5),
                 x_axis_label=f"time ({unit})")
    step = -(-nrows // 40)
    fig.yaxis.ticker = FixedTicker(ticks=list(range(0, len(bars.rows), step)))
    fig.yaxis.major_label_overrides = labels(bars.rows)
    fig.ygrid.grid_line_color = None
    data = {"left": bars.start, "right": bars.end, "y": bars.row.astype(np.int32), "k": bars.kind.astype(np.int32),
            "d": (bars.end - bars.start).astype(np.float32),
            "a": np.ones(len(bars), np.float32) if bars.alpha is None else bars.alpha.astype(np.float32)}
    formatters = {"@y": lookup(bars.rows), "@k": lookup(bars.kinds)}
    tips = [("", "@k{custom}"), ("row", "@y{custom}"), (f"start ({unit})", "@left{0,0.000}"),
            (f"length ({unit})", "@d{0,0.000}")]
    for i, (key, values) in enumerate(bars.numbers.items()):
        data[f"n{i}"] = values.astype(np.int32)
        tips.append((key, f"@n{i}"))
    for i, (key, (values, names)) in enumerate(bars.codes.items()):
        data[f"c{i}"] = values.astype(np.int32)
        formatters[f"@c{i}"] = lookup(names)
        tips.append((key, f"@c{i}{{custom}}"))
    colour = LinearColorMapper(palette=bars.colours or ["#000000"], low=-0.5, high=max(len(bars.kinds), 1) - 0.5)
    outline = {"line_color": "white", "line_width": 0.5} if len(bars) <= OUTLINED else {"line_color": None}
    glyph = fig.hbar(y="y", left="left", right="right", height=0.8, source=ColumnDataSource(data),
                     fill_color={"field": "k", "transform": colour}, fill_alpha="a", **outline)
    fig.add_tools(HoverTool(tooltips=tips, formatters=formatters, renderers=[glyph]))
    if arrows is not None and len(arrows.x0):
        fig.add_layout(Arrow(end=NormalHead(size=6, fill_color="black"), line_width=1, line_alpha=0.7,
                             source=ColumnDataSource({"x0": arrows.x0, "y0": arrows.y0, "x1": arrows.x1,
                                                      "y1": arrows.y1}),
                             x_start="x0", y_start="y0", x_end="x1", y_end="y1"))
    first = {int(k): i for i, k in reversed(list(enumerate(bars.kind.tolist())))}
    items = [LegendItem(label=printable(name), renderers=[glyph], index=first[k])
             for k, name in enumerate(bars.kinds) if k in first]
    if items:
        fig.add_layout(Legend(items=items, label_text_font_size="8pt"), "right")
    return fig


def lookup(names: list[str]) -> CustomJSHover:
    """A tooltip formatter showing the name a column's number indexes."""
    return CustomJSHover(args={"names": [printable(n) for n in names]}, code="return names[value]")


def tabs(panels: list[tuple[str, object]]) -> Tabs:
    """A selector between figures of one kind (one per core count, per rank pair, ...)."""
    return Tabs(tabs=[TabPanel(child=child, title=printable(title)) for title, child in panels])


def scaling_curves(x: list[int], speedup: list[float], efficiency: list[float], xlabel: str,
                   unbounded: float | None, unbounded_label: str):
    """Speedup beside efficiency against cores (log2 axis), the ideal dotted; the unbounded machine as
    a dashed level."""
    ticks = FixedTicker(ticks=x)
    left = figure(width=540, height=340, title="speedup", x_axis_type="log", x_axis_label=xlabel,
                  tools="pan,wheel_zoom,box_zoom,reset,save")
    right = figure(width=540, height=340, title="efficiency", x_axis_type="log", x_axis_label=xlabel,
                   tools="pan,wheel_zoom,box_zoom,reset,save", y_range=Range1d(0, 1.05))
    left.line(x, x, line_dash="dotted", color="grey", legend_label="ideal")
    right.line(x, [1.0] * len(x), line_dash="dotted", color="grey", legend_label="ideal")
    source = ColumnDataSource({"cores": x, "speedup": speedup, "efficiency": efficiency})
    left.line("cores", "speedup", source=source, color=CURVE_COLOURS[0], legend_label="simulated")
    left.scatter("cores", "speedup", source=source, color=CURVE_COLOURS[0], size=7)
    right.line("cores", "efficiency", source=source, color=CURVE_COLOURS[0], legend_label="simulated")
    right.scatter("cores", "efficiency", source=source, color=CURVE_COLOURS[0], size=7)
    if unbounded is not None:
        left.line([min(x), max(x)], [unbounded, unbounded], line_dash="dashed", color=CURVE_COLOURS[1],
                  legend_label=unbounded_label)
    for fig, corner in ((left, "top_left"), (right, "bottom_left")):
        fig.xaxis.ticker = ticks
        fig.legend.location = corner
        fig.add_tools(HoverTool(tooltips=[("cores", "@cores"), ("speedup", "@speedup{0.00}"),
                                          ("efficiency", "@efficiency{0.000}")]))
    return row(left, right)


def profile(times: np.ndarray, series: dict[str, np.ndarray], unit: str, title: str) -> figure:
    """Step curves over time (how many instances run, how many are ready and waiting for a core)."""
    fig = figure(width=WIDTH, height=260, title=printable(title), x_axis_label=f"time ({unit})",
                 tools=TOOLS, active_drag="xpan", active_scroll="xwheel_zoom")
    for (label, values), colour in zip(series.items(), CURVE_COLOURS, strict=False):
        fig.step(times, values, mode="after", color=colour, legend_label=label, line_width=1.5)
    fig.legend.location = "top_right"
    fig.y_range.start = 0
    return fig


def ranked_bars(names: list[str], series: dict[str, np.ndarray], xlabel: str, title: str) -> figure:
    """Horizontal bars, first name on top, one bar per series (factor) in each group."""
    n, k = len(names), max(len(series), 1)
    plain_labels = labels(names)
    fig = figure(width=WIDTH - 200, height=80 + 26 * n * (k + 1) // 2 + 40, title=printable(title),
                 y_range=Range1d(n - 0.5, -0.5), x_axis_label=xlabel, tools="xpan,xwheel_zoom,reset,save")
    fig.yaxis.ticker = FixedTicker(ticks=list(range(n)))
    fig.yaxis.major_label_overrides = plain_labels
    height = 0.8 / k
    for j, ((label, values), colour) in enumerate(zip(series.items(), CURVE_COLOURS, strict=False)):
        y = np.arange(n) - 0.4 + height * (j + 0.5)
        source = ColumnDataSource({"y": y, "value": values, "type": [printable(name) for name in names]})
        fig.hbar(y="y", right="value", height=height * 0.9, source=source, color=colour, legend_label=label)
    fig.add_tools(HoverTool(tooltips=[("type", "@type"), ("value", "@value{0.0}")]))
    fig.legend.location = "bottom_right"
    return fig


def scatter_pair(left: tuple[str, np.ndarray, np.ndarray], right: tuple[str, np.ndarray, np.ndarray],
                 xlabel: str, ylabel: str):
    """Two scatter plots side by side (production beside consumption)."""
    figs = []
    for title, x, y in (left, right):
        fig = figure(width=540, height=320, title=printable(title), x_axis_label=xlabel, y_axis_label=ylabel,
                     y_range=Range1d(-2, 102), tools="pan,wheel_zoom,box_zoom,reset,save")
        fig.scatter(x, y, size=3, alpha=0.5)
        figs.append(fig)
    return row(*figs)


def curves(x: list[float], series: dict[str, list[float]], xlabel: str, ylabel: str, title: str,
           log_x: bool = False) -> figure:
    fig = figure(width=WIDTH - 300, height=360, title=printable(title), x_axis_label=xlabel, y_axis_label=ylabel,
                 x_axis_type="log" if log_x else "linear", tools="pan,wheel_zoom,box_zoom,reset,save")
    for (label, values), colour in zip(series.items(), CURVE_COLOURS, strict=False):
        fig.line(x, values, color=colour, legend_label=label, line_width=1.5)
        fig.scatter(x, values, color=colour, size=6, legend_label=label)
    fig.legend.location = "top_right"
    return fig
