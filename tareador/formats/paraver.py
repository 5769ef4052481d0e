"""Paraver traces (.prv, .pcf, .row) that wxparaver and paramedir open, and the task names a
.pcf beside a Dimemas trace gives its replay.

Both replays end here: a simulated task-parallel run (one Paraver thread per core) and a
replayed Dimemas trace (one Paraver thread per Dimemas thread). Records are gathered as numpy
columns and sorted by time once, because Paraver expects a time-ordered body.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tareador.files import output_file, printable, write_text
from tareador.formats.text_rows import Field, Rows, integer

TASK_EVENT = 7003  # Tareador's "running task" event: value = task type, 0 = none
PRIORITY_EVENT = 6999  # Dimemas' scheduling priority (SS_MPI_CP): 1/value, 0 = top priority
DEP_TAG = 8002  # tag of the messages that carry task dependencies
# Dimemas' state numbers (common_utilities/ParaverColors.h): a blocked receive, wait or
# rendezvous send is "waiting a message", a ready thread without a CPU is Dimemas' 5
# ("Synchronization" in its .pcf), a member of a global operation is in 13, the latency a send,
# receive or wait pays on its CPU is 26.
RUNNING, WAITING_MESSAGE, WAITING_CPU, GROUP_COMMUNICATION, STARTUP_LATENCY = 1, 3, 5, 13, 26
CONTEXT_SWITCH = 6  # the number Dimemas writes a context switch with (its "Test/Probe")
STATES = {0: ("Idle", (117, 195, 255)), RUNNING: ("Running", (0, 0, 255)),
          WAITING_MESSAGE: ("Waiting a message", (255, 0, 0)), WAITING_CPU: ("Waiting a CPU", (255, 150, 0)),
          CONTEXT_SWITCH: ("Context switch", (255, 255, 0)),
          GROUP_COMMUNICATION: ("Group Communication", (255, 144, 26)),
          STARTUP_LATENCY: ("Startup latency", (0, 255, 255))}


def task_type_values(names) -> dict[str, int]:
    """Event value of each task type: main first, then the others alphabetically (0 = no task)."""
    kinds = sorted(set(names) - {"main"})
    if "main" in set(names):
        kinds.insert(0, "main")
    return {name: i + 1 for i, name in enumerate(kinds)}


@dataclass
class ParaverRun:
    """Everything a .prv needs; ``threads`` lists (task, thread) -> node, all 0-based.

    Times are nanoseconds (int64). ``states``: thread index, cpu (1-based, 0 = none), begin, end,
    state. ``events``: thread, cpu, time, type, value. ``comms``: sender thread/cpu, logical and
    physical send, receiver thread/cpu, logical and physical receive, size, tag.
    """

    end_time: int
    cpus_per_node: list[int]
    threads: list[tuple[int, int, int]]
    states: dict[str, np.ndarray] = field(default_factory=dict)
    events: dict[str, np.ndarray] = field(default_factory=dict)
    comms: dict[str, np.ndarray] = field(default_factory=dict)
    event_labels: dict[int, tuple[str, dict[int, str]]] = field(default_factory=dict)
    thread_labels: list[str] | None = None
    task_labels: list[str] | None = None  # Paraver's task level (an MPI rank), unlabelled if None


def _header(run: ParaverRun) -> str:
    tasks: dict[int, list[int]] = {}
    for task, _thread, node in run.threads:
        tasks.setdefault(task, []).append(node)
    apps = ",".join(f"{len(nodes)}:{nodes[0] + 1}" for _t, nodes in sorted(tasks.items()))
    cpus = ",".join(str(c) for c in run.cpus_per_node)
    stamp = time.strftime("%d/%m/%y at %H:%M")
    return f"#Paraver ({stamp}):{run.end_time}_ns:{len(run.cpus_per_node)}({cpus}):1:{len(tasks)}({apps}),0\n"


def _records(run: ParaverRun) -> Rows:
    """Every record in time order; among equal times states, then events, then communications,
    each kind in its own order (Paraver keeps file order among records of one time)."""
    ids = np.array([(t + 1, h + 1) for t, h, _n in run.threads], np.int64).reshape(-1, 2)
    empty = np.zeros(0, np.int64)

    def columns(table: dict, *names: str) -> list[Field]:
        return [integer(table.get(name, empty)) for name in names]

    def who(threads: np.ndarray) -> list:
        th = ids[threads]
        return [integer(th[:, 0]), ":", integer(th[:, 1])]

    layouts, times = [], []
    # States and events share their record shape: kind, cpu, appl, task, thread, time, two fields.
    for record, table, stamp, fields in ((1, run.states, "begin", ("end", "state")),
                                         (2, run.events, "time", ("type", "value"))):
        cpu, when, first, second = columns(table, "cpu", stamp, *fields)
        layouts.append([f"{record}:", cpu, ":1:", *who(table.get("thread", empty)), ":", when, ":", first, ":", second,
                        "\n"])
        times.append(table.get(stamp, empty))
    c = run.comms
    cpu, lsend, psend, rcpu, lrecv, precv, size, tag = columns(c, "cpu", "lsend", "psend", "rcpu", "lrecv", "precv",
                                                                "size", "tag")
    layouts.append(["3:", cpu, ":1:", *who(c.get("thread", empty)), ":", lsend, ":", psend, ":", rcpu, ":1:",
                    *who(c.get("rthread", empty)), ":", lrecv, ":", precv, ":", size, ":", tag, "\n"])
    times.append(c.get("lsend", empty))
    kind = np.repeat(np.arange(3, dtype=np.int8), [len(t) for t in times])
    order = np.lexsort((kind, np.concatenate(times)))
    local = np.concatenate([np.arange(len(t)) for t in times])
    return Rows(layouts, local[order], kind[order])


def write_paraver(run: ParaverRun, prv: str | Path) -> list[Path]:
    """Write prv, pcf and row side by side; returns the three paths."""
    prv = Path(prv)
    with output_file(prv, "wb") as f:
        f.write(_header(run).encode())
        _records(run).write(f)
    pcf, row = prv.with_suffix(".pcf"), prv.with_suffix(".row")
    write_text(pcf, pcf_text(run))
    write_text(row, _row(run))
    return [prv, pcf, row]


def pcf_text(run: ParaverRun) -> str:
    """The .pcf of a run; also written beside Dimemas traces, whose replays take their labels."""
    out = ["DEFAULT_OPTIONS", "", "LEVEL               THREAD", "UNITS               NANOSEC",
           "LOOK_BACK           100", "SPEED               1", "FLAG_ICONS          ENABLED",
           "NUM_OF_STATE_COLORS 1000", "YMAX_SCALE          37", "", "", "STATES"]
    out += [f"{i:<4}{label}" for i, (label, _c) in STATES.items()]
    out += ["", "", "STATES_COLOR"]
    out += [f"{i:<4}{{{r},{g},{b}}}" for i, (_l, (r, g, b)) in STATES.items()]
    for etype, (label, values) in sorted(run.event_labels.items()):
        out += ["", "", "EVENT_TYPE", f"0    {etype}    {label}"]
        if values:
            out.append("VALUES")
            out += [f"{v:<6}{printable(name)}" for v, name in sorted(values.items())]
    return "\n".join(out) + "\n"


def _row(run: ParaverRun) -> str:
    ncpus = sum(run.cpus_per_node)
    out = [f"LEVEL CPU SIZE {ncpus}"]
    for node, n in enumerate(run.cpus_per_node):
        out += [f"{node + 1}.{c + 1}" for c in range(n)]
    out += ["", f"LEVEL NODE SIZE {len(run.cpus_per_node)}"]
    out += [f"node{n + 1}" for n in range(len(run.cpus_per_node))]
    if run.task_labels:
        out += ["", f"LEVEL TASK SIZE {len(run.task_labels)}", *run.task_labels]
    labels = run.thread_labels or [f"THREAD 1.{t + 1}.{h + 1}" for t, h, _n in run.threads]
    out += ["", f"LEVEL THREAD SIZE {len(labels)}", *labels]
    return "\n".join(out) + "\n"


def thread_labels(threads: list[int], kinds: list[str | None]) -> list[str]:
    """Row labels of a Dimemas trace's threads (``threads`` per task, ``kinds`` the task type each
    thread runs, or None): its tasks are MPI ranks, except in the trace of one process, whose
    threads are the task instances (or the one sequential run) of that process. A thread of a
    task with several is named by its task type too."""
    out: list[str] = []
    for task, n in enumerate(threads):
        for h in range(n):
            label = f"thread {h}" if len(threads) == 1 else f"rank {task}" + (f" thread {h}" if n > 1 else "")
            kind = kinds[len(out)] if n > 1 else None
            out.append(label if kind is None else f"{label} {printable(kind)}")
    return out


def task_event_labels(values: dict[str, int]) -> dict[int, tuple[str, dict[int, str]]]:
    return {TASK_EVENT: ("Running task", {0: "End", **{v: name for name, v in values.items()}})}


def schedule_run(names: list[str], start_ns: np.ndarray, end_ns: np.ndarray, core: np.ndarray, ncores: int,
                 dep_src: np.ndarray, dep_dst: np.ndarray, dep_bytes: np.ndarray) -> ParaverRun:
    """A simulated task-parallel run: one Paraver thread per core, task instances as running
    states framed by task-type events, each RAW dependency as a communication."""
    values = task_type_values(names)
    kind = np.array([values[n] for n in names], np.int64)
    run = start_ns < end_ns
    zero = np.zeros(len(dep_src), np.int64)
    return ParaverRun(
        end_time=int(end_ns.max(initial=0)), cpus_per_node=[ncores], threads=[(0, c, 0) for c in range(ncores)],
        states={"thread": core[run], "cpu": core[run] + 1, "begin": start_ns[run], "end": end_ns[run],
                "state": np.full(int(run.sum()), RUNNING)},
        # Paraver keeps file order among records of one time and takes the last event value:
        # a task's end (0) must come before the next task's start at the same instant on a core,
        # and instances that take no time get no events at all.
        events={"thread": np.concatenate([core[run], core[run]]), "cpu": np.concatenate([core[run], core[run]]) + 1,
                "time": np.concatenate([end_ns[run], start_ns[run]]), "type": np.full(2 * int(run.sum()), TASK_EVENT),
                "value": np.concatenate([np.zeros(int(run.sum()), np.int64), kind[run]])},
        comms={"thread": core[dep_src], "cpu": core[dep_src] + 1, "lsend": end_ns[dep_src], "psend": end_ns[dep_src],
               "rthread": core[dep_dst], "rcpu": core[dep_dst] + 1, "lrecv": start_ns[dep_dst],
               "precv": start_ns[dep_dst], "size": dep_bytes, "tag": zero + DEP_TAG},
        event_labels=task_event_labels(values), thread_labels=[f"CORE {c + 1}" for c in range(ncores)])


def nanoseconds(times) -> np.ndarray:
    """Paraver's integer time stamps from (non-negative) times in fractional nanoseconds, halves
    rounded up as Dimemas' C round() does (a 1024-byte message at 10 MB/s lasts 97656.25 ns)."""
    return np.floor(np.asarray(times, float) + 0.5).astype(np.int64)


def pcf_value_labels(pcf: Path, event_type: int) -> dict[int, str]:
    """The value labels a Paraver .pcf gives one event type ({} if none, or no readable file).

    A .pcf is blocks apart by blank lines; an EVENT_TYPE block lists "gradient type label" lines,
    then VALUES and "value label" lines."""
    try:
        blocks = re.split(r"\n\s*\n", pcf.read_text(errors="replace"))
    except OSError:
        return {}
    for block in blocks:
        lines = [line.strip() for line in block.strip().splitlines()]
        if lines[:1] != ["EVENT_TYPE"] or "VALUES" not in lines:
            continue
        at = lines.index("VALUES")
        if any(line.split()[1:2] == [str(event_type)] for line in lines[1:at]):
            pairs = (line.partition(" ") for line in lines[at + 1:])
            return {int(v): label.strip() for v, _, label in pairs if v.lstrip("-").isdigit()}
    return {}
