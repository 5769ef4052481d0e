"""Stack frames on real binaries: main's code, like any parent, never depends on a finished
task's dead frame; and a stack object is named by the function whose frame holds it when it is
accessed, not by an earlier function that used the same addresses."""

from __future__ import annotations

import pytest

from tareador import hints as load_hints
from tareador.tracing.run import trace
from tests.helpers import write_c

# fill's 512-byte array is in the task's private stack; copy_through's struct copy then reads
# the padding bytes of its own frame, uninitialised, where that array was.
DEAD_FRAME = r"""
#include <stdio.h>
#include "tareador.h"
#define NOINLINE __attribute__((noinline))
struct padded { char c; long l; short s; };   /* 7 and 6 bytes of padding */
struct padded kept;
long out[2];
NOINLINE void fill(int k) {
  volatile char buf[512];
  for (int i = 0; i < 512; i++) buf[i] = (char) (i * k + 1);
  out[k] = buf[(k * 97) %% 512];
}
NOINLINE void copy(const struct padded *p) { kept = *p; }
NOINLINE void copy_through(void) {
  struct padded local;
  local.c = 1; local.l = 2; local.s = 3;
  copy(&local);
}
static void three_lines(void) {
  tareador_start_task("first"); fill(0); tareador_end_task("first");
  copy_through();
  tareador_start_task("second"); fill(1); tareador_end_task("second");
}
int main(void) {
  tareador_ON();
  %s
  tareador_OFF();
  printf("%%ld %%ld %%d\n", out[0], out[1], kept.c);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("where", ["main", "task"])
def test_a_parent_never_depends_on_a_childs_dead_frame(compile_c, tmp_path, opt, where):
    """first and second share nothing: no edge of any kind from them, to each other or to the
    code that runs between them, whether that code is main's or an enclosing task's. T-inf is
    then second's path: everything that ran before it but first, then second (first is not
    longer than what runs beside it, the code between and second)."""
    body = ("three_lines();" if where == "main"
            else 'tareador_start_task("outer"); three_lines(); tareador_end_task("outer");')
    exe = compile_c(write_c(tmp_path, f"dead_{where}", DEAD_FRAME % body), opt=opt)
    t = trace([str(exe)], tmp_path / "dead.tareador", progress=False)
    assert t.summary["exit_status"] == 0
    assert not any(t.fragments[d.src].name in ("first", "second") for d in t.deps), t.deps
    order = [x.name for x in t.fragments]
    first, second = t.fragments[order.index("first")], t.fragments[order.index("second")]
    before_second = sum(x.instructions for x in t.fragments[:second.id] if x.id != first.id)
    assert t.tinf == before_second + second.instructions


# Two tasks run one after the other, each a function whose child task fills its local x, which
# it then reads: the same addresses, two frames.
TWO_FRAMES = r"""
#include <stdio.h>
#include "tareador.h"
#define NOINLINE __attribute__((noinline))
long result[2];
NOINLINE void first(void) {
  volatile long x[2];
  tareador_start_task("fill_first"); x[0] = 1; x[1] = 2; tareador_end_task("fill_first");
  result[0] = x[0] + x[1];
}
NOINLINE void second(void) {
  volatile long x[2];
  tareador_start_task("fill_second"); x[0] = 2; x[1] = 3; tareador_end_task("fill_second");
  result[1] = x[0] * x[1];
}
int main(void) {
  tareador_ON();
  tareador_start_task("first"); first(); tareador_end_task("first");
  tareador_start_task("second"); second(); tareador_end_task("second");
  tareador_OFF();
  printf("%ld %ld\n", result[0], result[1]);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2 -fno-omit-frame-pointer"])
def test_a_local_is_named_by_the_frame_that_holds_it(compile_c, tmp_path, opt):
    exe = compile_c(write_c(tmp_path, "two_frames", TWO_FRAMES), opt=opt)
    out = tmp_path / "two_frames.tareador"
    t = trace([str(exe)], out, progress=False)
    name = {x.id: x.name for x in t.fragments}
    raw = {(name[d.src], name[d.dst], d.object, d.bytes) for d in t.deps if d.kind == "RAW"}
    assert raw == {("fill_first", "first", "stack:first", 16), ("fill_second", "second", "stack:second", 16)}
    # hints names the local by its frame too: each child's item is on the x its parent then reads.
    named = {h.name: [c.example for c in h.clauses] for h in load_hints(str(out)).types}
    assert named["fill_first"] == ["stack:first"] and named["fill_second"] == ["stack:second"]
