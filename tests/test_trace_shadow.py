"""Shadow memory (real binaries, real Frida): it follows what the program touches, not what it
allocates, and keeping it up is none of the program's work."""

from __future__ import annotations

from tareador.tracing.run import trace
from tests.helpers import write_c

HUGE = r"""
#include <stdlib.h>
#include <string.h>
#include "tareador.h"
#define MIB (1UL << 20)
char *big, *zeros;
long sink;
int main(void) {
  big = malloc(1024 * MIB);
  tareador_ON();
  tareador_start_task("write");
  for (int k = 0; k < 16; k++) big[k * 64 * MIB + 3] = (char) k;
  memset(big + 512 * MIB + 8192, 7, 65536);
  tareador_end_task("write");
  tareador_start_task("read");
  for (int k = 0; k < 16; k++) sink += big[k * 64 * MIB + 3];
  for (long i = 0; i < 65536; i += 8) sink += *(long *) (big + 512 * MIB + 8192 + i);
  tareador_end_task("read");
  tareador_start_task("alloc");
  zeros = calloc(256 * MIB, 1);
  tareador_end_task("alloc");
  tareador_start_task("read_zeros");
  sink += *(long *) (zeros + 256 * MIB - 8) + zeros[12345] + *(long *) (zeros + 100 * MIB);
  tareador_end_task("read_zeros");
  tareador_start_task("grow");
  zeros = realloc(zeros, 512 * MIB);
  tareador_end_task("grow");
  tareador_start_task("read_grown");
  sink += *(long *) (zeros + 256 * MIB - 8) + zeros[12345] + *(long *) (zeros + 100 * MIB);
  sink += *(long *) (zeros + 300 * MIB);
  tareador_end_task("read_grown");
  tareador_OFF();
  return (int) (sink & 1);
}
"""


def test_huge_blocks_barely_touched(compile_c, tmp_path):
    """A gibibyte malloc'd and barely touched, a calloc'd block read where nobody wrote since, and
    its realloc to twice the size: the dependencies are exact to the byte (what such a block
    costs in time and memory is measured by benchmarks/trace_overhead.py --only sparse)."""
    exe = compile_c(write_c(tmp_path, "huge", HUGE))
    line = {snippet: next(i for i, text in enumerate(HUGE.splitlines(), start=1) if snippet in text)
            for snippet in ("malloc(", "calloc(", "realloc(")}
    t = trace([str(exe)], tmp_path / "t", progress=False)
    name = {x.id: x.name for x in t.fragments}
    edges = {(name[d.src], name[d.dst], d.kind, d.object, d.bytes) for d in t.deps
             if name[d.src] != "main" and name[d.dst] != "main"}
    assert edges == {
        ("write", "read", "RAW", f"heap:huge.c:{line['malloc(']}#0", 16 + 65536),
        # calloc's zeros are the allocating task's, in the block and in what realloc moved of it;
        # the bytes realloc added were written by nobody
        ("alloc", "read_zeros", "RAW", f"heap:huge.c:{line['calloc(']}#0", 8 + 1 + 8),
        ("alloc", "read_grown", "RAW", f"heap:huge.c:{line['realloc(']}#0", 8 + 1 + 8),
        # the pointer `zeros` itself
        ("alloc", "read_zeros", "RAW", "zeros", 8),
        ("alloc", "grow", "RAW", "zeros", 8),
        ("alloc", "grow", "WAW", "zeros", 8),
        ("grow", "read_grown", "RAW", "zeros", 8),
        # the tasks that add to `sink`
        ("read", "read_zeros", "RAW", "sink", 8),
        ("read", "read_zeros", "WAW", "sink", 8),
        ("read_zeros", "read_grown", "RAW", "sink", 8),
        ("read_zeros", "read_grown", "WAW", "sink", 8),
    }


MAPPINGS = r"""
#include <sys/mman.h>
#include "tareador.h"
int main(void) {
  long sizes[] = {64L << 20, 1L << 20, 256L << 20};
  tareador_ON();
  for (int k = 0; k < 3; k++) {
    tareador_start_task("map");
    char *p = mmap(0, sizes[k], PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    p[0] = 1;
    munmap(p, sizes[k]);
    tareador_end_task("map");
  }
  tareador_OFF();
  return 0;
}
"""


def test_shadow_upkeep_is_not_the_programs_work(compile_c, tmp_path):
    """A mapping's shadow is made and cleared inside the program's calls to mmap and munmap, on
    the traced thread: none of that work is the program's, so the same code costs the same
    instructions whatever the size it maps (it cost 8 more per MiB when libc made the shadow)."""
    t = trace([str(compile_c(write_c(tmp_path, "mappings", MAPPINGS)))], tmp_path / "t", progress=False)
    counts = [x.instructions for x in t.fragments if x.name == "map"]
    assert len(counts) == 3 and len(set(counts)) == 1
