"""realloc keeps the history of the bytes it keeps, last writers and last readers alike, whether
it moves the block or grows it in place (real glibc realloc under real Frida)."""

from __future__ import annotations

import pytest

from tareador.tracing.run import trace
from tests.helpers import write_c

# A 32-byte block; with a block allocated right after it, growing it to 1616 bytes moves it,
# without, it grows in place (the top of the heap). The program says which happened.
REALLOC = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tareador.h"
char *block;
int sink;
int main(void) {
  block = malloc(32);
  char *after = %s;
  tareador_ON();
  tareador_start_task("write_all"); memset(block, 1, 32); tareador_end_task("write_all");
  tareador_start_task("read_move");
  int v, w;
  memcpy(&v, block + 22, 4);                 /* reads [22, 26) */
  char *old = block;
  block = realloc(block, 1616);
  memcpy(&w, block + 22, 4);                 /* the same bytes again: no new RAW byte */
  sink = v + w;
  tareador_end_task("read_move");
  tareador_start_task("write_part"); block[22] = 5; block[23] = 6; block[24] = 7; tareador_end_task("write_part");
  tareador_OFF();
  printf("%%s %%d\n", block == old ? "in place" : "moved", sink + (after != NULL));
  return 0;
}
"""


@pytest.mark.parametrize("after, moved", [("malloc(32)", "moved"), ("NULL", "in place")])
def test_realloc_keeps_writers_and_readers(compile_c, tmp_path, capfd, after, moved):
    """read_move read bytes [22, 26) that write_all wrote: 4 bytes of RAW, once, though it reads
    them again after the realloc; write_part then overwrites [22, 25): 3 bytes of WAR from
    read_move and of WAW from write_all, on the block realloc made, whose pointer it reads."""
    exe = compile_c(write_c(tmp_path, "grow", REALLOC % after))
    t = trace([str(exe)], tmp_path / "grow.tareador", progress=False)
    assert capfd.readouterr().out.startswith(moved + " ")
    name = {x.id: x.name for x in t.fragments}
    line = next(i for i, text in enumerate((REALLOC % after).splitlines(), start=1) if "realloc(block" in text)
    moved_block, first_block = f"heap:grow.c:{line}#0", "heap:grow.c:9#0"
    edges = {(name[d.src], name[d.dst], d.kind, d.object, d.bytes) for d in t.deps
             if name[d.src] != "main" and name[d.dst] != "main"}
    assert edges == {("write_all", "read_move", "RAW", first_block, 4),
                     ("read_move", "write_part", "RAW", "block", 8),   # the pointer realloc returned
                     ("write_all", "write_part", "WAW", moved_block, 3),
                     ("read_move", "write_part", "WAR", moved_block, 3)}
