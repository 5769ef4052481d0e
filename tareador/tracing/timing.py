"""The timing run of ``tareador time``: the program runs natively, its task instances are timed,
and the times are matched to the traced fragments one to one.

Instructions are not time (a division costs more than a multiply-add; memory-bound code runs at
the speed of memory), so a trace's instruction counts can be replaced by measured durations.
Measuring needs no tracer: the markers themselves note when they run (annotations/tareador.c,
switched on by TAREADOR_TIMING) and the record is written when the program exits. What the
markers cannot see goes through Frida's Interceptor with native listeners, never Stalker
(tracer_agents/timing.js): the calls of ``--task-function`` functions, main's entry when the
program has no tareador_ON, and the time an MPI rank spends inside MPI calls (not its work, as a
trace counts no instructions there).

The record becomes fragments by the tracer's own rules (tracer_agents/shadow.c ``tr_marker``):
ON opens main's fragment, a task start ends the running fragment and opens the task's, a task
end opens the next fragment of the instance that created it (or of main's code), OFF closes
the region; events outside the region are ignored, as the tracer never sees them. A fragment's
time is the sum of the intervals it ran, each less the cost of one event (measured by the
library in every run), and less the time inside MPI calls.
"""

from __future__ import annotations

import os
import struct
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tareador.errors import TimingError
from tareador.tracing import toolchain
from tareador.tracing.driver import check_program, import_frida

ON, OFF, START, END, FUNCTION_ENTER, FUNCTION_LEAVE, MPI_ENTER, MPI_LEAVE, FINISH = range(1, 10)
NO_NAME = 0xFFFFFFFF
MAIN = "main"
EVENT = np.dtype([("ns", "<u8"), ("event", "<u4"), ("name", "<u4")])
HOOKED = (FUNCTION_ENTER, FUNCTION_LEAVE, MPI_ENTER, MPI_LEAVE)  # events of the timing agent's hooks
CALIBRATION = "tareador calibration"  # the hooked empty function the agent calls before main


@dataclass
class TimingRecord:
    """What one run noted: events in the order they happened, on CLOCK_MONOTONIC."""

    names: list[str]
    events: np.ndarray  # EVENT rows
    event_cost: float  # ns one event adds to the interval it falls in (measured at the run's exit)


@dataclass
class Fragments:
    """The fragments of one timed run, in the order they started (tasks.csv's order)."""

    names: list[str]
    instance: list[int]  # index of the instance's first fragment (main's fragments: main's first)
    parent: list[int]  # the fragment that created the instance, -1 for main's code
    ns: np.ndarray  # time each fragment ran, events and MPI calls excluded


def read_record(path: Path) -> TimingRecord:
    data = path.read_bytes()
    if len(data) < 24 or data[:8] != b"TRDTIME1":
        raise TimingError(f"{path} is not a timing record")
    cost, = struct.unpack_from("<d", data, 8)
    count_names, high, low = struct.unpack_from("<III", data, 16)
    at, names = 28, []
    for _ in range(count_names):
        length, = struct.unpack_from("<I", data, at)
        names.append(data[at + 4:at + 4 + length].decode("utf-8", "replace"))
        at += 4 + length
    count = (high << 32) | low
    events = np.frombuffer(data, EVENT, count, at)
    return TimingRecord(names, events, cost)


def interval_costs(record: TimingRecord) -> np.ndarray:
    """What the events at both ends of an interval add to it, by (earlier event, later event).

    A marker costs the library's measured event cost. A hooked event (a task function's call,
    an MPI call's, main's entry) costs what the record's calibration events say: the timing agent
    calls a hooked empty function before main, so enter -> leave is what a hooked call adds
    inside it, leave -> enter what it adds around it. Other pairs take half of each end's cost.
    """
    marker = record.event_cost
    inside = outside = marker
    if CALIBRATION in record.names:
        mine = record.events[record.events["name"] == record.names.index(CALIBRATION)]
        enter = mine["ns"][mine["event"] == FUNCTION_ENTER].astype(np.int64)
        leave = mine["ns"][mine["event"] == FUNCTION_LEAVE].astype(np.int64)
        if len(enter) > 1 and len(enter) == len(leave):
            inside, outside = float(np.median(leave - enter)), float(np.median(enter[1:] - leave[:-1]))
    half = np.full(FINISH + 1, marker / 2)
    half[list(HOOKED)] = (inside + outside) / 4
    costs = half[:, None] + half[None, :]
    for enter, leave in ((FUNCTION_ENTER, FUNCTION_LEAVE), (MPI_ENTER, MPI_LEAVE)):
        costs[enter, leave], costs[leave, enter] = inside, outside
    return costs


