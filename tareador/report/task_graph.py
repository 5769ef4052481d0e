"""The task graph on the page: ``tareador graph``'s Graphviz layout as inline SVG, with what
page.js needs to show each node's details and the critical path.

The drawing is render/graph.py's (same nodes, colours, folding of main and collapsing beyond
``--max-nodes``); this module lays it out in memory and adds, per SVG node (keyed by its
Graphviz title, the node id), the facts and dependencies the hover panel lists. When Graphviz
cannot draw it (too many nodes to lay out in reasonable time, Graphviz missing) the section says
why instead.
"""

from __future__ import annotations

import re
import shutil
from collections import defaultdict
from pathlib import Path

from tareador.errors import DurationsError
from tareador.render.graph import drawing, type_nodes
from tareador.render.summary import format_seconds, human
from tareador.report.html import note
from tareador.report.page import Section, directory_of
from tareador.taskgraph.dag import Dag
from tareador.taskgraph.durations import FILE as DURATIONS
from tareador.taskgraph.durations import load_durations
from tareador.taskgraph.model import PROGRAM, RAW, TaskTrace

LISTED = 12  # dependencies listed per side in the panel; the rest are counted


def graph_section(section: Section, trace: TaskTrace, dag: Dag, path: list[int], rate: float | None, *,
                  max_nodes: int, collapse: str) -> dict | None:
    """Adds the graph (or why there is none) to ``section``; returns the data page.js reads."""
    drawn = drawing(trace, collapse=collapse, max_nodes=max_nodes)
    if drawn.too_big:
        section.html(note(f"No drawing: Graphviz takes minutes to hours to lay out {drawn.nodes:,} nodes (about "
                          "45 s for 2000); 'tareador graph DIR' writes graph.dot, or draw task types with "
                          "tareador report --collapse auto.", "missing"))
        return None
    if shutil.which("dot") is None:
        section.html(note("No drawing: Graphviz 'dot' is not installed (make deps, or apt-get install graphviz).",
                          "missing"))
        return None
    svg = drawn.dot.pipe(format="svg").decode("utf-8")
    svg = svg[svg.index("<svg"):]  # the XML prolog and DOCTYPE are not HTML
    if drawn.collapsed:
        section.html(note(f"{trace.instances:,} task instances are more than --max-nodes {max_nodes}: drawn as one "
                          "node per task type (tareador report --collapse never draws every instance).", "warning"))
    section.html(note("Drag to pan, the wheel zooms; hover a node for its dependencies, click to keep them shown. "
                      "Dashed edges are orders no data carries (main's code, task creation). The critical path is "
                      "drawn in red."))
    section.html('<div class="graph-tools"><label><input type="checkbox" id="graph-critical" checked> highlight '
                 'the critical path</label> <button id="graph-reset">reset view</button></div>'
                 f'<div class="graph-box"><div id="graph-view">{_strip_scripts(svg)}</div>'
                 '<div id="graph-details"><p class="note">Hover a node.</p></div></div>')
    critical = [int(i) for i in dag.ids[path].tolist()]
    if drawn.collapsed:
        return _type_data(trace, critical)
    measured, problem = measured_ns(directory_of(trace))
    if problem:
        section.html(note(problem, "warning"))
    return _instance_data(trace, critical, rate, measured)


def measured_ns(directory: Path) -> tuple[dict[int, list[int]], str | None]:
    """Fragment id -> [median, min, max] measured nanoseconds when 'tareador time' timed the trace,
    and why a durations file present could not be used."""
    if not (directory / DURATIONS).is_file():
        return {}, None
    try:
        d = load_durations(directory)
    except DurationsError as e:
        return {}, f"Measured durations not shown: {e}"
    return {i: [n, lo, hi] for i, n, lo, hi in zip(*(a.tolist() for a in (d.ids, d.ns, d.low, d.high)),
                                                     strict=True)}, None


def _strip_scripts(svg: str) -> str:
    """Graphviz writes no script; this keeps it so whatever a label held."""
    return re.sub(r"<script\b.*?</script>", "", svg, flags=re.S | re.I)


