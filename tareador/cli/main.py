"""``tareador`` console script.

Every subcommand lives in its own module exposing ``register(subparsers)``; the parser it adds
sets ``func`` to a callable taking the parsed arguments and returning an exit status. Errors
the user can fix are raised as a TareadorError (tareador.errors) anywhere in the pipeline and
printed here as one line, never as a traceback.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import signal
import sys

from tareador.errors import TareadorError
from tareador.stopping import Stopped, stop_signals
from tareador.version import __version__

SUBCOMMANDS = ["config", "trace", "mpirun", "postprocess", "patterns", "overlap", "graph", "simulate", "whatif",
               "explore", "hints", "replay", "time", "models", "report"]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line. Given the subcommand a command line names, only that one's module is
    imported and registered: each command's start-up pays for its own stack alone (the ranks of
    an MPI run each start ``tareador trace``). Without one (``tareador --help``, an unknown
    command, the docs), every subcommand."""
    parser = argparse.ArgumentParser(
        prog="tareador",
        description="Estimate the task parallelism a proposed taskification of a C/MPI program exposes.",
    )
    parser.add_argument("--version", action="version", version=f"tareador {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in [command] if command in SUBCOMMANDS else SUBCOMMANDS:
        importlib.import_module(f"tareador.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    named = next((a for a in argv if not a.startswith("-")), None)  # the only top-level options take no value
    args = build_parser(named).parse_args(argv)
    try:
        with stop_signals():
            return int(args.func(args) or 0)
    except TareadorError as e:
        print(f"tareador: {e}", file=sys.stderr)
        return 2
    except Stopped as e:
        print(f"tareador: stopped by {signal.Signals(e.signum).name}", file=sys.stderr)
        return 128 + e.signum
    except KeyboardInterrupt:
        print("tareador: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `tareador ... | head`: the reader left; the outputs are written, say nothing more.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as e:  # an output directory that cannot be made, a file that cannot be written
        where = f"{e.filename}: " if e.filename else ""
        print(f"tareador: {where}{e.strerror or e}; {_remedy(e, args)}", file=sys.stderr)
        return 2
    except MemoryError as e:
        reason = f" ({e})" if str(e) else ""  # a failed allocation says nothing more
        print(f"tareador: out of memory{reason}; try a smaller machine or trace", file=sys.stderr)
        return 2


def _remedy(e: OSError, args) -> str:
    # Every output is renamed into place when complete (tareador.files): nothing is half-written.
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return "free some space and run again (no file was left half-written)"
    if e.errno == errno.EFBIG:
        return "a file size limit (ulimit -f) stopped it; raise it and run again (no file was left half-written)"
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS) and hasattr(args, "output"):
        return "write elsewhere with -o OUTDIR"
    return "check the path and its permissions"
