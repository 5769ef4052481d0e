"""``trace()``: run a program under the agent and write its trace directory.

Whatever the ending (normal exit, non-zero exit, exit inside a task, crash, a signal to the program
or to tareador, annotation error) the tables traced so far are written; the summary says how the
run ended, by which signal, and whether it is partial.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from tareador.errors import AnnotationError, FunctionError, TracingError
from tareador.files import write_text
from tareador.taskgraph import columns
from tareador.taskgraph.model import TaskTrace
from tareador.taskgraph.patterns import save_rank_patterns
from tareador.taskgraph.store import remove_owned, save_mpi
from tareador.tracing import convert, decode, mpi_launch
from tareador.tracing.driver import check_program, run_agent
from tareador.tracing.functions import TaskFunction, program_functions, resolve
from tareador.version import __version__
from tareador.workers import launch_rank

ANNOTATION_ERRORS = {
    1: "tareador_end_task(\"{name}\") without a matching tareador_start_task",
    2: "tareador_end_task(\"{name}\") does not match the innermost open task",
    3: "task \"{name}\" was still open at tareador_OFF() or at the end of the program",
    4: "tasks nested deeper than 1024 levels (at \"{name}\")",
}


OPEN_AT_END = 3
NO_PARENT = decode.NO_PARENT
# Frida's names of the exceptions it catches, by the signal that raised them (SIGBUS is also an
# access violation; it is rare enough to be named SIGSEGV).
CRASH_SIGNALS = {"access-violation": "SIGSEGV", "abort": "SIGABRT", "illegal-instruction": "SIGILL",
                 "arithmetic": "SIGFPE", "breakpoint": "SIGTRAP", "system": "SIGSYS"}


def _name(meta: dict, index: int) -> str:
    names = meta["names"]
    return names[index] if index < len(names) else "?"


def _task_open_at_exit(meta: dict) -> str | None:
    """The task inside which the program called exit(): left open, like a crash leaves it, and
    not the program's fault. Returning from main with a task open is (no marker site then
    either, unlike a task left open at tareador_OFF)."""
    error, ending = meta["error"], meta["ending"]
    if ending["kind"] != "exit" or ending.get("main_returned") or error["code"] != OPEN_AT_END or error.get("site"):
        return None
    return _name(meta, error["name"])


def _annotation_problem(meta: dict, partial: bool) -> str | None:
    """A crash, a signal, Ctrl-C or exit() naturally leave tasks open: that is not the program's fault."""
    error = meta["error"]
    if not error["code"] or (partial and error["code"] == OPEN_AT_END):
        return None
    text = ANNOTATION_ERRORS.get(error["code"], "annotation error").format(name=_name(meta, error["name"]))
    site = error.get("site")
    where = f" at {site['file']}:{site['line']}" if site and site.get("file") else ""
    return f"{text}{where} (task instance #{error['task']}); fix the markers and trace again"


def _location(where: dict | None) -> str:
    where = where or {}
    text = f" in {where['function']}" if where.get("function") else ""
    return text + (f" ({where['file']}:{where['line']})" if where.get("file") else "")


def _ending(meta: dict, stop_reason: str | None = None) -> tuple[str, bool, str | None]:
    """(one-line description, partial?, the signal that ended the run or None); stop_reason: why
    tareador mpirun interrupted this rank, if it did."""
    ending = meta["ending"]
    kind = ending["kind"]
    if kind == "abort":
        return (f"called MPI_Abort (error code {ending['status']}){_location(ending.get('where'))}", True, None)
    if kind == "exit":
        status = ending.get("status", 0)
        task = _task_open_at_exit(meta)
        if task is not None:
            return (f'exited with status {status} inside task "{task}"', True, None)
        return (f"exited with status {status}", False, None)
    if kind == "crash":
        name = CRASH_SIGNALS.get(ending.get("signal"), ending.get("signal"))
        what = "stack overflow" if ending.get("stack_overflow") else ending.get("signal")
        inside = ending.get("library")
        inside = f", inside {inside}" if inside else ""
        if ending.get("in_allocator"):
            inside += "'s allocator (a corrupt heap)" if inside else ", inside the allocator (a corrupt heap)"
        return (f"crashed with {name} ({what}){_location(ending.get('where'))}{inside}", True, name)
    if kind == "signal":
        try:
            name = signal.Signals(ending["signal"]).name
        except ValueError:
            name = f"signal {ending['signal']}"
        return (f"was terminated by {name}", True, name)
    name = ending.get("signal", "SIGINT")
    if stop_reason and name == "SIGINT":
        return (f"was stopped: {stop_reason}", True, name)
    return ("was interrupted (Ctrl-C)" if name == "SIGINT" else f"was stopped ({name} to tareador)", True, name)


