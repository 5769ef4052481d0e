"""tareador time: measured durations of the traced fragments, from native runs.

The record's arithmetic is derived by hand on synthetic records; the runs are real: a program
whose markers time themselves, the same program timed through hooks on --task-function calls,
and a run that does not make the traced tasks. Wall-clock values are only bounded from below,
by what the program itself sleeps (nanosleep sleeps at least as long as asked).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tareador.cli import main as cli
from tareador.taskgraph.durations import MeasuredClock, measured_calls, measured_trace
from tareador.taskgraph.model import Fragment, MpiCall, TaskTrace
from tareador.tracing.run import trace
from tareador.tracing.timing import (
    CALIBRATION,
    END,
    EVENT,
    FINISH,
    FUNCTION_ENTER,
    FUNCTION_LEAVE,
    MPI_ENTER,
    MPI_LEAVE,
    NO_NAME,
    OFF,
    ON,
    START,
    TimingError,
    TimingRecord,
    fragments,
    interval_costs,
)
from tests.helpers import EXAMPLES, write_c

NAP_MS = 30

PROGRAM = r"""
#include <stdlib.h>
#include <time.h>
#ifdef NO_MARKERS
#define tareador_ON()
#define tareador_OFF()
#define tareador_start_task(name)
#define tareador_end_task(name)
#else
#include "tareador.h"
#endif

static volatile double sink;

__attribute__((noinline)) void nap(long ms)
{
  struct timespec t = {0, ms * 1000000};
  nanosleep(&t, 0);
}

__attribute__((noinline)) void busy(long n)
{
  double s = 0;
  for (long i = 0; i < n; i++) s += i * 0.5;
  sink = s;
}

