"""Building the native parts: the annotation library users link against, and the analysis
library the agent loads into the traced process.

Both are compiled on first use into tareador's build cache (see tareador.native). Programs are
linked with an rpath to a copy of the annotation library outside the cache, in tareador's
per-user data directory: they run without LD_LIBRARY_PATH, and clearing the cache does not
break them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tareador.errors import ToolchainError
from tareador.native import build, compiler, data_root, install


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


def annotation_library(static: bool = False) -> Path:
    src = annotations_dir() / "tareador.c"
    cc = compiler()
    if static:
        def commands(out: Path, tmp: Path):
            obj = tmp / "tareador.o"
            return [[cc, "-O2", "-fPIC", "-c", str(src), "-o", str(obj)], ["ar", "rcs", str(out), str(obj)]]
        return build("libtareador.a", [src], commands)
    return build("libtareador.so", [src],
                 lambda out, tmp: [[cc, "-O2", "-fPIC", "-shared", str(src), "-o", str(out)]])


def installed_annotation_library() -> Path:
    """The shared annotation library programs are linked against; `tareador config` and every
    trace put it back if it was removed. One directory per version of its source (the build's
    hash): a program keeps the library it was linked with while another version of tareador (a
    newer install, another checkout) runs beside it; replaced under a running program, the file
    on disk would no longer be the one mapped, and Frida reads a library's symbols from disk."""
    built = annotation_library()
    return install(built, data_root() / "lib" / built.parent.name)


def analysis_library() -> Path:
    sources = [agents_dir() / name for name in ("shadow.c", "endings.c", "patterns.c", "tables.c")]
    command = [compiler(), "-O2", "-fPIC", "-shared", "-Wall", *map(str, sources)]
    return build("libtareador_shadow.so", sources + [agents_dir() / "system.h"],
                 lambda out, tmp: [[*command, "-o", str(out)]])


@dataclass(frozen=True)
class AgentSources:
    script: str
    transform: str
    allocations: str
    mpi: str
    analysis_library: Path


def agent_script(name: str) -> str:
    """A Frida script of tracer_agents/, after modules.js, which both agents use."""
    d = agents_dir()
    return (d / "modules.js").read_text() + (d / name).read_text()


def agent_sources() -> AgentSources:
    d = agents_dir()
    return AgentSources(agent_script("agent.js"), (d / "transform.c").read_text(),
                        (d / "allocations.c").read_text(), (d / "mpi.c").read_text(), analysis_library())


def cflags() -> str:
    return f"-I{annotations_dir()}"


def libs(static: bool = False) -> str:
    if static:
        return str(annotation_library(static=True))
    directory = installed_annotation_library().parent
    return f"-L{directory} -Wl,-rpath,{directory} -ltareador"
