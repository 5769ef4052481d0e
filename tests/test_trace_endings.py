"""However a traced run ends (exit inside a task, a signal to the program or to tareador, a crash,
a stack overflow, fork), the trace so far is written, the summary says how it ended, and the
program never outlives tareador. Every run has a hard timeout: a regression fails, it does not hang."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tareador import load
from tareador.cli.main import main
from tests.helpers import write_c

TIMEOUT = 60

ENDINGS = r"""
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "tareador.h"
int data[8];
static int deeper(int n) {
  volatile char frame[512];
  frame[0] = (char) n;
  return n < 0 ? 0 : deeper(n + 1) + frame[0];
}
int main(int argc, char **argv) {
  tareador_ON();
  tareador_start_task("fill"); for (int i = 0; i < 8; i++) data[i] = i; tareador_end_task("fill");
  tareador_start_task("last");
  int s = data[2];
  printf("ready %d\n", (int) getpid()); fflush(stdout);
  switch (argv[1][0]) {
  case 'x': exit(5);
  case 'r': return s;
  case 't': raise(SIGTERM); break;
  case 'a': abort();
  case 'o': s += deeper(s); break;
  case 'p': for (;;) { printf("more\n"); fflush(stdout); }
  case 'w': for (volatile long i = 0; ; i++) data[i & 7] = (int) i;
  }
  tareador_end_task("last");
  tareador_OFF();
  return s;
}
"""

CHILDREN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tareador.h"
int data[8];
int main(void) {
  pid_t p = fork(); if (p == 0) _exit(0); waitpid(p, NULL, 0);
  tareador_ON();
  tareador_start_task("fill"); for (int i = 0; i < 8; i++) data[i] = i; tareador_end_task("fill");
  tareador_start_task("children");
  int forked, executed;
  p = fork(); if (p == 0) { data[0] = 99; _exit(data[0] == 99 ? 7 : 1); } waitpid(p, &forked, 0);
  p = fork(); if (p == 0) { execl("/bin/true", "true", (char *) 0); _exit(1); } waitpid(p, &executed, 0);
  int shell = system("exit 3");
  FILE *f = popen("echo 42", "r"); int echoed = 0; if (fscanf(f, "%d", &echoed) != 1) echoed = -1; pclose(f);
  int s = data[0] + data[7];
  tareador_end_task("children");
  tareador_OFF();
  printf("%d %d %d %d %d\n", WEXITSTATUS(forked), WEXITSTATUS(executed), WEXITSTATUS(shell), echoed, s);
  return 0;
}
"""


def tareador_trace(out: Path, *program, **popen) -> subprocess.Popen:
    command = [sys.executable, "-m", "tareador", "trace", "--no-progress", "-o", str(out), "--", *map(str, program)]
    return subprocess.Popen(command, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)


# The program's argument for each run, and whether tareador runs in its own process group.
RUNS = {"exit": ("x", False), "return": ("r", False), "raise": ("t", False), "abort": ("a", False),
        "overflow": ("o", False), "sigpipe": ("p", False), "sigint": ("w", True), "sigterm": ("w", True),
        "sigkill": ("w", False)}


@pytest.fixture(scope="module")
def programs(compile_c, tmp_path_factory):
    directory = tmp_path_factory.mktemp("src")
    return compile_c(write_c(directory, "endings", ENDINGS)), compile_c(write_c(directory, "children", CHILDREN))


@pytest.fixture(scope="module")
def runs(programs, tmp_path_factory):
    """Every run starts at once, then each test looks at its own: a test's wait overlaps the others'."""
    directory = tmp_path_factory.mktemp("endings")
    endings, children = programs
    started = {name: (directory / name, tareador_trace(directory / name, endings, mode, start_new_session=group))
               for name, (mode, group) in RUNS.items()}
    started["children"] = (directory / "children.tareador", tareador_trace(directory / "children.tareador", children))
    yield started
    for _, proc in started.values():
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    """Exit status, stdout and the last line of stderr of a tareador run, within TIMEOUT."""
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()  # not communicate(): a program left behind would keep the pipes open
        proc.wait()
        raise
    return proc.returncode, out or "", (err or "").strip().rpartition("\n")[2]


def line(proc: subprocess.Popen) -> str:
    """The next line the program prints, within TIMEOUT."""
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(TIMEOUT)
    assert lines, f"no output within {TIMEOUT} s"
    return lines[0]


def started(proc: subprocess.Popen) -> int:
    """Waits for the program's 'ready PID' line: it is inside task "last"."""
    words = line(proc).split()
    assert words[:1] == ["ready"], words
    return int(words[1])


def gone(pid: int) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    return False


