"""Functions of shared libraries as tasks (``--task-function``, ``explore``): a tiled Cholesky
whose kernels are LAPACKE and CBLAS calls (Debian's reference BLAS, LAPACK and LAPACKE, which
``make deps`` installs), and a small library of the test's own. Instances and RAW edges are
derived by hand (tests/cholesky_dag.py for the Cholesky)."""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from cholesky_dag import expected_cholesky_raw_edges

import tareador
from tareador.errors import TracingError
from tareador.tracing.run import trace
from tests.helpers import EXAMPLES, instance_edges, instance_tree, write_c

LINALG = "-llapacke -lblas"
KERNELS = {"LAPACKE_dpotrf_work": "potrf", "cblas_dtrsm": "trsm", "cblas_dgemm": "gemm", "cblas_dsyrk": "syrk"}

@pytest.fixture(scope="module")
def linear_algebra():
    if not (Path("/usr/include/lapacke.h").exists() and Path("/usr/include/x86_64-linux-gnu/cblas.h").exists()):
        pytest.skip("LAPACKE and CBLAS are not installed (liblapacke-dev, libblas-dev); `make deps` installs them")


def cholesky(compile_c, opt="-O0"):
    """examples/cholesky_lapack: its loop nest is examples/cholesky's; with -DMARKED, marked."""
    return compile_c(EXAMPLES / "cholesky_lapack" / "cholesky_lapack.c", opt=opt, markers="MARKED" in opt,
                     libs=LINALG)


def calls_table(directory) -> list[dict]:
    with open(Path(directory) / "calls.csv", newline="") as f:
        return list(csv.DictReader(f))


def cholesky_edges(t) -> set[tuple[int, int, str, str]]:
    """RAW edges between instances as tests/cholesky_dag.py numbers them, kernels by the example's names."""
    order = [x for x in t.fragments if x.starts_instance and not x.is_main]
    index = {x.instance: k for k, x in enumerate(order, start=1)}
    names = [KERNELS.get(x.name, x.name) for x in order]
    first = {x.id: x.instance for x in t.fragments}
    return {(index[first[d.src]], index[first[d.dst]], names[index[first[d.src]] - 1], names[index[first[d.dst]] - 1])
            for d in t.deps if d.kind == "RAW" and first[d.src] in index and first[d.dst] in index}


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_lapacke_cblas_kernels_as_task_functions(linear_algebra, compile_c, tmp_path, opt):
    """The program calls the four kernels through its PLT; each call is a task instance (4x4
    tiles: 4 potrf, 6 trsm, 4 gemm, 6 syrk) with exactly the loop nest's RAW edges, the
    libraries' reads and writes of the tiles charged to the task that called them. calls.csv
    names each task's body after the library function, not its PLT stub's address."""
    exe = cholesky(compile_c, opt)
    out = tmp_path / "chol.tareador"
    t = trace([str(exe), "4", "8"], out, progress=False, task_functions=list(KERNELS))
    assert t.summary["exit_status"] == 0
    assert Counter(name for name, _ in instance_tree(t)) == {"LAPACKE_dpotrf_work": 4, "cblas_dtrsm": 6,
                                                             "cblas_dgemm": 4, "cblas_dsyrk": 6}
    assert {parent for _, parent in instance_tree(t)} == {"main"}
    assert cholesky_edges(t) == expected_cholesky_raw_edges(4)
    bodies = {row["task"]: row["function"] for row in calls_table(out)}
    assert len(bodies) == 20
    named = {x.id: x.name for x in t.fragments}
    assert all(bodies[str(task)] == named[task] for task in map(int, bodies))


