"""``trace()``: run a program under the agent and write its trace directory.

Whatever the ending (normal exit, non-zero exit, crash, Ctrl-C, annotation error) the tables
traced so far are written; the summary says how the run ended and whether it is partial.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from tareador import __version__
from tareador.taskgraph.model import TaskTrace
from tareador.taskgraph.store import save
from tareador.tracing import decode
from tareador.tracing.driver import run_agent

ANNOTATION_ERRORS = {
    1: "tareador_end_task(\"{name}\") without a matching tareador_start_task",
    2: "tareador_end_task(\"{name}\") does not match the innermost open task",
    3: "task \"{name}\" was still open at tareador_OFF() or at the end of the program",
    4: "tasks nested deeper than 64 levels (at \"{name}\")",
}


class AnnotationError(Exception):
    """The program's start/end markers are unbalanced or mismatched."""


OPEN_AT_END = 3


def _annotation_problem(meta: dict, partial: bool) -> str | None:
    """A crash or Ctrl-C naturally leaves tasks open: that is not the program's fault."""
    error = meta["error"]
    if not error["code"] or (partial and error["code"] == OPEN_AT_END):
        return None
    names = meta["names"]
    name = names[error["name"]] if error["name"] < len(names) else "?"
    text = ANNOTATION_ERRORS.get(error["code"], "annotation error").format(name=name)
    site = error.get("site")
    where = f" at {site['file']}:{site['line']}" if site and site.get("file") else ""
    return f"{text}{where} (task instance #{error['task']}); fix the markers and trace again"


def _ending_text(ending: dict) -> tuple[str, bool]:
    """(one-line description, partial?)"""
    kind = ending["kind"]
    if kind == "exit":
        status = ending.get("status", 0)
        return (f"exited with status {status}", False)
    if kind == "crash":
        where = ending.get("where") or {}
        loc = f" in {where.get('function')}" if where.get("function") else ""
        if where.get("file"):
            loc += f" ({where['file']}:{where['line']})"
        return (f"crashed ({ending.get('signal')}{loc})", True)
    return ("was interrupted (Ctrl-C)", True)


class StatusRow:
    """The tracing progress on the terminal's bottom row, kept out of the scrolling region (as
    apt does): the traced program prints to the same terminal, and its lines scroll above the
    progress instead of being glued to it."""

    def __init__(self, fd: int):
        self.fd = fd
        self.rows = 0
        self.started = time.monotonic()

    @classmethod
    def on_stderr(cls) -> StatusRow | None:
        if not sys.stderr.isatty() or os.environ.get("TERM", "dumb") == "dumb":
            return None
        return cls(sys.stderr.fileno())

    def __call__(self, p: dict | None) -> None:
        if not p:
            return
        columns, rows = os.get_terminal_size(self.fd)
        if rows < 3:
            return
        out = ""
        if rows != self.rows:
            # Down and up one line first (scrolling if at the bottom) so the cursor sits above
            # the last row; setting the region homes the cursor, hence save and restore.
            out += f"\x1bD\x1b[1A\x1b7\x1b[1;{rows - 1}r\x1b8"
            self.rows = rows
        text = (f"  tracing: {p['tasks']} task instances, {p['accesses'] / 1e6:.1f} M accesses analysed, "
                f"{time.monotonic() - self.started:.0f} s")[:columns - 1]  # a wrap would scroll the screen
        os.write(self.fd, f"{out}\x1b7\x1b[{rows};1H\x1b[2K{text}\x1b8".encode())

    def close(self) -> None:
        if self.rows:
            os.write(self.fd, f"\x1b7\x1b[r\x1b[{self.rows};1H\x1b[2K\x1b8".encode())


def trace(argv: list[str], out_dir: str | Path, *, progress: bool = True) -> TaskTrace:
    """Trace ``argv`` and write ``out_dir``; raises AnnotationError after writing if the markers
    are unbalanced."""
    started = time.monotonic()
    status = StatusRow.on_stderr() if progress else None
    try:
        result = run_agent(argv, progress=status)
    finally:
        if status:
            status.close()
    meta = result.meta
    tasks_raw, objects_raw, edges_raw = decode.split_tables(meta, result.data)
    decode.refine_source_lines(list(meta["sites"].values()) + [s for s in (meta["error"].get("site"),
                                                                           meta["ending"].get("where")) if s])
    objects = decode.object_names(meta, objects_raw)
    tasks = decode.task_rows(meta, tasks_raw)
    deps = decode.dependency_rows(edges_raw, objects)
    ending, partial = _ending_text(meta["ending"])
    warnings = list(meta["warnings"])
    markers = meta["markers"]
    if not markers[0]:
        warnings.append("the program has no tareador markers: the whole of main was traced as one task")
    elif not tasks:
        warnings.append("tareador_ON() was never called: nothing was analysed")
    problem = _annotation_problem(meta, partial)
    trace = TaskTrace(tasks, deps, objects, {}, str(out_dir))
    trace.summary = {
        "program": argv[0],
        "arguments": list(argv[1:]),
        "ending": ending,
        "exit_status": meta["ending"].get("status"),
        "partial": partial,
        "instances": trace.instances,
        "main_fragments": sum(1 for t in tasks if t.is_main),
        "task_fragments": sum(1 for t in tasks if not t.is_main),
        "task_types": len(trace.task_types),
        "t1": trace.t1,
        "tinf": trace.tinf if problem is None else None,
        "parallelism": round(trace.parallelism, 4) if problem is None else None,
        "accesses": meta["accesses"],
        "instructions_traced": meta["instructions"],
        "traced_threads": "main thread only",
        "annotation_error": problem,
        "warnings": warnings,
        "tracing_seconds": round(time.monotonic() - started, 3),
        "tool_version": __version__,
    }
    save(trace, out_dir)
    if problem:
        raise AnnotationError(problem)
    return trace
