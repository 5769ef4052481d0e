"""Every file tareador writes goes through here, so that none is ever half-written or misdirected.

A file is written under a temporary name in its own directory and renamed over the final name
when complete: a full disk or a crash leaves the previous file (or none), never a truncated
CSV that still parses, and a symlink planted at the final name is replaced rather than
followed. Errors name the final path, whatever step failed. Files that only make sense together
(an MPI run's mpi.csv, summary.json and Dimemas traces) are written inside ``together()``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import IO

_deferred: list[tuple[Path, Path]] | None = None  # (temporary, final) of the files written inside together()


@contextlib.contextmanager
def together() -> Iterator[None]:
    """Every file written inside the block takes its final name when the block ends without an
    error, and none does otherwise: a failure halfway leaves no new file beside old ones."""
    global _deferred
    outer, _deferred = _deferred, []
    pending = _deferred
    try:
        yield
        if outer is not None:
            outer += pending
        else:
            while pending:
                temporary, path = pending[0]
                os.replace(temporary, path)
                pending.pop(0)
        pending = []
    finally:
        _deferred = outer
        for temporary, _ in pending:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


@contextlib.contextmanager
def output_file(path: str | Path, mode: str = "w", **open_args) -> Iterator[IO]:
    """``open(path, mode)`` for writing ("w" or "wb"), made atomic; text is UTF-8 unless told."""
    path = Path(path)
    if "b" not in mode:
        open_args.setdefault("encoding", "utf-8")
    try:
        fd, temporary = _create_beside(path)
        try:
            with os.fdopen(fd, mode, **open_args) as f:
                yield f
            if _deferred is None:
                os.replace(temporary, path)
            else:
                _deferred.append((temporary, path))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError as e:
        if e.errno is None or e.filename == str(path):
            raise
        raise OSError(e.errno, e.strerror, str(path)) from None


def _create_beside(path: Path) -> tuple[int, Path]:
    """A new file next to ``path`` with the permissions a plain open() would give it (umask applies)."""
    while True:
        temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), temporary
        except FileExistsError:
            continue


def write_text(path: str | Path, text: str) -> Path:
    with output_file(path) as f:
        f.write(text)
    return Path(path)


def write_bytes(path: str | Path, data: bytes) -> Path:
    with output_file(path, "wb") as f:
        f.write(data)
    return Path(path)


def printable(name: str) -> str:
    """A name from the traced program on one line of visible characters: control characters,
    line and paragraph separators and invisible format characters (e.g. bidi overrides) become
    Python escapes (``\\n``, ``\\x1b``, ``\\u202e``). Every output format escapes the result its own
    way on top of this."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in name)
