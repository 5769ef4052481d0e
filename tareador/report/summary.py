"""The summary at the top of a page: what was traced, T1, T-inf, parallelism, where the work and
the critical path go, warnings; and for an MPI run its ranks.

The numbers are summary.json's, shown exactly (the browser test reads them back against it).
"""

from __future__ import annotations

import datetime
import shlex
from pathlib import Path

from tareador.analyses.whatif import WhatIf
from tareador.render.summary import format_call
from tareador.report.html import definition_list, note, number, table, text, warnings_list
from tareador.report.page import Section, directory_of
from tareador.taskgraph.model import TaskTrace


def command_line(summary: dict) -> str:
    return shlex.join([str(summary.get("program", "?")), *map(str, summary.get("arguments", []))])


def traced_on(directory: str | Path) -> str:
    """When the trace was written: its summary.json's modification time (the trace records no date)."""
    stamp = (Path(directory) / "summary.json").stat().st_mtime
    return datetime.datetime.fromtimestamp(stamp).astimezone().strftime("%Y-%m-%d %H:%M %Z")


def partial_banner(summary: dict, what: str) -> str:
    """A partial trace stands out at the top, with how it ended."""
    if not summary.get("partial"):
        return ""
    ending = summary.get("ending") or "stopped before its end"
    return f'<p class="partial">partial {text(what)}: the program {text(ending)}; everything below covers only ' \
           "what ran until then</p>"


def trace_summary(section: Section, trace: TaskTrace, result: WhatIf, simulated: str) -> None:
    s = trace.summary
    main = sum(1 for t in trace.fragments if t.is_main)
    section.html(partial_banner(s, "trace"))
    section.html(definition_list([
        ("program", command_line(s), "command"),
        ("traced", traced_on(directory_of(trace)), None),
        ("ending", s.get("ending", "?"), "ending"),
        ("task instances", number(s.get("instances", trace.instances)), "instances"),
        ("task types", number(s.get("task_types", len(trace.task_types))), "task_types"),
        ("fragments of main", number(s.get("main_fragments", main)), "main_fragments"),
        ("T1 (total work, instructions)", number(s.get("t1", trace.t1)), "t1"),
        ("T-inf (critical path, instructions)", number(s.get("tinf", trace.tinf)), "tinf"),
        ("parallelism T1 / T-inf", f"{s.get('parallelism', trace.parallelism):.2f}", "parallelism"),
    ]))
    if s.get("annotation_error"):
        section.html(note(f"annotation error: {s['annotation_error']}", "warning"))
    section.html(warnings_list(list(s.get("warnings", []))))
    rows = [[t.name, number(t.instances), number(t.work), f"{100 * result.work_share(t):.1f}%",
             f"{100 * result.critical_share(t):.1f}%"] for t in result.types]
    work = "instructions" if result.unit == "instructions" else "measured ns"
    section.html("<h3>Task types</h3>" + table(
        ["task type", "instances", work, "share of work", "share of the critical path"], rows))
    section.html(note("Share of the critical path: the instructions of the type's fragments on one longest path "
                      "(the highlighted path of the graph) over T-inf. main (program) is the program's own code "
                      "between tasks."))
    section.html(note(simulated))


def run_summary(section: Section, directory: str | Path, summary: dict, simulated: str | None) -> None:
    """An MPI run's summary.json: the run, then one row per rank."""
    section.html(partial_banner(summary, "run"))
    name = summary.get("mpi") or ""
    mpi = {"mpich": "MPICH", "openmpi": "Open MPI"}.get(name, name or "no MPI")
    section.html(definition_list([
        ("program", command_line(summary), "command"),
        ("traced", traced_on(directory), None),
        ("ranks", number(summary["ranks"]), "ranks"),
        ("MPI", mpi, "mpi"),
        ("messages", number(summary["messages"]), "messages"),
        ("bytes in messages", number(summary["bytes"]), "bytes"),
        ("collectives", number(summary["collectives"]), "collectives"),
    ]))
    section.html(warnings_list(list(summary.get("warnings", [])) + _unmatched(summary)))
    rows = [[r["rank"], number(r["t1"]), number(r["tinf"]), f"{r['parallelism']:.2f}", number(r["instances"]),
             number(r["mpi_calls"]), r["ending"] + (f"; stopped inside {format_call(r['blocked_in'])}"
                                                    if r.get("blocked_in") else "")]
            for r in summary["per_rank"]]
    section.html("<h3>Ranks</h3>" + table(["rank", "T1 (instructions)", "T-inf (instructions)", "parallelism",
                                           "task instances", "MPI calls", "ending"], rows, numeric_from=0,
                                          css="ranks"))
    if simulated:
        section.html(note(simulated))


def _unmatched(summary: dict) -> list[str]:
    out = [f"unmatched: rank {c['rank']}: {format_call(c)}" for what in ("sends", "receives")
           for c in summary.get(f"unmatched_{what}", [])]
    return out + [f"calls not modelled: {name} x{n}" for name, n in summary.get("calls_not_modelled", {}).items()]
