"""``tareador explore``: one recorded run, coarser decompositions by merging (checked against
direct traces of the same decompositions), and the thesis' search with known answers."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tareador.analyses.explore import explore
from tareador.cli.main import main
from tareador.errors import TracingError
from tareador.simulation.machine import Machine
from tareador.taskgraph.decompose import merge, task_tree
from tareador.tracing.run import trace
from tests.helpers import EXAMPLES, strip_task_markers, write_c

# Three independent heavy functions (disjoint arrays, identical loops) called from one coarse one.
THREE = """
#define NOINLINE __attribute__((noinline))
#define N 5000
double a[N], b[N], c[N];
NOINLINE void fa(void) { for (int i = 0; i < N; i++) a[i] = i * 0.5; }
NOINLINE void fb(void) { for (int i = 0; i < N; i++) b[i] = i * 0.5; }
NOINLINE void fc(void) { for (int i = 0; i < N; i++) c[i] = i * 0.5; }
NOINLINE void coarse(void) { fa(); fb(); fc(); }
int main(void) {
  coarse();
  return !(a[N - 1] == b[N - 1] && b[N - 1] == c[N - 1]);
}
"""

# A function that is not a task in some decompositions writes its own local array, which its
# callees then read and write: the last writer of those stack bytes must not depend on whether
# stage is a task (shadow.c tr_private_writers).
LOCAL = """
#define NOINLINE __attribute__((noinline))
NOINLINE void fill(double *t, int n) { for (int i = 0; i < n; i++) t[i] = i; }
NOINLINE double use(const double *t, int n) { double s = 0; for (int i = 0; i < n; i++) s += t[i]; return s; }
NOINLINE double stage(int k) { double tmp[64]; tmp[0] = k; fill(tmp + 1, 63); return use(tmp, 64); }
int main(void) {
  double s = 0;
  for (int k = 0; k < 3; k++) s += stage(k);
  return s != 3 * 1953 + 3;
}
"""


def fragments(t):
    return [(x.name, x.instance, x.parent, x.instructions) for x in t.fragments]


def raw_edges(t):
    """RAW edges between fragments of different instances, by object, but those the schedule
    has anyway: inside one instance (its fragments' order) and from the fragment that created
    an instance to its first fragment. The recording sees a task's writes to its own frame,
    which a direct trace keeps private: a child reading its parent's local array (stage's tmp)
    depends on the parent's fragment that created it only there. Byte counts are not compared
    (see decompose.py)."""
    by_id = {x.id: x for x in t.fragments}
    return {(d.src, d.dst, d.object) for d in t.deps if d.kind == "RAW"
            and by_id[d.src].instance != by_id[d.dst].instance
            and not (by_id[d.dst].starts_instance and by_id[d.dst].parent == d.src)}


def record(compile_c, tmp_path, name, code, args=(), opt="-O0"):
    exe = compile_c(write_c(tmp_path, name, code), opt=opt, markers=False)
    return exe, trace([str(exe), *args], tmp_path / f"{name}.explore", progress=False, explore=True)


@pytest.mark.parametrize("name, code, decompositions", [
    ("three", THREE, [{"coarse"}, {"fa", "fb", "fc"}, {"fb", "fc"}, {"coarse", "fb"}]),
    ("local", LOCAL, [{"stage"}, {"fill", "use"}, {"use"}, {"stage", "use"}]),
])
def test_merge_equals_direct_trace(compile_c, tmp_path, name, code, decompositions):
    """Merging the recorded (finest) run into a decomposition gives what tracing the program with
    only those functions as tasks gives: the same fragments (names, instances, parents,
    instructions), T1, T-inf, instance counts and RAW edges between instances."""
    exe, finest = record(compile_c, tmp_path, name, code)
    for tasks in decompositions:
        merged = merge(finest, tasks)
        direct = trace([str(exe)], tmp_path / "direct", progress=False, task_functions=sorted(tasks))
        assert fragments(merged) == fragments(direct), tasks
        assert (merged.t1, merged.tinf, merged.instances) == (direct.t1, direct.tinf, direct.instances), tasks
        assert raw_edges(merged) == raw_edges(direct), tasks


def test_merge_equals_direct_trace_cholesky(compile_c, tmp_path):
    """The same on the Cholesky (task markers stripped, ON/OFF kept), 4x4 tiles."""
    exe = compile_c(strip_task_markers(tmp_path, "chol_unmarked"))
    finest = trace([str(exe), "4", "8"], tmp_path / "chol.explore", progress=False, explore=True)
    for tasks in ({"gemm", "potrf", "syrk", "trsm"}, {"potrf", "trsm"}, {"gemm"}):
        merged = merge(finest, tasks)
        direct = trace([str(exe), "4", "8"], tmp_path / "direct", progress=False, task_functions=sorted(tasks))
        assert fragments(merged) == fragments(direct), tasks
        assert (merged.t1, merged.tinf, merged.instances) == (direct.t1, direct.tinf, direct.instances), tasks
        assert raw_edges(merged) == raw_edges(direct), tasks


def test_three_independent_functions(compile_c, tmp_path):
    """main -> coarse -> fa, fb, fc. Step 0: coarse alone, everything in one chain: T-inf = T1.
    Breaking coarse (the only type) makes fa, fb, fc tasks: independent (disjoint arrays), each
    created by a fragment of main, and main's last fragment reads all three arrays, so the
    longest path is main's code plus one of them: T-inf = T1 - 2L, L the instructions of each
    (identical loops). Breaking any of them (they have no children) serialises it: T-inf =
    T1 - L with two left, T1 with one, and the walk ends at sequential code (step 4). On 4 cores
    the simulated time is T-inf, so the best is step 1."""
    _, finest = record(compile_c, tmp_path, "three", THREE)
    top, children = task_tree(finest)
    assert top == {"coarse"} and children == {"coarse": {"fa", "fb", "fc"}}
    lengths = {x.name: x.instructions for x in finest.fragments if x.name in ("fa", "fb", "fc")}
    assert len(set(lengths.values())) == 1
    work = lengths["fa"]
    result = explore(finest, 4, Machine())
    steps = result.steps
    assert [s.tasks for s in steps][:2] == [("coarse",), ("fa", "fb", "fc")]
    assert [len(s.tasks) for s in steps] == [1, 3, 2, 1, 0]
    t1 = finest.t1
    assert all(s.t1 == t1 for s in steps)
    assert [s.tinf for s in steps] == [t1, t1 - 2 * work, t1 - work, t1, t1]
    assert [s.instances for s in steps] == [1, 3, 2, 1, 0]
    assert steps[0].broken == "coarse" and steps[-1].broken is None
    assert result.best.index == 1
    assert result.best.speedup == pytest.approx(t1 / (t1 - 2 * work))


def test_shipped_cholesky_reaches_the_kernels(compile_c, tmp_path):
    """The shipped Cholesky (its task markers are ignored while recording): main calls the four
    kernels between ON and OFF, so the coarsest decomposition is already gemm, potrf, syrk,
    trsm, with the marked version's 20 instances (4x4 tiles) and its T1; breaking kernels only
    serialises them, so it is the best."""
    exe = compile_c(EXAMPLES / "cholesky" / "cholesky.c")
    finest = trace([str(exe), "4", "8"], tmp_path / "chol.explore", progress=False, explore=True)
    marked = trace([str(exe), "4", "8"], tmp_path / "chol.tareador", progress=False)
    result = explore(finest, 4, Machine())
    assert result.best.tasks == ("gemm", "potrf", "syrk", "trsm")
    assert result.best.instances == marked.instances == 20
    assert result.best.t1 == marked.t1
    assert result.steps[-1].tasks == () and len(result.steps) == 5


def cli(*args):
    return subprocess.run([sys.executable, "-m", "tareador", "explore", *map(str, args)], capture_output=True,
                          text=True)


def test_cli_end_to_end_and_bad_input(compile_c, tmp_path):
    exe = compile_c(write_c(tmp_path, "three", THREE), markers=False)
    run = cli("--no-progress", "-o", tmp_path / "three.explore", "--", exe)
    assert run.returncode == 0, run.stderr
    assert f"tareador trace --task-function fa,fb,fc -- {exe}" in run.stdout
    assert (tmp_path / "three.explore" / "explore.png").stat().st_size > 0
    rows = (tmp_path / "three.explore" / "explore.csv").read_text().splitlines()
    assert rows[0].startswith("step,tasks,instances,t1,tinf") and len(rows) == 1 + 5
    again = cli(tmp_path / "three.explore", "--cores", "2", "-o", tmp_path / "two")
    # On 2 cores fa, fb and main's code doing fc's work are as fast as the three tasks: a tie,
    # which goes to fewer instances.
    assert again.returncode == 0 and "best: step 2, speedup 1.50 on 2 cores" in again.stdout
    for args, message in [
        ((tmp_path / "three.explore", "--weights", "1,1,x"), "tareador: --weights: '1,1,x' is not three numbers"),
        (("--candidates", "corse", "--", exe), "tareador: no function named corse in 'three-O0' (close names: coarse)"),
        ((tmp_path / "three.explore", "--cores", "2,4"), "tareador: --cores: explore simulates one target machine"),
    ]:
        bad = cli(*args)
        assert bad.returncode == 2 and bad.stderr.startswith(message) and bad.stderr.count("\n") == 1, bad.stderr
    chol = compile_c(EXAMPLES / "cholesky" / "cholesky.c")
    none = cli("--no-progress", "--candidates", "alloc_tile", "-o", tmp_path / "none", "--", chol, "2", "4")
    assert none.returncode == 2
    assert none.stderr.startswith("tareador: no candidate function was called inside the analysed region")
    trace([str(exe)], tmp_path / "plain", progress=False)
    empty = cli(tmp_path / "plain")
    assert empty.returncode == 2 and "has no task instances to explore" in empty.stderr


def test_cli_refuses_an_mpi_runs_directory(compile_c, tmp_path):
    """A directory of ranks is not one recording: the rank to give is named (was a missing comms.csv)."""
    exe = compile_c(write_c(tmp_path, "three", THREE), markers=False)
    assert cli("--no-progress", "-o", tmp_path / "run" / "rank-0", "--", exe).returncode == 0
    bad = cli(tmp_path / "run")
    assert bad.returncode == 2 and bad.stderr == f"tareador: {tmp_path / 'run'} is an MPI run: give one rank's " \
                                                 f"trace, e.g. {tmp_path / 'run' / 'rank-0'}\n", bad.stderr


def test_cli_does_not_explore_a_run_cut_short(compile_c, tmp_path):
    """A program that ends inside a task leaves a partial recording: a search of it would be of
    another run, so the command fails in one line and writes no explore.csv (was explored, exit 0)."""
    exe = compile_c(write_c(tmp_path, "cut", r"""
