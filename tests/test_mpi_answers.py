"""What real MPI codes do that the first MPI support got wrong (issue 15), each on a small C
program under the real MPICH and Open MPI: waiting inside a call or in a polling loop is not
work, derived datatypes move exactly their bytes, persistent requests and requests that complete
at once are followed, one-sided communication is refused, and runs that end badly (MPI_Abort, a
rank missing, a heap corrupted inside malloc) keep every trace and say what happened."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tareador
from tareador.tracing import toolchain
from tareador.tracing.mpi_launch import MPICH, MPIS
from tests.helpers import require, write_c

MPI_PARAMS = pytest.mark.parametrize("mpi", MPIS.values(), ids=MPIS.keys())


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """build(mpi, name, source) -> the C source built with that MPI."""
    out = tmp_path_factory.mktemp("answers")

    def compile_with(mpi, name, source):
        require(mpi)
        exe = out / f"{name}-{mpi.name}"
        if not exe.exists():
            subprocess.run([mpi.mpicc, "-g", "-O0", "-w", *shlex.split(toolchain.cflags()),
                            str(write_c(out, name, source)), "-o", str(exe), *shlex.split(toolchain.libs())],
                           check=True)
        return exe

    return compile_with


def tareador_cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "tareador", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def rank_summary(run_dir: Path, rank: int) -> dict:
    return json.loads((run_dir / f"rank-{rank}" / "summary.json").read_text())


def raw(run, rank: int) -> set[tuple[int, int, str, int]]:
    return {(d.src, d.dst, d.object, d.bytes) for d in run.ranks[rank].deps if d.kind == "RAW"}


# ---------------------------------------------------------------- waiting is not work

NEVER_SENT = r"""
#include <mpi.h>
#include <stdio.h>
#include "tareador.h"
int main(int argc, char **argv) {
  int rank, x = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  tareador_ON();
  tareador_start_task("work");
  x = rank + 1;
  tareador_end_task("work");
  printf("waiting %d\n", rank);
  fflush(stdout);
  MPI_Recv(&x, 1, MPI_INT, 1 - rank, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  tareador_OFF();
  MPI_Finalize();
  return 0;
}
"""


@MPI_PARAMS
def test_a_run_stopped_inside_a_blocking_call_charges_no_waiting(build, tmp_path, mpi):
    """Both ranks wait for a message nobody sends (a deadlock), Open MPI's until the timeout,
    MPICH's until tareador mpirun gets SIGTERM once both wait: the counter stands still inside
    MPI_Recv, so each rank's work ends where its call began (it was 1.5-2 G instructions of the
    library's polling); each says why it stopped and where it waited, and the run has one
    summary (the ranks' own interleaved). The timeout leaves the tracers time to start on a
    busy machine (3 s did not)."""
    run_dir = tmp_path / "run"
    timeout = ["--timeout", "8"] if mpi.name == "openmpi" else []
    p = subprocess.Popen([sys.executable, "-m", "tareador", "mpirun", *timeout, "-np", "2", "-o", str(run_dir), "--",
                          str(build(mpi, "never", NEVER_SENT))], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        assert sorted(p.stdout.readline() for _ in range(2)) == ["waiting 0\n", "waiting 1\n"]
        if not timeout:
            time.sleep(2)  # each rank goes on from its printf into MPI_Recv (microseconds; the machine may be busy)
            p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=120)
    finally:
        p.kill()
    assert p.returncode == 1, err
    run = tareador.load(run_dir)
    why = "the run timed out after 8 s" if timeout else "tareador mpirun got SIGTERM"
    for rank in (0, 1):
        receive = next(c for c in run.calls_of(rank) if c.call == "MPI_Recv")
        assert run.ranks[rank].t1 == max(t.end for t in run.ranks[rank].fragments) == receive.posted
        assert rank_summary(run_dir, rank)["ending"] == f"was stopped: {why}"
    assert [p["t1"] for p in run.summary["per_rank"]] == [t.t1 for t in run.ranks]
    assert run.summary["ending"] == ("timed out after 8 s" if timeout else "was stopped (SIGTERM)")
    assert [(p["blocked_in"]["call"], p["blocked_in"]["peer"]) for p in run.summary["per_rank"]] == [
        ("MPI_Recv", 1), ("MPI_Recv", 0)]
    assert "rank 0 stopped inside MPI_Recv from rank 1 (tag 7, mpi.csv seq" in out
    assert [line.split()[0] for line in out.splitlines() if line.strip()].count("ranks") == 1
    assert "trace directory:" not in out  # no rank printed its own summary


POLLING = r"""
#include <mpi.h>
#include <unistd.h>
#include "tareador.h"
/* Rank 1 sends tags 1, 2, 3, each after a pause; rank 0 polls for each: MPI_Test, MPI_Testall,
 * MPI_Iprobe, a different number of times on every run. */
double a, b, c;
int main(int argc, char **argv) {
  int rank, flag = 0;
  MPI_Request r;
  MPI_Status s;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  tareador_ON();
  if (rank == 1) {
    for (int tag = 1; tag <= 3; tag++) {
      usleep(100000);
      a = tag;
      MPI_Send(&a, 1, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD);
    }
  } else {
    MPI_Irecv(&a, 1, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD, &r);
    while (!flag) MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
    MPI_Irecv(&b, 1, MPI_DOUBLE, 1, 2, MPI_COMM_WORLD, &r);
    for (flag = 0; !flag;) MPI_Testall(1, &r, &flag, MPI_STATUSES_IGNORE);
    for (flag = 0; !flag;) MPI_Iprobe(1, 3, MPI_COMM_WORLD, &flag, &s);
    MPI_Recv(&c, 1, MPI_DOUBLE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    tareador_start_task("use");
    a += b + c;
    tareador_end_task("use");
  }
  tareador_OFF();
  MPI_Finalize();
  return 0;
}
"""


@MPI_PARAMS
def test_polling_is_waiting_and_every_run_is_the_same(build, tmp_path, mpi):
    """An unsuccessful test leaves no row and its loop is no work: the successful one is the one
    row of each loop, and two runs give the same tasks.csv and mpi.csv (the polls made them
    differ by thousands of rows and instructions)."""
    program = build(mpi, "polling", POLLING)
    runs = []
    for k in range(2):
        r = tareador_cli("mpirun", "-np", 2, "-o", tmp_path / f"run{k}", "--", program)
        assert r.returncode == 0, r.stderr
        runs.append(tareador.load(tmp_path / f"run{k}"))
    calls = [(c.call, c.peer, c.tag, c.request) for c in runs[0].calls_of(0)][2:-1]  # after Init, Comm_rank
    assert calls == [("MPI_Irecv", 1, 1, "0"), ("MPI_Test", -1, -1, "0"), ("MPI_Irecv", 1, 2, "1"),
                     ("MPI_Testall", -1, -1, "1"), ("MPI_Iprobe", 1, 3, ""), ("MPI_Recv", 1, 3, "")]
    for name in ("tasks.csv", "mpi.csv"):
        assert (tmp_path / "run0" / "rank-0" / name).read_text() == (tmp_path / "run1" / "rank-0" / name).read_text()
    assert [m.bytes for m in runs[0].messages] == [8, 8, 8]


# ---------------------------------------------------------------- derived datatypes

DATATYPES = r"""
#include <mpi.h>
#include "tareador.h"
/* Rank 0 sends, rank 1 receives, one message per datatype, each from and into an array of its
 * own: a column (vector), an indexed type, a struct with a gap, a 2x2 subarray, a resized double.
 * Task "fill" writes every array whole; "hit" touches one element each type covers, "gap" one
 * it skips (rank 0 writes them before sending, rank 1 reads them after receiving). */
double A[8][8], B[8], C[4], D[8][8], E[6];
int main(int argc, char **argv) {
  int rank, blens[2] = {1, 2}, displs[2] = {0, 3}, ones[2] = {1, 1};
  int sizes[2] = {8, 8}, sub[2] = {2, 2}, starts[2] = {2, 2};
  MPI_Aint offsets[2] = {0, 16};
  MPI_Datatype col, idx, st, box, spread, doubles[2] = {MPI_DOUBLE, MPI_DOUBLE};
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Type_vector(8, 1, 8, MPI_DOUBLE, &col);
  MPI_Type_indexed(2, blens, displs, MPI_DOUBLE, &idx);
  MPI_Type_create_struct(2, ones, offsets, doubles, &st);
  MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, MPI_DOUBLE, &box);
  MPI_Type_create_resized(MPI_DOUBLE, 0, 16, &spread);
  MPI_Datatype all[5] = {col, idx, st, box, spread};
  for (int k = 0; k < 5; k++) MPI_Type_commit(&all[k]);
  tareador_ON();
  tareador_start_task("fill");
  for (int i = 0; i < 64; i++) A[i / 8][i % 8] = D[i / 8][i % 8] = i;
  for (int i = 0; i < 8; i++) B[i] = i;
  for (int i = 0; i < 6; i++) E[i] = C[i % 4] = i;
  tareador_end_task("fill");
  if (rank == 0) {
    tareador_start_task("hit");
    A[3][5] = B[3] = C[2] = D[3][3] = E[4] = -1;
    tareador_end_task("hit");
    tareador_start_task("gap");
    A[3][6] = B[1] = C[1] = D[2][4] = E[3] = -2;
    tareador_end_task("gap");
    MPI_Send(&A[0][5], 1, col, 1, 0, MPI_COMM_WORLD);
    MPI_Send(B, 1, idx, 1, 1, MPI_COMM_WORLD);
    MPI_Send(C, 1, st, 1, 2, MPI_COMM_WORLD);
    MPI_Send(D, 1, box, 1, 3, MPI_COMM_WORLD);
    MPI_Send(E, 3, spread, 1, 4, MPI_COMM_WORLD);
  } else {
    MPI_Recv(&A[0][5], 1, col, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(B, 1, idx, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(C, 1, st, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(D, 1, box, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(E, 3, spread, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double s = 0;
    tareador_start_task("hit");
    s += A[3][5] + B[3] + C[2] + D[3][3] + E[4];
    tareador_end_task("hit");
    tareador_start_task("gap");
    s += A[3][6] + B[1] + C[1] + D[2][4] + E[3];
    tareador_end_task("gap");
  }
  tareador_OFF();
  MPI_Finalize();
  return 0;
}
"""
# Bytes each type covers: a column of 8 doubles, 3 of B, 2 of C, a 2 x 2 box of D, 3 of E.
COVERED = {"A": 64, "B": 24, "C": 16, "D": 32, "E": 24}


@MPI_PARAMS
def test_derived_datatypes_read_and_write_exactly_their_bytes(build, tmp_path, mpi):
    """Fragments: 0 main, 1 fill, 2 main, 3 hit, 4 main, 5 gap, 6 main; rank 0 sends in 6, rank 1
    receives in 2. The sends read the covered bytes: what
    fill wrote of them less what hit wrote, and nothing gap wrote; the receives write the covered
    bytes only: hit reads what they wrote, gap what fill wrote (a receive writing its type's
    whole extent made gap depend on the receives, and lost fill -> gap)."""
    r = tareador_cli("mpirun", "-np", 2, "-o", tmp_path / "run", "--", build(mpi, "datatypes", DATATYPES))
    assert r.returncode == 0, r.stderr
    run = tareador.load(tmp_path / "run")
    assert [m.bytes for m in run.messages] == [COVERED[k] for k in "ABCDE"]
    arrays = [{d for d in raw(run, rank) if d[2] in COVERED} for rank in (0, 1)]
    assert arrays[0] == {(1, 6, k, COVERED[k] - 8) for k in "ABCDE"} | {(3, 6, k, 8) for k in "ABCDE"}
    assert arrays[1] == {(2, 3, k, 8) for k in "ABCDE"} | {(1, 5, k, 8) for k in "ABCDE"}
    assert not [w for w in run.summary["warnings"] if "datatype" in w and "pattern" not in w]


# ---------------------------------------------------------------- requests

PERSISTENT = r"""
#include <mpi.h>
#include "tareador.h"
/* A ring of persistent requests: 5 times, "fill" writes the 16 doubles each rank sends to the
 * next, MPI_Startall/MPI_Waitall exchange them, "use" reads the 16 received from the previous. */
#define N 16
double out[N], in[N], root[2];
int main(int argc, char **argv) {
  int rank, size;
  MPI_Request req[2], bcast;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  tareador_ON();
  MPI_Recv_init(in, N, MPI_DOUBLE, (rank + size - 1) % size, 3, MPI_COMM_WORLD, &req[0]);
  MPI_Send_init(out, N, MPI_DOUBLE, (rank + 1) % size, 3, MPI_COMM_WORLD, &req[1]);
  double s = MPI_Wtime();
  for (int it = 0; it < 5; it++) {
    tareador_start_task("fill");
    for (int i = 0; i < N; i++) out[i] = rank + it + i;
    tareador_end_task("fill");
    MPI_Startall(2, req);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    tareador_start_task("use");
    for (int i = 0; i < N; i++) s += in[i];
    tareador_end_task("use");
  }
  MPI_Request_free(&req[0]);
  MPI_Request_free(&req[1]);
  MPI_Ibcast(root, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD, &bcast);
  MPI_Wait(&bcast, MPI_STATUS_IGNORE);
  tareador_OFF();
  MPI_Finalize();
  return 0;
}
"""


@pytest.fixture(scope="module")
def persistent_run(build, tmp_path_factory):
    """persistent_run(mpi) -> the 3-rank run directory of PERSISTENT."""
    done = {}

    def run(mpi):
        if mpi.name not in done:
            d = tmp_path_factory.mktemp("persistent") / "run"
            r = tareador_cli("mpirun", "-np", 3, "-o", d, "--", build(mpi, "persistent", PERSISTENT))
            assert r.returncode == 0, r.stderr
            done[mpi.name] = d
        return done[mpi.name]

    return run


@MPI_PARAMS
def test_persistent_requests_carry_their_messages(persistent_run, mpi):
    """15 messages of 128 bytes, rank r to r + 1 mod 3 with tag 3, five per pair. Each MPI_Startall
    is a row per request it starts (fragments: 0 main, then per iteration k: 4k+1 fill, 4k+2 main,
    4k+3 use); the start reads what fill wrote, use reads what the Waitall completed. The MPI_Ibcast
    moves data tareador does not model: counted per call, apart from MPI_Wtime."""
    run = tareador.load(persistent_run(mpi))
    assert sorted((m.src, m.dst, m.tag, m.bytes) for m in run.messages) == sorted(
        [(r, (r + 1) % 3, 3, 128) for r in range(3)] * 5)
    for rank in range(3):
        started = [(c.call, c.task) for c in run.calls_of(rank) if c.call.startswith("MPI_Startall")]
        assert started == [(f"MPI_Startall:MPI_{kind}_init", 4 * k + 2) for k in range(5) for kind in ("Recv", "Send")]
        assert {(4 * k + 1, 4 * k + 2, "out", 128) for k in range(5)} <= raw(run, rank)
        assert {(4 * k + 2, 4 * k + 3, "in", 128) for k in range(5)} <= raw(run, rank)
    assert run.summary["data_not_modelled"] == {"MPI_Ibcast": 3}
    assert [w for w in run.summary["warnings"] if "MPI_Ibcast x3" in w and "MPI_Wtime" not in w]


ISENDS = r"""
#include <mpi.h>
#include "tareador.h"
/* Both ranks post 4 receives and meet at a barrier; then each sends 4 doubles with MPI_Isend,
 * whose receives are waiting: such sends complete at once, and both MPIs give them one handle. */
double out[4], in[4];
int main(int argc, char **argv) {
  int rank;
  MPI_Request req[8];
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  tareador_ON();
  for (int k = 0; k < 4; k++)
    MPI_Irecv(&in[k], 1, MPI_DOUBLE, 1 - rank, k, MPI_COMM_WORLD, &req[k]);
  MPI_Barrier(MPI_COMM_WORLD);
  for (int k = 0; k < 4; k++) {
    out[k] = rank + k;
    MPI_Isend(&out[k], 1, MPI_DOUBLE, 1 - rank, k, MPI_COMM_WORLD, &req[4 + k]);
  }
  MPI_Waitall(8, req, MPI_STATUSES_IGNORE);
  tareador_OFF();
  MPI_Finalize();
  return 0;
}
"""


@MPI_PARAMS
def test_requests_that_complete_at_once_are_told_apart(build, tmp_path, mpi):
    """The Waitall completes all 8 requests (numbers 0..7, in the order they were started); no
    Isend is left with completed = -1."""
    r = tareador_cli("mpirun", "-np", 2, "-o", tmp_path / "run", "--", build(mpi, "isends", ISENDS))
    assert r.returncode == 0, r.stderr
    run = tareador.load(tmp_path / "run")
    for rank in (0, 1):
        calls = run.calls_of(rank)
        wait = next(c for c in calls if c.call == "MPI_Waitall")
        assert wait.request == "0;1;2;3;4;5;6;7"
        assert [c.completed for c in calls if c.nonblocking] == [wait.posted] * 8


ONE_SIDED = r"""
#include <mpi.h>
int main(int argc, char **argv) {
  int rank, local[2] = {0, 0}, value = 5;
  MPI_Win win;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Win_create(local, sizeof local, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  MPI_Win_fence(0, win);
  if (rank == 0) MPI_Put(&value, 1, MPI_INT, 1, 1, 1, MPI_INT, win);
  MPI_Win_fence(0, win);
  MPI_Win_free(&win);
  MPI_Finalize();
  return 0;
}
"""


@MPI_PARAMS
def test_one_sided_communication_is_refused_in_one_line(build, tmp_path, mpi):
    program = build(mpi, "onesided", ONE_SIDED)
    r = tareador_cli("mpirun", "-np", 2, "-o", tmp_path / "run", "--", program)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("tareador: rank 0 called MPI_Put (one-sided communication, mpi.csv seq ")
    assert r.stderr.endswith("nothing was written\n") and r.stderr.count("\n") == 1
    assert not [p.name for p in (tmp_path / "run").iterdir() if p.is_file()]


# ---------------------------------------------------------------- runs that end badly

ABORTING = r"""
#include <mpi.h>
#include "tareador.h"
/* Both ranks compute; then rank 0 calls MPI_Abort(..., 0) while rank 1 waits in a barrier. */
int main(int argc, char **argv) {
  int rank, x = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  tareador_ON();
  tareador_start_task("work");
  x = rank + 1;
  tareador_end_task("work");
  if (rank == 0)
    MPI_Abort(MPI_COMM_WORLD, 0);
  MPI_Barrier(MPI_COMM_WORLD);
  tareador_OFF();
  MPI_Finalize();
  return x;
}
"""


@MPI_PARAMS
def test_mpi_abort_keeps_every_trace_and_names_the_abort(build, tmp_path, mpi):
    run_dir = tmp_path / "run"
    r = tareador_cli("mpirun", "-np", 2, "-o", run_dir, "--", build(mpi, "aborting", ABORTING))
    assert r.returncode == 1, r.stderr
    abort = "rank 0 called MPI_Abort (error code 0) in main (aborting.c:14)"
    assert f"tareador: the run was stopped: {abort}" in r.stderr
    run = tareador.load(run_dir)
    assert [p["ending"] for p in run.summary["per_rank"]] == [abort.removeprefix("rank 0 "), f"was stopped: {abort}"]
    assert [t.instances for t in run.ranks] == [1, 1]
    barrier = next(c for c in run.calls_of(1) if c.call == "MPI_Barrier")
    assert run.ranks[1].t1 == barrier.posted  # waiting in the barrier is not work


HEAP_CORRUPTION = r"""
#include <mpi.h>
#include <stdlib.h>
#include "tareador.h"
int main(int argc, char **argv) {
  int rank, x = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  tareador_ON();
  tareador_start_task("t");
  x = rank;
  tareador_end_task("t");
  if (rank == 1) {
    char *p = malloc(100000);
    *(size_t *) (p + 100000 + 8) = ~(size_t) 0;   /* the size of the top chunk, right after p */
    p = malloc(120000);                           /* glibc: "malloc(): corrupted top size" */
  }
  MPI_Recv(&x, 1, MPI_INT, 1 - rank, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  tareador_OFF();
  MPI_Finalize();
  return 0;
}
"""


def test_an_abort_inside_malloc_ends_the_run_with_every_trace(build, tmp_path):
    """glibc aborts inside malloc holding its lock: the tracer names the crash without allocating
    (it waited forever on that lock), and the run ends without a timeout, every trace written."""
    run_dir = tmp_path / "run"
    r = tareador_cli("mpirun", "-np", 2, "-o", run_dir, "--", build(MPICH, "corrupt", HEAP_CORRUPTION), timeout=90)
    assert r.returncode == 1, r.stderr
    crash = "crashed with SIGABRT (abort) in main (corrupt.c:16), inside libc.so.6's allocator (a corrupt heap)"
    assert rank_summary(run_dir, 1)["ending"] == crash
    assert rank_summary(run_dir, 0)["ending"] == f"was stopped: rank 1 {crash}"
    run = tareador.load(run_dir)  # the survivor's wait for rank 1 is not work either
    assert run.ranks[0].t1 == next(c.posted for c in run.calls_of(0) if c.call == "MPI_Recv")


def test_an_abort_is_located_at_the_programs_line(compile_c, tmp_path):
    exe = compile_c(write_c(tmp_path, "aborts", '#include <stdlib.h>\n#include "tareador.h"\nint main(void) {\n'
                            '  tareador_ON();\n  abort();\n}\n'))
    r = tareador_cli("trace", "--no-progress", "-o", tmp_path / "t", "--", exe)
    assert r.returncode == 1
    assert json.loads((tmp_path / "t" / "summary.json").read_text())["ending"] == \
        "crashed with SIGABRT (abort) in main (aborts.c:5), inside libc.so.6"


def test_a_missing_rank_is_said_and_outputs_are_all_or_nothing(persistent_run, tmp_path):
    """Without rank 1's directory postprocess writes the run, saying so (it crashed halfway,
    leaving the old Dimemas traces); a rank file that cannot be read leaves none of the run's
    files, old or new."""
    import shutil

    run_dir = tmp_path / "run"
    shutil.copytree(persistent_run(MPICH), run_dir)
    shutil.rmtree(run_dir / "rank-1")
    r = tareador_cli("postprocess", "--jobs", 1, run_dir)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    s = json.loads((run_dir / "summary.json").read_text())
    assert [p["ending"] for p in s["per_rank"]][1] == "wrote no trace" and s["messages"] == 5
    assert "rank 1 wrote no trace (its tracer did not start or was killed)" in s["warnings"]
    (run_dir / "rank-2" / "patterns.npz").write_bytes(b"not a zip")
    r = tareador_cli("postprocess", "--jobs", 1, run_dir)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "patterns.npz is not a patterns file" in r.stderr
    assert not [p.name for p in run_dir.iterdir() if p.is_file()]