def fragments(record: TimingRecord) -> Fragments:
    """The record cut into fragments by the tracer's rules (see the module's docstring);
    TimingError for markers the tracer would refuse."""
    out = Fragments([], [], [], np.zeros(0))
    ns: list[float] = []
    following, since, current, main_instance, previous = False, None, -1, -1, ON
    stack: list[int] = []  # the open task instances' first fragments, innermost last
    calls: list[bool] = []  # open task-function calls: whether each opened a task
    costs = interval_costs(record).tolist()

    def settle(t: int) -> None:
        if current >= 0 and since is not None:
            ns[current] += max(t - since - costs[previous][event], 0.0)

    def begin(name: str, instance: int, parent: int) -> int:
        ns.append(0.0)
        out.names.append(name)
        out.instance.append(len(ns) - 1 if instance < 0 else instance)
        out.parent.append(parent)
        return len(ns) - 1

    for t, event, number in record.events.tolist():
        name = record.names[number] if number != NO_NAME and number < len(record.names) else ""
        if event == FUNCTION_ENTER:
            calls.append(following)
        if event == FUNCTION_LEAVE and not (calls.pop() if calls else False):
            continue
        if not following and event != ON:
            continue
        if event == ON:
            if following:
                continue
            following = True
            current = begin(MAIN, main_instance, -1)
            main_instance = out.instance[current]
        elif event in (START, FUNCTION_ENTER):
            settle(t)
            stack.append(begin(name, -1, current))
            current = stack[-1]
        elif event in (END, FUNCTION_LEAVE):
            settle(t)
            if not stack or out.names[stack[-1]] != name:
                raise TimingError(f'tareador_end_task("{name}") does not match the open task in the timing run; '
                                  "fix the markers (tareador trace names the line)")
            stack.pop()
            head = stack[-1] if stack else main_instance
            current = begin(out.names[head], head, out.parent[head])
        elif event == OFF:
            settle(t)
            following = False
            if stack:
                raise TimingError(f'task "{out.names[stack[-1]]}" was still open at tareador_OFF() in the timing run')
        elif event == MPI_ENTER:
            settle(t)
            since = None
            continue
        elif event == FINISH:
            settle(t)
        since, previous = t, event
    out.ns = np.array(ns)
    return out


def matched(found: Fragments, tasks: Sequence, run: int) -> np.ndarray:
    """The run's nanoseconds in the order of ``tasks`` (tasks.csv's fragments); TimingError naming
    the first fragment where the run and the trace differ."""
    index = {t.id: k for k, t in enumerate(tasks)}
    expected = [(t.name, index[t.instance], index.get(t.parent, -1)) for t in tasks]
    got = list(zip(found.names, found.instance, found.parent))
    for k, (a, b) in enumerate(zip(expected, got)):
        if a != b:
            raise TimingError(f"timing run {run} differs from the trace at fragment {k}: the trace has "
                              f"{_described(a, k)}, the run {_described(b, k)}; {SAME_RUN}")
    if len(got) != len(expected):
        k = min(len(got), len(expected))
        more, what = ("the trace", _described(expected[k], k)) if k < len(expected) else \
            ("the run", _described(got[k], k))
        raise TimingError(f"timing run {run} made {len(got)} fragments, the trace {len(expected)}: only {more} goes on "
                          f"at fragment {k}, with {what}; {SAME_RUN}")
    return found.ns


SAME_RUN = ("the program must make the same tasks in the same order on every run (the same arguments and "
            "input; no random numbers, clocks or threads deciding them)")


