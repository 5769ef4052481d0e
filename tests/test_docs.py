"""The documentation site: it builds with warnings as errors, every command has its reference
page (made from its parser, so it cannot drift from --help), and every code block marked
runnable runs as written."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tareador.cli.main import SUBCOMMANDS
from tareador.tracing import toolchain
from tests.helpers import EXAMPLES, ROOT

RUNNABLE = re.compile(r"<!-- runnable -->\n```console\n(.*?)```", re.S)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("mkdocs")
    out = tmp_path_factory.mktemp("site")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                        "-d", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return out


def test_every_command_has_its_reference_page(site):
    for command in SUBCOMMANDS:
        page = (site / "reference" / "commands" / command / "index.html").read_text()
        assert f"usage: tareador {command}" in page and "Example:" in page
    index = (site / "reference" / "commands" / "index.html").read_text()
    assert all(f'href="{command}/"' in index for command in SUBCOMMANDS)


def runnable_blocks() -> list[tuple[str, list[str]]]:
    """(page, its commands) for every block marked runnable in README.md and docs/."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    blocks = []
    for page in pages:
        for block in RUNNABLE.findall(page.read_text()):
            commands = [line[2:] for line in block.splitlines() if line.startswith("$ ")]
            blocks.append((str(page.relative_to(ROOT)), commands))
    return blocks


def test_there_are_runnable_blocks():
    assert runnable_blocks() and all(commands for _, commands in runnable_blocks())


@pytest.mark.parametrize("page, commands", runnable_blocks(), ids=[f"{p}#{i}" for i, (p, _) in
                                                                 enumerate(runnable_blocks())])
def test_runnable_block_runs(page, commands, tmp_path):
    """Each in a fresh directory holding examples/bin as `make -C examples` builds it, in order,
    `tareador` being this checkout's."""
    subprocess.run(["make", "-s", "-C", str(EXAMPLES), f"BIN={tmp_path / 'examples' / 'bin'}",
                    f"TAREADOR_CFLAGS={toolchain.cflags()}", f"TAREADOR_LIBS={toolchain.libs()}", "cholesky", "heat",
                    "treesum"], check=True, capture_output=True)
    for command in commands:
        argv = shlex.split(command)
        if argv[0] == "tareador":
            argv = [sys.executable, "-m", "tareador", *argv[1:]]
        r = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(Path.home())})
        assert r.returncode == 0, f"{page}: {command}\n{r.stderr}"
