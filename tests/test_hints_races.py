"""The pragmas of tareador hints never race silently: on real binaries, the list items of every
task type that touches some data start where that data starts; the dependences the trace
recorded and the pragmas do not order are listed; and the OpenMP programs built with the
pragmas (and the taskwaits asked for) run right on 2 threads."""

from __future__ import annotations

import subprocess
import sys

from tareador import hints as load_hints
from tareador.render.hints import hints_json, pragmas
from tareador.tracing.run import trace
from tests.helpers import write_c


def openmp_program(source: str, lines: dict[str, str]) -> str:
    """The OpenMP version of a traced test program: each `tareador_start_task("t");` (on its own
    line, before the body's call) becomes task type t's pragma line, the end markers go, the region
    `tareador_ON(); ... tareador_OFF();` becomes a parallel region where one thread creates the
    tasks, and a line `/* taskwait */` becomes `#pragma omp taskwait`."""
    out = []
    for line in source.splitlines():
        code, indent = line.strip(), line[:len(line) - len(line.lstrip())]
        if code.startswith("tareador_start_task(\""):
            out.append(indent + lines[code.split('"')[1]])
        elif code == '#include "tareador.h"':
            out.append("#include <omp.h>")
        elif code == "tareador_ON();":
            out += ["#pragma omp parallel", "#pragma omp single", indent + "{"]
        elif code == "tareador_OFF();":
            out.append(indent + "}")
        elif code == "/* taskwait */":
            out.append(indent + "#pragma omp taskwait")
        elif not code.startswith("tareador_end_task("):
            out.append(line)
    return "\n".join(out) + "\n"


def run_openmp(tmp_path, name: str, source: str, h, args=()) -> str:
    """source built with the pragmas of h and run on 2 threads: its output."""
    program = write_c(tmp_path, f"{name}_omp", openmp_program(source, {th.name: pragmas(th, {})[0] for th in h.types}))
    exe = tmp_path / f"{name}_omp"
    subprocess.run(["cc", "-O2", "-fopenmp", "-Wall", str(program), "-o", str(exe), "-lm"], check=True)
    run = subprocess.run([str(exe), *args], capture_output=True, text=True, env={"OMP_NUM_THREADS": "2"})
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


PART = r'''
#include <stdio.h>
#include <stdlib.h>
#include "tareador.h"
#define N 64

static void produce(double *x, int k) { for (int i = 0; i < N; i++) x[i] = i + k; }
static void consume(const double *x, double *s) { double t = 0; for (int i = 1; i < N; i++) t += x[i]; *s = t; }

int main(void)
{
  double *x = malloc(N * sizeof *x), sums[4];
  tareador_ON();
  for (int k = 0; k < 4; k++) {
    tareador_start_task("produce");
    produce(x, k);
    tareador_end_task("produce");
    tareador_start_task("consume");
    consume(x, &sums[k]);
    tareador_end_task("consume");
  }
  tareador_OFF();
  int ok = 1;
  for (int k = 0; k < 4; k++) ok &= sums[k] == (N - 1) * (N / 2.0) + (N - 1) * k;
  printf("check=%s\n", ok ? "ok" : "FAILED");
  free(x);
  return !ok;
}
'''


def test_reader_of_part_names_the_writers_start(compile_c, tmp_path):
    """Issue 14 item 7: produce writes x[0..63], consume reads x[1..63]. The item of both is
    x[0:64], the one region the tasks touch of x: `in: x[1:63]` would start elsewhere and
    OpenMP would not order consume after produce. consume writes main's sums[k] through its
    argument (out, one element, shared). Under the pragmas every instance follows the previous one
    (the WAR and WAW on x are kept), so T∞ is main's first fragment and every task."""
    t = trace([str(compile_c(write_c(tmp_path, "part", PART)))], tmp_path / "t", progress=False)
    h = load_hints(str(tmp_path / "t"))
    assert {th.name: pragmas(th, {})[0] for th in h.types} == {
        "produce": "#pragma omp task depend(out: x[0:64])",
        "consume": "#pragma omp task depend(in: x[0:64]) depend(out: sums[k]) shared(sums)",
    }
    assert h.unenforced == []
    assert len(h.warnings) == 1 and h.warnings[0].startswith("OpenMP keeps 3 WAR and 3 WAW dependence(s)")
    tasks = sum(x.instructions for x in t.fragments if not x.is_main)
    assert h.tinf_pragmas == h.tinf_without_renaming == t.fragments[0].instructions + tasks
    assert "check=ok" in run_openmp(tmp_path, "part", PART, h)


