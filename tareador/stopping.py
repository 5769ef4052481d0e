"""SIGTERM and SIGHUP stop tareador the way Ctrl-C does.

Their default action kills Python on the spot: no `finally` runs, so a file being written stays
behind under its temporary name and a traced program is not told to stop. Raised as a
KeyboardInterrupt instead, every command cleans up exactly as on Ctrl-C.
"""

from __future__ import annotations

import contextlib
import signal


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP, as Ctrl-C; ``signum`` says which."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def stop_signals():
    def stop(signum, frame):
        raise Stopped(signum)
    try:
        previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGHUP)}
    except ValueError:  # not the main thread (a notebook's worker): its signals are not ours to take
        previous = {}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
