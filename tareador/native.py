"""Building tareador's own C sources on first use.

Native parts (the annotation and analysis libraries, the replay event loop) are compiled with
the system C compiler into a per-user cache keyed by the hash of their sources, so an installed
package never needs write access to its own directory and a changed source never mixes with an
old binary.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tareador.errors import ToolchainError
from tareador.system_packages import how_to_install


def cache_root() -> Path:
    base = os.environ.get("TAREADOR_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tareador")
    return Path(base)


def data_root() -> Path:
    """Per-user files that must outlive the cache: what built programs are linked against."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return Path(base) / "tareador"


def compiler() -> str:
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        raise ToolchainError(f"C compiler '{cc}' not found: {how_to_install('a C compiler')}; or set CC")
    return cc


def build(name: str, sources: list[Path], commands) -> Path:
    """Build once per distinct source content and command line (compiler, flags); concurrent
    builders each write a temp file and atomically move it into place."""
    digest = hashlib.sha256(repr(commands(Path("OUT"), Path("TMP"))).encode())
    for s in sources:
        digest.update(s.read_bytes())
    out_dir = cache_root() / digest.hexdigest()[:16]
    target = out_dir / name
    if target.exists():
        return target
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        built = Path(tmp) / name
        for cmd in commands(built, Path(tmp)):
            result = subprocess.run(cmd, capture_output=True, text=True)
            if result.returncode != 0:
                raise ToolchainError(f"building {name} failed: {' '.join(map(str, cmd))}\n{result.stderr.strip()}")
        os.replace(built, target)
    return target


def shared_library(name: str, sources: list[Path], signatures: dict[str, tuple], flags: tuple[str, ...] = (),
                   headers: tuple[Path, ...] = ()) -> ctypes.CDLL:
    """C sources compiled into one shared library (once per content and flags: ``build``) and
    loaded, each function of ``signatures`` (name -> (restype, argtypes)) typed, so that a call
    with a wrong argument fails in ctypes instead of in C."""
    path = build(name, [*sources, *headers], lambda out, tmp: [
        [compiler(), "-O2", "-fPIC", "-shared", *flags, "-Wall", *map(str, sources), "-o", str(out)]])
    lib = ctypes.CDLL(str(path))
    for function, (restype, argtypes) in signatures.items():
        getattr(lib, function).restype = restype
        getattr(lib, function).argtypes = argtypes
    return lib


def install(built: Path, directory: Path) -> Path:
    """A copy of a built file at a stable path, replaced atomically when the build changes
    (a running program keeps the copy it mapped)."""
    target = directory / built.name
    if target.exists() and target.read_bytes() == built.read_bytes():
        return target
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        copy = Path(tmp) / built.name
        shutil.copy2(built, copy)
        os.replace(copy, target)
    return target
