"""Overlapping copies: an instruction reads its source before it writes its destination, so a
copy depends on the last writer of every source byte, whatever the length, overlap and direction
(real glibc memmove, and a backward `std; rep movsb` written by hand)."""

from __future__ import annotations

from collections import defaultdict

from tareador.tracing.run import trace
from tests.helpers import write_c

LENGTHS = (7, 100, 3000, 5000, 20000)
DISTANCES = (1, 100)
WAYS = ("memmove down", "memmove up", "rep movsb with DF=1")

COPIES = r"""
#include <stdlib.h>
#include <string.h>
#include "tareador.h"

static void movsb_backwards(char *last_dst, const char *last_src, size_t n) {
  __asm__ volatile ("std\n\trep movsb\n\tcld" : "+D"(last_dst), "+S"(last_src), "+c"(n) : : "memory", "cc");
}

int main(void) {
  static const long lengths[] = { %s };
  static const long distances[] = { %s };
  tareador_ON();
  for (int i = 0; i < %d; i++)
    for (int j = 0; j < %d; j++)
      for (int way = 0; way < 3; way++) {
        long n = lengths[i], d = distances[j];
        char *b = malloc(n + d);
        tareador_start_task("fill"); memset(b, 1 + way, n + d); tareador_end_task("fill");
        tareador_start_task("copy");
        if (way == 0) memmove(b, b + d, n);
        else if (way == 1) memmove(b + d, b, n);
        else movsb_backwards(b + d + n - 1, b + n - 1, n);
        tareador_end_task("copy");
        free(b);
      }
  tareador_OFF();
  return 0;
}
"""


def test_a_copy_depends_on_every_source_byte(tmp_path, compile_c):
    source = COPIES % (", ".join(map(str, LENGTHS)), ", ".join(map(str, DISTANCES)), len(LENGTHS), len(DISTANCES))
    exe = compile_c(write_c(tmp_path, "copies", source))
    t = trace([str(exe)], tmp_path / "t", progress=False)
    fills = [x.id for x in t.fragments if x.name == "fill"]
    copies = [x.id for x in t.fragments if x.name == "copy"]
    into_copy = defaultdict(dict)
    for d in t.deps:
        if d.dst in copies and d.object.startswith("heap:"):
            into_copy[d.dst][(d.src, d.kind)] = d.bytes
    cases = [(n, distance, way) for n in LENGTHS for distance in DISTANCES for way in WAYS]
    got = {case: into_copy[copy] for case, copy in zip(cases, copies)}
    # Every byte copied is read from the filler's bytes and overwrites the filler's bytes.
    assert got == {case: {(fill, "RAW"): case[0], (fill, "WAW"): case[0]} for case, fill in zip(cases, fills)}
