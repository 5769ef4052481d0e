"""Instruction counts repeat exactly from run to run: the traced program runs without ASLR, also
when frida was imported before tareador (a notebook), and the summary warns when it cannot."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from tareador.tracing.run import trace
from tests.helpers import ROOT, write_c

# libc's string functions take alignment- and page-dependent paths: on a stack buffer their
# instruction counts change with the stack's random offset.
STRINGS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tareador.h"
int main(void) {
  char stack[300];
  char *heap = malloc(300);
  tareador_ON();
  tareador_start_task("strings");
  for (int i = 0; i < 40; i++) {
    memset(stack + i, 'a' + i % 26, 200 - i);
    stack[250 - i] = 0;
    strcpy(heap + i, stack + i);
    stack[0] = (char) (strlen(heap + i) + strlen(stack + i));
  }
  tareador_end_task("strings");
  tareador_OFF();
  printf("%d\n", stack[0]);
  return 0;
}
"""

ASLR_WARNING = "ASLR could not be disabled"

NOTEBOOK = r"""
import json, os, sys
import frida  # before tareador, as a notebook may have done
from tareador.tracing.run import trace
exe, out, no_setarch_path = sys.argv[1:]
runs = []
for i in range(3):
    if i == 2:
        os.environ["PATH"] = no_setarch_path
    t = trace([exe], f"{out}/t{i}", progress=False)
    runs.append({"tasks": open(f"{out}/t{i}/tasks.csv").read(), "warnings": t.summary["warnings"]})
print(json.dumps(runs))
"""


def test_every_run_counts_the_same_instructions(tmp_path, compile_c):
    exe = compile_c(write_c(tmp_path, "strings", STRINGS))
    runs = [trace([str(exe)], tmp_path / f"t{i}", progress=False) for i in range(3)]
    tables = [(tmp_path / f"t{i}" / "tasks.csv").read_text() for i in range(3)]
    assert tables[0] == tables[1] == tables[2]
    assert not any(ASLR_WARNING in w for t in runs for w in t.summary["warnings"])


def test_same_counts_when_frida_was_imported_first_and_a_warning_without_setarch(tmp_path, compile_c):
    exe = compile_c(write_c(tmp_path, "strings", STRINGS))
    compiler_only = tmp_path / "bin"
    compiler_only.mkdir()
    (compiler_only / "cc").symlink_to(shutil.which("cc"))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-c", NOTEBOOK, str(exe), str(tmp_path), str(compiler_only)],
                            env=env, capture_output=True, text=True, check=True)
    first, second, without_setarch = json.loads(result.stdout.splitlines()[-1])
    assert first["tasks"] == second["tasks"]
    assert first["warnings"] == second["warnings"] == []
    assert any(ASLR_WARNING in w for w in without_setarch["warnings"])