def test_marked_library_calls_name_their_body(linear_algebra, compile_c, tmp_path):
    """Markers around the library calls: hints names each task's body by the library function
    (was the PLT stub's bare address). The same calls also named by --task-function are tasks
    twice: the trace says so, with the count (4 gemm calls of 4x4 tiles)."""
    exe = cholesky(compile_c, "-O0 -DMARKED")
    out = tmp_path / "marked.tareador"
    t = trace([str(exe), "4", "8"], out, progress=False)
    assert cholesky_edges(t) == expected_cholesky_raw_edges(4)
    hints = tareador.hints(str(out))
    assert {h.name: h.function for h in hints.types} == {v: k for k, v in KERNELS.items()}
    twice = trace([str(exe), "4", "8"], tmp_path / "twice.tareador", progress=False, task_functions=["cblas_dgemm"])
    assert Counter(name for name, _ in instance_tree(twice))["cblas_dgemm"] == 4
    assert ("cblas_dgemm: 4 of its calls are the first call of a task the markers make (right after "
            "tareador_start_task), and made a second task inside it") in " ".join(twice.summary["warnings"])


DIRECT = r"""
#include <stddef.h>
#include <stdio.h>
#include <lapacke.h>
void dsyrk_(const char *uplo, const char *trans, const int *n, const int *k, const double *alpha, const double *a,
            const int *lda, const double *beta, double *c, const int *ldc, size_t, size_t);
double a[64], c[64], s[64];
int main(void) {
  int n = 8; double one = 1.0, minus = -1.0;
  for (int i = 0; i < 64; i++) { a[i] = 1.0 / (1 + i); s[i] = (i % 9 == 0) * 8.0 + 1.0 / (2 + i % 8 + i / 8); }
  dsyrk_("L", "N", &n, &n, &one, a, &n, &one, c, &n, 1, 1);
  LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', n, s, n);   /* LAPACK's dpotrf2 calls dsyrk_ itself */
  dsyrk_("L", "N", &n, &n, &minus, a, &n, &one, c, &n, 1, 1);
  printf("%g\n", c[0]);
  return 0;
}
"""


def test_only_the_programs_own_calls_of_a_system_library_function(linear_algebra, compile_c, tmp_path):
    """dsyrk_ is called twice by main and again inside LAPACK (dpotrf2 imports it: the
    library's own calls, which no pragma of the program could make tasks): 2 instances, both
    main's children. The second reads and rewrites c, which the first wrote: one RAW edge of
    the 36 doubles of c's lower triangle (8x8, column-major). A library function the program
    never calls itself is refused before the run, saying where it is."""
    lapack = subprocess.run(["nm", "-D", "/usr/lib/x86_64-linux-gnu/liblapack.so.3"], capture_output=True,
                            text=True).stdout
    assert re.search(r"^\s+U dsyrk_$", lapack, re.M)
    exe = compile_c(write_c(tmp_path, "direct", DIRECT), markers=False, libs=LINALG)
    t = trace([str(exe)], tmp_path / "direct.tareador", progress=False, task_functions=["dsyrk_"])
    assert t.summary["exit_status"] == 0
    assert instance_tree(t) == [("dsyrk_", "main"), ("dsyrk_", "main")]
    assert instance_edges(t) == {("dsyrk_#1", "dsyrk_#2", "c", 36 * 8)}
    with pytest.raises(TracingError, match=r"^dpotrf_ is a function of liblapack\.so\.3, which 'direct-O0' does "
                                           r"not call directly: only the program's own calls"):
        trace([str(exe)], tmp_path / "x", progress=False, task_functions=["dpotrf_"])


KERNEL_LIBRARY = """
long kern_calls;                       /* the library's own global, written by every fill */
void kern_fill(double *x, int n, double v) { for (int i = 0; i < n; i++) x[i] = v; kern_calls++; }
double kern_sum(const double *x, int n) { double s = 0; for (int i = 0; i < n; i++) s += x[i]; return s; }
void kern_both(double *x, int n) { kern_fill(x, n, 2.0); }
"""

