"""Building the native parts: the annotation library users link against, and the analysis
library the agent loads into the traced process.

Both are compiled on first use with the system C compiler into a per-user cache keyed by the
hash of their sources, so an installed package never needs write access to its own directory
and a changed source never mixes with an old binary. Programs are linked with an rpath to that
directory: they run without LD_LIBRARY_PATH.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


class ToolchainError(Exception):
    """The C compiler is missing or failed on tareador's own sources."""


def source_root() -> Path:
    """annotations/ and tracer_agents/ beside the package (a checkout or editable install),
    else the copies shipped inside the package."""
    package = Path(__file__).resolve().parents[1]
    for root in (package.parent, package / "_sources"):
        if (root / "annotations" / "tareador.h").exists() and (root / "tracer_agents" / "agent.js").exists():
            return root
    raise ToolchainError(f"tareador's C sources are missing beside {package}; reinstall the package")


def annotations_dir() -> Path:
    return source_root() / "annotations"


def agents_dir() -> Path:
    return source_root() / "tracer_agents"


def cache_root() -> Path:
    base = os.environ.get("TAREADOR_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tareador")
    return Path(base)


def _compiler() -> str:
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        raise ToolchainError(f"C compiler '{cc}' not found: install gcc (make deps) or set CC")
    return cc


def _build(name: str, sources: list[Path], commands) -> Path:
    """Build once per distinct source content; concurrent builders each write a temp file and
    atomically move it into place."""
    digest = hashlib.sha256()
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


def annotation_library(static: bool = False) -> Path:
    src = annotations_dir() / "tareador.c"
    cc = _compiler()
    if static:
        def commands(out: Path, tmp: Path):
            obj = tmp / "tareador.o"
            return [[cc, "-O2", "-fPIC", "-c", str(src), "-o", str(obj)], ["ar", "rcs", str(out), str(obj)]]
        return _build("libtareador.a", [src], commands)
    return _build("libtareador.so", [src],
                  lambda out, tmp: [[cc, "-O2", "-fPIC", "-shared", str(src), "-o", str(out)]])


def analysis_library() -> Path:
    src = agents_dir() / "shadow.c"
    return _build("libtareador_shadow.so", [src],
                  lambda out, tmp: [[_compiler(), "-O2", "-fPIC", "-shared", "-Wall", str(src), "-o", str(out)]])


@dataclass(frozen=True)
class AgentSources:
    script: str
    transform: str
    allocations: str
    analysis_library: Path


def agent_sources() -> AgentSources:
    d = agents_dir()
    return AgentSources((d / "agent.js").read_text(), (d / "transform.c").read_text(),
                        (d / "allocations.c").read_text(), analysis_library())


def cflags() -> str:
    return f"-I{annotations_dir()}"


def libs(static: bool = False) -> str:
    lib = annotation_library(static)
    if static:
        return str(lib)
    return f"-L{lib.parent} -Wl,-rpath,{lib.parent} -ltareador"