def _stop_reason(out_dir: Path) -> str | None:
    """What tareador mpirun wrote before interrupting the ranks (tracing/mpirun.py)."""
    try:
        return (out_dir / mpi_launch.STOP_REASON).read_text().strip() or None
    except OSError:
        return None


def check_output(out_dir: Path) -> None:
    """Before the program runs, maybe for hours: the trace directory can be made and written in
    (tried for real: permissions, read-only mounts and root's exceptions all count)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise TracingError(f"the trace directory {out_dir} is an existing file: remove it or choose another -o")
    existing = next(d for d in (out_dir, *out_dir.parents) if d.exists())
    try:
        if not existing.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
        os.rmdir(tempfile.mkdtemp(dir=existing))
    except OSError as e:
        raise TracingError(f"cannot write the trace directory {out_dir} ({existing}: {e.strerror}); "
                           "choose another -o") from None


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


def _mpi_summary(mpi: dict | None, rank: int, calls: list) -> dict:
    """What the summary says about MPI; the calls tareador does not model are listed by name."""
    if mpi is None:
        return {"rank": rank, "size": None, "mpi": None, "mpi_calls": 0, "mpi_unmodelled": {}}
    modelled = dict(zip(mpi["names"], mpi["modelled"]))
    return {"rank": rank, "size": mpi["size"] if mpi["size"] >= 0 else None, "mpi": mpi["library"],
            "mpi_calls": len(calls), "mpi_unmodelled": dict(Counter(c.call for c in calls if not modelled[c.call]))}


def _mpi_warnings(mpi: dict | None, rank: int) -> list[str]:
    if mpi is None:
        return [f"the program uses no MPI library: traced as rank {rank}, with no MPI calls"]
    if mpi["rank"] < 0:
        return [f"the program never called MPI_Init: traced as rank {rank}, the launcher's number"]
    warnings = []
    if mpi["complex"]:
        warnings.append(f"{mpi['complex']} MPI buffer(s) of datatypes too complex to lay out (more than 65536 "
                        "blocks, nesting deeper than 16, or MPI_Type_create_darray) were taken as their true extent: "
                        "the bytes between their blocks count as read or written")
    if mpi["unpatterned"]:
        warnings.append(f"{mpi['unpatterned']} message buffer(s) of non-contiguous datatypes have no production or "
                        "consumption pattern: tareador patterns and overlap leave those messages out")
    if mpi["pending"]:
        warnings.append(f"{mpi['pending']} non-blocking MPI request(s) never completed in a Wait or Test: their "
                        "rows in mpi.csv have completed = -1")
    return warnings


def _function_warnings(functions: list[TaskFunction], figures: convert.TaskFigures, raw: Path) -> list[str]:
    """What became of each --task-function: calls the compiler inlined are no calls; calls the
    program's markers already make tasks are tasks twice."""
    doubled = _marked_calls(functions, figures.names, raw) if functions else Counter()
    warnings = []
    for f in functions:
        inlined = f"{f.name} was inlined, compile with -fno-inline or mark it" if f.inlined else ""
        if not figures.starts[f.name]:
            warnings.append(f"{inlined}: none of its calls became a task" if inlined else
                            f"{f.name} was never called inside the analysed region: it made no task")
        elif inlined:
            warnings.append(f"{inlined}: its inlined calls are not tasks")
        if doubled[f.name]:
            warnings.append(f"{f.name}: {doubled[f.name]} of its calls are the first call of a task the markers "
                            "make (right after tareador_start_task), and made a second task inside it; trace "
                            f"without --task-function {f.name} (the markers make them tasks already), or without "
                            "those markers")
    return warnings