def assert_partial_trace(out: Path, ending: str, signal_name: str | None) -> None:
    t = load(out)
    assert t.summary["partial"] is True
    assert ending in t.summary["ending"]
    assert t.summary["signal"] == signal_name
    assert t.summary["annotation_error"] is None
    names = {x.id: x.name for x in t.fragments}
    assert [x.name for x in t.fragments if not x.is_main] == ["fill", "last"]
    assert {(names[d.src], names[d.dst], d.object, d.bytes) for d in t.deps if d.kind == "RAW"} == {
        ("fill", "last", "data", 4)}


def test_exit_inside_a_task_is_the_programs_status_with_a_partial_trace(runs):
    out, proc = runs["exit"]
    status, _, message = finish(proc)
    assert status == 5
    assert message.endswith(f'exited with status 5 inside task "last"; the partial trace is in {out}')
    assert_partial_trace(out, 'exited with status 5 inside task "last"', None)
    assert load(out).summary["exit_status"] == 5


def test_returning_from_main_with_a_task_open_is_a_marker_error(runs):
    out, proc = runs["return"]
    status, _, message = finish(proc)
    assert status == 2
    assert 'task "last" was still open at tareador_OFF() or at the end of the program' in message
    assert load(out).summary["partial"] is False


@pytest.mark.parametrize("run, ending, signal_name", [
    ("raise", "was terminated by SIGTERM", "SIGTERM"),
    ("abort", "crashed with SIGABRT (abort)", "SIGABRT"),
    ("overflow", "crashed with SIGSEGV (stack overflow) in deeper", "SIGSEGV"),
])
def test_a_program_ended_by_a_signal_keeps_its_partial_trace(runs, run, ending, signal_name):
    out, proc = runs[run]
    status, _, message = finish(proc)
    assert status == 1
    assert ending in message
    assert_partial_trace(out, ending, signal_name)


def test_sigpipe_when_the_reader_goes_away(runs):
    """`tareador trace -- ./prog | head -2`"""
    out, proc = runs["sigpipe"]
    pid = started(proc)
    line(proc)
    proc.stdout.close()
    _, _, message = finish(proc)
    assert "was terminated by SIGPIPE" in message
    assert_partial_trace(out, "was terminated by SIGPIPE", "SIGPIPE")
    assert gone(pid)


@pytest.mark.parametrize("run, sent, ending", [
    ("sigint", signal.SIGINT, "was interrupted (Ctrl-C)"),
    ("sigterm", signal.SIGTERM, "was stopped (SIGTERM to tareador)"),
])
def test_a_signal_to_tareador_stops_the_program_and_keeps_the_trace(runs, run, sent, ending):
    out, proc = runs[run]
    pid = started(proc)
    os.killpg(proc.pid, sent)  # to the whole process group, as a terminal's Ctrl-C or `timeout` do
    status, _, message = finish(proc)
    assert status == 1
    assert ending in message
    assert_partial_trace(out, ending, sent.name)
    assert gone(pid)


def test_the_program_dies_with_a_killed_tareador(runs):
    _, proc = runs["sigkill"]
    pid = started(proc)
    proc.kill()
    finish(proc)
    assert gone(pid)


def test_children_run_untraced_and_the_parent_trace_completes(runs):
    out, proc = runs["children"]
    status, stdout, _ = finish(proc)
    assert status == 0
    assert stdout.splitlines()[0] == "7 0 3 42 7"
    t = load(out)
    assert t.summary["partial"] is False
    assert ("the program started 5 child process(es) (fork, system, popen, posix_spawn); they ran untraced"
            in t.summary["warnings"])
    names = {x.id: x.name for x in t.fragments}
    # The child's write to data[0] is its own: no WAW into "children", and its read comes from "fill".
    assert {(names[d.src], names[d.dst], d.kind, d.object, d.bytes) for d in t.deps} == {
        ("fill", "children", "RAW", "data", 8)}


@pytest.mark.parametrize("where, problem", [
    ("file", "is an existing file"),
    ("file/sub", "(FILE: Not a directory)"),
    ("/sys/tareador-test", "(/sys: "),
])
def test_an_unwritable_output_is_refused_before_the_program_runs(programs, tmp_path, capfd, where, problem):
    if where.startswith("/sys") and not os.path.isdir("/sys"):
        pytest.skip("no sysfs here (where even root cannot make a directory)")
    exe = programs[0]
    (tmp_path / "file").write_text("not a directory\n")
    out = tmp_path / where if not where.startswith("/") else Path(where)
    assert main(["trace", "--no-progress", "-o", str(out), "--", str(exe), "x"]) == 2
    stdout, stderr = capfd.readouterr()
    assert stderr.strip().startswith("tareador: ")
    assert problem.replace("FILE", str(tmp_path / "file")) in stderr
    assert "ready" not in stdout  # the program did not run