def test_the_check_finds_items_that_start_elsewhere(compile_c, tmp_path, monkeypatch):
    """The check on its own: with consume's item on x moved to where consume starts reading,
    x[1:63] (what hints printed before), OpenMP would not order consume after produce nor the
    next produce after consume: the 4 RAW produce -> consume and 3 WAR consume -> produce on x
    are unordered (the WAW produce -> produce stay ordered, both out on x), and the warning
    lists them."""
    import tareador.analyses.hints as analysis

    trace([str(compile_c(write_c(tmp_path, "part", PART)))], tmp_path / "t", progress=False)
    chosen = analysis.type_clauses

    def moved(named, signatures):
        clauses = chosen(named, signatures)
        x = next(c for c in clauses["consume"] if c.target == "x")
        x.span = (8, 512)
        return clauses

    monkeypatch.setattr(analysis, "type_clauses", moved)
    h = load_hints(str(tmp_path / "t"))
    assert sorted((d.kind, d.object) for d in h.unenforced) == [("RAW", "heap:part.c:12#0")] * 4 + [
        ("WAR", "heap:part.c:12#0")] * 3
    assert h.warnings[-1].startswith("the pragmas do not order 7 traced dependence(s), a race if pasted as they are: "
                                     "RAW produce -> consume on heap:part.c:12 (4), WAR consume -> produce on "
                                     "heap:part.c:12 (3);")


TABLE = r'''
#include <stdio.h>
#include <stdlib.h>
#include "tareador.h"
#define NB 4
#define BS 32

static void scale(double *b, double f) { for (int i = 0; i < BS; i++) b[i] *= f; }

int main(void)
{
  double *data = malloc(2 * NB * BS * sizeof(double));
  double **table = malloc(NB * sizeof(double *));
  for (int i = 0; i < 2 * NB * BS; i++) data[i] = i;
  tareador_ON();
  for (int i = 0; i < NB; i++) table[i] = data + i * BS;
  for (int i = 0; i < NB; i++) {
    tareador_start_task("scale");
    scale(table[i], 2.0);
    tareador_end_task("scale");
  }
  /* taskwait */
  for (int i = 0; i < NB; i++) table[i] = data + (NB + i) * BS;
  for (int i = 0; i < NB; i++) {
    tareador_start_task("scale");
    scale(table[i], 3.0);
    tareador_end_task("scale");
  }
  tareador_OFF();
  int ok = 1;
  for (int i = 0; i < 2 * NB * BS; i++) ok &= data[i] == i * (i < NB * BS ? 2.0 : 3.0);
  printf("check=%s\n", ok ? "ok" : "FAILED");
  return !ok;
}
'''


def test_pointer_table_main_fills_needs_no_clause(compile_c, tmp_path):
    """Issue 14 item 9: main fills table (line 13) inside the region, then each scale reads its
    entry to find its block: what main wrote before creating a task reaches it by the creation,
    so no clause (there was `depend(in: heap:table.c:13#0)`, which does not compile). Each block
    of 32 doubles is one region, named by the argument at its start. Main then refills the
    table while the first tasks may still be reading it: a taskwait goes there (1 place)."""
    trace([str(compile_c(write_c(tmp_path, "table", TABLE)))], tmp_path / "t", progress=False)
    h = load_hints(str(tmp_path / "t"))
    (scale,) = h.types
    assert pragmas(scale, {})[0] == "#pragma omp task depend(inout: table[i][0:32])"
    assert scale.set_before == ["heap:table.c:13#0"] and scale.read_only == []
    assert h.warnings == ["the program's own code writes heap:table.c:13#0 that tasks read or wrote before, at 1 "
                          "place(s): put a #pragma omp taskwait (OmpSs-2: #pragma oss taskwait) before each"]
    assert h.unenforced == []
    assert "check=ok" in run_openmp(tmp_path, "table", TABLE, h)


LOCAL = r'''
#include <stdio.h>
#include "tareador.h"
#define N 64

static void fill(long *x, int k) { for (int i = 0; i < N; i++) x[i] = (long) i * k; }
static long total(const long *x) { long s = 0; for (int i = 0; i < N; i++) s += x[i]; return s; }

static void parent(int k, long *out)
{
  long x[N];
  tareador_start_task("fill");
  fill(x, k);
  tareador_end_task("fill");
  /* taskwait */
  *out = total(x);
}

int main(void)
{
  long res[3];
  tareador_ON();
  for (int k = 0; k < 3; k++) {
    tareador_start_task("parent");
    parent(k, &res[k]);
    tareador_end_task("parent");
  }
  tareador_OFF();
  int ok = 1;
  for (int k = 0; k < 3; k++) ok &= res[k] == (long) k * N * (N - 1) / 2;
  printf("check=%s\n", ok ? "ok" : "FAILED");
  return !ok;
}
'''