def _marked_calls(functions: list[TaskFunction], names: list[str], raw: Path) -> Counter:
    """Per task function, its calls that a marked task wraps: the call the function's task
    recorded as its body (calls.csv) is the one its parent task recorded too. Calls are in
    fragment order, one per instance's first fragment."""
    name, parent, instance = (decode.column(raw, "tasks.bin", c) for c in ("name", "parent", "instance"))
    task, site = decode.column(raw, "calls.bin", "task"), decode.column(raw, "calls.bin", "site")
    wanted = np.isin(np.asarray(names, dtype=object), [f.name for f in functions])
    mine = (parent[task] != NO_PARENT) & wanted[np.minimum(name[task], len(names) - 1)]
    creator = instance[parent[task[mine]]]
    at = np.searchsorted(task, creator).clip(max=max(len(task) - 1, 0))
    same = (task[at] == creator) & (site[at] == site[mine])
    return Counter(names[code] for code in np.minimum(name[task[mine][same]], len(names) - 1).tolist())


def _scope_warning(has_on: bool, analysed: bool, functions: list[TaskFunction], explore: bool) -> str | None:
    """What was analysed, when the markers do not say it."""
    if has_on:
        return None if analysed else "tareador_ON() was never called: nothing was analysed"
    if explore:
        return None
    if functions:
        return ("the program has no tareador markers: the whole of main was traced, with the calls of "
                + ", ".join(f.name for f in functions) + " as tasks")
    return "the program has no tareador markers: the whole of main was traced as one task"


def _task_warnings(has_on: bool, functions: list[TaskFunction], figures: convert.TaskFigures, raw: Path,
                   explore: bool) -> list[str]:
    """What the summary says of the tasks: how they were made, and what was analysed."""
    if explore:
        warnings = ["recorded for tareador explore: every call of a candidate function is a task"]
    else:
        warnings = _function_warnings(functions, figures, raw)
    scope = _scope_warning(has_on, bool(figures.fragments), functions, explore)
    return warnings + ([scope] if scope else [])