int main(int argc, char **argv)
{
  int k = argc > 1 ? atoi(argv[1]) : 2;
  tareador_ON();
  for (int i = 0; i < k; i++) {
    tareador_start_task("nap");
    nap(%d);
    tareador_end_task("nap");
    tareador_start_task("busy");
    busy(100000);
    tareador_end_task("busy");
  }
  tareador_OFF();
  return 0;
}
""" % NAP_MS


def record(names: list[str], events: list[tuple[int, int, str | None]], cost: float = 0.0) -> TimingRecord:
    """A record of events (ns, event, task name) as the library writes it; times may be negative
    (they are moved up together: only differences count)."""
    rows = np.array([(t + 10_000, e, NO_NAME if n is None else names.index(n)) for t, e, n in events], EVENT)
    return TimingRecord(names, rows, cost)


@pytest.mark.fast
def test_fragments_follow_the_tracers_rules():
    """main 10..20 creates a (20..35), which creates b (35..60) and goes on (60..70); main goes on
    70..100 and stops at OFF. Each interval less the cost of an event, 1: main 9 and 29, a 14 and
    9, b 24, in the order they started. Events before ON and after OFF are not seen by a trace."""
    r = record(["a", "b"], [(0, START, "a"), (5, END, "a"), (10, ON, None), (20, START, "a"), (35, START, "b"),
                            (60, END, "b"), (70, END, "a"), (100, OFF, None), (110, START, "b"), (120, END, "b"),
                            (130, FINISH, None)], cost=1)
    f = fragments(r)
    assert f.names == ["main", "a", "b", "a", "main"]
    assert f.instance == [0, 1, 2, 1, 0] and f.parent == [-1, 0, 1, 0, -1]
    assert f.ns.tolist() == [9, 14, 24, 9, 29]


@pytest.mark.fast
def test_time_inside_mpi_calls_and_hooks_is_not_the_tasks():
    """The calibration calls (before ON) put a hooked call's cost at 4 inside it (enter -> leave)
    and 6 around it (leave -> enter); a marker costs 2 (1 on each side of it). A function entered
    before ON and left after it is no task, as in a trace. main 0..10, then task function f
    10..50 with an MPI call 20..35 inside, then main 50..60 until OFF:
    main 10 - (1 + 2.5) = 6.5 (half a marker, a quarter of a hooked call's 4 + 6);
    f (20 - 10 - 2.5 - 2.5) + (50 - 35 - 2.5 - 2.5) = 15, the MPI call excluded;
    main 60 - 50 - (2.5 + 1) = 6.5."""
    calibration = [(t - 1000, e, CALIBRATION) for k in range(3)
                   for t, e in ((10 * k, FUNCTION_ENTER), (10 * k + 4, FUNCTION_LEAVE))]
    r = record([CALIBRATION, "f"], calibration + [
        (-5, FUNCTION_ENTER, "f"), (0, ON, None), (2, FUNCTION_LEAVE, "f"), (10, FUNCTION_ENTER, "f"),
        (20, MPI_ENTER, None), (35, MPI_LEAVE, None), (50, FUNCTION_LEAVE, "f"), (60, OFF, None)], cost=2)
    costs = interval_costs(r)
    assert (costs[FUNCTION_ENTER, FUNCTION_LEAVE], costs[FUNCTION_LEAVE, FUNCTION_ENTER]) == (4, 6)
    assert (costs[ON, OFF], costs[ON, FUNCTION_ENTER]) == (2, 3.5)
    f = fragments(r)
    assert f.names == ["main", "f", "main"] and f.parent == [-1, 0, -1]
    assert f.ns.tolist() == [6.5, 15, 6.5]


@pytest.mark.fast
def test_markers_the_tracer_refuses_are_refused():
    with pytest.raises(TimingError, match='tareador_end_task\\("b"\\) does not match'):
        fragments(record(["a", "b"], [(0, ON, None), (1, START, "a"), (2, END, "b")]))
    with pytest.raises(TimingError, match='task "a" was still open at tareador_OFF'):
        fragments(record(["a"], [(0, ON, None), (1, START, "a"), (2, OFF, None)]))


def durations_of(d) -> dict[int, int]:
    lines = (d / "durations.csv").read_text().splitlines()
    assert lines[0] == "id,ns,min_ns,max_ns"
    rows = [[int(x) for x in line.split(",")] for line in lines[1:]]
    assert all(low <= ns <= high for _, ns, low, high in rows)
    return {i: ns for i, ns, _, _ in rows}


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    status = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_a_marked_program_times_itself(compile_c, tmp_path, capsys):
    """Natively, no tracer: every fragment of the trace gets its median; each nap sleeps 30 ms;
    simulate --durations measured then gives T1 and T-inf of those nanoseconds exactly (T-inf by
    the trace's own critical path, dag.span, on the measured weights)."""
    from tareador.taskgraph.durations import measured_trace
    from tareador.taskgraph.store import load_trace

    exe = compile_c(write_c(tmp_path, "naps", PROGRAM))
    d = tmp_path / "naps.tareador"
    t = trace([str(exe), "2"], d, progress=False)
    status, out, _ = run_cli(capsys, "time", d, "--repeat", "2")
    assert status == 0 and "fragments         9, matched one to one in each of 2 run(s)" in out
    ns = durations_of(d)
    assert sorted(ns) == [x.id for x in t.fragments]
    assert all(ns[x.id] >= NAP_MS * 1_000_000 for x in t.fragments if x.name == "nap")
    info = json.loads((d / "timing.json").read_text())
    assert info["runs"] == 2 and info["task_functions"] == [] and len(info["event_ns"]) == 2
    measured = measured_trace(load_trace(d), np.array([ns[x.id] for x in t.fragments]))
    status, out, _ = run_cli(capsys, "simulate", d, "--cores", "1,inf", "--durations", "measured", "--json")
    doc = json.loads(out)
    assert doc["t1"] == pytest.approx(sum(ns.values()) / 1e9) and doc["tinf"] == pytest.approx(measured.tinf / 1e9)
    assert [r["time"] for r in doc["results"]] == pytest.approx([doc["t1"], doc["tinf"]])


def test_task_functions_are_timed_through_hooks(compile_c, tmp_path, capsys):
    """No markers: the calls of nap and busy are the tasks, main's entry opens the region."""
    exe = compile_c(write_c(tmp_path, "naps_fn", PROGRAM), opt="-O0 -DNO_MARKERS", markers=False)
    d = tmp_path / "fn.tareador"
    t = trace([str(exe), "2"], d, progress=False, task_functions=["nap", "busy"])
    assert [x.name for x in t.fragments if not x.is_main] == ["nap", "busy"] * 2
    status, out, _ = run_cli(capsys, "time", d, "--repeat", "1")
    assert status == 0
    ns = durations_of(d)
    assert all(ns[x.id] >= NAP_MS * 1_000_000 for x in t.fragments if x.name == "nap")
    assert json.loads((d / "timing.json").read_text())["task_functions"] == ["nap", "busy"]


def test_an_explore_recording_is_timed_and_searched_in_nanoseconds(compile_c, tmp_path, capsys):
    """Every function a task (its markers' tasks ignored, as when recording), timed through hooks."""
    exe = compile_c(write_c(tmp_path, "naps", PROGRAM))
    d = tmp_path / "rec"
    assert run_cli(capsys, "explore", "--no-progress", "-o", d, "--", exe, "2")[0] == 0
    assert run_cli(capsys, "time", d, "--repeat", "1")[0] == 0
    from tareador.taskgraph.store import load_trace

    ns = durations_of(d)
    recorded = load_trace(d)
    assert sorted(ns) == [x.id for x in recorded.fragments]
    assert all(ns[x.id] >= NAP_MS * 1_000_000 for x in recorded.fragments if x.name == "nap")
    status, out, _ = run_cli(capsys, "explore", d, "--durations", "measured", "--cores", "2")
    assert status == 0 and "T1 and T-inf in nanoseconds" in out


def test_a_run_that_makes_other_tasks_is_refused_at_the_first_difference(compile_c, tmp_path, capsys):
    exe = compile_c(write_c(tmp_path, "naps", PROGRAM))
    d = tmp_path / "naps.tareador"
    trace([str(exe), "2"], d, progress=False)
    status, _, err = run_cli(capsys, "time", d, "--repeat", "1", "--", exe, "3")
    assert status == 2
    assert err.strip() == ('tareador: timing run 1 made 13 fragments, the trace 9: only the run goes on at fragment 9, '
                           'with task "nap" created by fragment 8; the program must make the same tasks in the same '
                           'order on every run (the same arguments and input; no random numbers, clocks or threads '
                           'deciding them)')
    assert not (d / "durations.csv").exists()


@pytest.mark.fast
def test_the_measured_clock():
    """main 0..10 instructions (measured 100 ns) creates a (10..40, 60 ns), main goes on 40..50
    (20 ns). On the measured clock: main [0, 100), a [100, 160), main [160, 180). A call a made at
    counter 25 (half way) is at 130; a counter in main's second fragment, 45, at 170; one after
    the last fragment (outside the region) where it ended, 180; -1 (never completed) stays."""
    trace = TaskTrace([Fragment(0, "main", 0, -1, 0, 10, 10), Fragment(1, "a", 1, 0, 10, 40, 30),
                       Fragment(2, "main", 0, -1, 40, 50, 10)], [], [])
    ns = np.array([100, 60, 20])
    clock = MeasuredClock(trace, ns)
    assert [clock.at(x) for x in (0, 10, 25, 45, 50, 70, -1)] == [0, 100, 130, 170, 180, 180, -1]
    t = measured_trace(trace, ns)
    assert [(x.start, x.end, x.instructions) for x in t.fragments] == [(0, 100, 100), (100, 160, 60), (160, 180, 20)]
    call = MpiCall(0, 0, "MPI_Isend", 1, 0, 0, 8, "", 25, 45, "0", 1)
    blocking = MpiCall(0, 1, "MPI_Send", 1, 0, 0, 8, "", 10, 10, "", 1)
    assert [(c.posted, c.completed) for c in measured_calls(trace, ns, [call, blocking])] == [(130, 170), (100, 100)]


def test_library_functions_are_timed_where_the_program_calls_them(compile_c, tmp_path, capsys):
    """examples/cholesky_lapack's kernels are LAPACKE and CBLAS functions (of system libraries):
    their calls from the program are the tasks (LAPACKE_dpotrf_work calling BLAS inside is not),
    timed through hooks at the libraries' entries and matched to the trace one to one."""
    if not (Path("/usr/include/lapacke.h").exists() and Path("/usr/include/x86_64-linux-gnu/cblas.h").exists()):
        pytest.skip("LAPACKE and CBLAS are not installed (liblapacke-dev, libblas-dev); `make deps` installs them")
    exe = compile_c(EXAMPLES / "cholesky_lapack" / "cholesky_lapack.c", markers=False, libs="-llapacke -lblas")
    d = tmp_path / "lapack.tareador"
    kernels = ["LAPACKE_dpotrf_work", "cblas_dtrsm", "cblas_dsyrk", "cblas_dgemm"]
    t = trace([str(exe), "4", "16"], d, progress=False, task_functions=kernels)
    assert sum(1 for x in t.fragments if x.starts_instance and not x.is_main) == 20
    status, out, _ = run_cli(capsys, "time", d, "--repeat", "1")
    assert status == 0 and f"fragments         {len(t.fragments)}, matched one to one" in out
    assert sorted(durations_of(d)) == [x.id for x in t.fragments]
