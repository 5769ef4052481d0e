"""Running one benchmark step in a child process: its wall and CPU seconds and its own peak RSS,
with the tareador of a given tree (this checkout, or a baseline such as ``git worktree add
/tmp/base main``), a time limit, and a failure reported with its message instead of ending the
benchmark. Shared by scale.py and replay_scale.py (imported beside them).
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Step:
    label: str
    seconds: float  # wall
    cpu: float  # user + system of the child and what it waited for
    peak_rss: int  # bytes, the largest of the child's processes
    output: str  # stdout
    error: str = ""  # why it failed ("" if it did not)

    @property
    def ok(self) -> bool:
        return not self.error


def load_average() -> float:
    return os.getloadavg()[0]


def tareador(*args: str) -> list[str]:
    return [sys.executable, "-m", "tareador", *args]


def run_step(label: str, argv: list[str], tree: Path = ROOT, timeout: float | None = None) -> Step:
    """``argv`` with ``tree``'s tareador first on the path; a non-zero exit or the time limit is a
    failed step whose error is the last line it wrote on stderr."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdout=out, stderr=err, cwd=tree, env=env, start_new_session=True)
        status, usage, timed_out = _wait(child.pid, None if timeout is None else start + timeout)
        seconds = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    error = ""
    if timed_out:
        error = f"stopped after {timeout:.0f} s"
    elif code:
        lines = [line for line in stderr.strip().splitlines() if line.strip()]
        error = f"exit {code}: {lines[-1].strip() if lines else 'no message'}"
    return Step(label, seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, stdout, error)


def _wait(pid: int, deadline: float | None):
    """(status, rusage, timed out) of the child, its whole session killed at the deadline."""
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG if deadline is not None else 0)
        if done:
            return status, usage, False
        if time.perf_counter() > deadline:
            os.killpg(pid, signal.SIGKILL)
            _pid, status, usage = os.wait4(pid, 0)
            return status, usage, True
        time.sleep(0.1)


def slope(sizes: list[float], values: list[float | None]) -> float | None:
    """Growth exponent: the least-squares slope of log(value) against log(size) over the measured
    sizes (1 is linear, 2 quadratic)."""
    pairs = [(math.log(n), math.log(v)) for n, v in zip(sizes, values) if v is not None and v > 0]
    if len(pairs) < 2:
        return None
    mx, my = sum(x for x, _ in pairs) / len(pairs), sum(y for _, y in pairs) / len(pairs)
    spread = sum((x - mx) ** 2 for x, _ in pairs)
    return sum((x - mx) * (y - my) for x, y in pairs) / spread if spread else None