@contextlib.contextmanager
def _agent_tables(out_dir: Path) -> Iterator[Path]:
    """A private directory inside the trace directory for the agent's table files while the
    program runs, removed once they are converted (or the trace failed, and then the trace
    directory too if that left it empty)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    raw = Path(tempfile.mkdtemp(prefix=".tracing-", dir=out_dir))
    try:
        yield raw
    finally:
        shutil.rmtree(raw, ignore_errors=True)
        with contextlib.suppress(OSError):
            out_dir.rmdir()


def trace(argv: list[str], out_dir: str | Path, *, progress: bool = True, mpi: bool = False,
          task_functions: Sequence[str] = (), explore: bool = False) -> TaskTrace:
    """Trace ``argv`` and write ``out_dir`` (with mpi, one rank of a launch: ``out_dir/rank-N``);
    every call of a function named in task_functions is a task instance, as if
    tareador_start_task/end_task surrounded it. Raises AnnotationError after writing if the
    markers are unbalanced. explore: the recording of ``tareador explore`` (the calls of
    task_functions, by default every function of the program, are the only tasks; see
    tareador.taskgraph.decompose). The TaskTrace returned reads its rows from the directory."""
    started = time.monotonic()
    check_output(Path(out_dir))
    try:
        path = check_program(argv)
        names = list(task_functions) or (program_functions(path) if explore else [])
        functions = resolve(path, names) if names else []
    except FunctionError as e:
        raise TracingError(str(e)) from None
    status = StatusRow.on_stderr() if progress else None
    with _agent_tables(Path(out_dir)) as raw:
        try:
            own = {lib for f in functions if (lib := f.own_library) is not None}
            result = run_agent(argv, raw, progress=status, patterns=mpi, task_functions=tuple(functions),
                               explore=explore, own_libraries=tuple(sorted(own)),
                               abort_waits=mpi and mpi_launch.supervised())
        finally:
            if status:
                status.close()
        trace, problem = _write(argv, path, Path(out_dir), raw, result.meta, functions, mpi, explore)
    assert trace.path is not None  # _write saved it
    trace.summary["tracing_seconds"] = round(time.monotonic() - started, 3)
    write_text(Path(trace.path) / "summary.json", json.dumps(trace.summary, indent=2, sort_keys=True) + "\n")
    if problem:
        raise AnnotationError(problem, trace.path)
    return trace


def _write(argv: list[str], path: str, out_dir: Path, raw: Path, meta: dict, functions: list[TaskFunction],
           mpi: bool, explore: bool) -> tuple[TaskTrace, str | None]:
    """The trace directory from the agent's tables (summary.json but its tracing time): the trace
    and the annotation error, if any."""
    if meta.get("tables_error"):
        raise TracingError(f"writing the trace's tables in {out_dir} failed ({meta['tables_error']}): make room "
                           "there, or choose another -o, and trace again")
    objects_raw = np.asarray(decode.table(raw, "objects.bin"))
    decode.refine_source_lines(list(meta["sites"].values()) + [s for s in (meta["error"].get("site"),
                                                                           meta["ending"].get("where")) if s])
    objects = decode.object_names(meta, objects_raw)
    figures = convert.task_figures(meta, raw)
    if figures.fragments != meta["fragments"]:
        raise TracingError(f"the tracer wrote {figures.fragments} of the run's {meta['fragments']} task fragments: "
                           "trace again")
    how = _ending(meta, _stop_reason(out_dir) if mpi and mpi_launch.supervised() else None)
    warnings = list(meta["warnings"]) + _task_warnings(meta["markers"][0], functions, figures, raw, explore)
    problem = _annotation_problem(meta, how[1])
    mpi_meta = meta["mpi"]
    rank = mpi_meta["rank"] if mpi_meta and mpi_meta["rank"] >= 0 else (launch_rank() or 0)
    if mpi:
        out_dir = out_dir / f"rank-{rank}"
    mpi_calls, comms = decode.mpi_tables(meta, raw, objects_raw, objects, rank) if mpi_meta else ([], [])
    if mpi or mpi_meta:
        warnings += _mpi_warnings(mpi_meta, rank)
    if (meta.get("patterns") or {}).get("dropped"):
        warnings.append(f"{meta['patterns']['dropped']} message buffer(s) beyond the patterns' tables were not "
                        "recorded: tareador patterns and overlap leave those messages out")
    summary = _summary(argv, path, meta, figures, how, problem, warnings)
    if explore:
        summary["explore_candidates"] = [f.name for f in functions]
        summary["explore_libraries"] = {f.name: f.library for f in functions if f.library}
    elif functions:
        summary["task_functions"] = [f.name for f in functions]
    if mpi or mpi_meta:
        summary.update(_mpi_summary(mpi_meta, rank, mpi_calls))
    out_dir.mkdir(parents=True, exist_ok=True)
    remove_owned(out_dir)
    convert.write_all(out_dir, raw, meta, objects_raw, objects, figures.names)
    if mpi or mpi_meta:
        save_mpi(out_dir, mpi_calls, comms)
    recorded = decode.pattern_tables(meta, raw)
    if recorded is not None:
        save_rank_patterns(out_dir, *recorded, end=meta["instructions"])
    trace = columns.open_trace(out_dir, summary)
    trace.__dict__["tinf"] = meta["tinf"]  # the agent's, measured over the same schedule (metrics.py)
    return trace, problem


def _summary(argv: list[str], path: str, meta: dict, figures: convert.TaskFigures,
             how: tuple[str, bool, str | None], problem: str | None, warnings: list[str]) -> dict:
    """summary.json of a traced process: the run, how it ended (``_ending``), its graph's figures
    (no T∞ when the markers are unbalanced: the graph is not the program's), the warnings."""
    ending, partial, ended_by = how
    tinf = meta["tinf"]
    return {
        "program": argv[0],
        "program_path": path,
        "arguments": list(argv[1:]),
        "ending": ending,
        "exit_status": meta["ending"].get("status"),
        "signal": ended_by,
        "partial": partial,
        "instances": figures.instances,
        "main_fragments": figures.main_fragments,
        "task_fragments": figures.fragments - figures.main_fragments,
        "task_types": figures.task_types,
        "t1": figures.t1,
        "tinf": tinf if problem is None else None,
        "parallelism": round(figures.t1 / tinf if tinf else 1.0, 4) if problem is None else None,
        "accesses": meta["accesses"],
        "instructions_traced": meta["instructions"],
        "traced_cpu_seconds": round(meta["cpu_seconds"], 3),
        "traced_peak_rss_mib": round(meta["peak_rss"] / (1 << 20), 1),
        "traced_threads": "main thread only",
        "annotation_error": problem,
        "warnings": warnings,
        "tool_version": __version__,
    }
