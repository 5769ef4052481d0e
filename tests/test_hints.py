"""tareador hints on real binaries: the access summaries the tracer records (accesses.csv,
calls.csv), the clauses and pragmas derived from them, and the warnings."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tareador import hints as load_hints
from tareador.render.hints import pragmas
from tareador.tracing.run import trace
from tests.helpers import EXAMPLES, write_c

TILE = 16 * 16 * 8  # bytes of one TS = 16 tile of doubles

# (task type, [(argument expression, parameter, mode, read-first bytes, written bytes)]), from
# cholesky.c: every kernel reads the whole tile(s) it is given (potrf, trsm's l and syrk's c only
# their lower triangle, whose first and last elements are the tile's: hull [0, TILE)), and writes
# the tile it updates (potrf and syrk: the lower triangle again, hull [0, TILE)), after reading it.
CHOLESKY = {
    "potrf": [("A[k][k]", "a", "inout", [0, TILE], [0, TILE])],
    "trsm": [("A[k][k]", "l", "in", [0, TILE], None), ("A[k][i]", "b", "inout", [0, TILE], [0, TILE])],
    "gemm": [("A[k][i]", "a", "in", [0, TILE], None), ("A[k][j]", "b", "in", [0, TILE], None),
             ("A[j][i]", "c", "inout", [0, TILE], [0, TILE])],
    "syrk": [("A[k][i]", "a", "in", [0, TILE], None), ("A[i][i]", "c", "inout", [0, TILE], [0, TILE])],
}


@pytest.fixture(scope="module")
def cholesky_hints(compile_c, tmp_path_factory):
    out = tmp_path_factory.mktemp("chol") / "t"
    trace([str(compile_c(EXAMPLES / "cholesky" / "cholesky.c")), "3", "16"], out, progress=False)
    return out


def test_cholesky_clauses(cholesky_hints):
    h = load_hints(str(cholesky_hints))
    # NT = 3: potrf k = 0..2 (3), trsm (k, i > k): 2 + 1 = 3, syrk (k, i > k): 3, gemm (k, i > j > k): 1.
    assert {t.name: t.instances for t in h.types} == {"potrf": 3, "trsm": 3, "syrk": 3, "gemm": 1}
    for t in h.types:
        got = [(c.target, c.parameter, c.mode, list(c.read) if c.read else None,
                list(c.written) if c.written else None) for c in t.clauses]
        assert got == CHOLESKY[t.name], t.name
        assert t.function == t.name and all(c.element == 8 and c.instances == t.instances for c in t.clauses)
        # The pointer tables A[k] and the global TS are only read; the loop counters are main's locals.
        assert "TS" in t.read_only and t.captured == ["stack:main"]
    # Every WAR/WAW of the Cholesky follows a RAW (each written tile is read first): nothing kept;
    # and the pragmas name whole tiles, so OpenMP's dependences are the traced ones.
    assert h.warnings == [] and h.tinf == h.tinf_without_renaming == h.tinf_pragmas


def test_cholesky_clauses_of_task_functions(compile_c, tmp_path):
    """cholesky.c without its task markers, its kernels made tasks by --task-function at -O2: the
    call that makes each task is its body, so the clauses are on its parameters as with markers."""
    source = (EXAMPLES / "cholesky" / "cholesky.c").read_text()
    kept = [line for line in source.splitlines()
            if "tareador_start_task" not in line and "tareador_end_task" not in line]
    exe = compile_c(write_c(tmp_path, "chol_functions", "\n".join(kept) + "\n"), opt="-O2 -fno-inline")
    trace([str(exe), "3", "16"], tmp_path / "t", progress=False, task_functions=["potrf", "trsm", "gemm", "syrk"])
    h = load_hints(str(tmp_path / "t"))
    assert {t.name: t.instances for t in h.types} == {"potrf": 3, "trsm": 3, "syrk": 3, "gemm": 1}
    for t in h.types:
        got = [(c.target, c.parameter, c.mode, list(c.read) if c.read else None,
                list(c.written) if c.written else None) for c in t.clauses]
        assert got == CHOLESKY[t.name], t.name


def test_cholesky_not_position_independent(tmp_path):
    """-no-pie: DWARF and line addresses are absolute (0x400000 + offset), found all the same."""
    from tareador.tracing import toolchain

    exe = tmp_path / "cholesky"
    subprocess.run(["cc", "-g", "-O0", "-no-pie", *toolchain.cflags().split(),
                    str(EXAMPLES / "cholesky" / "cholesky.c"), "-o", str(exe), *toolchain.libs().split(), "-lm"],
                   check=True)
    trace([str(exe), "3", "16"], tmp_path / "t", progress=False)
    for t in load_hints(str(tmp_path / "t")).types:
        assert [(c.target, c.parameter, c.mode) for c in t.clauses] == [x[:3] for x in CHOLESKY[t.name]], t.name


def test_cholesky_pragmas_cli(cholesky_hints):
    out = subprocess.run([sys.executable, "-m", "tareador", "hints", str(cholesky_hints), "--size", "TS=16", "--json"],
                         capture_output=True, text=True, check=True).stdout
    types = {t["name"]: t for t in json.loads(out)["types"]}
    assert types["trsm"]["openmp"] == "#pragma omp task depend(in: A[k][k][0:TS*TS]) depend(inout: A[k][i][0:TS*TS])"
    assert types["gemm"]["ompss2"] == "#pragma oss task in(A[k][i][0;TS*TS], A[k][j][0;TS*TS]) inout(A[j][i][0;TS*TS])"
    assert types["potrf"]["openmp"] == "#pragma omp task depend(inout: A[k][k][0:TS*TS])"


WARNINGS = r'''
#include "tareador.h"

int counter;    /* updated by bump, which is not passed it */
int shared[8];  /* written whole by fill_a and by fill_b, neither reading it first */

static void bump(int by) { counter += by; }
static void fill_a(int *p) { for (int i = 0; i < 8; i++) p[i] = 1; }
static void peek(const int *p, int *out) { *out = p[0]; }
static void fill_b(int *p) { for (int i = 0; i < 8; i++) p[i] = 2; }

int main(void)
{
  int seen = 0;
  tareador_ON();
  tareador_start_task("bump");
  bump(1);
  tareador_end_task("bump");
  tareador_start_task("bump");
  bump(2);
  tareador_end_task("bump");
  tareador_start_task("fill_a");
  fill_a(shared);
  tareador_end_task("fill_a");
  tareador_start_task("peek");
  peek(shared, &seen);
  tareador_end_task("peek");
  tareador_start_task("fill_b");
  fill_b(shared);
  tareador_end_task("fill_b");
  tareador_OFF();
  return seen == 1 && counter == 3 ? 0 : 1;
}
'''


def test_warnings(compile_c, tmp_path):
    """bump: counter, a global not passed, read then written: inout by name. fill_a and fill_b
    write all of shared (8 ints = 32 bytes) without reading it: out, and a WAW between them that
    no RAW orders (peek reads shared[0] after fill_a, but fill_b reads nothing). peek reads
    shared[0] (in: its item is the region fill_a and fill_b write, shared[0:8], which starts
    where theirs do) and writes main's `seen` through its pointer (out, shared: an OpenMP task
    copies the locals of the function creating it). The WAR peek ->
    fill_b and the WAW fill_a -> fill_b are what renaming removes; kept, fill_b waits for peek."""
    out = tmp_path / "t"
    t = trace([str(compile_c(write_c(tmp_path, "warn", WARNINGS)))], out, progress=False)
    h = load_hints(str(out))
    assert {th.name: pragmas(th, {})[0] for th in h.types} == {
        "bump": "#pragma omp task depend(inout: counter)",
        "fill_a": "#pragma omp task depend(out: shared[0:8])",
        "fill_b": "#pragma omp task depend(out: shared[0:8])",
        "peek": "#pragma omp task depend(in: shared[0:8]) depend(out: seen) shared(seen)",
    }
    assert h.warnings[:2] == [
        "bump: global counter is accessed (inout) but not passed to the task: the clause names it directly; "
        "pass it as an argument to make the dependence visible",
        "shared is written by fill_a and fill_b with nothing ordering them (1 pair(s)): a race if taskified "
        "without a depend clause on it in both",
    ]
    assert h.warnings[2].startswith("OpenMP keeps 1 WAR and 1 WAW dependence(s) between tasks")
    # Fragments: main's before fill_a's creation (3), fill_a, peek, fill_b. With renaming the
    # longest path ends at peek; without, fill_b follows peek.
    size = {x.id: x.instructions for x in t.fragments}
    before = size[0] + size[2] + size[4]
    fill_a, peek, fill_b = (next(x.instructions for x in t.fragments if x.name == n)
                            for n in ("fill_a", "peek", "fill_b"))
    assert h.tinf == before + fill_a + peek
    assert h.tinf_without_renaming == before + fill_a + peek + fill_b
    # The pragmas give OpenMP the same order: fill_b's out on shared[0] follows fill_a's out and peek's in.
    assert h.tinf_pragmas == before + fill_a + peek + fill_b


def test_trace_without_tasks(compile_c, tmp_path):
    exe = compile_c(write_c(tmp_path, "notasks", "int main(void) { return 0; }\n"), markers=False)
    trace([str(exe)], tmp_path / "t", progress=False)
    run = subprocess.run([sys.executable, "-m", "tareador", "hints", str(tmp_path / "t")],
                         capture_output=True, text=True)
    assert run.returncode == 2 and run.stderr == (f"tareador: {tmp_path / 't'} has no task instances: mark tasks (or "
                                                  "use --task-function) and trace again\n")


def test_bad_input(tmp_path, cholesky_hints):
    bad = subprocess.run([sys.executable, "-m", "tareador", "hints", str(cholesky_hints), "--size", "TS=x"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("tareador: --size 'TS=x': expected NAME=VALUE")
    old = tmp_path / "old"
    old.mkdir()
    for name in ("tasks.csv", "deps.csv", "objects.csv", "summary.json"):
        (old / name).write_bytes((cholesky_hints / name).read_bytes())
    missing = subprocess.run([sys.executable, "-m", "tareador", "hints", str(old)], capture_output=True, text=True)
    assert missing.returncode == 2 and "accesses.csv is missing: trace the program again" in missing.stderr


@pytest.mark.parametrize("name, row, message", [
    ("accesses.csv", "1,nosuch,0,0,8,-1,-1", "object 'nosuch' is not in objects.csv; the file is corrupt"),
    ("calls.csv", "1,potrf,/p,0,0,zz;0x1", "arguments 'zz;0x1' are not ';'-separated hex numbers; the file is corrupt"),
])
def test_corrupt_rows(tmp_path, cholesky_hints, name, row, message):
    """Rows that parse but name what is not there were a traceback (KeyError, ValueError)."""
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in cholesky_hints.glob("*.*"):
        (bad / f.name).write_bytes(f.read_bytes())
    lines = (bad / name).read_text().splitlines()
    (bad / name).write_text("\n".join([*lines, row]) + "\n")
    run = subprocess.run([sys.executable, "-m", "tareador", "hints", str(bad)], capture_output=True, text=True)
    assert run.returncode == 2 and run.stderr == f"tareador: {bad / name}:{len(lines) + 1}: {message}\n", run.stderr


def checked_in_pragmas(source) -> dict[str, str]:
    """Task body -> the `#pragma omp task` line right above its call, in an OpenMP example."""
    lines = [line.strip() for line in source.read_text().splitlines()]
    return {lines[n + 1].split("(")[0]: line for n, line in enumerate(lines) if line.startswith("#pragma omp task ")}


def kernels(source, first: str, last: str) -> str:
    """The source text from the line starting `first` to the one before `last`: the kernels."""
    text = source.read_text()
    return text[text.index(first):text.index(last)]


@pytest.mark.parametrize("name, args, sizes, first, last", [
    ("cholesky", ["3", "16"], {"TS": 16}, "static double *alloc_tile", "int main("),
    ("heat", ["64", "16", "2"], {"n": 64}, "static double *alloc_grid", "int main("),
    ("cholesky_tiles", ["4", "16"], {"TS": 16}, "#define TILE", "int main("),
    ("sparselu", ["6", "8"], {"BS": 8}, "/* A block of zeros", "int main("),
    ("heat_blocks", ["16", "4", "3"], {"bs": 4}, "static double *alloc_cells", "int main("),
    ("chainside", ["4", "1000"], {}, "static double work", "int main("),
    ("integrate", ["2", "100"], {}, "static double f(", "static void node("),
])
def test_openmp_examples_use_the_generated_pragmas(traced_example, tmp_path, name, args, sizes, first, last):
    """examples/<name>_omp/<name>_omp.c: the pragmas are those hints prints for a trace of
    examples/<name>/<name>.c, and the kernels (the text from `first` to `last`) are the same, so
    the OpenMP version does the work that was traced. Built with -fopenmp, it runs right on 1
    and 2 threads and passes its own check. The pragmas order every dependence the trace
    recorded: on cholesky_tiles, whose tiles are parts of one allocation, each named by
    TILE(i, k); on sparselu (BOTS' pattern), where fwd reads part of the diagonal block lu0
    writes and the code creating the tasks allocates and zeroes the fill-in blocks and fills the
    table of blocks; on heat_blocks, where a task reads only an edge of each neighbour block; on
    integrate, whose tasks write their results through a pointer into their parent's locals."""
    traced, omp = EXAMPLES / name / f"{name}.c", EXAMPLES / f"{name}_omp" / f"{name}_omp.c"
    h = load_hints(str(traced_example(name, *args)))
    assert h.unenforced == []
    assert checked_in_pragmas(omp) == {th.function: pragmas(th, sizes)[0] for th in h.types}
    assert kernels(omp, first, last) == kernels(traced, first, last)
    exe = tmp_path / f"{name}_omp"
    subprocess.run(["cc", "-O2", "-fopenmp", str(omp), "-o", str(exe), "-lm"], check=True)
    for threads in ("1", "2"):
        run = subprocess.run([str(exe), *args], capture_output=True, text=True, env={"OMP_NUM_THREADS": threads})
        assert run.returncode == 0 and f"threads={threads}" in run.stdout and "check=ok" in run.stdout, run.stdout


def test_integrate_asks_for_the_taskwaits_and_nothing_else(traced_example):
    """integrate 2 100 (split 1 creates splits 2 and 3, each two leaves): each split's code after
    its two children adds what they wrote into its locals left and right (3 places, in the frames
    of node), and main reads the root's result from its local total after it (1 place): a
    taskwait before each. The tasks also read spawn's parameters (at -O0, in spawn's frame) to
    pass them to their bodies, which the parent's next spawn overwrites: values an OpenMP task
    copies when created, so no WAR that OpenMP keeps, and T∞ without renaming is the traced one."""
    h = load_hints(str(traced_example("integrate", "2", "100")))
    assert h.warnings == [
        f"{who} reads {frame} after tasks wrote it, at {places} place(s): put a #pragma omp taskwait (OmpSs-2: "
        f"#pragma oss taskwait) before each"
        for who, frame, places in (("the program's own code", "stack:main", 1),
                                   ("split: its code after creating tasks", "stack:node", 3))]
    assert h.unenforced == [] and h.tinf_without_renaming == h.tinf == h.tinf_pragmas


@pytest.mark.fast
def test_shared_only_the_creators_own_variables():
    """shared(x) where the item is x's own storage: &x, an array x, x + i, &x[i], an array of
    pointers q itself; not what a pointer variable p points at (p, p + i, &p[i]) nor an element
    of q followed (q[i]): the task's copy of the pointer reaches the item, and the creator's
    pointer variable may be gone when the task runs (integrate's spawn returns at once). A
    variable the caller's debug information does not list is shared, as before."""
    from tareador.analyses.hint_clauses import Clause, shared_variable
    from tareador.analyses.signatures import OTHER, POINTER, POINTERS

    kinds = {"x": OTHER, "p": POINTER, "q": POINTERS}

    def item(target, kind="stack", position=0):
        return Clause(target, "a", position, kind, "stack:main", 64, (0, 8), element=8)

    assert [shared_variable(item(t), kinds) for t in ("&x", "x", "x + 1", "&x[i]", "&p", "q", "&q[i]", "y")] == [
        "x", "x", "x", "x", "p", "q", "q", "y"]
    assert [shared_variable(item(t), kinds) for t in ("p", "p + 1", "&p[i]", "q[i]", "q[i] + 1")] == [""] * 5
    assert shared_variable(item("x", "heap"), kinds) == shared_variable(item("x", position=-1), kinds) == ""


def test_heat_warnings(compile_c, tmp_path):
    """heat 64 16 2: 4 x 4 blocks, so jacobi_block's instances write 16 different blocks of `new`
    (the same 16 in both iterations, the grids having swapped); main sums residual[] after the
    residual_block tasks of each of the 2 iterations."""
    t = trace([str(compile_c(EXAMPLES / "heat" / "heat.c")), "64", "16", "2"], tmp_path / "t", progress=False)
    h = load_hints(str(tmp_path / "t"))
    # Under the pragmas every jacobi_block of an iteration follows the previous one (out on new[0]).
    jacobi = [x.id for x in t.fragments if x.name == "jacobi_block"]
    edges = {(d.src, d.dst) for d in h.pragma_deps}
    assert len(jacobi) == 32 and all((a, b) in edges for a, b in zip(jacobi[:16], jacobi[1:16]))
    assert h.warnings == [
        "jacobi_block: its instances write 16 different parts of new: the merged clause covers them all, so OpenMP "
        "runs the instances one after another; if the parts are independent, give each instance its own list item",
        "the program's own code reads heap:heat.c:78#0 after tasks wrote it, at 2 place(s): put a #pragma omp "
        "taskwait (OmpSs-2: #pragma oss taskwait) before each",
    ]


INLINE = r'''
#include <stdlib.h>
#include "tareador.h"

int main(void)
{
  int *buf = malloc(4 * sizeof(int));
  tareador_ON();
  tareador_start_task("fill");
  for (int i = 0; i < 4; i++) buf[i] = i;
  tareador_end_task("fill");
  tareador_start_task("sum");
  int s = buf[1] + buf[2];
  tareador_end_task("sum");
  tareador_OFF();
  free(buf);
  return s == 3 ? 0 : 1;
}
'''


def test_task_without_a_call_names_objects(compile_c, tmp_path):
    """Task bodies written inline after their markers: no call to take arguments from, so the
    heap block malloc'ed at line 7 is named as objects.csv names it (the first call after sum's
    start marker is its end marker: not a body). fill writes its 4 ints (bytes [0, 16)): out;
    sum reads buf[1] and buf[2] (bytes [4, 12)) of that region, so its item is the region too
    (the same start as fill's: OpenMP matches items by their start): in. main's locals i (fill's
    loop counter) and s (sum's result, read after tareador_OFF) are each touched by one task
    alone: locals of the task's block, no clause."""
    trace([str(compile_c(write_c(tmp_path, "inline", INLINE)))], tmp_path / "t", progress=False)
    h = load_hints(str(tmp_path / "t"))
    assert {th.name: (th.function, pragmas(th, {})[0]) for th in h.types} == {
        "fill": ("", "#pragma omp task depend(out: heap:inline.c:7#0)"),
        "sum": ("", "#pragma omp task depend(in: heap:inline.c:7#0)"),
    }
    assert {th.name: th.own_locals for th in h.types} == {"fill": ["stack:main"], "sum": ["stack:main"]}
    assert h.warnings == [
        f"{name}: heap:inline.c:7#0 reach the task through no argument and have no name in the program: its pragmas "
        f"name them as objects.csv does; make the task a call of a function that is passed them, right after its marker"
        for name in ("fill", "sum")]


@pytest.mark.fast
def test_sections_and_call_arguments(tmp_path):
    """Unit checks of the text: sizes named by --size, sections in elements or bytes, and the
    argument expressions of a call spread over two lines."""
    from tareador.analyses.hints import Clause
    from tareador.analyses.signatures import _split_arguments
    from tareador.render.hints import section, symbolic

    assert [symbolic(n, {"TS": 16, "N": 3}) for n in (16, 256, 48, 9, 5)] == ["TS", "TS*TS", "TS*N", "N*N", "5"]
    tile = Clause("A[k][k]", "a", 0, "heap", "heap:x#0", 2048, (0, 2048), "inout", element=8)
    assert section(tile, {"TS": 16}) == "A[k][k][0:TS*TS]" and section(tile, {}, ";") == "A[k][k][0;256]"
    bytes_of = Clause("p + 1", "p", 0, "heap", "heap:x#0", 64, (4, 12), "in", element=1)
    assert section(bytes_of, {}) == "((char *) (p + 1))[4:8]"
    # Sections follow an identifier with subscripts only (GCC 12): p + 1 and &a[i] are rebased.
    offset = Clause("p + 1", "p", 0, "heap", "heap:x#0", 64, (8, 24), "in", element=8)
    assert section(offset, {}) == "p[2:2]"
    rebased = Clause("&a[i * n]", "p", 0, "heap", "heap:x#0", 4096, (0, 128), "in", element=8)
    assert section(rebased, {"n": 16}) == "a[i * n:n]" and section(rebased, {}, ";") == "a[i * n;16]"
    # An item starting before the pointer: OpenMP wants no negative lower bound.
    below = Clause("x + 1", "x", 0, "heap", "heap:x#0", 512, (-8, 504), "in", element=8)
    assert section(below, {"N": 64}) == "x[0:N]"
    below_bytes = Clause("p", "p", 0, "heap", "heap:x#0", 64, (-4, 8), "in", element=1)
    assert section(below_bytes, {}) == "(((char *) p) - 4)[0:12]"
    # No section may follow a macro's result, nor start below a bare pointer: the first element.
    tile = Clause("TILE(i, k)", "a", 0, "heap", "heap:A#0", 8192, (0, 2048), "in", element=8, first_element=True)
    assert section(tile, {"TS": 16}) == "TILE(i, k)[0]"
    inside = Clause("x", "x", 0, "heap", "heap:x#0", 512, (-8, 504), "in", element=8, first_element=True)
    assert section(inside, {}) == "x[-1]"
    assert _split_arguments("  f(a[g(i, j)],\n    &b[k], (c + 1) * 2); // f(x)", "f") == ("a[g(i, j)]", "&b[k]",
                                                                                    "(c + 1) * 2")


def test_cholesky_without_debug_information(tmp_path):
    """Built without -g: no DWARF parameters and no source lines, so objects are named by the
    register that pointed at them (arg1 = rdi, ...) and sections are in bytes; the kernels are
    still named by the symbol table. Same tiles and modes as CHOLESKY."""
    from tareador.tracing import toolchain

    exe = tmp_path / "cholesky"
    subprocess.run(["cc", "-O0", *toolchain.cflags().split(), str(EXAMPLES / "cholesky" / "cholesky.c"), "-o",
                    str(exe), *toolchain.libs().split(), "-lm"], check=True)
    trace([str(exe), "3", "16"], tmp_path / "t", progress=False)
    h = load_hints(str(tmp_path / "t"))
    for t in h.types:
        assert [(c.target, c.parameter, c.mode, c.element) for c in t.clauses] == [
            (f"arg{n + 1}", "", mode, 1) for n, (_, _, mode, _, _) in enumerate(CHOLESKY[t.name])], t.name
    trsm = next(t for t in h.types if t.name == "trsm")
    assert pragmas(trsm, {})[0] == ("#pragma omp task depend(in: ((char *) arg1)[0:2048]) "
                                    "depend(inout: ((char *) arg2)[0:2048])")


NESTED = r'''
#include <stdlib.h>
#include "tareador.h"

static void child(int *p) { p[1] = 2; }

static void parent(int *p)
{
  p[0] = 1;
  tareador_start_task("child");
  child(p);
  tareador_end_task("child");
  p[2] = p[0] + 1;
}

int main(void)
{
  int *buf = malloc(3 * sizeof(int));
  tareador_ON();
  tareador_start_task("parent");
  parent(buf);
  tareador_end_task("parent");
  tareador_OFF();
  int ok = buf[2] == 2;
  free(buf);
  return ok ? 0 : 1;
}
'''


def test_nested_task_reads_what_its_earlier_fragment_wrote(compile_c, tmp_path):
    """parent is cut into two fragments by child; its second reads p[0], which its first wrote:
    not read before written by the instance, so parent is out, not inout. The writes cut buf into
    three regions: p[0] by parent's first fragment, p[1] by child, p[2] by parent's second; each
    is one list item, so parent has two and child one."""
    trace([str(compile_c(write_c(tmp_path, "nested", NESTED)))], tmp_path / "t", progress=False)
    h = load_hints(str(tmp_path / "t"))
    assert {th.name: pragmas(th, {})[0] for th in h.types} == {
        "parent": "#pragma omp task depend(out: buf[0:1], buf[2:1])",
        "child": "#pragma omp task depend(out: p[1:1])",
    }
