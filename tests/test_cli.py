"""The command line itself: whose arguments are whose, help, hints, summaries and the progress
line on a real terminal (real binaries under real Frida)."""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios

import pytest

from tareador import load
from tareador.cli.main import SUBCOMMANDS, build_parser, main
from tests.helpers import ROOT, write_c

ECHO = r"""
#include <stdio.h>
#include <unistd.h>
#include "tareador.h"
int x;
int main(int argc, char **argv) {
  tareador_ON();
  if (argc > 2) printf("before\n");
  fflush(stdout);
  tareador_start_task("only"); if (argc > 2) usleep(800000); x = argc; tareador_end_task("only");
  if (argc > 2) printf("after\n");
  tareador_OFF();
  return 0;
}
"""


@pytest.fixture(scope="module")
def echo(compile_c, tmp_path_factory):
    return compile_c(write_c(tmp_path_factory.mktemp("src"), "echo", ECHO))


def test_options_after_the_program_are_the_programs(echo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["trace", "--no-progress", str(echo), "-o", "x"]) == 0
    assert load(tmp_path / "echo-O0.tareador").summary["arguments"] == ["-o", "x"]
    assert not (tmp_path / "x").exists()


@pytest.mark.fast
@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_help_ends_with_an_example(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    *_, heading, example = text.strip().splitlines()
    assert heading == "example:" and re.match(rf"  (tareador {command}|cc) ", example)
    subcommands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert not [a.dest for a in subcommands.choices[command]._actions if not a.help]


def test_a_command_imports_its_own_stack_only():
    """`tareador trace` (what every rank of an MPI run starts) neither registers the other
    commands nor loads matplotlib or frida before it needs them; `tareador --help` lists them all."""
    probe = ("import sys\nfrom tareador.cli.main import main\ntry:\n    main(sys.argv[1:])\n"
             "except SystemExit:\n    pass\nprint(' '.join(sorted(m for m in sys.modules\n"
             "                       if m.startswith(('tareador.cli.', 'matplotlib', 'frida')))))")
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def loaded(*argv: str) -> set[str]:
        run = subprocess.run([sys.executable, "-c", probe, *argv], env=env, capture_output=True, text=True, check=True)
        return set(run.stdout.splitlines()[-1].split())

    assert loaded("trace", "--help") == {"tareador.cli.main", "tareador.cli.trace"}
    everything = loaded("--help")
    assert {f"tareador.cli.{name}" for name in SUBCOMMANDS} <= everything
    assert not [m for m in everything if m.startswith(("matplotlib", "frida"))]


def test_not_found_hints(echo, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["trace", "--no-progress", "--", "./nope"]) == 2
    assert capsys.readouterr().err == "tareador: program './nope' not found: check the path\n"
    shutil.copy(echo, tmp_path / "here")
    assert main(["trace", "--no-progress", "--", "here"]) == 2
    assert capsys.readouterr().err == "tareador: program 'here' not found: use ./here for the file in this directory\n"


def values_column(text: str, labels: list[str]) -> list[int]:
    """Where the value starts on each labelled line."""
    return [len(line) - len(line[len(label):].lstrip()) for label in labels for line in text.splitlines()
            if line.startswith(label)]


def test_summaries_line_up_and_count_in_words(echo, tmp_path, capsys):
    assert main(["trace", "--no-progress", "-o", str(tmp_path / "t"), "--", str(echo)]) == 0
    out = capsys.readouterr().out
    assert values_column(out, ["task instances", "T1 (total work)", "T-inf (crit.path)", "parallelism"]) == [18] * 4
    assert "1 of 1 task type (+ 2 fragments of main)" in out
    assert main(["simulate", str(tmp_path / "t"), "--cores", "1"]) == 0
    out = capsys.readouterr().out
    assert values_column(out, ["T1 (sequential)", "T-inf (crit.path)", "parallelism"]) == [18] * 3


def test_graph_writes_elsewhere_with_o(echo, tmp_path):
    assert main(["trace", "--no-progress", "-o", str(tmp_path / "t"), "--", str(echo)]) == 0
    assert main(["graph", str(tmp_path / "t"), "-o", str(tmp_path / "g")]) == 0
    assert sorted(p.name for p in (tmp_path / "g").iterdir()) == ["graph.dot", "graph.svg"]
    assert not list((tmp_path / "t").glob("graph.*"))


def test_progress_stays_on_the_bottom_row_below_the_programs_output(echo, tmp_path):
    """On a 10-row terminal the program's lines scroll in rows 1-9; the progress is drawn on row 10
    only (cursor saved, moved there, row cleared, text, cursor restored) and cleared at the end."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 10, 80, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "tareador", "trace", "-o", str(tmp_path / "t"), "--", str(echo),
                             "slowly", "please"], stdin=slave, stdout=slave, stderr=slave,
                            env=dict(os.environ, PYTHONPATH=str(ROOT), TERM="xterm"))
    os.close(slave)
    raw = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer has closed the terminal
            break
        if not chunk:
            break
        raw += chunk
    os.close(master)
    assert proc.wait() == 0
    text = raw.decode()
    draw = re.compile(r"\x1b7\x1b\[10;1H\x1b\[2K([^\x1b]*)\x1b8")
    assert draw.findall(text) and all(line.startswith("  tracing: ") for line in draw.findall(text))
    rest = draw.sub("", text)
    assert rest.startswith("before\r\n\x1bD\x1b[1A\x1b7\x1b[1;9r\x1b8")  # rows 1-9 scroll
    assert "after\r\n\x1b7\x1b[r\x1b[10;1H\x1b[2K\x1b8task instances" in rest  # all rows scroll again
    assert "tracing" not in rest


MAIN_NAMED = r"""
#include "tareador.h"
int x[64];
int main(void) {
  tareador_ON();
  for (int i = 0; i < 64; i++) x[i] = i;
  tareador_start_task("main");
  for (int i = 0; i < 64; i++) x[i] += 1;
  tareador_end_task("main");
  tareador_OFF();
  return x[3] != 4;
}
"""


def test_a_task_named_main_is_apart_from_mains_code(compile_c, tmp_path, capsys):
    """main's code is cut in 2 fragments by the one task, which is named main: the table has a
    row for each (was one row, main 3)."""
    exe = compile_c(write_c(tmp_path, "main_named", MAIN_NAMED))
    assert main(["trace", "--no-progress", "-o", str(tmp_path / "t"), "--", str(exe)]) == 0
    out = capsys.readouterr().out
    assert "1 of 1 task type (+ 2 fragments of main's own code)" in out
    rows = {line.rsplit(None, 3)[0].strip(): int(line.split()[-3]) for line in out.splitlines()
            if line.startswith("main")}
    assert rows == {"main": 1, "main (program)": 2}
