"""Running every rank of an MPI program under its own tracer, and ending the run cleanly.

``mpiexec -n N python -m tareador trace --mpi -o DIR -- ./prog`` does the tracing: each rank's
tracer writes DIR/rank-N/ (tareador.tracing.run). What this module adds is supervision, because
an MPI run does not end by itself when one rank stops: the others block forever waiting for it.
So tareador, not the launcher, decides when a run is over:

- when a rank's trace comes out partial (its program crashed, or called MPI_Abort) or its tracer
  ends without a trace, or the run outlasts its timeout, or the user presses Ctrl-C, every
  tracer still running is sent SIGINT, as a Ctrl-C of ``tareador trace``: it writes the partial
  trace of its rank, with the reason it reads in the run directory (mpi_launch.STOP_REASON), and
  ends its program; after a grace period whatever is left is killed, and as soon as every rank
  wrote its trace too (a program that called MPI_Abort waits to be killed meanwhile, so that the
  launcher does not abort the others before they wrote theirs);
- the launchers must not kill tracers themselves meanwhile (both end a job when a rank exits
  non-zero, as a tracer with a partial trace does): that is turned off (mpi_launch's supervised
  options), and a rank's tracer survives MPICH's notice of a failed rank;
- once every rank wrote its trace, a launcher that does not end by itself (Open MPI waits for
  ranks that never finalized) is killed;
- a traced program outliving its tracer is not left behind: this process becomes a child
  subreaper, so orphans of the run are reparented to it and killed at the end.

The launcher runs in a session of its own, so that a Ctrl-C at the terminal reaches tareador
alone and not the launcher, which would kill the ranks before they wrote their traces.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tareador.files import write_text
from tareador.tracing.mpi_launch import MPI, STOP_REASON
from tareador.workers import launch_rank

TRACER = ("-m", "tareador", "trace", "--mpi", "--no-progress")
GRACE = 30.0  # seconds tracers get to write their partial traces once told to stop
LINGER = 5.0  # seconds a launcher gets to end by itself once every rank wrote its trace
POLL = 0.25
PR_SET_CHILD_SUBREAPER = 36


def launch(mpi: MPI, ranks: int, argv: Sequence[str], out: Path,
           timeout: float | None = None) -> tuple[str | None, int]:
    """Trace every rank of ``argv`` into ``out``; returns (how tareador ended the run, None if it
    ended by itself; the launcher's exit status)."""
    _become_subreaper()
    (out / STOP_REASON).unlink(missing_ok=True)  # left by a tareador mpirun killed outright
    command = mpi.command(ranks, [sys.executable, *TRACER, "-o", str(out), "--", *argv], supervised=True)
    launcher = subprocess.Popen(command, env=mpi.env(supervised=True), start_new_session=True)
    watch = _RankWatch(out)
    started = time.monotonic()
    ending, reason, stop_by, linger_until = None, None, None, None
    try:
        while True:
            try:
                time.sleep(POLL)
                watch.poll()
                status = launcher.poll()
                now = time.monotonic()
                if ending is None and timeout is not None and now - started > timeout:
                    ending, reason = f"timed out after {timeout:g} s", f"the run timed out after {timeout:g} s"
                elif ending is None and watch.stopped:
                    ending, reason = f"was stopped: {watch.stopped}", watch.stopped
                elif ending is None and status is not None and watch.running:
                    reason = f"{mpi.mpiexec} ended (status {status}) before every rank did"
                    ending = f"was stopped: {reason}"
            except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM/SIGHUP (stopping.Stopped)
                if ending is not None:
                    break  # a second Ctrl-C: kill what is left at once
                signum = getattr(e, "signum", None)
                ending = f"was stopped ({signal.Signals(signum).name})" if signum else "was interrupted (Ctrl-C)"
                reason = f"tareador mpirun got {signal.Signals(signum).name}" if signum else None
                status, now = launcher.poll(), time.monotonic()
            if ending is not None and stop_by is None:
                _interrupt_tracers(watch.written, out, reason)
                stop_by = now + GRACE
            if len(watch.written) == ranks and linger_until is None:
                linger_until = now + LINGER
            # Over when no tracer runs and either the launcher ended or tareador stopped the run (a
            # program whose tracer was killed may hold the launcher), or when tareador stopped it
            # and every rank wrote its trace; or at a deadline.
            if not watch.running and (status is not None or ending is not None) or any(
                    limit is not None and now > limit for limit in (stop_by, linger_until)) or (
                    ending is not None and len(watch.written) == ranks):
                break
    finally:
        _kill_leftovers(launcher.pid)
        (out / STOP_REASON).unlink(missing_ok=True)
    return ending, launcher.wait()


class _RankWatch:
    """Which ranks' tracers run, which ranks wrote their trace (their summary.json), and how the
    first rank that stopped early did: its trace is partial, or its tracer ended without writing
    one (killed, failed)."""

    def __init__(self, out: Path):
        self.out = out
        self.partial: dict[int, str | None] = {}  # rank -> its ending if partial, else None
        self.seen: set[int] = set()  # ranks whose tracer ran
        self.running: set[int] = set()
        self.stopped: str | None = None

    @property
    def written(self) -> set[int]:
        return set(self.partial)

    def poll(self) -> None:
        self.running = set(_tracers())  # before the summaries: a tracer writes its trace, then ends
        self.seen |= self.running
        for summary in self.out.glob("rank-*/summary.json"):
            rank = summary.parent.name.removeprefix("rank-")
            if not rank.isdigit() or int(rank) in self.partial:
                continue
            try:
                s = json.loads(summary.read_text())
            except (OSError, ValueError):
                continue  # being replaced: read at the next poll
            if isinstance(s, dict):
                self.partial[int(rank)] = s.get("ending", "stopped") if s.get("partial") else None
        stopped = [f"rank {r} {e}" for r, e in sorted(self.partial.items()) if e]
        stopped += [f"rank {r}'s tracer ended without writing its trace" for r in sorted(self.seen - self.running)
                    if r not in self.partial]
        self.stopped = stopped[0] if stopped else None


def _tracers() -> dict[int, int]:
    """rank -> pid of each rank's tracer still running."""
    found = {}
    for pid, _parent in _descendants():
        rank = _tracer_rank(pid)
        if rank is not None:
            found[rank] = pid
    return found


def _interrupt_tracers(written: set[int], out: Path, reason: str | None) -> None:
    """SIGINT, as a Ctrl-C, to the tracers of the ranks that have not written their trace yet:
    each writes its partial trace, saying why it was stopped (reason; None: the user's Ctrl-C),
    and ends its program."""
    if reason:
        write_text(out / STOP_REASON, reason + "\n")
    for number, pid in _tracers().items():
        if number not in written:
            _signal(pid, signal.SIGINT)


def _kill_leftovers(launcher: int) -> None:
    """Whatever of the run still lives (a launcher that did not end, a program whose tracer was
    killed); the orphans reparented here are reaped (the launcher is the caller's to wait for)."""
    for pid, parent in _descendants():
        _signal(pid, signal.SIGKILL)
        if parent == os.getpid() and pid != launcher:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def _become_subreaper() -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _descendants() -> list[tuple[int, int]]:
    """(pid, parent) of the processes below this one, parents before children."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    parent = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [os.getpid()]
    while todo:
        parent = todo.pop(0)
        found += [(kid, parent) for kid in children.get(parent, [])]
        todo += children.get(parent, [])
    return found


def _tracer_rank(pid: int) -> int | None:
    """The rank a process traces, from its launcher's environment; None if it is no tracer."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        if [a.decode(errors="replace") for a in argv[1:1 + len(TRACER)]] != list(TRACER):
            return None
        with open(f"/proc/{pid}/environ", "rb") as f:
            environ = dict(v.decode(errors="replace").partition("=")[::2] for v in f.read().split(b"\0") if v)
    except OSError:
        return None
    return launch_rank(environ)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
