"""Nested tasks on real binaries: a task that creates tasks is cut into fragments at each
creation, exactly like main; exact fragment tables, schedule edges and critical paths."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tareador.simulation.list_scheduler import simulate
from tareador.taskgraph.dag import schedule_edges
from tareador.tracing.run import trace
from tests.helpers import EXAMPLES, write_c

PRELUDE = ("#include <tareador.h>\n"
           "#define T(name, body) do { tareador_start_task(name); body; tareador_end_task(name); } while (0)\n")


# The taskwait pattern: parent writes x, its child reads x and writes y, then the parent reads y.
TWO_WAY = """
int x, y, z;
int main(void) {
  tareador_ON();
  tareador_start_task("parent");
  x = 1;
  T("child", y = x + 1);
  z = y + 1;
  tareador_end_task("parent");
  tareador_OFF();
  return z != 3;
}"""


def traced(compile_c, tmp_path, name: str, body: str):
    exe = compile_c(write_c(tmp_path, name, PRELUDE + body))
    return trace([str(exe)], tmp_path / f"{name}.tareador", progress=False)


def rows(t) -> list[tuple[str, int, int]]:
    """(name, instance, parent) of every fragment, in id order."""
    return [(x.name, x.instance, x.parent) for x in t.fragments]


def raw_edges(t) -> set[tuple[int, int, str, int]]:
    return {(d.src, d.dst, d.object, d.bytes) for d in t.deps if d.kind == "RAW"}


def longest(weights: dict[int, int], edges: set[tuple[int, int]]) -> int:
    finish: dict[int, int] = {}
    for i in sorted(weights):  # ids are topological here: every edge goes to a later fragment
        finish[i] = weights[i] + max((finish[s] for s, d in edges if d == i), default=0)
    return max(finish.values())


def test_child_reads_parent_and_parent_reads_child(compile_c, tmp_path):
    """The taskwait pattern used to be reported as a 'dependency cycle' and lose the trace."""
    t = traced(compile_c, tmp_path, "twoway", TWO_WAY)
    assert rows(t) == [("main", 0, -1), ("parent", 1, 0), ("child", 2, 1), ("parent", 1, 0), ("main", 0, -1)]
    assert raw_edges(t) == {(1, 2, "x", 4), (2, 3, "y", 4)}
    assert schedule_edges(t.dag) == {(0, 1), (1, 2), (2, 3), (1, 3), (0, 4)}
    assert t.summary["instances"] == 2 and t.summary["task_fragments"] == 3
    assert t.tinf == sum(x.instructions for x in t.fragments[:4])


def test_child_of_a_late_parent_waits_for_its_creation(compile_c, tmp_path):
    """A long independent task, then a parent whose child depends on nothing: the child runs beside
    the long task but not before its parent created it."""
    t = traced(compile_c, tmp_path, "late", """
double a[4000], c[4000];
int main(void) {
  tareador_ON();
  T("long", for (int i = 0; i < 4000; i++) a[i] = i * 0.5);
  tareador_start_task("parent");
  T("child", for (int i = 0; i < 1000; i++) c[i] = i);
  tareador_end_task("parent");
  tareador_OFF();
  return 0;
}""")
    assert rows(t) == [("main", 0, -1), ("long", 1, 0), ("main", 0, -1), ("parent", 3, 2), ("child", 4, 3),
                       ("parent", 3, 2), ("main", 0, -1)]
    assert raw_edges(t) == set()
    edges = schedule_edges(t.dag)
    assert edges == {(0, 1), (0, 2), (2, 3), (3, 4), (3, 5), (2, 6)}
    w = {x.id: x.instructions for x in t.fragments}
    assert t.tinf == longest(w, edges) == max(w[0] + w[1], w[0] + w[2] + w[3] + w[4])
    on_two = simulate(t.dag, 2)
    assert on_two.start[4] >= on_two.finish[3]  # the child never runs before its parent's first fragment
    assert on_two.makespan == t.tinf


def test_three_levels_deep(compile_c, tmp_path):
    """Each level passes data down to its child and reads the child's result back."""
    t = traced(compile_c, tmp_path, "deep", """
int x, y, z, w, v, out;
int main(void) {
  tareador_ON();
  tareador_start_task("L1");
  x = 1;
  tareador_start_task("L2");
  y = x;
  T("L3", z = y + 1);
  w = z;
  tareador_end_task("L2");
  v = w;
  tareador_end_task("L1");
  out = v;
  tareador_OFF();
  return out != 2;
}""")
    assert rows(t) == [("main", 0, -1), ("L1", 1, 0), ("L2", 2, 1), ("L3", 3, 2), ("L2", 2, 1), ("L1", 1, 0),
                       ("main", 0, -1)]
    assert raw_edges(t) == {(1, 2, "x", 4), (2, 3, "y", 4), (3, 4, "z", 4), (4, 5, "w", 4), (5, 6, "v", 4)}
    creation, chains = {(0, 1), (1, 2), (2, 3)}, {(2, 4), (1, 5), (0, 6)}
    assert schedule_edges(t.dag) == creation | chains | {(s, d) for s, d, _, _ in raw_edges(t)}
    assert t.tinf == t.t1  # the data flow makes it a chain
    assert t.summary["instances"] == 3


