"""The agent's tables leave the traced process as files while it runs, a buffer of rows at a time
(tracer_agents/tables.c, tareador/tracing/decode.py): a run's tables may be far larger than a
message (Frida's 128 MiB), and rows that outgrew the agent's buffers midway through a fragment
(edges, access hulls) add up to exactly what one buffer would have held."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest

from tareador import load
from tareador.errors import TracingError
from tareador.taskgraph import columns
from tareador.taskgraph.dag import span
from tareador.tracing import driver
from tareador.tracing.run import trace
from tests.helpers import EXAMPLES, ROOT, write_c

WAVEFRONT = ROOT / "benchmarks" / "wavefront_kernel.c"

# Ten tasks each fill a block of their own; main's last fragment then reads them all: one
# fragment with ten edges and ten access rows, more than a buffer of three rows holds.
GATHER = r"""
#include <stdlib.h>
#include "tareador.h"
#define N 10
static int fill(int *p, int v) { for (int k = 0; k < 4; k++) p[k] = v + k; return v; }
int main(int argc, char **argv)
{
  int *part[N], sum = 0;
  for (int t = 0; t < N; t++) part[t] = malloc(4 * sizeof(int));
  tareador_ON();
  for (int t = 0; t < N; t++) {
    tareador_start_task("fill");
    fill(part[t], t);
    tareador_end_task("fill");
  }
  for (int t = 0; t < N; t++) sum += part[t][0] + part[t][3];
  if (argc > 1) *(volatile int *) 0 = sum;   /* a crash once everything ran */
  tareador_OFF();
  return sum == 2 * 45 + 3 * N ? 0 : 1;
}
"""

TABLES = ("tasks.csv", "deps.csv", "objects.csv", "accesses.csv", "calls.csv")


def wavefront_edges(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The RAW edges of the wavefront, sorted by (dst, src): cell (i, j) is fragment 2(i n + j) + 1,
    each cell after main's fragment that created it."""
    cell = 2 * np.arange(n * n).reshape(n, n) + 1
    src = np.concatenate([cell[:-1, :].ravel(), cell[:, :-1].ravel()])
    dst = np.concatenate([cell[1:, :].ravel(), cell[:, 1:].ravel()])
    order = np.lexsort((src, dst))
    return src[order], dst[order]


def wavefront_tinf(work: np.ndarray, n: int) -> int:
    """T∞ of the wavefront from its fragments' instructions, row by row: main's fragments are a
    chain (M_k before M_k+1), cell k follows M_k, the cell to its left and the one above:
    F[j] = w[j] + max(base[j], F[j - 1]) with base[j] = max(M[j], F_above[j]), that is
    F[j] = W[j] + max over k <= j of (base[k] - W[k - 1]), W the running sum of w."""
    main_end = np.cumsum(work[0::2])  # M_0 .. M_{n^2}
    cells = work[1::2].reshape(n, n)
    above, longest = np.zeros(n, np.int64), int(main_end[-1])
    for i in range(n):
        base = np.maximum(main_end[i * n:(i + 1) * n], above)
        w = np.cumsum(cells[i])
        above = w + np.maximum.accumulate(base - (w - cells[i]))
        longest = max(longest, int(above.max()))
    return longest


def test_a_million_task_instances_trace_beyond_the_old_message_limit(compile_c, tmp_path):
    """1,050,625 cells: every dependency is there, exactly (cell to cell, 8 bytes, RAW), T∞ is the
    wavefront's, and the run's tables (which once went to Python in one message) are well over
    128 MiB."""
    n = 1025
    exe = compile_c(WAVEFRONT, "-O2")
    t = trace([str(exe), str(n)], tmp_path / "w", progress=False)
    assert t.summary["instances"] == n * n and t.summary["task_fragments"] == n * n
    assert t.summary["main_fragments"] == n * n + 1 and not t.summary["partial"]
    deps = columns.read_table(tmp_path / "w", "deps")
    src, dst = wavefront_edges(n)
    assert len(deps) == len(src) == 2 * n * (n - 1)
    assert (deps["src"] == src).all() and (deps["dst"] == dst).all()
    assert (deps["kind"] == 0).all() and (deps["bytes"] == 8).all()
    heap = [o.name for o in t.objects if o.kind == "heap"]
    assert len(heap) == 1 and (deps["object"] == [o.name for o in t.objects].index(heap[0])).all()
    assert sum((tmp_path / "w" / "tables" / f"{name}.npy").stat().st_size
               for name in ("tasks", "deps", "accesses")) > 128 << 20
    with (tmp_path / "w" / "deps.csv").open() as f:
        assert sum(1 for _ in f) == len(src) + 1
    work = columns.read_table(tmp_path / "w", "tasks")["instructions"].astype(np.int64)
    assert t.summary["tinf"] == t.tinf == wavefront_tinf(work, n)


@pytest.fixture
def small_buffers(monkeypatch):
    """The agent writes its tables out every three rows."""
    monkeypatch.setattr(driver, "TABLE_ROWS", 3)


def test_tables_written_every_three_rows_are_the_same_trace(compile_c, tmp_path, monkeypatch):
    """Cholesky (task bodies called with arguments: calls.csv) and a fragment with ten edges and
    ten access rows: traced with the agent's buffers at three rows, every table is byte for byte
    the one traced with the default buffers."""
    programs = [([str(compile_c(EXAMPLES / "cholesky" / "cholesky.c", "-O2 -fno-inline")), "4", "8"], "cholesky"),
                ([str(compile_c(write_c(tmp_path, "gather", GATHER)))], "gather")]
    for argv, name in programs:
        trace(argv, tmp_path / f"{name}-default", progress=False)
        monkeypatch.setattr(driver, "TABLE_ROWS", 3)
        trace(argv, tmp_path / f"{name}-small", progress=False)
        monkeypatch.undo()
        for table in TABLES:
            small, default = (tmp_path / f"{name}-{buffers}" / table for buffers in ("small", "default"))
            assert small.read_bytes() == default.read_bytes()
    calls = (tmp_path / "cholesky-small" / "calls.csv").read_text().splitlines()
    assert len(calls) == 1 + 20  # 4 potrf, 6 trsm, 6 syrk, 4 gemm: one body call each