def _described(fragment: tuple[str, int, int], k: int) -> str:
    name, instance, parent = fragment
    if parent < 0:
        return "main's code"
    if instance == k:
        return f'task "{name}" created by fragment {parent}'
    return f'a later fragment of task "{name}" (instance {instance})'


def timed_run(argv: list[str], functions: tuple = (), region_only: bool = False, mpi: bool = False,
              hooks: bool | None = None) -> TimingRecord:
    """Run argv once and return its record (see ``record_run``); TimingError when the program
    fails or writes no record."""
    with tempfile.TemporaryDirectory(prefix="tareador-time-") as tmp:
        out = Path(tmp) / "record"
        status = record_run(argv, out, functions, region_only, mpi, hooks)
        if not out.exists():
            raise TimingError(f"'{argv[0]}' wrote no timing record (exit status {status}): it must end by returning "
                              "from main or calling exit(), as in the traced run")
        if status != 0:
            raise TimingError(f"'{argv[0]}' exited with status {status} in the timing run; time a run that succeeds")
        return read_record(out)


def record_run(argv: list[str], out: Path, functions: tuple = (), region_only: bool = False, mpi: bool = False,
               hooks: bool | None = None) -> int:
    """Run argv once, its record written to ``out`` when it exits; its exit status. Natively when
    the markers see everything, else under the timing agent (``hooks``: task functions, MPI
    calls, or a program without the annotation library need it)."""
    path = check_program(argv)
    library = toolchain.installed_annotation_library()
    if hooks is None:
        hooks = bool(functions) or mpi or not _has_recorder(path)
    env = {"TAREADOR_TIMING": str(out), "TAREADOR_TIMING_REGION_ONLY": "1" if region_only else "0"}
    if hooks:
        return _run_hooked([path, *argv[1:]], env, library, functions, mpi)
    return subprocess.run([path, *argv[1:]], env={**os.environ, **env}, stdout=subprocess.DEVNULL).returncode


def _has_recorder(path: str) -> bool:
    """Whether the program has the annotation library, whose markers time themselves: linked
    (libtareador.so) or built in (the static library's getenv argument)."""
    image = Path(path).read_bytes()
    return b"libtareador.so" in image or b"TAREADOR_TIMING" in image


def _run_hooked(argv: list[str], env: dict, library: Path, functions: tuple, mpi: bool) -> int:
    """Spawn under Frida with the timing agent (Interceptor only); the exit status."""
    agents = toolchain.agents_dir()
    frida = import_frida()
    device = frida.get_local_device()
    ended = threading.Event()
    status: dict = {}

    def on_detached(reason, crash):
        status["reason"] = reason
        ended.set()

    def on_output(pid, fd, data):
        if fd == 2 and data:
            os.write(2, data)

    def on_message(message, data):
        if message["type"] == "send" and message["payload"].get("type") == "exit":
            status.setdefault("status", message["payload"]["status"])
            script.post({"type": "ack"})

    device.on("output", on_output)
    # A rank talks to its launcher through inherited descriptors: as the tracer, it inherits stdio.
    pid = device.spawn(argv, env=env, stdio="inherit" if mpi else "pipe")
    try:
        session = device.attach(pid)
        session.on("detached", on_detached)
        script = session.create_script(toolchain.agent_script("timing.js"))
        script.on("message", on_message)
        script.load()
        try:
            result = script.exports_sync.init({"source": (agents / "timing.c").read_text(), "library": str(library),
                                               "functions": [vars(f) for f in functions], "mpi": mpi})
        except frida.core.RPCException as e:
            raise TimingError(f"the timing hooks could not be installed in '{argv[0]}': "
                              f"{str(e).splitlines()[0]}") from None
        if result["failed"]:
            raise TimingError(f"cannot time the calls of {', '.join(sorted(set(result['failed'])))}: too short to hook "
                              "(a function of a few bytes); mark its calls with tareador_start_task instead")
        device.resume(pid)
        ended.wait()
    finally:
        device.off("output", on_output)
        if not ended.is_set():
            try:
                device.kill(pid)
            except frida.ProcessNotFoundError:
                pass
    return status.get("status", -1)
