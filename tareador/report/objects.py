"""Object usage: which task types read and write which data objects, and when in the simulated
run each object is touched, so that the object that serialises a program shows as a row whose
accesses never overlap.

From accesses.csv (per fragment and object, the hull of the bytes it read before writing them and
of those it wrote): bytes are those hulls' lengths summed over fragments, an upper bound of the
bytes touched where a fragment's accesses have gaps.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from tareador.errors import TraceDirError
from tareador.render.summary import machine_name, time_unit
from tareador.report import figures
from tareador.report.bars import OBJECT_BARS, Bars, aggregate
from tareador.report.html import note, table
from tareador.report.page import Section, directory_of
from tareador.simulation.list_scheduler import Schedule
from tareador.taskgraph.dag import Dag
from tareador.taskgraph.model import Access, TaskTrace
from tareador.taskgraph.store import read_table

SHOWN = 40  # objects in the table and the timeline, the most touched first
ACCESSES = ["-", "wrote", "read", "read and wrote"]


def _span(lo: int, hi: int) -> int:
    return hi - lo if lo >= 0 else 0


def usage(accesses: list[Access], types: dict[int, str]) -> dict[str, dict[str, list[int]]]:
    """object -> task type -> [bytes read first, bytes written], summed over fragments."""
    out: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for a in accesses:
        cell = out[a.object][types[a.task]]
        cell[0] += _span(a.read_lo, a.read_hi)
        cell[1] += _span(a.write_lo, a.write_hi)
    return out


def objects_section(section: Section, trace: TaskTrace, dag: Dag, schedule: Schedule, rate: float,
                    types: list[str], colours: dict[str, str]) -> None:
    try:
        accesses = read_table(directory_of(trace) / "accesses.csv", Access,
                              "trace the program again with this version of tareador (older traces have no access "
                              "summaries)")
    except TraceDirError as e:
        section.html(note(f"No object usage: {e}", "missing"))
        return
    index = {int(i): k for k, i in enumerate(dag.ids.tolist())}
    by_task = {i: types[k] for i, k in index.items()}
    table_of = usage(accesses, by_task)
    ranked = sorted(table_of, key=lambda o: (-sum(r + w for r, w in table_of[o].values()), o))
    shown = ranked[:SHOWN]
    kinds = sorted({t for o in shown for t in table_of[o]})
    size = {o.name: o.size for o in trace.objects}
    rows = [[o, f"{size.get(o, 0):,}"] + [_cell(table_of[o].get(t)) for t in kinds] for o in shown]
    section.html(note("Bytes each task type read before writing them / wrote, per object, summed over its "
                      "fragments (the hull of each fragment's accesses); the most used objects first."))
    section.html(table(["object", "size (bytes)"] + [f"{t}: read / written" for t in kinds], rows, css="matrix"))
    if len(ranked) > SHOWN:
        section.html(note(f"{len(ranked) - SHOWN:,} less used objects are not shown."))
    scale, unit = time_unit(schedule.makespan / rate)
    listed = set(shown)
    bars = aggregate(_access_bars([a for a in accesses if a.object in listed], shown, index, dag, schedule, types,
                                  colours, scale / rate), OBJECT_BARS)
    if bars.aggregated:
        section.html(note(bars.aggregated, "warning"))
    section.html(note(f"When each object is touched in the simulated run on {machine_name(schedule.cores)} "
                      f"(policy {schedule.policy}): a bar per fragment that read or wrote it, coloured by task "
                      "type, faint when it only read. An object whose bars never overlap orders its tasks one "
                      "after another."))
    section.figure("timeline", figures.timeline(bars, f"objects over the run, {machine_name(schedule.cores)}", unit))


def _cell(cell: list[int] | None) -> str:
    return "" if cell is None else f"{cell[0]:,} / {cell[1]:,}"


def _access_bars(accesses: list[Access], objects: list[str], index: dict[int, int], dag: Dag, schedule: Schedule,
                 types: list[str], colours: dict[str, str], scale: float) -> Bars:
    kinds = sorted(colours)
    code = {k: i for i, k in enumerate(kinds)}
    row = {o: i for i, o in enumerate(objects)}
    frag = np.array([index[a.task] for a in accesses], np.int64)
    wrote = np.array([a.write_lo >= 0 for a in accesses], bool)
    access = wrote + 2 * np.array([a.read_lo >= 0 for a in accesses], bool)  # indexes ACCESSES
    return Bars(row=np.array([row[a.object] for a in accesses], np.int64), start=schedule.start[frag] * scale,
                end=schedule.finish[frag] * scale, kind=np.array([code[types[k]] for k in frag.tolist()], np.int64),
                kinds=kinds, colours=[colours[k] for k in kinds], rows=objects,
                numbers={"instance": dag.ids[frag]}, codes={"access": (access, ACCESSES)},
                alpha=np.where(wrote, 1.0, 0.35))
