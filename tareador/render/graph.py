"""The task dependency graph as Graphviz DOT and SVG, drawn the way Tareador users expect.

One node per task instance (name, id, instructions; area by work; one colour per task type),
RAW edges labelled with object and bytes, implicit ordering edges dashed, transitive edges hidden.
Graphs too big to read are collapsed to one node per task type rather than producing an SVG
nobody can open.
"""

from __future__ import annotations

import html
import math
import shutil
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import graphviz
import numpy as np

from tareador.errors import ToolchainError
from tareador.files import printable, write_bytes, write_text
from tareador.render.summary import human, plural, work_by_type
from tareador.system_packages import how_to_install
from tareador.taskgraph.dag import contract, transitive_reduction
from tareador.taskgraph.model import PROGRAM, RAW, TaskTrace

PALETTE = ["#4477AA", "#EE6677", "#228833", "#CCBB44", "#66CCEE", "#AA3377", "#BBBBBB", "#EE8866",
           "#44BB99", "#FFAABB", "#99DDFF", "#AAAA00"]  # Paul Tol's colour-blind-safe sets
MAIN_COLOUR = "#DDDDDD"
MAX_LABEL_LINES = 2
# Graphviz dot's layout time grows steeply with size: 1.5 s for 500 nodes, 45 s for 2000 (this
# machine), minutes beyond; past this many nodes only the DOT is written.
LAYOUT_LIMIT = 2000


def type_colours(trace: TaskTrace) -> dict[str, str]:
    colours = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(trace.task_types)}
    colours[PROGRAM] = MAIN_COLOUR
    return colours


def _width(instructions: int, largest: int) -> float:
    """Area proportional to work, clamped so tiny tasks stay visible and big ones stay sane."""
    return round(0.5 + 2.0 * math.sqrt(instructions / largest), 2) if largest else 0.5


def drawn_edges(trace: TaskTrace, all_edges: bool,
                show_main: bool = False) -> tuple[list[tuple[int, int]], set[int]]:
    """The schedule's edges between the fragments drawn, as id pairs, transitive ones removed
    unless asked; and the ids of main's fragments drawn although main is folded.

    With main folded, an order that only main's code implies (a task whose result main reads
    before creating another) stays visible as an edge between the two tasks: main's fragments are
    contracted, each one's predecessors joined to its successors. Without the transitive
    reduction that is quadratic (a program that waits for all its tasks before creating the next
    ones joins each task to every later one), so there a fragment is contracted only where that
    adds no edge, and the others are drawn: the joins they are.
    """
    dag = trace.dag
    kept = np.ones(dag.n, bool) if show_main else ~dag.is_main
    ids = dag.ids.tolist()
    if all_edges and not show_main:
        pairs, joins = contract(dag, dag.is_main)
        return sorted((ids[s], ids[d]) for s, d in pairs), {ids[j] for j in joins}
    pairs = list(zip(dag.src.tolist(), dag.dst.tolist(), strict=True)) if all_edges else transitive_reduction(dag, kept)
    return sorted((ids[s], ids[d]) for s, d in pairs), set()


def _text(name: str) -> str:
    """A task or object name as literal text of a Graphviz label. Graphviz expands backslash
    escapes (``\\N`` = node name, ``\\l`` = line break) in plain and HTML labels alike; the graphviz
    package already escapes double quotes."""
    return printable(name).replace("\\", "\\\\")


def _edge_label(deps) -> str:
    raw = sorted((d for d in deps if d.kind == RAW), key=lambda d: (-d.bytes, d.object))
    lines = [f"{_text(d.object)} {human(d.bytes)} B" for d in raw[:MAX_LABEL_LINES]]
    if len(raw) > MAX_LABEL_LINES:
        lines.append(f"+{len(raw) - MAX_LABEL_LINES} more")
    return "\n".join(lines)


def _legend(trace: TaskTrace, colours: dict[str, str]) -> str:
    total = trace.t1 or 1
    rows = "".join(f'<TR><TD BGCOLOR="{colours[name]}">{html.escape(_text(name))}</TD><TD>{n}</TD>'
                   f'<TD>{100 * work / total:.1f}%</TD></TR>'
                   for name, n, work in work_by_type(trace, main_apart=True))
    return f'<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0"><TR><TD><B>task type</B></TD>' \
           f'<TD><B>instances</B></TD><TD><B>work</B></TD></TR>{rows}</TABLE>>'


