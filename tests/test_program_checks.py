"""Programs tareador cannot trace get a one-line error saying what to do, and built programs
keep running when tareador's build cache is cleared (real compilers, real binaries)."""

from __future__ import annotations

import shlex
import shutil
import subprocess

from tareador.tracing import toolchain
from tests.helpers import one_line_error, run_cli, write_c

PROGRAM = r"""
#include "tareador.h"
int a[4];
int main(void) {
  tareador_ON();
  tareador_start_task("t"); a[1] = 1; tareador_end_task("t");
  tareador_OFF();
  return 0;
}
"""


def cc(*args):
    cflags = shlex.split(toolchain.cflags())
    subprocess.run(["cc", "-g", *cflags, *map(str, args)], check=True)


def test_a_statically_linked_program(capsys, tmp_path):
    exe = tmp_path / "prog"
    cc("-static", write_c(tmp_path, "prog", PROGRAM), "-o", exe, toolchain.libs(static=True))
    assert run_cli("-o", tmp_path / "t", "--", exe) == 2
    assert "is statically linked" in one_line_error(capsys)


def test_an_object_file(capsys, tmp_path):
    obj = tmp_path / "prog.o"
    cc("-c", write_c(tmp_path, "prog", PROGRAM), "-o", obj)
    obj.chmod(0o755)
    assert run_cli("-o", tmp_path / "t", "--", obj) == 2
    assert "is an object file, not a program: link it first" in one_line_error(capsys)


def test_a_program_that_cannot_find_libtareador(capsys, tmp_path):
    exe = tmp_path / "prog"
    library = toolchain.annotation_library()
    cc(write_c(tmp_path, "prog", PROGRAM), "-o", exe, f"-L{library.parent}", "-ltareador")  # no rpath
    assert run_cli("-o", tmp_path / "t", "--", exe) == 2
    message = one_line_error(capsys)
    assert "ended before it could be traced" in message and "libtareador.so" in message


def test_programs_survive_a_cleared_cache(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("TAREADOR_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    exe = tmp_path / "prog"
    cc(write_c(tmp_path, "prog", PROGRAM), "-o", exe, *shlex.split(toolchain.libs()))
    shutil.rmtree(tmp_path / "cache")
    assert subprocess.run([exe]).returncode == 0
    # Even without the installed copy, tracing puts it back before the program starts.
    monkeypatch.delenv("TAREADOR_CACHE")
    shutil.rmtree(tmp_path / "data")
    assert run_cli("-o", tmp_path / "t", "--", exe) == 0
    assert list((tmp_path / "data" / "tareador" / "lib").glob("*/libtareador.so"))