def test_child_writing_its_parents_local_array(compile_c, tmp_path):
    """Issue 14 item 10: each parent's child fills the parent's local x (512 bytes), which the
    parent then reads. fill's item is x[0:64], from x's start (not from the parent's slot of k
    below it, which fill reads to compute its arguments), shared (an OpenMP task copies the
    locals of the function creating it); 3 instances each, all writing the same 512 bytes of
    their x; and the parent needs a taskwait before reading x, in each of the 3 instances."""
    trace([str(compile_c(write_c(tmp_path, "local", LOCAL)))], tmp_path / "t", progress=False)
    h = load_hints(str(tmp_path / "t"))
    assert {th.name: pragmas(th, {})[0] for th in h.types} == {
        "fill": "#pragma omp task depend(out: x[0:64]) shared(x)",
        "parent": "#pragma omp task depend(out: res[k]) shared(res)",
    }
    assert {t["name"]: [c["instances"] for c in t["clauses"]] for t in hints_json(h, {})["types"]} == {
        "fill": [3], "parent": [3]}
    assert h.warnings == ["parent: its code after creating tasks reads stack:parent after tasks wrote it, at 3 "
                          "place(s): put a #pragma omp taskwait (OmpSs-2: #pragma oss taskwait) before each"]
    assert h.unenforced == []
    assert "check=ok" in run_openmp(tmp_path, "local", LOCAL, h)


NESTED = r'''
#include <stdio.h>
#include <stdlib.h>
#include "tareador.h"

static void produce(int *buf) { for (int i = 0; i < 16; i++) buf[i] = i; }
static void consume(const int *buf, int *sum) { for (int i = 0; i < 16; i++) *sum += buf[i]; }

static void wrapper(const int *buf, int *sum)
{
  tareador_start_task("consume");
  consume(buf, sum);
  tareador_end_task("consume");
}

int main(void)
{
  int *buf = malloc(16 * sizeof(int)), sum = 0;
  tareador_ON();
  tareador_start_task("produce");
  produce(buf);
  tareador_end_task("produce");
  tareador_start_task("wrapper");
  wrapper(buf, &sum);
  tareador_end_task("wrapper");
  tareador_OFF();
  printf("sum=%d\n", sum);
  free(buf);
  return sum != 120;
}
'''


def test_dependences_no_pragma_orders_are_listed(compile_c, tmp_path):
    """consume reads what produce wrote, but consume is wrapper's child, not produce's sibling, and
    wrapper itself touches nothing of buf: OpenMP matches items among siblings only, so no item
    of these pragmas orders consume after produce. The trace's RAW produce -> consume on the
    block malloc'ed at line 18 is the one dependence listed, and the text never says
    "warnings: none"."""
    trace([str(compile_c(write_c(tmp_path, "nested", NESTED)))], tmp_path / "t", progress=False)
    h = load_hints(str(tmp_path / "t"))
    assert [(d.kind, d.object) for d in h.unenforced] == [("RAW", "heap:nested.c:18#0")]
    assert h.warnings[-1] == ("the pragmas do not order 1 traced dependence(s), a race if pasted as they are: RAW "
                              "produce -> consume on heap:nested.c:18 (1); order them by hand (items on the tasks' "
                              "parents, a taskwait, a taskgroup) or change the code")
    out = subprocess.run([sys.executable, "-m", "tareador", "hints", str(tmp_path / "t")], capture_output=True,
                         text=True, check=True).stdout
    assert "warnings: none" not in out and "RAW produce -> consume on heap:nested.c:18 (1)" in out


def test_tiles_of_one_allocation_are_named_each(traced_example):
    """Issue 14 item 8: examples/cholesky_tiles keeps all tiles in one malloc'ed block (PLASMA's
    layout), and gemm reads two tiles of one column with others between them. Each tile is one
    region, named by the expression that addresses it, TILE(i, k), from its start: 2048 bytes
    (16 x 16 doubles) each, printed as the tile's first element (no array section may follow a
    macro's result in GCC), as every item on a tile is. Every WAR/WAW of the Cholesky follows
    a RAW, so the pragmas give OpenMP exactly the traced graph: T∞ as traced, no warning."""
    h = load_hints(str(traced_example("cholesky_tiles", "4", "16")))
    got = {th.name: [(c.target, c.mode, c.span, c.first_element) for c in th.clauses] for th in h.types}
    tile = (0, 2048)
    assert got == {
        "potrf": [("TILE(k, k)", "inout", tile, True)],
        "trsm": [("TILE(k, k)", "in", tile, True), ("TILE(i, k)", "inout", tile, True)],
        "gemm": [("TILE(i, k)", "in", tile, True), ("TILE(j, k)", "in", tile, True),
                 ("TILE(i, j)", "inout", tile, True)],
        "syrk": [("TILE(i, k)", "in", tile, True), ("TILE(i, i)", "inout", tile, True)],
    }
    assert h.warnings == [] and h.unenforced == [] and h.tinf_pragmas == h.tinf