def _fragment_label(t, part: int, parts: int) -> str:
    if t.is_main:
        return f"main #{t.id}"
    which = f" ({part}/{parts})" if parts > 1 else ""
    return f"{_text(t.name)}\n#{t.id}{which}\n{human(t.instructions)} instr"


def instance_graph(trace: TaskTrace, all_edges: bool, show_main: bool = False) -> graphviz.Digraph:
    """One node per task instance; an instance cut into fragments (it creates tasks) is a box of
    its fragments, so the edges say which part of the parent a child follows or feeds."""
    colours = type_colours(trace)
    largest = max((t.instructions for t in trace.fragments), default=0)
    dot = graphviz.Digraph("tasks", graph_attr={"rankdir": "TB", "label": "task dependency graph", "labelloc": "t"})
    dot.node("legend", _legend(trace, colours), shape="plaintext")
    edges, joins = drawn_edges(trace, all_edges, show_main)
    fragments: dict[int, list] = defaultdict(list)
    for t in trace.fragments:
        if show_main or not t.is_main or t.id in joins:
            fragments[t.instance].append(t)
    for instance, parts in fragments.items():
        head = parts[0]
        box = dot if len(parts) == 1 or head.is_main else None
        graph = box or graphviz.Digraph(f"cluster_{instance}", graph_attr={
            "label": f"{_text(head.name)} #{instance}", "style": "rounded", "color": colours[head.name]})
        for k, t in enumerate(parts, start=1):
            if t.is_main:
                graph.node(str(t.id), _fragment_label(t, k, len(parts)), shape="box", style="filled",
                           fillcolor=MAIN_COLOUR, fontsize="8", height="0.2")
            else:
                graph.node(str(t.id), _fragment_label(t, k, len(parts)), shape="ellipse", style="filled",
                           fillcolor=colours[t.name], width=str(_width(t.instructions, largest)))
        if box is None:
            dot.subgraph(graph)
    between: dict[tuple[int, int], list] = defaultdict(list)
    for x in trace.deps:
        between[x.src, x.dst].append(x)
    by_id = {t.id: t for t in trace.fragments}
    for s, d in edges:
        deps = between.get((s, d), [])
        # main -> the task it creates is an order edge anyway: the loop variables it reads add nothing.
        creation = by_id[s].is_main and by_id[d].parent == s
        if any(x.kind == RAW for x in deps) and not creation:
            dot.edge(str(s), str(d), label=_edge_label(deps), fontsize="8")
        else:
            dot.edge(str(s), str(d), style="dashed", color="#BBBBBB")
    return dot


def type_nodes(trace: TaskTrace, show_main: bool = False) -> dict[str, str]:
    """The node id of each task type in ``type_graph`` (main's code as PROGRAM). Task names are not
    node ids: one like "<x>" would be read as an HTML string."""
    types = [t for t, _, _ in work_by_type(trace, main_apart=True) if show_main or t != PROGRAM]
    return {task_type: f"type{i}" for i, task_type in enumerate(types)}