def test_siblings_inside_a_task_run_in_parallel(compile_c, tmp_path):
    """A parent creates three independent children and then reads their results: its fragments
    are a chain, each child hangs off the fragment that created it."""
    t = traced(compile_c, tmp_path, "siblings", """
double r[3][512];
double total;
static void work(double *out) { for (int i = 0; i < 512; i++) out[i] = i * 2.0; }
int main(void) {
  tareador_ON();
  tareador_start_task("parent");
  for (int k = 0; k < 3; k++) T("child", work(r[k]));
  for (int k = 0; k < 3; k++) total += r[k][511];
  tareador_end_task("parent");
  tareador_OFF();
  return 0;
}""")
    names = [x.name for x in t.fragments]
    assert names == ["main", "parent", "child", "parent", "child", "parent", "child", "parent", "main"]
    assert [(s, d) for s, d, obj, b in sorted(raw_edges(t)) if obj == "r"] == [(2, 7), (4, 7), (6, 7)]
    assert all(b == 8 for s, d, obj, b in raw_edges(t) if obj == "r")
    edges = schedule_edges(t.dag)
    assert {(1, 2), (3, 4), (5, 6), (1, 3), (3, 5), (5, 7)} <= edges
    w = {x.id: x.instructions for x in t.fragments}
    assert t.tinf == longest(w, edges)
    assert t.tinf < t.t1 - 2 * w[2]  # two of the three children are off the critical path
    assert t.summary["instances"] == 4 and t.summary["task_fragments"] == 7


def test_a_task_named_main_is_a_task(compile_c, tmp_path):
    t = traced(compile_c, tmp_path, "named_main", """
double a[2000], b[2000];
int main(void) {
  tareador_ON();
  T("main", for (int i = 0; i < 2000; i++) a[i] = i);
  T("other", for (int i = 0; i < 2000; i++) b[i] = i);
  tareador_OFF();
  return 0;
}""")
    assert [(x.name, x.is_main) for x in t.fragments] == [("main", True), ("main", False), ("main", True),
                                                      ("other", False), ("main", True)]
    assert t.summary["instances"] == 2 and t.task_types == ["main", "other"]
    w = [x.instructions for x in t.fragments]
    assert t.tinf == max(w[0] + w[1], w[0] + w[2] + w[3], w[0] + w[2] + w[4])
    assert t.parallelism > 1.8


def test_on_twice_then_off_ends_the_region(compile_c, tmp_path):
    """ON/OFF do not nest: a second ON is ignored with a warning, the first OFF stops the analysis."""
    t = traced(compile_c, tmp_path, "onoff", """
int a, b;
int main(void) {
  tareador_ON();
  tareador_ON();
  T("A", a = 1);
  tareador_OFF();
  T("B", b = a);
  tareador_ON();
  T("C", b = a + 1);
  tareador_OFF();
  return 0;
}""")
    assert [x.name for x in t.fragments] == ["main", "A", "main", "main", "C", "main"]
    assert {x.instance for x in t.fragments if x.is_main} == {0}
    assert raw_edges(t) == {(1, 4, "a", 4)}
    assert any("tareador_ON() was called 1 time(s) while the analysis was already on" in w
               for w in t.summary["warnings"])


def test_graph_draws_a_parent_as_the_box_of_its_fragments(compile_c, tmp_path):
    from tareador.cli.main import main

    out = traced(compile_c, tmp_path, "twoway", TWO_WAY).path
    assert main(["graph", out]) == 0
    text = (Path(out) / "graph.dot").read_text()
    cluster = text[text.index("subgraph cluster_1"):]
    cluster = cluster[:cluster.index("}")]
    assert re.findall(r"^\s*(\d+) \[", cluster, re.M) == ["1", "3"] and 'label="parent #1"' in cluster
    assert "(1/2)" in cluster and "(2/2)" in cluster
    assert set(re.findall(r"^\s*(\d+) -> (\d+)", text, re.M)) == {("1", "2"), ("2", "3")}
    assert "main #" not in text
    assert "<svg" in (Path(out) / "graph.svg").read_text()


def treesum_fragments(levels: int) -> tuple[list[tuple[str, int, int]], set[tuple[int, int]]]:
    """examples/treesum's fragments (name, instance, parent) in creation order and its RAW edges
    through sum[], derived from the recursion as its header comment states them."""
    frags: list[tuple[str, int, int]] = [("main", 0, -1)]
    raw: set[tuple[int, int]] = set()
    leaves = 1 << levels

    def reduce(node: int, creator: int) -> int:
        """Appends the task's fragments; returns the id of its last one (the one that writes sum[node])."""
        first = len(frags)
        if node >= leaves:
            frags.append(("leaf", first, creator))
            return first
        frags.append(("split", first, creator))
        ends = []
        for child in (2 * node, 2 * node + 1):
            ends.append(reduce(child, len(frags) - 1))
            frags.append(("split", first, creator))
        raw.update((end, len(frags) - 1) for end in ends)
        return len(frags) - 1

    root_end = reduce(1, 0)
    frags.append(("main", 0, -1))
    raw.add((root_end, len(frags) - 1))
    return frags, raw


