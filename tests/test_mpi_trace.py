"""Tracing one rank of a real MPI run: `tareador trace --mpi` started by each rank under the real
mpiexec of MPICH and of Open MPI (2 ranks), writing DIR/rank-N/ with the rank's task graph and
its MPI calls (mpi.csv, comms.csv). The examples' header comments state the messages and
dependencies checked here."""

from __future__ import annotations

import csv
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import tareador
from tareador import load
from tareador.cli.main import main
from tareador.tracing import toolchain
from tareador.tracing.mpi_launch import MPIS
from tareador.tracing.run import trace
from tests.helpers import require, write_c

MPI_PARAMS = pytest.mark.parametrize("mpi", MPIS.values(), ids=MPIS.keys())
# Fields of mpi.csv that are not instruction counts: those are checked against tasks.csv.
FIELDS = ("call", "peer", "tag", "comm", "bytes", "object", "request", "task")


def run_ranks(mpi, argv, out: Path, ranks: int = 2) -> Path:
    """Every rank traced by its own `tareador trace --mpi`, as a user runs it under a launcher."""
    env = mpi.env()
    env["PYTHONPATH"] = os.pathsep.join([str(Path(tareador.__file__).parents[1]), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "tareador", "trace", "--mpi", "--no-progress", "-o", str(out), "--",
               *map(str, argv)]
    run = subprocess.run(mpi.command(ranks, command), env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    return out


def compile_mpi(mpi, source: Path, *flags: str) -> Path:
    require(mpi)
    exe = source.with_name(f"{source.stem}-{mpi.name}{''.join(flags)}")
    subprocess.run([mpi.mpicc, "-g", "-O0", "-w", *flags, *shlex.split(toolchain.cflags()), str(source), "-o", str(exe),
                    *shlex.split(toolchain.libs())], check=True)
    return exe


def rows(rank_dir: Path) -> list[dict]:
    with open(rank_dir / "mpi.csv", newline="") as f:
        return [{k: v if k in ("call", "object", "request") else int(v) for k, v in row.items()}
                for row in csv.DictReader(f)]


def fields(rank_dir: Path) -> list[tuple]:
    return [tuple(r[k] for k in FIELDS) for r in rows(rank_dir)]


def comms(rank_dir: Path) -> list[list[str]]:
    with open(rank_dir / "comms.csv", newline="") as f:
        return list(csv.reader(f))[1:]


def raw_edges(rank_dir: Path, obj: str) -> set[tuple[int, int, int]]:
    return {(d.src, d.dst, d.bytes) for d in load(rank_dir).deps if d.kind == "RAW" and d.object == obj}


def times_are_the_callers(rank_dir: Path) -> None:
    """A blocking call takes no time (nothing inside MPI is counted) and happens inside the
    fragment that made it; a non-blocking one completes at or after its start."""
    tasks = {t.id: t for t in load(rank_dir).fragments}
    for r in rows(rank_dir):
        if r["task"] >= 0:
            assert tasks[r["task"]].start <= r["posted"] <= tasks[r["task"]].end, r
        if r["call"] in ("MPI_Isend", "MPI_Irecv"):
            assert r["completed"] >= r["posted"], r
        else:
            assert r["completed"] == r["posted"], r


# What every example does before tareador_ON().
START = [("MPI_Init", -1, -1, -1, 0, "", "", -1), ("MPI_Comm_rank", -1, -1, 0, 0, "", "", -1),
         ("MPI_Comm_size", -1, -1, 0, 0, "", "", -1)]


@MPI_PARAMS
def test_ring_sendrecv_rows_and_the_received_vector(tmp_path, mpi_examples, mpi):
    """ring, 2 ranks, N = 16 longs: one MPI_Sendrecv per rank (two rows: its send, then its
    receive) between the two accumulate tasks; the second task reads the vector it received."""
    out = run_ranks(mpi, [mpi_examples(mpi) / "ring", 16], tmp_path / "ring")
    held, other = "heap:ring.c:44#0", "heap:ring.c:44#1"
    for rank in (0, 1):
        d = out / f"rank-{rank}"
        peer = 1 - rank
        # main's fragments are 0, 2, 4; accumulate(0) is 1, accumulate(1) is 3.
        assert fields(d) == START + [("MPI_Sendrecv", peer, 0, 0, 128, held, "", 2),
                                           ("MPI_Sendrecv", peer, 0, 0, 128, other, "", 2),
                                           ("MPI_Finalize", -1, -1, -1, 0, "", "", -1)]
        assert [r["seq"] for r in rows(d)] == list(range(6)) and {r["rank"] for r in rows(d)} == {rank}
        assert comms(d) == [["0", "2", "0;1"], ["1", "1", str(rank)]]
        times_are_the_callers(d)
        assert raw_edges(d, other) == {(2, 3, 128)}
        assert raw_edges(d, held) == set()
        summary = json.loads((d / "summary.json").read_text())
        assert (summary["rank"], summary["size"], summary["mpi"], summary["mpi_calls"]) == (rank, 2, mpi.name, 6)
        assert summary["mpi_unmodelled"] == {}
        assert summary["warnings"] == []  # the threads MPI_Init starts are the library's


@MPI_PARAMS
def test_wavefront_send_reads_what_a_task_wrote_and_a_task_reads_what_recv_wrote(tmp_path, mpi_examples, mpi):
    """wavefront, 2 ranks, R = 3 rows, C = 16 columns, BS = 4: NB = 4 blocks of 4 doubles.
    Rank 0 sends the last row of block k (32 bytes) with tag k from main's fragment k+1, which
    depends on sweep_block(k); rank 1 receives it in main's fragment k, on which sweep_block(k)
    depends for those 32 bytes; each sweep_block(k) depends on the one before for the column
    to its left (R cells, 24 bytes)."""
    out = run_ranks(mpi, [mpi_examples(mpi) / "wavefront", 3, 16, 4], tmp_path / "wavefront")
    grid = "heap:wavefront.c:65#0"
    finalize = [("MPI_Finalize", -1, -1, -1, 0, "", "", -1)]
    # main's fragments are 0, 2, 4, 6, 8; sweep_block(k) is 2k+1.
    sender, receiver = out / "rank-0", out / "rank-1"
    assert fields(sender) == START + [("MPI_Send", 1, k, 0, 32, grid, "", 2 * k + 2) for k in range(4)] + finalize
    assert fields(receiver) == START + [("MPI_Recv", 0, k, 0, 32, grid, "", 2 * k) for k in range(4)] + finalize
    left = {(2 * k - 1, 2 * k + 1, 24) for k in range(1, 4)}
    assert raw_edges(sender, grid) == left | {(2 * k + 1, 2 * k + 2, 32) for k in range(4)}
    assert raw_edges(receiver, grid) == left | {(2 * k, 2 * k + 1, 32) for k in range(4)}
    for d in (sender, receiver):
        times_are_the_callers(d)


CALLS = r"""
#include <mpi.h>
#include <stdio.h>
#include "tareador.h"

#define N 4
double produced[N], received[N], other[N], gathered[2 * N], scattered[N], all[2 * N], mixed[N];
double total, sum, probed;
int token;

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size, bytes;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int peer = 1 - rank;
  MPI_Comm dup, reversed;
  MPI_Request req[2];
  MPI_Message message;
  MPI_Status status;
  MPI_Datatype pair;
  tareador_ON();
  tareador_start_task("produce");
  for (int i = 0; i < N; i++) produced[i] = rank * N + i;
  tareador_end_task("produce");
  MPI_Irecv(received, N, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &req[0]);
  MPI_Isend(produced, N, MPI_DOUBLE, peer, 10 + rank, MPI_COMM_WORLD, &req[1]);
  tareador_start_task("middle");
  token = rank;
  tareador_end_task("middle");
  MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
  tareador_start_task("consume");
  for (int i = 0; i < N; i++) total += received[i];
  tareador_end_task("consume");
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &reversed);
  MPI_Sendrecv_replace(other, 2, MPI_DOUBLE, rank, 20, rank, 20, reversed, &status);
  MPI_Bcast(all, 2 * N, MPI_DOUBLE, 1, dup);
  MPI_Reduce(&total, &sum, 1, MPI_DOUBLE, MPI_SUM, 1, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Gather(produced, N, MPI_DOUBLE, gathered, N, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Scatter(gathered, N, MPI_DOUBLE, scattered, N, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Alltoall(produced, 2, MPI_DOUBLE, mixed, 2, MPI_DOUBLE, MPI_COMM_WORLD);
  MPI_Barrier(reversed);
  if (rank == 0)
    MPI_Ssend(&total, 1, MPI_DOUBLE, 1, 30, MPI_COMM_WORLD);
  else {
    MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &message, MPI_STATUS_IGNORE);
    MPI_Mrecv(&probed, 1, MPI_DOUBLE, &message, MPI_STATUS_IGNORE);
  }
#if MPI_VERSION >= 4
  if (rank == 0)
    MPI_Send_c(produced, 2, MPI_DOUBLE, 1, 40, MPI_COMM_WORLD);
  else
    MPI_Recv_c(other, N, MPI_DOUBLE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
#endif
  MPI_Type_vector(2, 1, 2, MPI_DOUBLE, &pair);
  MPI_Type_commit(&pair);
  if (rank == 0)
    MPI_Send(mixed, 1, pair, 1, 50, MPI_COMM_WORLD);
  else
    MPI_Recv(other, 2, MPI_DOUBLE, 0, 50, MPI_COMM_WORLD, &status);
  MPI_Type_free(&pair);
  MPI_Type_size(MPI_DOUBLE, &bytes);
  MPI_Comm_free(&dup);
  MPI_Comm_free(&reversed);
  if (rank == 0) {
    int index, count, indices[2], flag = 0;
    MPI_Irecv(&received[0], 1, MPI_DOUBLE, 1, 61, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(&received[1], 1, MPI_DOUBLE, 1, 62, MPI_COMM_WORLD, &req[1]);
    MPI_Waitany(2, req, &index, &status);
    MPI_Waitsome(2, req, &count, indices, MPI_STATUSES_IGNORE);
    MPI_Irecv(&received[2], 1, MPI_DOUBLE, MPI_ANY_SOURCE, 63, MPI_COMM_WORLD, &req[0]);
    while (!flag)
      MPI_Test(&req[0], &flag, MPI_STATUS_IGNORE);
  } else
    for (int tag = 62; tag >= 61; tag--)
      MPI_Send(&total, 1, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD);
  if (rank == 1)
    MPI_Send(&total, 1, MPI_DOUBLE, 0, 63, MPI_COMM_WORLD);
  tareador_OFF();
  printf("calls rank=%d total=%g sum=%g probed=%g\n", rank, total, sum, probed);
  MPI_Finalize();
  return 0;
}
"""


@MPI_PARAMS
def test_calls_peers_tags_communicators_bytes_objects_and_requests(tmp_path, mpi):
    """Every kind of call the tracer models, in a rank whose fragments are: 0 main, 1 produce,
    2 main (Irecv, Isend), 3 middle, 4 main (Waitall), 5 consume, 6 main (all the rest)."""
    out = run_ranks(mpi, [compile_mpi(mpi, write_c(tmp_path, "calls", CALLS))], tmp_path / "calls")
    large = mpi.name == "mpich"  # MPI-4: MPICH 4 has the _c variants, Open MPI 4.1 not
    for rank in (0, 1):
        d = out / f"rank-{rank}"
        peer, root = 1 - rank, rank == 0
        expected = START + [
            # a wildcard receive gets the source and tag of what arrived, at the Waitall
            ("MPI_Irecv", peer, 10 + peer, 0, 32, "received", "0", 2),
            ("MPI_Isend", peer, 10 + rank, 0, 32, "produced", "1", 2),
            ("MPI_Waitall", -1, -1, -1, 0, "", "0;1", 4),
            ("MPI_Comm_dup", -1, -1, 0, 0, "", "", 6),
            ("MPI_Comm_split", -1, -1, 0, 0, "", "", 6),
            # in the split communicator (3) ranks are reversed: comm rank `rank` is world rank `peer`
            ("MPI_Sendrecv_replace", peer, 20, 3, 16, "other", "", 6),
            ("MPI_Sendrecv_replace", peer, 20, 3, 16, "other", "", 6),
            # collectives: peer is the root; bytes what this rank sends
            ("MPI_Bcast", 1, -1, 2, 0 if root else 64, "all", "", 6),
            ("MPI_Reduce", 1, -1, 0, 8, "total", "", 6),
            ("MPI_Allreduce", -1, -1, 0, 8, "total", "", 6),
            ("MPI_Gather", 0, -1, 0, 32, "produced", "", 6),
            ("MPI_Scatter", 0, -1, 0, 64 if root else 0, "gathered" if root else "scattered", "", 6),
            ("MPI_Alltoall", -1, -1, 0, 32, "produced", "", 6),
            ("MPI_Barrier", -1, -1, 3, 0, "", "", 6),
        ] + ([("MPI_Ssend", 1, 30, 0, 8, "total", "", 6)] if root else
             [("MPI_Mprobe", 0, 30, 0, 0, "", "", 6), ("MPI_Mrecv", 0, 30, 0, 8, "probed", "", 6)]) + (
            [("MPI_Send_c", 1, 40, 0, 16, "produced", "", 6) if root else ("MPI_Recv_c", 0, 40, 0, 16, "other", "", 6)]
            if large else []) + [
            ("MPI_Type_vector", -1, -1, -1, 0, "", "", 6),
            ("MPI_Type_commit", -1, -1, -1, 0, "", "", 6),
            # a vector of 2 doubles with a gap: 16 bytes sent, exactly those read
            ("MPI_Send", 1, 50, 0, 16, "mixed", "", 6) if root else ("MPI_Recv", 0, 50, 0, 16, "other", "", 6),
            ("MPI_Type_free", -1, -1, -1, 0, "", "", 6),
            ("MPI_Type_size", -1, -1, -1, 0, "", "", 6),
            ("MPI_Comm_free", -1, -1, 2, 0, "", "", 6),
            ("MPI_Comm_free", -1, -1, 3, 0, "", "", 6),
        ]
        got = fields(d)
        assert got[:len(expected)] == expected
        assert comms(d) == [["0", "2", "0;1"], ["1", "1", str(rank)], ["2", "2", "0;1"], ["3", "2", "1;0"]]
        # The Isend read what produce wrote; consume read what the Waitall (not the Irecv) wrote.
        assert raw_edges(d, "produced") == {(1, 2, 32), (1, 6, 32)}
        assert raw_edges(d, "received") == {(4, 5, 32)}
        summary = json.loads((d / "summary.json").read_text())
        assert summary["mpi_unmodelled"] == {"MPI_Type_vector": 1, "MPI_Type_commit": 1, "MPI_Type_free": 1,
                                             "MPI_Type_size": 1}
        assert not any("too complex" in w for w in summary["warnings"])
        assert any("non-contiguous datatypes have no production" in w for w in summary["warnings"]) == root
        tail = rows(d)[len(expected):]
        if not root:
            assert [tuple(r[k] for k in FIELDS) for r in tail] == [
                ("MPI_Send", 0, tag, 0, 8, "total", "", 6) for tag in (62, 61, 63)] + [
                ("MPI_Finalize", -1, -1, -1, 0, "", "", -1)]
            continue
        # Which of two arrived messages Waitany takes is MPI's choice; each request completes once,
        # at the call that lists it, and the wildcard receive at the MPI_Test that found it: the
        # unsuccessful ones before it are waiting, and leave no row.
        irecvs, waits, tests = tail[0:2], tail[2:4], tail[5:-1]
        assert [(r["call"], r["peer"], r["tag"], r["request"]) for r in irecvs + [tail[4]]] == [
            ("MPI_Irecv", 1, 61, "2"), ("MPI_Irecv", 1, 62, "3"), ("MPI_Irecv", 1, 63, "4")]
        assert [w["call"] for w in waits] == ["MPI_Waitany", "MPI_Waitsome"]
        assert sorted(w["request"] for w in waits) == ["2", "3"]
        for w in waits:
            assert rows(d)[int(w["request"]) + len(expected) - 2]["completed"] == w["posted"]
        assert [(t["call"], t["request"]) for t in tests] == [("MPI_Test", "4")]
        assert tail[4]["completed"] == tests[-1]["posted"] and tail[-1]["call"] == "MPI_Finalize"


@MPI_PARAMS
def test_same_program_same_counts_on_every_run(tmp_path, mpi_examples, mpi):
    """Busy-wait loops inside MPI calls made main's fragments vary by up to millions of
    instructions from run to run: nothing inside MPI is counted, so every run is the same."""
    runs = [run_ranks(mpi, [mpi_examples(mpi) / "jacobi", 16, 4, 2], tmp_path / f"run{i}") for i in range(2)]
    for rank in (0, 1):
        for name in ("tasks.csv", "mpi.csv"):
            first, second = ((run / f"rank-{rank}" / name).read_text() for run in runs)
            assert first == second, (rank, name)


EARLY = r"""
#include <mpi.h>
#include <stdio.h>
#include "tareador.h"
double buf[4];
int main(int argc, char **argv)
{
#ifdef EARLY
  tareador_ON();
#endif
  MPI_Init(&argc, &argv);
#ifndef EARLY
  tareador_ON();
#endif
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  tareador_start_task("produce");
  for (int i = 0; i < 4; i++) buf[i] = rank + i;
  tareador_end_task("produce");
  if (rank == 0)
    MPI_Send(buf, 4, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD);
  else
    MPI_Recv(buf, 4, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  tareador_start_task("consume");
  double s = 0;
  for (int i = 0; i < 4; i++) s += buf[i];
  tareador_end_task("consume");
  printf("rank %d sum %g\n", rank, s);
#ifdef EARLY
  MPI_Finalize();
  tareador_OFF();
#else
  tareador_OFF();
  MPI_Finalize();
#endif
  return 0;
}
"""


@pytest.mark.parametrize("early", [True, False], ids=["ON-before-MPI_Init", "ON-after-MPI_Init"])
@MPI_PARAMS
def test_analysis_on_before_or_after_mpi_init(tmp_path, mpi, early):
    """Open MPI crashes when Stalker follows MPI_Init: a thread analysed when it calls MPI_Init
    is left there and followed again from its return. Either way the rows and the dependencies
    through the message buffer are the same (fragments: 0 main, 1 produce, 2 main, 3 consume, 4 main)."""
    exe = compile_mpi(mpi, write_c(tmp_path, "early", EARLY), *(["-DEARLY"] if early else []))
    out = run_ranks(mpi, [exe], tmp_path / "early")
    inside = 0 if early else -1
    for rank, message in ((0, ("MPI_Send", 1, 7, 0, 32, "buf", "", 2)), (1, ("MPI_Recv", 0, 7, 0, 32, "buf", "", 2))):
        d = out / f"rank-{rank}"
        assert fields(d) == [("MPI_Init", -1, -1, -1, 0, "", "", inside), ("MPI_Comm_rank", -1, -1, 0, 0, "", "", 0),
                             message, ("MPI_Finalize", -1, -1, -1, 0, "", "", 4 if early else -1)]
        assert raw_edges(d, "buf") == ({(1, 2, 32), (1, 3, 32)} if rank == 0 else {(2, 3, 32)})
        times_are_the_callers(d)


def test_a_program_without_mpi_is_the_launchers_rank(tmp_path, compile_c, monkeypatch):
    exe = compile_c(write_c(tmp_path, "plain", "int main(void) { return 0; }"), markers=False)
    monkeypatch.setenv("PMI_RANK", "3")
    traced = trace([str(exe)], tmp_path / "out", progress=False, mpi=True)
    assert traced.path == str(tmp_path / "out" / "rank-3")
    assert (traced.summary["rank"], traced.summary["size"], traced.summary["mpi"]) == (3, None, None)
    assert "the program uses no MPI library: traced as rank 3, with no MPI calls" in traced.summary["warnings"]
    assert (tmp_path / "out" / "rank-3" / "mpi.csv").read_text().splitlines() == [
        "rank,seq,call,peer,tag,comm,bytes,object,posted,completed,request,task"]


DLOPEN = r"""
#include <dlfcn.h>
#include <stdio.h>
#include "tareador.h"
int main(void)
{
  void *mpi = dlopen("libmpi.so.40", RTLD_NOW | RTLD_GLOBAL);
  if (!mpi) { printf("%s\n", dlerror()); return 1; }
  int (*init)(int *, char ***) = (int (*)(int *, char ***)) dlsym(mpi, "MPI_Init");
  int (*comm_rank)(void *, int *) = (int (*)(void *, int *)) dlsym(mpi, "MPI_Comm_rank");
  int (*finalize)(void) = (int (*)(void)) dlsym(mpi, "MPI_Finalize");
  int rank = -1;
  tareador_ON();
  init(NULL, NULL);
  comm_rank(dlsym(mpi, "ompi_mpi_comm_world"), &rank);
  finalize();
  tareador_OFF();
  return rank < 0;
}
"""


def test_an_mpi_library_loaded_with_dlopen_is_hooked(tmp_path, compile_c):
    """As mpi4py loads it: hooked when dlopen returns, before MPI_Init (which Open MPI cannot
    run followed)."""
    require(MPIS["openmpi"])
    out = run_ranks(MPIS["openmpi"], [compile_c(write_c(tmp_path, "dlopen", DLOPEN))], tmp_path / "dlopen")
    for rank in (0, 1):
        assert fields(out / f"rank-{rank}") == [("MPI_Init", -1, -1, -1, 0, "", "", 0),
                                                ("MPI_Comm_rank", -1, -1, 0, 0, "", "", 0),
                                                ("MPI_Finalize", -1, -1, -1, 0, "", "", 0)]


def test_cli_names_the_ranks_directory(tmp_path, compile_c, monkeypatch, capsys):
    """The rank's trace is in DIR/rank-N, also when the program's markers are wrong."""
    exe = compile_c(write_c(tmp_path, "unbalanced", '#include "tareador.h"\nint main(void) {\n'
                                                    '  tareador_ON();\n  tareador_end_task("x");\n  return 0;\n}\n'))
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "1")
    assert main(["trace", "--mpi", "--no-progress", "-o", str(tmp_path / "run"), str(exe)]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("tareador: tareador_end_task(\"x\") without a matching tareador_start_task")
    assert error.endswith(f"(partial trace written to {tmp_path / 'run' / 'rank-1'})")
    assert (tmp_path / "run" / "rank-1" / "tasks.csv").exists()