def test_a_fragment_with_more_edges_than_a_buffer(compile_c, tmp_path, small_buffers):
    """main's last fragment reads what each of the ten tasks wrote (two ints of each block): ten
    RAW edges of 8 bytes into it, one per block, and its access rows name the ten blocks."""
    exe = compile_c(write_c(tmp_path, "gather", GATHER))
    t = trace([str(exe)], tmp_path / "g", progress=False)
    fills = [x.id for x in t.fragments if x.name == "fill"]
    last = t.fragments[-1].id
    into_last = sorted((d.src, d.kind, d.bytes) for d in t.deps if d.dst == last)
    assert into_last == [(f, "RAW", 8) for f in fills]
    assert len({d.object for d in t.deps if d.dst == last}) == 10
    rows = [r.split(",") for r in (tmp_path / "g" / "accesses.csv").read_text().splitlines()[1:]]
    reads = {r[1]: (int(r[3]), int(r[4])) for r in rows if int(r[0]) == last and r[1].startswith("heap")}
    assert len(reads) == 10 and set(reads.values()) == {(0, 16)}  # hull of ints 0 and 3


def test_a_crash_keeps_every_row_written_before_it(compile_c, tmp_path, small_buffers):
    """Rows the agent wrote out in small buffers before the program crashed, and those it still
    held, are all in the partial trace."""
    exe = compile_c(write_c(tmp_path, "gather", GATHER))
    t = trace([str(exe), "crash"], tmp_path / "c", progress=False)
    assert t.summary["partial"] and t.summary["signal"] == "SIGSEGV"
    assert t.summary["instances"] == 10 and len(t.fragments) == 21
    last = t.fragments[-1].id
    assert sorted(d.src for d in t.deps if d.dst == last and d.kind == "RAW") == [x.id for x in t.fragments
                                                                                  if x.name == "fill"]


def test_a_full_disk_while_tracing_is_one_line_and_writes_nothing(compile_c, tmp_path, monkeypatch, small_buffers):
    """The agent's table files are on a full disk (/dev/full: every write fails with ENOSPC):
    tareador says so in one line, and neither writes a trace nor leaves its own files behind."""
    exe = compile_c(write_c(tmp_path, "gather", GATHER))
    made = tempfile.mkdtemp

    def on_a_full_disk(**where):
        directory = Path(made(**where))
        if where.get("prefix") == ".tracing-":  # the agent's private directory, not check_output's probe
            for name in ("tasks.bin", "edges.bin", "accesses.bin", "calls.bin", "objects.bin"):
                (directory / name).symlink_to("/dev/full")
        return str(directory)

    monkeypatch.setattr(tempfile, "mkdtemp", on_a_full_disk)
    out = tmp_path / "full"
    with pytest.raises(TracingError) as error:
        trace([str(exe)], out, progress=False)
    assert str(error.value) == (f"writing the trace's tables in {out} failed (No space left on device): make room "
                                "there, or choose another -o, and trace again")
    assert not out.exists()


def test_the_binary_tables_are_the_csvs(compile_c, tmp_path):
    """tables/ holds what the CSVs say: the same rows, names through names.json."""
    exe = compile_c(EXAMPLES / "cholesky" / "cholesky.c", "-O2 -fno-inline")
    t = trace([str(exe), "4", "8"], tmp_path / "t", progress=False)
    names = json.loads((tmp_path / "t" / "tables" / "names.json").read_text())
    tasks = columns.read_table(tmp_path / "t", "tasks")
    assert [(names["tasks"][r["name"]], int(r["instance"]), int(r["instructions"])) for r in tasks] == \
        [(x.name, x.instance, x.instructions) for x in t.fragments]
    assert [names["objects"][o] for o in columns.read_table(tmp_path / "t", "deps")["object"]] == \
        [d.object for d in t.deps]
    accesses = columns.read_table(tmp_path / "t", "accesses")
    text = [r.split(",") for r in (tmp_path / "t" / "accesses.csv").read_text().splitlines()[1:]]
    assert [[str(a["task"]), names["objects"][a["object"]]] + [str(a[c]) for c in ("part", "read_lo", "read_hi",
                                                                                    "write_lo", "write_hi")]
            for a in accesses] == text
    calls = columns.read_table(tmp_path / "t", "calls")
    assert [names["functions"][c] for c in calls["function"]] == \
        [r.split(",")[1] for r in (tmp_path / "t" / "calls.csv").read_text().splitlines()[1:]]


@pytest.mark.parametrize("example, args", [("cholesky", ["4", "8"]), ("treesum", ["4", "16"]),
                                           ("heat", ["32", "8", "2"]), ("sparselu", ["4", "8"])])
def test_the_agents_critical_path_is_the_loaded_traces(compile_c, tmp_path, example, args):
    """T∞ is computed in the agent, fragment by fragment, as tables stream out; loaded back from
    the CSVs, the same trace's critical path (taskgraph/dag.py's span) is the same number."""
    exe = compile_c(EXAMPLES / example / f"{example}.c", "-O2 -fno-inline")
    t = trace([str(exe), *args], tmp_path / example, progress=False)
    loaded = load(tmp_path / example)
    assert t.summary["tinf"] == loaded.summary["tinf"] == span(loaded.dag)
    assert t.summary["t1"] == sum(x.instructions for x in loaded.fragments)