KERNEL_PROGRAM = r"""
#include <stdio.h>
void kern_fill(double *x, int n, double v);
double kern_sum(const double *x, int n);
void kern_both(double *x, int n);
double a[16], b[16], c[16];
int main(void) {
  kern_fill(a, 16, 1.0);
  kern_fill(b, 8, 3.0);
  double s = kern_sum(a, 16);
  kern_both(c, 4);
  s += kern_sum(c, 4);
  printf("%g\n", s);
  return s != 24;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_functions_of_the_programs_own_library(compile_c, tmp_path, opt):
    """libkern.so, built here outside the system directories, is the program's own code: every
    call of its functions is a task, the one kern_both makes inside the library too (at -O2 a
    tail call), and its global is an object like the executable's. Instances: fill(a),
    fill(b), sum(a), fill(c) (inside kern_both, which is no task: main's child), sum(c).
    RAW: each fill increments kern_calls (8 bytes) after the previous one; sum(a) reads the
    16 doubles fill#1 wrote, sum(c) the 4 fill#3 wrote."""
    library = tmp_path / "libkern.so"
    subprocess.run(["cc", "-g", *opt.split(), "-shared", "-fPIC", str(write_c(tmp_path, "kern", KERNEL_LIBRARY)),
                    "-o", str(library)], check=True)
    exe = compile_c(write_c(tmp_path, "uses_kern", KERNEL_PROGRAM), opt=opt, markers=False,
                    libs=f"-L{tmp_path} -lkern -Wl,-rpath,{tmp_path}")
    t = trace([str(exe)], tmp_path / "kern.tareador", progress=False, task_functions=["kern_fill", "kern_sum"])
    assert t.summary["exit_status"] == 0
    assert instance_tree(t) == [("kern_fill", "main"), ("kern_fill", "main"), ("kern_sum", "main"),
                                ("kern_fill", "main"), ("kern_sum", "main")]
    assert instance_edges(t) == {("kern_fill#1", "kern_fill#2", "kern_calls", 8),
                                 ("kern_fill#2", "kern_fill#3", "kern_calls", 8),
                                 ("kern_fill#1", "kern_sum#1", "a", 128), ("kern_fill#3", "kern_sum#2", "c", 32)}


def test_explore_considers_the_library_functions_the_program_calls(linear_algebra, compile_c, tmp_path):
    """The Cholesky's main calls only library functions: explore's candidates are the four
    kernels of the libraries it links (libc's printf and malloc are not), the coarsest
    decomposition is theirs, with the --task-function trace's instances, T1 and T-inf, and it
    is the best: breaking any kernel serialises its instances into main's code."""
    exe = cholesky(compile_c, "-O2")
    out = tmp_path / "chol.explore"
    run = subprocess.run([sys.executable, "-m", "tareador", "explore", "--no-progress", "-o", str(out), "--",
                          str(exe), "4", "8"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert ("\n4 candidate task types called in the analysed region (4 of them functions of libblas.so.3, "
            "liblapacke.so.3);") in run.stdout
    direct = trace([str(exe), "4", "8"], tmp_path / "direct.tareador", progress=False, task_functions=list(KERNELS))
    with open(out / "explore.csv", newline="") as f:
        first = next(csv.DictReader(f))
    assert first["decomposition"] == ";".join(sorted(KERNELS)) and first["instances"] == "20"
    assert (int(first["t1"]), int(first["tinf"])) == (direct.t1, direct.tinf)
    assert f"best: step 0, speedup {float(first['speedup']):.2f} on 4 cores" in run.stdout
    assert f"tareador trace --task-function {','.join(sorted(KERNELS))} -- {exe} 4 8" in run.stdout
    recorded = tareador.load(str(out))
    assert recorded.summary["explore_libraries"] == {"LAPACKE_dpotrf_work": "liblapacke.so.3",
                                                     "cblas_dgemm": "libblas.so.3", "cblas_dsyrk": "libblas.so.3",
                                                     "cblas_dtrsm": "libblas.so.3"}