#include <stdlib.h>
int g[10];
__attribute__((noinline)) void step(int i) { g[i]++; if (i == 5) exit(3); }
int main(void) { for (int i = 0; i < 10; i++) step(i); return 0; }
"""), markers=False)
    bad = cli("--no-progress", "-o", tmp_path / "cut.explore", "--", exe)
    assert bad.returncode == 2 and bad.stderr == f'tareador: the program exited with status 3 inside task "step"; ' \
                                                 f"its partial recording in {tmp_path / 'cut.explore'} is not " \
                                                 "explored\n", bad.stderr
    assert not (tmp_path / "cut.explore" / "explore.csv").exists()


def test_cli_refuses_a_stripped_program_before_running_it(compile_c, tmp_path):
    """No symbol table, no candidates: said before the run, not as a call-less region after it."""
    exe = compile_c(write_c(tmp_path, "three", THREE), markers=False)
    subprocess.run(["strip", "-o", tmp_path / "stripped", exe], check=True)
    bad = cli("--no-progress", "-o", tmp_path / "s.explore", "--", tmp_path / "stripped")
    assert bad.returncode == 2 and bad.stderr == "tareador: 'stripped' has no function but main to explore; the " \
                                                 "program is stripped (no symbol table): rebuild it without -s / " \
                                                 "strip\n", bad.stderr
    assert not (tmp_path / "s.explore").exists()


def test_cli_dir_refuses_what_is_not_an_option(compile_c, tmp_path):
    """Words after DIR, and --candidates with DIR, were silently dropped: a program given after a
    directory was never run, and the search was of every recorded task type."""
    exe = compile_c(write_c(tmp_path, "three", THREE), markers=False)
    assert cli("--no-progress", "-o", tmp_path / "three.explore", "--", exe).returncode == 0
    bad = cli(tmp_path / "three.explore", "--cores", "2", exe)
    assert bad.returncode == 2 and bad.stderr == f"tareador: explore DIR takes options only, not '{exe}': a program " \
                                                 "to record goes alone after --, e.g. tareador explore -- ./prog " \
                                                 "args\n", bad.stderr
    for args in [("--candidates", "fa", tmp_path / "three.explore"),
                 (tmp_path / "three.explore", "--candidates", "fa")]:
        bad = cli(*args)
        assert bad.returncode == 2 and bad.stderr.startswith("tareador: --candidates chooses the functions a "
                                                             "recording makes tasks") and bad.stderr.count("\n") == 1


# Three independent functions, each calling step 8 times on its own array.
TIES = """
#define NOINLINE __attribute__((noinline))
#define N 2000
double l[N], m[N], r[N];
NOINLINE void step(double *x, int k) { for (int i = 0; i < N; i++) x[i] = x[i] * 0.5 + k; }
NOINLINE void left(void) { for (int k = 0; k < 8; k++) step(l, k); }
NOINLINE void middle(void) { for (int k = 0; k < 8; k++) step(m, k); }
NOINLINE void right(void) { for (int k = 0; k < 8; k++) step(r, k); }
int main(void) { left(); middle(); right(); return !(l[0] == m[0] && m[0] == r[0]); }
"""


def test_ties_go_to_fewer_instances(compile_c, tmp_path):
    """Step 0 is left, middle, right (3 instances); breaking right makes step a task type
    everywhere: left, middle and their 16 calls of step, with right's 8 calls (its own code
    now main's): 26 instances, and a hair faster on unbounded cores, where the time is T-inf
    (right's calls no longer wait for the fragment of main that created right). Within the
    default 1 % that is a tie, which goes to the 3 instances; with no tolerance the faster step
    wins. (On 4 cores, where main and left and middle each keep their core while creating
    (help-first), the 26 instances are a hair slower instead: 320196 against 320191 instructions.)"""
    _, finest = record(compile_c, tmp_path, "ties", TIES)
    result = explore(finest, None, Machine())
    first, second = result.steps[:2]
    assert (first.tasks, first.instances) == (("left", "middle", "right"), 3)
    assert (second.tasks, second.instances) == (("left", "middle", "step"), 26)
    assert first.speedup < second.speedup < first.speedup * 1.01
    assert (result.best.index, result.best.instances) == (0, 3)
    assert result.best.dropped == ()
    assert explore(finest, None, Machine(), tolerance=0).best.index == 1


# Timers and descriptors' set-up that happen to be functions, around the three of THREE.
IDLE = """
#define NOINLINE __attribute__((noinline))
#define N 5000
typedef struct { double *x; int n; } Desc;
double a[N], b[N], c[N];
Desc da, db, dc;
long ticks;
NOINLINE long now(void) { return ++ticks; }
NOINLINE void describe(Desc *d, double *x) { d->x = x; d->n = N; }
NOINLINE void fill(const Desc *d) { for (int i = 0; i < d->n; i++) d->x[i] = i * 0.5; }
NOINLINE void fa(void) { fill(&da); }
NOINLINE void fb(void) { fill(&db); }
NOINLINE void fc(void) { fill(&dc); }
NOINLINE void coarse(void) { fa(); fb(); fc(); }
int main(void) {
  long t0 = now();
  describe(&da, a); describe(&db, b); describe(&dc, c);
  coarse();
  return !(a[N - 1] == b[N - 1] && b[N - 1] == c[N - 1] && t0 == 1);
}
"""


def test_idle_types_are_dropped_from_the_best(compile_c, tmp_path):
    """Breaking coarse gives describe, fa, fb, fc, now (7 instances); the timer and the set-up
    do a few instructions each, far below 1 % of T-inf, and folded into main's code they cost
    nothing: the best is fa, fb, fc alone, whose T-inf is THREE's, T1 - 2L (L: one of fa, fb,
    fc with its fill, identical loops)."""
    _, finest = record(compile_c, tmp_path, "idle", IDLE)
    result = explore(finest, 4, Machine())
    assert result.steps[1].tasks == ("describe", "fa", "fb", "fc", "now")
    best = result.best
    assert (best.tasks, best.instances) == (("fa", "fb", "fc"), 3)
    assert best.dropped == ("describe", "now")
    merged = merge(finest, {"fa", "fb", "fc"})
    lengths = {x.name: x.instructions for x in merged.fragments if not x.is_main}
    assert len(set(lengths.values())) == 1
    assert best.tinf == merged.tinf == finest.t1 - 2 * lengths["fa"]


# PLASMA's profiling aliases: the code calls CORE_x, a weak alias of the definition PCORE_x.
ALIASES = """
#define NOINLINE __attribute__((noinline))
double x[4096], y[4096];
void CORE_scale(double *v, int n);
void CORE_shift(double *v, int n);
#pragma weak CORE_scale = PCORE_scale
#pragma weak CORE_shift = PCORE_shift
#define CORE_scale PCORE_scale
#define CORE_shift PCORE_shift
NOINLINE void CORE_scale(double *v, int n) { for (int i = 0; i < n; i++) v[i] *= 2; }
NOINLINE void CORE_shift(double *v, int n) { for (int i = 0; i < n; i++) v[i] += 1; }
#undef CORE_scale
#undef CORE_shift
int main(void) { CORE_scale(x, 4096); CORE_shift(y, 4096); CORE_scale(y, 4096); return y[0] != 2; }
"""


def test_weak_aliases_are_one_candidate_named_as_called(compile_c, tmp_path):
    """Each kernel has two symbols at one entry: the candidate is the weak alias the code calls,
    for both (was PCORE_scale beside CORE_shift); naming both is one line."""
    exe, finest = record(compile_c, tmp_path, "aliases", ALIASES)
    assert finest.summary["explore_candidates"] == ["CORE_scale", "CORE_shift"]
    assert [x.name for x in finest.fragments if not x.is_main] == ["CORE_scale", "CORE_shift", "CORE_scale"]
    with pytest.raises(TracingError, match=r"^CORE_scale and PCORE_scale are one function \(two names of one "
                                           r"entry\): name one of them$"):
        trace([str(exe)], tmp_path / "both", progress=False, task_functions=["CORE_scale", "PCORE_scale"])


@pytest.mark.fast
def test_cli_cores_and_tolerance_options(tmp_path, capsys):
    """--cores is one count, default 4 (its help said 1,2,4,8,16,inf, simulate's); a bad
    --tolerance is one line."""
    with pytest.raises(SystemExit):
        main(["explore", "--help"])
    text = capsys.readouterr().out
    cores = text[text.index("  --cores"):text.index("  --policy")]
    assert "(default 4;" in " ".join(cores.split()) and "16,inf" not in cores
    assert main(["explore", str(tmp_path), "--tolerance", "x"]) == 2
    assert capsys.readouterr().err.startswith("tareador: --tolerance: 'x' is not a percentage")
