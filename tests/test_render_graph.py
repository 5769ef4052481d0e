"""The dependency graph drawing: hand-made graphs for exact edges, a real trace end to end."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

from tareador.cli.main import main
from tareador.render.graph import write_graph
from tareador.render.summary import format_summary
from tareador.taskgraph.dag import contract
from tareador.taskgraph.model import Dependency, Fragment, TaskTrace
from tareador.tracing.run import trace
from tests.helpers import EXAMPLES, make, write_c


def diamond() -> TaskTrace:
    tasks = [Fragment(0, "main", 0, -1, 0, 1, 1)] + [
        Fragment(i, "a" if i in (1, 4) else "b", i, 0, i, i + 1, 10 * i) for i in range(1, 5)]
    deps = [Dependency(s, d, "RAW", f"x{s}{d}", 8) for s, d in [(1, 2), (1, 3), (2, 4), (3, 4), (1, 4)]]
    deps.append(Dependency(2, 3, "WAR", "y", 4))
    return TaskTrace(tasks, deps, [], {})


def dot_edges(path) -> set[tuple[int, int]]:
    return {(int(a), int(b)) for a, b in re.findall(r"^\s*(\d+) -> (\d+)", path.read_text(), re.M)}


def test_transitive_edges_hidden_unless_asked(tmp_path):
    out = write_graph(diamond(), tmp_path / "reduced")
    assert dot_edges(out["graph (dot)"]) == {(1, 2), (1, 3), (2, 4), (3, 4)}
    out = write_graph(diamond(), tmp_path / "all", all_edges=True)
    assert dot_edges(out["graph (dot)"]) == {(1, 2), (1, 3), (2, 4), (3, 4), (1, 4)}
    assert out["graph (svg)"].read_bytes().startswith(b"<?xml")
    out = write_graph(diamond(), tmp_path / "main", show_main=True)
    assert dot_edges(out["graph (dot)"]) == {(0, 1), (1, 2), (1, 3), (2, 4), (3, 4)}


def test_order_through_main_survives_folding(tmp_path):
    """main reads a's result before it creates b: b cannot start before a ends, and with main
    folded that shows as an a -> b edge; c, created before main read anything, stays apart."""
    tasks = [Fragment(0, "main", 0, -1, 0, 1, 1), Fragment(1, "a", 1, 0, 1, 11, 10),
             Fragment(2, "c", 2, 0, 11, 21, 10), Fragment(3, "main", 0, -1, 21, 22, 1),
             Fragment(4, "b", 4, 3, 22, 32, 10), Fragment(5, "main", 0, -1, 32, 33, 1)]
    trace = TaskTrace(tasks, [Dependency(1, 3, "RAW", "r", 8)], [], {})
    assert dot_edges(write_graph(trace, tmp_path)["graph (dot)"]) == {(1, 4)}
    text = (tmp_path / "graph.dot").read_text()
    assert re.search(r"^\s*1 -> 4 \[.*dashed", text, re.M) and "main #" not in text


def test_creation_edge_also_carrying_a_war_is_drawn(tmp_path):
    """main reads c's result, then creates a, which overwrites what main read (WAR main -> a):
    a still follows c. The creation edge used to vanish when a WAR ran along it, and c -> a with it."""
    tasks = [Fragment(0, "main", 0, -1, 0, 1, 1), Fragment(1, "c", 1, 0, 1, 11, 10),
             Fragment(2, "main", 0, -1, 11, 12, 1), Fragment(3, "a", 3, 2, 12, 22, 10),
             Fragment(4, "main", 0, -1, 22, 23, 1)]
    deps = [Dependency(1, 2, "RAW", "r", 8), Dependency(2, 3, "WAR", "r", 8)]
    assert dot_edges(write_graph(TaskTrace(tasks, deps, [], {}), tmp_path)["graph (dot)"]) == {(1, 3)}
    shown = write_graph(TaskTrace(tasks, deps, [], {}), tmp_path / "main", show_main=True)["graph (dot)"]
    assert dot_edges(shown) == {(0, 1), (1, 2), (2, 3), (2, 4)}  # 0 -> 2 is implied


@pytest.mark.fast
def test_too_large_to_lay_out_writes_the_dot_and_says_why(tmp_path):
    tasks = [Fragment(0, "main", 0, -1, 0, 0, 0)] + [Fragment(i, "t", i, 0, i, i, 5) for i in range(1, 2502)]
    said = []
    out = write_graph(TaskTrace(tasks, [], [], {}), tmp_path, collapse="never", report=said.append)
    assert set(out) == {"graph (dot)"} and not (tmp_path / "graph.svg").exists()
    assert len(said) == 1 and "2501 nodes" in said[0] and "--collapse auto" in said[0]


@pytest.mark.fast
def test_a_huge_graph_is_written_without_the_quadratic_reduction(tmp_path):
    """5000 instances past the layout limit: the transitive reduction (a minute here, hours at
    100,000) is skipped and every edge written, so the transitive 1 -> 3 stays."""
    tasks = [Fragment(0, "main", 0, -1, 0, 0, 0)] + [Fragment(i, "t", i, 0, i, i, 5) for i in range(1, 5001)]
    deps = [Dependency(i, i + k, "RAW", "o", 4) for i in range(1, 4999) for k in (1, 2)]
    out = write_graph(TaskTrace(tasks, deps, [], {}), tmp_path, collapse="never", report=lambda message: None)
    edges = dot_edges(out["graph (dot)"])
    assert len(edges) == len(deps) and (1, 3) in edges


WAVES = r"""
#include <stdlib.h>
#include "tareador.h"
static void produce(double *v, int i, int k) { v[i] = v[i] * 0.5 + k + i; }
int main(int argc, char **argv) {
  int w = atoi(argv[1]), waves = atoi(argv[2]);
  double *v = calloc(w, sizeof *v), total = 0;
  tareador_ON();
  for (int k = 0; k < waves; k++) {
    for (int i = 0; i < w; i++) {
      tareador_start_task("produce");
      produce(v, i, k);
      tareador_end_task("produce");
    }
    for (int i = 0; i < w; i++) total += v[i];  /* main waits for the whole wave */
  }
  tareador_OFF();
  return total < 0;
}
"""


def test_main_joining_waves_is_drawn_not_folded_past_the_layout_limit(compile_c, tmp_path, capsys):
    """W tasks per wave, each reading its predecessor of the previous wave; main sums every
    result before creating the next wave. Past 2000 nodes nothing is reduced, and folding that
    main fragment would join each task to every task of every later wave (W^2 K^2 / 2 edges:
    2,050,000 here, a 91 MB DOT). It stays, drawn as the join it is; main's other fragments
    (one predecessor, or none, or no successor) fold away. Edges: task -> task of the next
    wave W(K-1), task -> its wave's join W(K-1), join -> each task of the next wave W(K-1),
    join -> next join K-2: 6039 for W = 50, K = 41."""
    w, waves = 50, 41
    exe = compile_c(write_c(tmp_path, "waves", WAVES))
    trace([str(exe), str(w), str(waves)], tmp_path / "t", progress=False)
    assert main(["graph", str(tmp_path / "t"), "--collapse", "never", "-o", str(tmp_path / "g")]) == 0
    assert "main's fragments that join many tasks to many are drawn" in capsys.readouterr().err
    text = (tmp_path / "g" / "graph.dot").read_text()
    joins = {int(j) for j in re.findall(r"^\s*(\d+) \[label=\"main #", text, re.M)}
    edges = dot_edges(tmp_path / "g" / "graph.dot")
    assert len(joins) == waves - 1 and len(edges) == 3 * w * (waves - 1) + waves - 2
    into, out_of = {j: sum(d == j for _, d in edges) for j in joins}, {j: sum(s == j for s, _ in edges) for j in joins}
    assert set(into.values()) == {w, w + 1} and set(out_of.values()) == {w + 1, w}  # the first and last joins


def contracted(edges: list[tuple[int, int]], removed: list[int]) -> tuple[set[tuple[int, int]], list[int]]:
    """dag.contract of a 13-fragment graph with these edges (indices)."""
    dag = make([("main", -1, 1)] + [("t", 0, 1)] * 12, []).dag
    src, dst = (np.array(column, np.int64) for column in zip(*sorted(edges)))
    mask = np.zeros(dag.n, bool)
    mask[removed] = True
    pairs, stayed = contract(replace(dag, src=src, dst=dst), mask)
    return set(pairs), stayed


def test_contract_adds_no_edge():
    """A node with one predecessor or one successor (or two of each) is contracted, the others
    stay; contracting in order, a chain of them folds into its first predecessor."""
    edges = [(1, 10), (2, 10), (3, 10), (10, 4), (10, 5), (10, 6), (7, 11), (11, 12), (12, 8), (12, 9)]
    folded, kept = contracted(edges, [10, 11, 12])
    assert kept == [10] and folded == {(1, 10), (2, 10), (3, 10), (10, 4), (10, 5), (10, 6), (7, 8), (7, 9)}
    folded, kept = contracted([(1, 3), (2, 3), (3, 4), (3, 5)], [3])  # two and two: 4 edges either way
    assert kept == [] and folded == {(1, 4), (1, 5), (2, 4), (2, 5)}


def test_labels_legend_and_no_war(tmp_path):
    text = write_graph(diamond(), tmp_path)["graph (dot)"].read_text()
    assert "x12 8 B" in text and "y" not in re.findall(r'label="([^"]*)"', text)
    assert "(2, 3)" not in str(dot_edges(tmp_path / "graph.dot"))
    assert "<TD>a</TD>" in text.replace(' BGCOLOR="#4477AA"', "") and "<TD>2</TD>" in text


def test_large_graphs_collapse_by_type(tmp_path):
    tasks = [Fragment(0, "main", 0, -1, 0, 0, 0)] + [
        Fragment(i, ("p", "q", "r")[i % 3], i, 0, i, i, 5) for i in range(1, 5001)]
    deps = [Dependency(i, i + 1, "RAW", "o", 4) for i in range(1, 5000)]
    out = write_graph(TaskTrace(tasks, deps, [], {}), tmp_path)
    text = out["graph (dot)"].read_text()
    labels = r'^\s*type\d+ \[label="([^\n]+)\n'
    assert set(re.findall(labels, text, re.M)) == {"p", "q", "r"}
    shown = write_graph(TaskTrace(tasks, deps, [], {}), tmp_path / "main", show_main=True)["graph (dot)"].read_text()
    assert set(re.findall(labels, shown, re.M)) == {"p", "q", "r", "main (the program's own code)"}
    assert "5000 task instances collapsed" in text
    assert "1667 instances" in text  # r: 3, 6, ..., 5001... p gets i % 3 == 0
    assert out["graph (svg)"].stat().st_size < 100_000


@pytest.mark.fast
def test_summary_numbers():
    text = format_summary(diamond())
    # T1 = 1 + 10 + 20 + 30 + 40; T-inf = main 1 + a1 10 + b3 30 + a4 40
    assert "T1 (total work)   101 instructions" in text
    assert "T-inf (crit.path) 81 instructions" in text
    assert "parallelism       1.25" in text


def test_graph_command_on_a_real_trace(compile_c, tmp_path, capsys):
    exe = compile_c(EXAMPLES / "cholesky" / "cholesky.c")
    trace([str(exe), "3", "4"], tmp_path / "t", progress=False)
    assert main(["graph", str(tmp_path / "t")]) == 0
    out = capsys.readouterr().out
    assert "task instances    10 of 4 task types" in out
    text = (tmp_path / "t" / "graph.dot").read_text()
    potrf = [int(i) for i in re.findall(r'^\s*(\d+) \[label="potrf', text, re.M)]
    trsm = [int(i) for i in re.findall(r'^\s*(\d+) \[label="trsm', text, re.M)]
    assert len(potrf) == 3 and len(trsm) == 3
    assert (potrf[0], trsm[0]) in dot_edges(tmp_path / "t" / "graph.dot")
    assert "potrf" in (tmp_path / "t" / "graph.svg").read_text()
