"""Shared fixtures: compiling real C programs against the real annotation library."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from tareador.cli import main as cli
from tareador.tracing import toolchain
from tareador.tracing.run import trace
from tests.helpers import EXAMPLES, MPI_EXAMPLES, require


@pytest.fixture(scope="session")
def compile_c(tmp_path_factory):
    """compile_c(source, opt='-O0', static=False, markers=True, libs='') -> path of the executable;
    opt may hold several flags ('-O2 -fno-inline', '-O2 -g0' for no debug info), libs the
    program's libraries ('-llapacke -lblas')."""
    out_dir = tmp_path_factory.mktemp("bin")
    built: dict = {}

    def build(source: str | Path, opt: str = "-O0", static: bool = False, markers: bool = True,
              libs: str = "") -> Path:
        source = Path(source)
        key = (source, opt, static, markers, libs)
        if key not in built:
            exe = out_dir / f"{source.stem}{opt.replace(' ', '')}{'-static' if static else ''}"
            cmd = ["cc", "-g", *shlex.split(opt), "-Wall", *shlex.split(toolchain.cflags()), str(source),
                   "-o", str(exe)]
            if markers:
                cmd += shlex.split(toolchain.libs(static=static))
            cmd += [*shlex.split(libs), "-lm", "-lpthread"]
            subprocess.run(cmd, check=True)
            built[key] = exe
        return built[key]

    return build


@pytest.fixture(scope="session")
def traced_example(compile_c, tmp_path_factory):
    """traced_example(name, *args) -> the trace directory of examples/<name>/<name>.c (-O0) run
    with args, traced once per session: the tests of an example's task graph and of its pragmas
    share the trace."""
    done = {}

    def run(name: str, *args: str) -> Path:
        if (name, args) not in done:
            out = tmp_path_factory.mktemp(name) / "t"
            trace([str(compile_c(EXAMPLES / name / f"{name}.c")), *args], out, progress=False)
            done[(name, args)] = out
        return done[(name, args)]

    return run


@pytest.fixture(scope="session")
def mpi_examples(tmp_path_factory):
    """mpi_examples(mpi) -> the directory examples/Makefile built the MPI examples into, for that MPI."""
    bin_dir = tmp_path_factory.mktemp("mpi-examples")
    done = {}

    def build(mpi):
        require(mpi)
        if mpi.name not in done:
            subprocess.run(["make", "-s", "-C", str(EXAMPLES), f"MPI={mpi.name}", f"BIN={bin_dir}",
                            f"TAREADOR_CFLAGS={toolchain.cflags()}", f"TAREADOR_LIBS={toolchain.libs()}",
                            *MPI_EXAMPLES], check=True)
            done[mpi.name] = bin_dir / mpi.name
        return done[mpi.name]

    return build


@pytest.fixture
def tareador(capsys):
    """Run the console script in-process: (exit status, stdout, stderr)."""
    def run(*argv):
        status = cli.main([str(a) for a in argv])
        out = capsys.readouterr()
        return status, out.out, out.err

    return run