def type_graph(trace: TaskTrace, show_main: bool = False) -> graphviz.Digraph:
    """One node per task type: what still reads when there are thousands of instances. Edges
    inside one instance (between its own fragments) are not between types and are left out."""
    colours = type_colours(trace)
    kind = {t.id: (PROGRAM if t.is_main else t.name) for t in trace.fragments}
    instance = {t.id: t.instance for t in trace.fragments}
    edges: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    pairs = set()
    for d in trace.deps:
        if d.kind == RAW and instance[d.src] != instance[d.dst]:
            key = (kind[d.src], kind[d.dst])
            if not show_main and PROGRAM in key:
                continue
            edges[key][1] += d.bytes
            if (d.src, d.dst) not in pairs:
                pairs.add((d.src, d.dst))
                edges[key][0] += 1
    dot = graphviz.Digraph("types", graph_attr={
        "label": f"{trace.instances} task instances collapsed by task type (tareador graph --collapse never "
                 "draws every instance)", "labelloc": "t"})
    types = [(t, n, w) for t, n, w in work_by_type(trace, main_apart=True) if show_main or t != PROGRAM]
    largest = max((w for _, _, w in types), default=0)
    node = type_nodes(trace, show_main)
    for task_type, n, work in types:
        if task_type == PROGRAM:
            dot.node(node[PROGRAM], f"main (the program's own code)\n{plural(n, 'fragment')}\n{human(work)} instr",
                     style="filled", fillcolor=MAIN_COLOUR, shape="box", width=str(_width(work, largest)))
        else:
            dot.node(node[task_type], f"{_text(task_type)}\n{plural(n, 'instance')}\n{human(work)} instr",
                     style="filled", fillcolor=colours[task_type], shape="ellipse", width=str(_width(work, largest)))
    for (src, dst), (count, nbytes) in sorted(edges.items()):
        dot.edge(node[src], node[dst], label=f"{plural(count, 'dep')}\n{human(nbytes)} B", fontsize="8")
    return dot


@dataclass
class Drawing:
    """The graph ``tareador graph`` draws for a trace, and why it is drawn that way."""

    dot: graphviz.Digraph
    nodes: int
    collapsed: bool  # one node per task type
    too_big: bool  # beyond LAYOUT_LIMIT nodes: Graphviz would take too long to lay it out


def drawing(trace: TaskTrace, *, all_edges: bool = False, collapse: str = "auto", max_nodes: int = 300,
            show_main: bool = False) -> Drawing:
    drawn = sum(1 for t in trace.fragments if show_main or not t.is_main)
    collapsed = collapse == "always" or (collapse == "auto" and drawn > max_nodes)
    nodes = len(trace.task_types) + show_main if collapsed else drawn
    too_big = nodes > LAYOUT_LIMIT
    # The transitive reduction grows like nodes^2 (4 s at 2000, a minute at 5000): a graph too big
    # to lay out keeps every edge rather than hang before writing its DOT.
    dot = type_graph(trace, show_main) if collapsed else instance_graph(trace, all_edges or too_big, show_main)
    return Drawing(dot, nodes, collapsed, too_big)


def write_graph(trace: TaskTrace, out_dir: str | Path, *, all_edges: bool = False, collapse: str = "auto",
                max_nodes: int = 300, show_main: bool = False, formats: tuple[str, ...] = ("dot", "svg"),
                report=None) -> dict[str, Path]:
    """Writes the DOT and lays it out in each other format; ``report(message)`` hears about long
    layouts and about layouts not attempted because Graphviz would take too long."""
    drawn = drawing(trace, all_edges=all_edges, collapse=collapse, max_nodes=max_nodes, show_main=show_main)
    dot, nodes, too_big = drawn.dot, drawn.nodes, drawn.too_big
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    if "dot" in formats:
        written["graph (dot)"] = out / "graph.dot"
        write_text(written["graph (dot)"], dot.source)
    layouts = [f for f in formats if f != "dot"]
    if too_big:
        if layouts and report:
            report(f"graph.{'/'.join(layouts)} not drawn: Graphviz takes minutes to hours to lay out {nodes} nodes "
                   "(about 45 s for 2000); graph.dot is written with every edge (no transitive reduction at this "
                   "size; main's fragments that join many tasks to many are drawn, not folded), or draw task types "
                   "with --collapse auto")
        return written
    for fmt in layouts:
        if shutil.which("dot") is None:
            raise ToolchainError(f"Graphviz's 'dot' is not on PATH: {how_to_install('Graphviz')}")
        started = time.monotonic()
        if report and nodes > max_nodes:
            report(f"laying out {nodes} nodes with Graphviz dot ({fmt}); this takes a while...")
        path = out / f"graph.{fmt}"
        write_bytes(path, dot.pipe(format=fmt))
        if report and nodes > max_nodes:
            report(f"graph.{fmt} laid out in {time.monotonic() - started:.0f} s")
        written[f"graph ({fmt})"] = path
    return written
