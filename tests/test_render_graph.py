"""The dependency graph drawing: hand-made graphs for exact edges, a real trace end to end."""

from __future__ import annotations

import re

import pytest

from tareador.cli.main import main
from tareador.render.graph import write_graph
from tareador.render.summary import format_summary
from tareador.taskgraph.model import Dependency, Fragment, TaskTrace
from tareador.tracing.run import trace
from tests.helpers import EXAMPLES


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
