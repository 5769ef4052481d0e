"""Every error a user can fix, under one base.

The command line prints a ``TareadorError`` as one line, ``tareador: <message>``, and exits 2;
from Python it is an ordinary exception whose message already says what is wrong and what to
do. Each stage raises its own subclass, so a caller can tell a bad machine file from a bad
trace without parsing messages. Anything else that escapes is a bug in tareador.
"""

from __future__ import annotations


class TareadorError(Exception):
    """Bad input or a program that cannot be traced: the message is the whole explanation."""


class UserError(TareadorError):
    """A command line that asks for something impossible (bad option values, wrong kind of directory)."""


class ToolchainError(TareadorError):
    """A tool tareador runs is missing (C compiler, Graphviz) or failed on tareador's own sources."""


class TracingError(TareadorError):
    """The program cannot be traced (missing, not executable, agent failure)."""


class FunctionError(TareadorError):
    """A --task-function name that cannot be taken as a task (unknown, inlined, reserved)."""


class AnnotationError(TareadorError):
    """The program's start/end markers are unbalanced or mismatched; ``path`` is the trace written."""

    def __init__(self, problem: str, path: str):
        super().__init__(f"{problem} (partial trace written to {path})")
        self.problem = problem
        self.path = path


class TraceDirError(TareadorError):
    """A trace directory that is missing, incomplete or corrupt."""


class DimError(TareadorError):
    """A .dim file that cannot be replayed; the message is ``file:line: what is wrong``."""


class MachineError(TareadorError):
    """A machine file that cannot be used; the message names the file and the problem."""


class TimingError(TareadorError):
    """A timing run (tareador time) that cannot be used: the program failed, or made other tasks
    than the trace."""


class DurationsError(TareadorError):
    """No usable measured durations (durations.csv): the message says what to run."""


class PatternsError(TareadorError):
    """A bad chunk count."""


class ReportError(TareadorError):
    """A directory a report cannot be made of."""
