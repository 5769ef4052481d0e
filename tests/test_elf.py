"""ELF and DWARF are read in one module (tracing/elf.py), which alone turns the agent's module
offsets into link addresses: a PIE executable is linked at 0, a -no-pie one at 0x400000 (the
x86-64 toolchain's default), and symbols, DWARF and addr2line agree with the agent either way."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from tareador.analyses.signatures import Parameter, parameters
from tareador.taskgraph.store import load_trace
from tareador.tracing.decode import refine_source_lines
from tareador.tracing.elf import debug_entries, image_base, read_functions, source_lines
from tareador.tracing.functions import inlined_functions
from tests.helpers import write_c

SOURCE = """#include <stdlib.h>
int twice(int x) {
  return 2 * x;
}
static inline int square(int x) { return x * x; }
int main(int argc, char **argv) {
  return twice(argc) - square(argc) - 1;
}
"""
LINKED_AT = {"-pie": 0, "-no-pie": 0x400000}


def build(tmp_path, link: str):
    source = write_c(tmp_path, "prog", SOURCE)
    exe = tmp_path / f"prog{link}"
    subprocess.run(["cc", "-g", "-O0", "-fPIE" if link == "-pie" else "-fno-pie", link, str(source), "-o", str(exe)],
                   check=True)
    return str(exe)


def linked_address(exe: str, name: str) -> int:
    """The symbol's address as nm prints it: where the file is linked."""
    out = subprocess.run(["nm", exe], capture_output=True, text=True, check=True).stdout
    return next(int(f[0], 16) for f in map(str.split, out.splitlines()) if len(f) == 3 and f[2] == name)


@pytest.mark.parametrize("link", sorted(LINKED_AT))
def test_one_image_base_for_symbols_dwarf_and_lines(tmp_path, link):
    exe = build(tmp_path, link)
    assert image_base(exe) == LINKED_AT[link]
    offset = linked_address(exe, "twice") - LINKED_AT[link]  # what the agent sees: address - module start
    assert {s.name: s.offset for s in read_functions(exe).symbols}["twice"] == offset
    [where] = source_lines(exe, [offset])
    assert (where.function, where.file.rsplit("/", 1)[-1], where.line) == ("twice", "prog.c", 2)
    assert parameters(exe, offset) == (Parameter("x", None, False),)
    low_pcs = {e["attrs"].get("DW_AT_name"): int(e["attrs"]["DW_AT_low_pc"], 16) for e in debug_entries(exe).values()
               if e["tag"] == "DW_TAG_subprogram" and "DW_AT_low_pc" in e["attrs"]}
    assert low_pcs["twice"] == offset + LINKED_AT[link]


def test_refined_source_lines_of_a_program_not_position_independent(tmp_path):
    """The agent leaves a site's names to addr2line after a crash in the allocator: a -no-pie
    program's sites get their function and line too (addr2line is given the linked address)."""
    exe = build(tmp_path, "-no-pie")
    site = {"path": exe, "offset": linked_address(exe, "main") - 0x400000, "function": "", "file": "", "line": 0}
    refine_source_lines([site])
    assert (site["function"], site["file"], site["line"]) == ("main", "prog.c", 6)


ALLOCATES = """#include <stdlib.h>
#include "tareador.h"
int main(void) {
  tareador_ON();
  int *a = malloc(64 * sizeof(int));
  tareador_start_task("w");
  for (int i = 0; i < 64; i++) a[i] = i;
  tareador_end_task("w");
  tareador_OFF();
  free(a);
  return 0;
}
"""


@pytest.mark.parametrize("link", sorted(LINKED_AT))
def test_a_heap_object_is_named_by_its_allocations_line(compile_c, tareador, tmp_path, link):
    """Frida's line of the malloc call site is approximate (the return address's: line 6); the
    driver's addr2line gives line 5, position independent or not."""
    flags = "-O0 -fPIE -pie" if link == "-pie" else "-O0 -fno-pie -no-pie"
    exe = compile_c(write_c(tmp_path, f"allocates{link}", ALLOCATES), opt=flags)
    assert tareador("trace", "--no-progress", "-o", tmp_path / "t", "--", exe)[0] == 0
    heap = [o.name for o in load_trace(tmp_path / "t").objects if o.kind == "heap"]
    assert heap == [f"heap:allocates{link}.c:5#0"]


def test_inlined_functions_from_the_dwarf(tmp_path):
    """square is declared inline and (at -O0) not inlined: DW_AT_inline 1 is 'inlined' only when
    the compiler did inline it, which -O2 does."""
    exe = build(tmp_path, "-pie")
    assert inlined_functions(exe)[0] >= {"twice", "square", "main"}
    optimised = tmp_path / "prog-O2"
    subprocess.run(["cc", "-g", "-O2", *shlex.split("-fno-ipa-icf"), str(tmp_path / "prog.c"), "-o", str(optimised)],
                   check=True)
    described, inlined = inlined_functions(str(optimised))
    assert {"twice", "square", "main"} <= described and "square" in inlined
