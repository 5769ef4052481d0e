"""The documentation site: it builds with warnings as errors, every command has its reference
page (made from its parser, so it cannot drift from --help), every page is in the navigation,
and every code block marked runnable runs as written. The README stays a newcomer's page: the
two commands first, at most 250 lines, links that resolve."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tareador.cli.main import SUBCOMMANDS
from tareador.simulation.machine import TOML_SECTIONS
from tareador.tracing import toolchain
from tests.helpers import EXAMPLES, ROOT, call, make_run

RUNNABLE = re.compile(r"<!-- runnable -->\n```console\n(.*?)```", re.S)
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")
README = ROOT / "README.md"


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


def test_readme_starts_with_the_two_commands():
    """A newcomer's first screen: the title, then the block with `make demo` and `make test`, the
    two targets of the Makefile that install what is missing first."""
    lines = README.read_text().splitlines()
    assert lines[:3] == ["# tareador", "", "```"]
    block = lines[3:lines.index("```", 3)]
    assert [line.split("#")[0].strip() for line in block if line.startswith("make ")] == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)


def test_readme_is_short():
    assert len(README.read_text().splitlines()) <= 250


def test_every_relative_link_of_the_readme_resolves():
    targets = [t for t in MARKDOWN_LINK.findall(README.read_text()) if not re.match(r"[a-z]+:", t)]
    assert len(targets) >= 20
    missing = [t for t in targets if not (ROOT / t.split("#")[0]).exists()]
    assert not missing, missing


def nav_pages(entries) -> set[str]:
    pages = set()
    for entry in entries:
        values = entry.values() if isinstance(entry, dict) else [entry]
        for value in values:
            pages |= nav_pages(value) if isinstance(value, list) else {value}
    return pages


def test_every_page_is_in_the_navigation():
    """mkdocs --strict only notes a page left out of the nav; a reader would never find it."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    pages = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert pages - nav_pages(config["nav"]) == set()


def test_machine_files_page_documents_every_key():
    """Every key a TOML machine file may hold has its row in the keys table (first cell
    "`[section] key`, `key`")."""
    rows = [line.split("|")[1] for line in (ROOT / "docs" / "reference" / "machine-files.md").read_text().splitlines()
            if line.startswith("| `[")]
    undocumented = [f"[{section}] {key}" for section, keys in TOML_SECTIONS.items() for key in keys
                    if not any(row.strip().startswith(f"`[{section}]") and re.search(rf"\b{key}`", row)
                               for row in rows)]
    assert not undocumented, undocumented


def documented_keys(start: str, end: str) -> set[str]:
    """The `names` written between two lines of docs/reference/files.md."""
    text = (ROOT / "docs" / "reference" / "files.md").read_text()
    return set(re.findall(r"`([a-z_0-9]+)`", text[text.index(start):text.index(end)]))


def test_summary_schema_has_every_key_a_trace_writes(traced_example):
    summary = json.loads((traced_example("cholesky", "2", "8") / "summary.json").read_text())
    assert set(summary) - documented_keys("## summary.json", "## Run directory") == set()


def test_run_directory_table_has_every_key_of_a_runs_summary(tmp_path):
    make_run(tmp_path, [[call("MPI_Send", peer=1, tag=0, size=8)], [call("MPI_Recv", peer=0, tag=0, size=8)]])
    summary = json.loads((tmp_path / "summary.json").read_text())
    documented = documented_keys("## Run directory", "## Outputs")
    assert set(summary) - documented == set()
    assert set(summary["per_rank"][0]) - documented == set()