def test_sparse_lu_reader_of_part_of_a_block(traced_example):
    """Issue 14 item 7 on examples/sparselu (6 x 6 blocks of 8 x 8 doubles): fwd reads only the
    strict lower triangle of the diagonal block (bytes [64, 504): rows 1..7, columns below the
    diagonal), yet its item is the whole block, 512 bytes from the pointer, the item lu0 and
    bdiv name too. The table of blocks (malloc'ed at line 88), where the code creating the tasks
    puts the fill-in blocks it allocates, takes no clause."""
    h = load_hints(str(traced_example("sparselu", "6", "8")))
    fwd = next(th for th in h.types if th.name == "fwd")
    diagonal = fwd.clauses[0]
    assert (diagonal.target, diagonal.mode, diagonal.read, diagonal.span) == ("M[k * NB + k]", "in", (64, 504),
                                                                              (0, 512))
    assert pragmas(fwd, {"BS": 8})[0] == ("#pragma omp task depend(in: M[k * NB + k][0:BS*BS]) "
                                          "depend(inout: M[k * NB + j][0:BS*BS])")
    assert all(th.set_before == ["heap:sparselu.c:88#0"] for th in h.types)
    assert h.warnings == [] and h.unenforced == [] and h.tinf_pragmas == h.tinf


PIPELINE = r'''
#include <stdio.h>
#include "tareador.h"
#define N 64
#define STEPS 32

double a[N], scratch[16];

/* *x := the mean of *x + 0 .. *x + 15, through the scratch buffer every step shares. */
static void step(double *x, double *tmp)
{
  for (int i = 0; i < 16; i++) tmp[i] = *x + i;
  double s = 0;
  for (int i = 0; i < 16; i++) s += tmp[i];
  *x = s / 16;
}

int main(void)
{
  for (int i = 0; i < N; i++) a[i] = i;
  double total = 0;
  tareador_ON();
  for (int t = 0; t < STEPS; t++) {
    for (int i = 0; i < N; i++) {
      tareador_start_task("step");
      step(&a[i], scratch);
      tareador_end_task("step");
    }
    total = 0;
    for (int i = 0; i < N; i++) total += a[i];
  }
  tareador_OFF();
  printf("total=%g\n", total);
  return total != N * (N - 1) / 2.0 + STEPS * 7.5 * N;
}
'''


def test_hints_at_scale(compile_c, tmp_path):
    """2048 step instances (issue 18: hints linear in instances and edges, here with 4,000 WAR/WAW
    between tasks to place). Within a round the steps share `scratch` and nothing else: each
    writes it after the one before (a WAW and, having read it, a WAR), which no RAW orders: 32 x 63
    of each kept by OpenMP. Across rounds they are ordered through main, which reads every a[i]
    after each round (a taskwait in each of the 32 rounds). Kept, they chain every step of a round,
    so T∞ without renaming is main's fragment before the first step, every step, and the 32
    fragments of main that sum a round (each step being longer than main's fragments that create
    the tasks, which run beside them); the pragmas (inout on scratch, a[i] and the taskwaits) give
    OpenMP the same graph (scratch is out: each step writes it before reading it), and order every
    traced dependence."""
    t = trace([str(compile_c(write_c(tmp_path, "pipeline", PIPELINE)))], tmp_path / "t", progress=False)
    h = load_hints(str(tmp_path / "t"))
    (step,) = h.types
    assert step.instances == 2048
    assert pragmas(step, {})[0] == "#pragma omp task depend(out: scratch[0:16]) depend(inout: a[i])"
    assert h.warnings == [
        "the program's own code reads a after tasks wrote it, at 32 place(s): put a #pragma omp taskwait "
        "(OmpSs-2: #pragma oss taskwait) before each",
        f"OpenMP keeps 2016 WAR and 2016 WAW dependence(s) between tasks that a renaming runtime (and tareador's "
        f"prediction) removes: T∞ {h.tinf} -> {h.tinf_without_renaming} instructions, parallelism "
        f"{t.t1 / h.tinf:.2f} -> {t.t1 / h.tinf_without_renaming:.2f}"]
    main = [x for x in t.fragments if x.is_main]
    steps = [x.instructions for x in t.fragments if not x.is_main]
    sums = [x for x in main if x.instructions > min(steps)]
    # Fragments: main's, then per step the step and main's fragment after creating it.
    assert [s.id for s in sums] == [128 * (k + 1) for k in range(32)]
    assert h.tinf_without_renaming == h.tinf_pragmas == main[0].instructions + sum(steps) + sum(
        s.instructions for s in sums)
    assert h.unenforced == []
