"""``tareador trace --task-function``: every call of a named function is a task instance, as if
tareador_start_task/end_task surrounded it, on real binaries at -O0 and -O2, with and without
debug info; exact instance trees and RAW edges derived by hand."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter

import pytest
from cholesky_dag import expected_cholesky_raw_edges

from tareador.errors import TracingError
from tareador.tracing.run import trace
from tests.helpers import EXAMPLES, instance_edges, instance_tree, strip_task_markers, write_c

# No markers at all: the whole program is traced as if ON at main.
CALLS = """
#include <stdio.h>
#define NOINLINE __attribute__((noinline))
int x[8], y;
NOINLINE double leaf(int i) { x[i] = 2 * i; return x[i] * 0.5; }
NOINLINE double tail(int i) { x[i] += 1; return leaf(i); }   /* at -O2: jmp leaf (a tail call) */
NOINLINE int depth(int n) { if (n == 0) return 0; int a = depth(n - 1); x[n] += a; return a + 1; }
int main(void) {
  double s = 0;
  for (int i = 0; i < 3; i++) s += leaf(i);
  s += tail(1);
  int d = depth(3);
  y = (int) s + d;
  printf("s=%g d=%d\\n", s, d);
  return !(s == 4 && d == 3);   /* the doubles leaf returns come back through the return stub */
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2", "-O2 -g0"])
def test_calls_recursion_and_tail_calls(compile_c, tmp_path, opt):
    """Instances in creation order: leaf(0), leaf(1), leaf(2); tail(1), whose leaf(1) is its child
    (a tail call at -O2: tail's return is leaf's); depth(3) > depth(2) > depth(1) > depth(0),
    nested. RAW through x (4-byte ints): tail reads x[1] that leaf#2 wrote; depth(1) adds to x[1]
    after its child returned, last written by leaf#4 (inside tail); depth(2) to x[2], written
    by leaf#3; depth(3)'s x[3] was never written. Nothing else is shared between instances."""
    exe = compile_c(write_c(tmp_path, "calls", CALLS), opt=opt, markers=False)
    t = trace([str(exe)], tmp_path / "calls.tareador", progress=False, task_functions=["leaf", "tail", "depth"])
    assert t.summary["exit_status"] == 0
    assert instance_tree(t) == [("leaf", "main")] * 3 + [("tail", "main"), ("leaf", "tail"), ("depth", "main"),
                                                         ("depth", "depth"), ("depth", "depth"), ("depth", "depth")]
    assert instance_edges(t) == {("leaf#2", "tail#1", "x", 4), ("leaf#4", "depth#3", "x", 4),
                                 ("leaf#3", "depth#2", "x", 4)}
    assert "with the calls of leaf, tail, depth as tasks" in t.summary["warnings"][-1]


MARKED = """
#include <stdio.h>
#include <tareador.h>
#define NOINLINE __attribute__((noinline))
int x[4], y;
NOINLINE void leaf(int i) { x[i] = i; }
NOINLINE void wrap(void) { tareador_start_task("inner"); y = x[1]; tareador_end_task("inner"); }
int main(void) {
  leaf(0);                             /* before ON: not analysed, no task */
  tareador_ON();
  tareador_start_task("outer");
  leaf(1);
  tareador_end_task("outer");
  wrap();
  tareador_OFF();
  leaf(2);                             /* after OFF: no task */
  printf("%d\\n", y);
  return y != 1;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_markers_nest_with_task_functions(compile_c, tmp_path, opt):
    """The program's markers still work: leaf(1) is a child of the marked task outer, the
    marked task inner a child of the call of wrap; the calls of leaf outside ON/OFF are not
    tasks. inner reads x[1], written by leaf(1): one 4-byte RAW edge. At -O2 GCC moves wrap's
    epilogue between the markers: inner's `pop rbx` reads the slot wrap's `push rbx` wrote, an
    8-byte edge from the fragment of wrap that creates inner (which orders nothing more)."""
    exe = compile_c(write_c(tmp_path, "marked", MARKED), opt=opt)
    t = trace([str(exe)], tmp_path / "marked.tareador", progress=False, task_functions=["leaf", "wrap"])
    assert instance_tree(t) == [("outer", "main"), ("leaf", "outer"), ("wrap", "main"), ("inner", "wrap")]
    epilogue = {("wrap#1", "inner#1", "stack", 8)} if opt == "-O2" else set()
    assert instance_edges(t) == {("leaf#1", "inner#1", "x", 4)} | epilogue


@pytest.mark.parametrize("opt", ["-O0", "-O2 -fno-inline"])
def test_cholesky_kernels_as_task_functions(compile_c, tmp_path, opt):
    """The unmarked Cholesky with its four kernels as task functions has the marked version's
    instances and exactly its RAW edges between them (tests/cholesky_dag.py derives them from
    the loop nest); 4x4 tiles: 4 potrf, 6 trsm, 6 syrk, 4 gemm."""
    exe = compile_c(strip_task_markers(tmp_path, "chol_unmarked"), opt=opt)
    t = trace([str(exe), "4", "8"], tmp_path / "chol.tareador", progress=False,
              task_functions=["gemm", "syrk", "trsm", "potrf"])
    names = [name for name, _ in instance_tree(t)]
    assert Counter(names) == {"potrf": 4, "trsm": 6, "syrk": 6, "gemm": 4}
    order = [x.instance for x in t.fragments if x.starts_instance and not x.is_main]
    index = {instance: k for k, instance in enumerate(order, start=1)}
    first = {x.id: x.instance for x in t.fragments}
    got = {(index[first[d.src]], index[first[d.dst]], names[index[first[d.src]] - 1],
            names[index[first[d.dst]] - 1]) for d in t.deps
           if d.kind == "RAW" and first[d.src] in index and first[d.dst] in index}
    assert got == expected_cholesky_raw_edges(4)
    marked = trace([str(compile_c(EXAMPLES / "cholesky" / "cholesky.c", opt=opt)), "4", "8"],
                   tmp_path / "marked.tareador", progress=False)
    assert [x.name for x in marked.fragments if x.starts_instance and not x.is_main] == names


def test_calls_the_markers_wrap_are_counted_twice_and_said(compile_c, tmp_path):
    """The shipped Cholesky marks each kernel call; naming gemm and potrf as task functions too
    makes each of their calls a second task inside the marked one (4x4 tiles: 4 of each), and
    the summary says so per function; trsm's calls, not named, are tasks once."""
    exe = compile_c(EXAMPLES / "cholesky" / "cholesky.c")
    t = trace([str(exe), "4", "8"], tmp_path / "twice.tareador", progress=False, task_functions=["gemm", "potrf"])
    assert Counter(instance_tree(t)) == {("potrf", "main"): 4, ("potrf", "potrf"): 4, ("trsm", "main"): 6,
                                         ("gemm", "main"): 4, ("gemm", "gemm"): 4, ("syrk", "main"): 6}
    for name in ("gemm", "potrf"):
        assert (f"{name}: 4 of its calls are the first call of a task the markers make (right after "
                "tareador_start_task), and made a second task inside it; trace without --task-function "
                f"{name} (the markers make them tasks already), or without those markers") in t.summary["warnings"]
    assert not any(w.startswith("trsm") for w in t.summary["warnings"])


INLINED = """
static int twice(int v) { return 2 * v; }
int main(int argc, char **argv) { (void) argv; return twice(argc) == 0; }
"""


def test_inlined_function_is_named(compile_c, tmp_path):
    """At -O2 twice() is inlined into main and has no symbol: the DWARF of -g says it was
    inlined; without -g nothing can tell, and the error says what it may be."""
    source = write_c(tmp_path, "inlined", INLINED)
    with pytest.raises(TracingError, match=r"^twice was inlined, compile with -fno-inline or mark it"):
        trace([str(compile_c(source, opt="-O2", markers=False))], tmp_path / "a", progress=False,
              task_functions=["twice"])
    with pytest.raises(TracingError, match=r"^no function named twice in 'inlined-O2-g0'.*may have been inlined"):
        trace([str(compile_c(source, opt="-O2 -g0", markers=False))], tmp_path / "b", progress=False,
              task_functions=["twice"])


def test_inlined_function_with_a_symbol_is_warned(compile_c, tmp_path):
    """A function with external linkage keeps its symbol, but at -O2 main's one call of it is
    inlined: the trace runs, no call becomes a task, and the summary says it was inlined."""
    source = write_c(tmp_path, "external", INLINED.replace("static int twice", "int twice"))
    t = trace([str(compile_c(source, opt="-O2", markers=False))], tmp_path / "e", progress=False,
              task_functions=["twice"])
    assert t.instances == 0
    assert "twice was inlined, compile with -fno-inline or mark it: none of its calls became a task" \
        in t.summary["warnings"]


def test_bad_names_are_one_line_errors(compile_c, tmp_path):
    """A misspelt name lists the close ones (difflib); main is the program itself."""
    exe = compile_c(write_c(tmp_path, "calls", CALLS), markers=False)
    run = subprocess.run([sys.executable, "-m", "tareador", "trace", "--task-function", "lef,tail", "-o",
                          str(tmp_path / "x"), "--", str(exe)], capture_output=True, text=True)
    assert run.returncode == 2
    assert run.stderr.startswith("tareador: no function named lef in 'calls-O0' (close names: leaf)")
    assert run.stderr.count("\n") == 1
    with pytest.raises(TracingError, match="^main cannot be a task function"):
        trace([str(exe)], tmp_path / "y", progress=False, task_functions=["main"])
    run = subprocess.run([sys.executable, "-m", "tareador", "trace", "--task-function", "leaf,", "--", str(exe)],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "--task-function needs function names" in run.stderr


def test_never_called_function_is_warned(compile_c, tmp_path):
    """A function whose calls all happen outside ON/OFF makes no task, and the summary says so."""
    exe = compile_c(write_c(tmp_path, "marked", MARKED))
    t = trace([str(exe)], tmp_path / "m.tareador", progress=False, task_functions=["leaf"])
    t2 = trace([str(exe)], tmp_path / "n.tareador", progress=False, task_functions=["wrap"])
    assert instance_tree(t2) == [("outer", "main"), ("wrap", "main"), ("inner", "wrap")]
    assert not any("never called" in w for w in t.summary["warnings"])
    exe_off = compile_c(write_c(tmp_path, "outside", MARKED.replace("  leaf(1);\n", "")))
    t3 = trace([str(exe_off)], tmp_path / "o.tareador", progress=False, task_functions=["leaf"])
    assert "leaf was never called inside the analysed region: it made no task" in t3.summary["warnings"]


TINY = """
__attribute__((noipa)) void tiny(void) {}
int main(void) { for (int i = 0; i < 3; i++) tiny(); return 0; }
"""


def test_one_byte_function(compile_c, tmp_path):
    """At -O2 tiny() is a lone ret, one byte, which Interceptor could not hook: recognised by the
    transform at its entry, each of its 3 calls is a task."""
    exe = compile_c(write_c(tmp_path, "tiny", TINY), opt="-O2", markers=False)
    body = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(exe)], capture_output=True, text=True).stdout
    assert re.search(r"<tiny>:\n\s+[0-9a-f]+:\s+ret", body)
    t = trace([str(exe)], tmp_path / "tiny.tareador", progress=False, task_functions=["tiny"])
    assert instance_tree(t) == [("tiny", "main")] * 3