@pytest.mark.parametrize("levels", [1, 2, 3])
def test_treesum_example_exact_dag(compile_c, tmp_path, capsys, levels):
    """Nesting 1 to 3 deep, end to end: fragments, RAW edges, T-inf, and the Dimemas traces."""
    from tareador.cli.main import main

    exe = compile_c(EXAMPLES / "treesum" / "treesum.c")
    t = trace([str(exe), str(levels), "32"], tmp_path / "t", progress=False)
    frags, raw = treesum_fragments(levels)
    assert rows(t) == frags
    sums = [o.name for o in t.objects if o.site.endswith("treesum.c:49)")]
    assert len(sums) == 1
    assert {(s, d) for s, d, obj, b in raw_edges(t) if obj == sums[0]} == raw
    assert all(b == 8 for s, d, obj, b in raw_edges(t) if obj == sums[0])
    edges = schedule_edges(t.dag)
    w = {x.id: x.instructions for x in t.fragments}
    assert t.tinf == longest(w, edges)
    leaves = [x.instructions for x in t.fragments if x.name == "leaf"]
    assert t.tinf <= t.t1 - (len(leaves) - 1) * min(leaves)  # the leaves overlap
    assert main(["simulate", t.path, "--cores", "inf", "--overhead", "0", "--dim", "-o", str(tmp_path)]) == 0
    capsys.readouterr()
    machine = tmp_path / "wide.toml"
    machine.write_text(f"[cpu]\ncores_per_node = {len(t.fragments)}\n")
    for dim, expected in (("ompss.dim", t.tinf), ("authentic.dim", t.t1)):
        assert main(["replay", str(tmp_path / dim), "--machine", str(machine), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["makespan"] == pytest.approx(expected / 1e9, rel=1e-9)


def test_progress_counts_task_instances_not_fragments(compile_c, tmp_path):
    from tareador.tracing.driver import run_agent

    exe = compile_c(write_c(tmp_path, "progress", PRELUDE + """
int x;
int main(void) {
  tareador_ON();
  tareador_start_task("parent");
  T("child", x = 1);
  T("child", x = 2);
  tareador_end_task("parent");
  tareador_OFF();
  return 0;
}"""))
    seen = []
    run_agent([str(exe)], tmp_path, progress=seen.append)
    assert seen and seen[-1]["tasks"] == 3  # parent and two children; 7 fragments with main's


FIB = r'''
#include <stdlib.h>
#include "tareador.h"
static long fib(int n)
{
  if (n < 2) return n;
  long x, y;
  tareador_start_task("fib");
  x = fib(n - 1);
  tareador_end_task("fib");
  tareador_start_task("fib");
  y = fib(n - 2);
  tareador_end_task("fib");
  return x + y;   /* the taskwait: reads what both children wrote into this frame */
}
int main(int argc, char **argv)
{
  tareador_ON();
  long r = fib(atoi(argv[1]));
  tareador_OFF();
  return r == 5 ? 0 : 1;
}
'''


def test_children_write_their_parents_locals(compile_c, tmp_path):
    """fib(5) with a task per recursive call, results in the caller's locals x and y (the classic
    OmpSs/OpenMP example): the fragment that adds x + y (the caller's last) depends on both
    children through its own stack frame, however deep. fib(n) creates children for n >= 2; the
    15 calls of fib(5) are main's and 14 tasks, 7 of which (n >= 2) create two children each.
    Nothing else is shared but the stack slots a caller passes n through (-O0), so every RAW edge
    between two instances is a child's result into its parent or a parent's n into its child.
    (At -O2 x lives in a callee-saved register across the second call: no memory carries it.)"""
    t = trace([str(compile_c(write_c(tmp_path, "fib", FIB))), "5"], tmp_path / "t", progress=False)
    instances = {f.id: f for f in t.fragments if f.starts_instance and not f.is_main}
    assert len(instances) == 14
    last = {}
    for f in t.fragments:
        last[f.instance] = f  # fragments are in id order: the last one is the instance's end
    owner = {f.id: f.instance for f in t.fragments}
    children: dict[int, list[int]] = {}
    for i, f in instances.items():
        children.setdefault(owner[f.parent], []).append(i)
    raw = {(owner[d.src], owner[d.dst], d.src, d.dst) for d in t.deps
           if d.kind == "RAW" and d.object.startswith("stack")}
    parents = [p for p in children if p in instances]
    assert len(parents) == 6  # fib(4), fib(3) twice, fib(2) three times, all but main's fib(5)
    for p in children:
        for c in children[p]:
            assert (c, p, last[c].id, last[p].id) in raw, (c, p)
    crossing = {(a, b) for a, b, _, _ in raw if a != b}
    assert crossing <= {(c, p) for p in children for c in children[p]} | {(p, c) for p in children for c in children[p]}
    assert t.tinf < t.t1
