"""The task dependency graph as Graphviz DOT and SVG, drawn the way Tareador users expect.

One node per task instance (name, id, instructions; area by work; one colour per task type),
RAW edges labelled with object and bytes, implicit ordering edges dashed, transitive edges hidden.
Graphs too big to read are collapsed to one node per task type rather than producing an SVG
nobody can open.
"""

from __future__ import annotations

import math
import shutil
from collections import defaultdict
from pathlib import Path

import graphviz
import networkx as nx

from tareador.render.summary import human, work_by_type
from tareador.taskgraph.model import MAIN, RAW, TaskTrace

PALETTE = ["#4477AA", "#EE6677", "#228833", "#CCBB44", "#66CCEE", "#AA3377", "#BBBBBB", "#EE8866",
           "#44BB99", "#FFAABB", "#99DDFF", "#AAAA00"]  # Paul Tol's colour-blind-safe sets
MAIN_COLOUR = "#DDDDDD"
MAX_LABEL_LINES = 2


def type_colours(trace: TaskTrace) -> dict[str, str]:
    colours = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(trace.task_types)}
    colours[MAIN] = MAIN_COLOUR
    return colours


def _width(instructions: int, largest: int) -> float:
    """Area proportional to work, clamped so tiny tasks stay visible and big ones stay sane."""
    return round(0.5 + 2.0 * math.sqrt(instructions / largest), 2) if largest else 0.5


def drawn_edges(trace: TaskTrace, all_edges: bool) -> list[tuple[int, int]]:
    g = trace.graph
    raw_or_order = nx.DiGraph()
    raw_or_order.add_nodes_from(g.nodes)
    raw_or_order.add_edges_from((s, d) for s, d, a in g.edges(data=True)
                                if a["order"] or any(x.kind == RAW for x in a["deps"]))
    kept = raw_or_order if all_edges else nx.transitive_reduction(raw_or_order)
    return sorted(kept.edges)


def _edge_label(deps) -> str:
    raw = sorted((d for d in deps if d.kind == RAW), key=lambda d: (-d.bytes, d.object))
    lines = [f"{d.object} {human(d.bytes)} B" for d in raw[:MAX_LABEL_LINES]]
    if len(raw) > MAX_LABEL_LINES:
        lines.append(f"+{len(raw) - MAX_LABEL_LINES} more")
    return "\n".join(lines)


def _legend(trace: TaskTrace, colours: dict[str, str]) -> str:
    total = trace.t1 or 1
    rows = "".join(f'<TR><TD BGCOLOR="{colours[name]}">{name}</TD><TD>{n}</TD><TD>{100 * work / total:.1f}%</TD></TR>'
                   for name, n, work in work_by_type(trace))
    return f'<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0"><TR><TD><B>task type</B></TD>' \
           f'<TD><B>instances</B></TD><TD><B>work</B></TD></TR>{rows}</TABLE>>'


def instance_graph(trace: TaskTrace, all_edges: bool) -> graphviz.Digraph:
    colours = type_colours(trace)
    largest = max((t.instructions for t in trace.tasks), default=0)
    dot = graphviz.Digraph("tasks", graph_attr={"rankdir": "TB", "label": "task dependency graph", "labelloc": "t"})
    dot.node("legend", _legend(trace, colours), shape="plaintext")
    for t in trace.tasks:
        if t.is_main:
            dot.node(str(t.id), f"main #{t.id}", shape="box", style="filled", fillcolor=MAIN_COLOUR,
                     fontsize="8", height="0.2")
        else:
            dot.node(str(t.id), f"{t.name}\n#{t.id}\n{human(t.instructions)} instr", shape="ellipse",
                     style="filled", fillcolor=colours[t.name], width=str(_width(t.instructions, largest)))
    g = trace.graph
    by_id = {t.id: t for t in trace.tasks}
    for s, d in drawn_edges(trace, all_edges):
        attrs = g.edges[s, d]
        # main -> the task it creates is an order edge anyway: the loop variables it reads add nothing.
        creation = by_id[s].is_main and by_id[d].parent == s
        if any(x.kind == RAW for x in attrs["deps"]) and not creation:
            dot.edge(str(s), str(d), label=_edge_label(attrs["deps"]), fontsize="8")
        else:
            dot.edge(str(s), str(d), style="dashed", color="#BBBBBB")
    return dot


def type_graph(trace: TaskTrace) -> graphviz.Digraph:
    """One node per task type: what still reads when there are thousands of instances."""
    colours = type_colours(trace)
    name = {t.id: t.name for t in trace.tasks}
    edges: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    pairs = set()
    for d in trace.deps:
        if d.kind == RAW and d.src != d.dst:
            key = (name[d.src], name[d.dst])
            edges[key][1] += d.bytes
            if (d.src, d.dst) not in pairs:
                pairs.add((d.src, d.dst))
                edges[key][0] += 1
    dot = graphviz.Digraph("types", graph_attr={
        "label": f"{len(trace.tasks)} task instances collapsed by task type (tareador graph --collapse never "
                 "draws every instance)", "labelloc": "t"})
    largest = max((w for _, _, w in work_by_type(trace)), default=0)
    for task_type, n, work in work_by_type(trace):
        dot.node(task_type, f"{task_type}\n{n} instances\n{human(work)} instr", style="filled",
                 fillcolor=colours[task_type], shape="box" if task_type == MAIN else "ellipse",
                 width=str(_width(work, largest)))
    for (s, d), (count, nbytes) in sorted(edges.items()):
        dot.edge(s, d, label=f"{count} deps\n{human(nbytes)} B", fontsize="8")
    return dot


def write_graph(trace: TaskTrace, out_dir: str | Path, *, all_edges: bool = False, collapse: str = "auto",
                max_nodes: int = 300, formats: tuple[str, ...] = ("dot", "svg")) -> dict[str, Path]:
    collapsed = collapse == "always" or (collapse == "auto" and len(trace.tasks) > max_nodes)
    dot = type_graph(trace) if collapsed else instance_graph(trace, all_edges)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    if "dot" in formats:
        written["graph (dot)"] = out / "graph.dot"
        written["graph (dot)"].write_text(dot.source)
    for fmt in (f for f in formats if f != "dot"):
        if shutil.which("dot") is None:
            raise RuntimeError("Graphviz 'dot' is not installed: run 'make deps' (apt-get install graphviz)")
        path = out / f"graph.{fmt}"
        path.write_bytes(dot.pipe(format=fmt))
        written[f"graph ({fmt})"] = path
    return written
