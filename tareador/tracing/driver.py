"""Running a program under the Frida agent and collecting its result.

frida-tools' split: this module spawns the real program, injects tracer_agents/agent.js,
waits, and receives one result message; all per-access work stays inside the target.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import queue
import shutil
import signal
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from tareador.errors import TracingError
from tareador.stopping import stop_signals
from tareador.tracing import toolchain
from tareador.tracing.elf import ELFCLASS64, EM_X86_64, ET_DYN, ET_EXEC, ET_REL, PT_INTERP, read_header

BUFFER_RECORDS = 1 << 16  # 1 MiB of records: stays in cache between the inline writes and the analysis
TABLE_ROWS = 1 << 16  # rows of each result table the agent keeps before appending them to its file
ADDR_NO_RANDOMIZE = 0x0040000
PERSONALITY_QUERY = 0xFFFFFFFF


def _personality(persona: int) -> int:
    """personality(2) of the calling thread; returns the previous one, -1 if unavailable."""
    try:
        return ctypes.CDLL(None, use_errno=True).personality(persona)
    except (OSError, AttributeError):
        return -1


@functools.cache
def import_frida():
    """frida, imported by the first run rather than with this module (a fifth of a second that
    every command would pay).

    Same addresses every run keep libc's alignment-dependent paths, and so the instruction
    counts, identical from run to run. Frida forks the programs it spawns from threads it starts
    when imported, and a child inherits the personality of the thread that forked it: those
    threads, and only them, get ADDR_NO_RANDOMIZE. When frida was imported before tareador's
    first run (a notebook), _spawn falls back to setarch."""
    previous = _personality(PERSONALITY_QUERY)
    if previous == -1 or "frida" in sys.modules:
        import frida
        return frida
    _personality(previous | ADDR_NO_RANDOMIZE)
    try:
        import frida
    finally:
        _personality(previous)
    return frida


# glibc would pick AVX-512 string functions on CPUs that have them; their masked stores cannot be
# sized exactly from the instruction, so ask for the SSE2/AVX2 variants instead.
GLIBC_TUNABLES = "glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD"



@dataclass
class AgentResult:
    meta: dict  # the run's description; the tables are files in the directory run_agent was given
    exit_status: int | None = None
    detach_reason: str = ""
    warnings: list[str] = field(default_factory=list)


def check_program(argv: list[str]) -> str:
    if not argv:
        raise TracingError("no program given: tareador trace -o DIR -- ./prog [args]")
    program = argv[0]
    path = program if os.sep in program else shutil.which(program)
    if path is None or not os.path.exists(path):
        local = os.sep not in program and os.path.exists(program)
        raise TracingError(f"program '{program}' not found: "
                           + (f"use ./{program} for the file in this directory" if local else "check the path"))
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise TracingError(f"'{program}' is not an executable file: build it first (e.g. make) or chmod +x it")
    problem = _elf_problem(path)
    if problem:
        raise TracingError(f"'{program}' {problem}")
    return os.path.abspath(path)


def _elf_problem(path: str) -> str | None:
    """Why Frida cannot run this file as a traced program, or None."""
    header = read_header(path)
    if header is None:
        return "is not an ELF executable: tareador traces compiled C programs"
    if header.elf_class != ELFCLASS64 or header.machine != EM_X86_64:
        return "is not an x86-64 program: tareador traces x86-64 Linux programs"
    if header.type == ET_REL:
        return "is an object file, not a program: link it first (cc prog.o -o prog $(tareador config --libs))"
    if header.type not in (ET_EXEC, ET_DYN):
        return "is not an executable ELF file: tareador traces compiled C programs"
    if not any(kind == PT_INTERP for kind, _ in header.segments):
        return ("is statically linked, and Frida cannot be loaded into a static program: link it without -static "
                "($(tareador config --static-libs) alone still puts the markers inside the program)")
    return None


def _aslr_disabled(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/personality") as f:
            return bool(int(f.read(), 16) & ADDR_NO_RANDOMIZE)
    except (OSError, ValueError):
        return False


def _spawn(device, argv: list[str], env: dict) -> int:
    """The program, stopped before its first instruction, with ASLR disabled if at all possible
    (the agent warns otherwise)."""
    pid = device.spawn(argv, env=env, stdio="inherit")
    setarch = shutil.which("setarch")
    if _aslr_disabled(pid) or setarch is None:
        return pid
    _kill(device, pid)
    pid = _exec_through(device, [setarch, platform.machine(), "-R"] + argv, env)
    return pid if pid is not None else device.spawn(argv, env=env, stdio="inherit")


def _exec_through(device, argv: list[str], env: dict) -> int | None:
    """Spawn a launcher that execs the program, and catch the program at its exec (Frida's child
    gating suspends the new image before it runs); None if the launcher ended without exec."""
    execs: queue.Queue = queue.Queue()

    def on_child(child):
        if child.origin == "exec":
            execs.put(child.pid)

    def on_detached(reason, crash):
        if reason != "process-replaced":
            execs.put(None)

    device.on("child-added", on_child)
    try:
        launcher = device.attach(device.spawn(argv, env=env, stdio="inherit"))
        launcher.on("detached", on_detached)
        launcher.enable_child_gating()
        device.resume(launcher.pid)
        return execs.get()
    finally:
        device.off("child-added", on_child)


def run_agent(argv: list[str], tables: Path, *, progress=None, buffer_records: int = BUFFER_RECORDS,
              ignored_modules: tuple[str, ...] = (), system_modules: tuple[str, ...] = (),
              patterns: bool = False, task_functions: tuple = (), explore: bool = False,
              own_libraries: tuple[str, ...] = (), abort_waits: bool = False) -> AgentResult:
    """Spawn argv under the agent, which writes its tables into the existing directory tables
    (decode.py); returns the agent's description of the run (or what is known if none came).
    patterns: also record the communication patterns (tracer_agents/patterns.c; MPI runs);
    task_functions: the TaskFunction entries whose calls are tasks; explore: record them for
    tareador explore (the program's task markers ignored); own_libraries: see agent.js;
    abort_waits: MPI_Abort waits to be killed once the trace is shipped (tareador mpirun)."""
    path = check_program(argv)
    sources = toolchain.agent_sources()
    toolchain.installed_annotation_library()
    env = {"LD_BIND_NOW": "1", "GLIBC_TUNABLES": GLIBC_TUNABLES}
    frida = import_frida()
    device, done, result = frida.get_local_device(), threading.Event(), {}

    def on_message(message, data):
        if message["type"] == "send" and message["payload"].get("type") == "result":
            result["meta"] = message["payload"]
            script.post({"type": "ack"})
            done.set()
        elif message["type"] == "error":
            result.setdefault("errors", []).append(message.get("description", "agent error"))

    detached = threading.Event()

    def on_detached(reason, crash):
        result["detached"] = reason
        detached.set()
        done.set()

    with stop_signals():
        try:
            pid = _spawn(device, [path] + list(argv[1:]), env)
            session = device.attach(pid)
        except frida.ExecutableNotFoundError:
            raise TracingError(f"'{argv[0]}' could not be started") from None
        except (frida.NotSupportedError, frida.ProcessNotFoundError):
            raise TracingError(f"'{argv[0]}' ended before it could be traced: if the loader says above that it "
                               "cannot find libtareador.so, relink the program with $(tareador config --libs)"
                               ) from None
        try:
            session.on("detached", on_detached)
            script = session.create_script(sources.script)
            script.on("message", on_message)
            try:
                script.load()
                script.exports_sync.init({
                    "shadowLibrary": str(sources.analysis_library),
                    "transformSource": sources.transform,
                    "allocationsSource": sources.allocations,
                    "mpiSource": sources.mpi,
                    "bufferRecords": buffer_records,
                    "tablesDirectory": str(tables),
                    "tableRows": TABLE_ROWS,
                    "ignoredModules": list(ignored_modules),
                    "systemModules": list(system_modules),
                    "patterns": patterns,
                    "taskFunctions": [vars(f) for f in task_functions],
                    "explore": explore,
                    "ownLibraries": list(own_libraries),
                    "abortWaits": abort_waits,
                })
            except (frida.core.RPCException, frida.InvalidOperationError) as e:
                reason = str(e).splitlines()[0].removeprefix("Error: ")  # the agent's message, not its JS stack
                raise TracingError(f"the tracer could not be installed in '{argv[0]}': {reason}") from None
            device.resume(pid)
            _follow(script, done, detached, result, progress, abort_waits)
        finally:
            if result.get("detached") != "process-terminated":
                _kill(device, pid)  # never left behind, whatever happened here
    agent = _agent_result(result, argv)
    if progress is not None:  # the final counts, however short the run was beside the polling interval
        progress({"tasks": agent.meta["instances"], "accesses": agent.meta["accesses"]})
    return agent


def _follow(script, done: threading.Event, detached: threading.Event, result: dict, progress,
            abort_waits: bool) -> None:
    """Until the agent's result (or the process's end): its progress shown; Ctrl-C (or
    SIGTERM/SIGHUP) asks the agent to ship what it has."""
    frida = import_frida()
    try:
        while not done.wait(0.5):
            if progress is not None:
                try:
                    progress(script.exports_sync.progress())
                except (frida.InvalidOperationError, frida.core.RPCException):
                    pass
        kind = result.get("meta", {}).get("ending", {}).get("kind")
        if kind == "exit" or kind == "abort" and not abort_waits:
            detached.wait()  # the program's own exit path (atexit, flushing its files) runs on
        elif kind != "abort":
            detached.wait(5)
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM/SIGHUP (Stopped)
        if "meta" not in result:
            result["stopped_by"] = signal.Signals(getattr(e, "signum", signal.SIGINT)).name
            _interrupt(script, done)


def _agent_result(result: dict, argv: list[str]) -> AgentResult:
    """What the agent shipped; TracingError when the process ended before it shipped anything."""
    meta = result.get("meta")
    if meta is None:
        reason = result.get("detached", "unknown")
        details = "; ".join(result.get("errors", []))
        raise TracingError(f"'{argv[0]}' ended ({reason}) before the tracer could report" +
                           (f": {details}" if details else ""))
    if "stopped_by" in result:
        meta["ending"] = {"kind": "interrupt", "signal": result["stopped_by"]}
    ending = meta["ending"]
    return AgentResult(meta, ending.get("status"), result.get("detached", ""))


def _kill(device, pid: int) -> None:
    frida = import_frida()
    try:
        device.kill(pid)
    except (frida.ProcessNotFoundError, frida.NotSupportedError):  # gone (Frida says either)
        pass


def _interrupt(script, done: threading.Event) -> None:
    frida = import_frida()
    try:
        script.exports_sync.interrupt()
    except (frida.InvalidOperationError, frida.core.RPCException):
        pass
    done.wait(10)
