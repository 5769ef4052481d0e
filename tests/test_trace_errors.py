"""Bad input gets a one-line error, and whatever was traced is still written (real binaries)."""

from __future__ import annotations

import pytest

from tareador import load
from tests.helpers import one_line_error, run_cli, write_c

TWO_TASKS = r"""
#include <stdio.h>
#include <stdlib.h>
#include "tareador.h"
int data[8];
int main(int argc, char **argv) {
  tareador_ON();
  tareador_start_task("first"); for (int i = 0; i < 8; i++) data[i] = i; tareador_end_task("first");
  tareador_start_task("second"); int s = 0; for (int i = 0; i < 8; i++) s += data[i]; tareador_end_task("second");
  %s
  tareador_OFF();
  printf("%%d\n", s);
  return 0;
}
"""


@pytest.mark.fast
def test_missing_program(capsys, tmp_path):
    assert run_cli("-o", tmp_path / "t", "--", tmp_path / "nope") == 2
    assert "not found" in one_line_error(capsys)


@pytest.mark.fast
def test_not_an_executable(capsys, tmp_path):
    source = write_c(tmp_path, "x", "int main(void){return 0;}")
    assert run_cli("-o", tmp_path / "t", "--", source) == 2
    assert "not an executable" in one_line_error(capsys)


def test_program_without_markers_is_one_main_task(capsys, tmp_path, compile_c):
    src = write_c(tmp_path, "plain", "int a[100];\nint main(void){for(int i=0;i<100;i++)a[i]=i;return a[7]-7;}\n")
    exe = compile_c(src, markers=False)
    assert run_cli("-o", tmp_path / "t", "--", exe) == 0
    t = load(tmp_path / "t")
    assert [x.name for x in t.fragments] == ["main"]
    assert t.fragments[0].instructions > 100
    assert any("no tareador markers" in w for w in t.summary["warnings"])


@pytest.mark.parametrize("extra, expected", [
    ('tareador_end_task("second");', 'tareador_end_task("second") without a matching tareador_start_task'),
    ('tareador_start_task("third"); tareador_end_task("fourth");',
     'tareador_end_task("fourth") does not match the innermost open task'),
    ('tareador_start_task("left_open");', 'task "left_open" was still open at tareador_OFF()'),
])
def test_unbalanced_markers_name_the_task_and_line(capsys, tmp_path, compile_c, extra, expected):
    src = write_c(tmp_path, "bad", TWO_TASKS % extra)
    exe = compile_c(src)
    assert run_cli("-o", tmp_path / "t", "--", exe) == 2
    message = one_line_error(capsys)
    assert expected in message
    assert "bad.c:10" in message or "left_open" in message
    t = load(tmp_path / "t")  # still written
    assert [x.name for x in t.fragments if not x.is_main][:2] == ["first", "second"]


def test_crash_keeps_the_partial_trace(capsys, tmp_path, compile_c):
    src = write_c(tmp_path, "crash",
                  TWO_TASKS % 'tareador_start_task("boom"); *(volatile int *) 0 = 1; tareador_end_task("boom");')
    exe = compile_c(src)
    assert run_cli("-o", tmp_path / "t", "--", exe) == 1
    assert "crashed" in one_line_error(capsys)
    t = load(tmp_path / "t")
    assert t.summary["partial"] is True
    assert [x.name for x in t.fragments if not x.is_main] == ["first", "second", "boom"]
    assert {(d.src, d.dst, d.object, d.bytes) for d in t.deps if d.kind == "RAW" and d.object == "data"} == {
        (1, 3, "data", 32)}


CRASH_IN_A_FUNCTION = r"""
#include "tareador.h"
int data[8];
void poke(int *p, int i) {
  data[i] = i;
  p[i] = i;  /* the NULL write */
}
int main(void) {
  tareador_ON();
  for (int i = 0; i < 3; i++) {
    tareador_start_task("poke");
    poke(i < 2 ? data : 0, i);
    tareador_end_task("poke");
  }
  tareador_OFF();
  return 0;
}
"""


def test_a_crash_inside_a_task_names_the_function_and_line(capsys, tmp_path, compile_c):
    exe = compile_c(write_c(tmp_path, "poke", CRASH_IN_A_FUNCTION))
    line = CRASH_IN_A_FUNCTION.splitlines().index("  p[i] = i;  /* the NULL write */") + 1
    assert run_cli("-o", tmp_path / "t", "--", exe) == 1
    where = f"in poke (poke.c:{line})"
    assert where in one_line_error(capsys)
    ending = load(tmp_path / "t").summary["ending"]
    assert where in ending and "stack overflow" not in ending  # a NULL write, far from the stack


def test_nonzero_exit_is_reported_with_a_complete_trace(capsys, tmp_path, compile_c):
    src = write_c(tmp_path, "fails", TWO_TASKS.replace("return 0;", "return 3;") % "")
    exe = compile_c(src)
    assert run_cli("-o", tmp_path / "t", "--", exe) == 3
    assert "status 3" in one_line_error(capsys)
    t = load(tmp_path / "t")
    assert t.summary["partial"] is False and t.summary["exit_status"] == 3
    assert len([x for x in t.fragments if not x.is_main]) == 2