def _instance_data(trace: TaskTrace, critical: list[int], rate: float | None,
                   measured: dict[int, list[int]]) -> dict:
    by_id = {t.id: t for t in trace.fragments}
    parts = defaultdict(list)
    for t in trace.fragments:
        parts[t.instance].append(t.id)
    incoming, outgoing = defaultdict(list), defaultdict(list)
    for d in trace.deps:
        incoming[d.dst].append(d)
        outgoing[d.src].append(d)

    def label(i: int) -> str:
        t = by_id[i]
        return f"main #{i}" if t.is_main else f"{t.name} #{i}"

    def listed(deps, other) -> tuple[list, int]:
        deps = sorted(deps, key=lambda d: (d.kind != RAW, -d.bytes, d.object))
        return [[label(other(d)), d.object, f"{d.bytes:,}", d.kind] for d in deps[:LISTED]], max(len(deps) - LISTED, 0)

    on_path = set(critical)
    nodes = {}
    for t in trace.fragments:
        if t.is_main:
            continue
        fragments = parts[t.instance]
        facts = [["task type", t.name], ["instance", f"#{t.instance}" + (
                     f", fragment {fragments.index(t.id) + 1} of {len(fragments)}" if len(fragments) > 1 else "")],
                 ["instructions", f"{t.instructions:,}"]]
        if rate:
            facts.append(["time at the machine's rate", format_seconds(t.instructions / rate)])
        if t.id in measured:
            ns, low, high = measured[t.id]
            facts.append(["measured", f"{ns:,} ns ({low:,} .. {high:,} over the runs)"])
        facts.append(["on the critical path", "yes" if t.id in on_path else "no"])
        ins, more_in = listed(incoming[t.id], lambda d: d.src)
        outs, more_out = listed(outgoing[t.id], lambda d: d.dst)
        nodes[str(t.id)] = {"title": f"{t.name} #{t.id}", "facts": facts, "in": ins, "more_in": more_in,
                            "out": outs, "more_out": more_out}
    shown = [i for i in critical if not by_id[i].is_main]
    return {"nodes": nodes, "critical": [str(i) for i in shown],
            "critical_edges": [f"{a}->{b}" for a, b in zip(shown, shown[1:], strict=False)]}


def _type_data(trace: TaskTrace, critical: list[int]) -> dict:
    """Per task type node: its totals and the data it gets from and gives to other types."""
    node = type_nodes(trace)
    kind = {t.id: (PROGRAM if t.is_main else t.name) for t in trace.fragments}
    instance = {t.id: t.instance for t in trace.fragments}
    flows: defaultdict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for d in trace.deps:
        if d.kind == RAW and instance[d.src] != instance[d.dst]:
            flow = flows[kind[d.src], kind[d.dst], d.object]
            flow[0] += 1
            flow[1] += d.bytes
    work: defaultdict[str, int] = defaultdict(int)
    count: defaultdict[str, int] = defaultdict(int)
    for t in trace.fragments:
        work[kind[t.id]] += t.instructions
        count[kind[t.id]] += t.is_main or t.starts_instance
    nodes = {}
    for name, key in node.items():
        ins = sorted(((s, o, f) for (s, d, o), f in flows.items() if d == name), key=lambda x: -x[2][1])
        outs = sorted(((d, o, f) for (s, d, o), f in flows.items() if s == name), key=lambda x: -x[2][1])
        nodes[key] = {"title": name, "facts": [["instances", f"{count[name]:,}"],
                                               ["instructions", human(work[name])]],
                      "in": [[t, o, f"{f[1]:,}", f"{f[0]} RAW"] for t, o, f in ins[:LISTED]],
                      "more_in": max(len(ins) - LISTED, 0),
                      "out": [[t, o, f"{f[1]:,}", f"{f[0]} RAW"] for t, o, f in outs[:LISTED]],
                      "more_out": max(len(outs) - LISTED, 0)}
    path_types = [node[kind[i]] for i in critical if kind[i] in node]
    hops = [f"{a}->{b}" for a, b in zip(path_types, path_types[1:], strict=False) if a != b]
    return {"nodes": nodes, "critical": sorted(set(path_types)), "critical_edges": hops}
