"""Task-parallel simulation: hand-derivable makespans, policies, overhead, the fast loader."""

from __future__ import annotations

import heapq
import math
import random

import numpy as np
import pytest

from tareador.analyses.speedup import parallelism_profile, study, utilisation
from tareador.errors import TraceDirError
from tareador.simulation.list_scheduler import simulate
from tareador.simulation.machine import Machine
from tareador.taskgraph import dag as dag_module
from tareador.taskgraph.model import Dependency, Fragment, TaskTrace
from tareador.taskgraph.store import load_dag, save
from tests.helpers import chain_and_side, fork_join, make, program, random_trace

pytestmark = pytest.mark.fast  # no program compiled, traced or launched (make test-fast)


def precedence(trace: TaskTrace) -> set[tuple[int, int]]:
    """The schedule's constraints written out fragment by fragment, as model.py states them: the
    reference the array construction of dag.py is checked against."""
    ids = {t.id for t in trace.fragments}
    edges = {(d.src, d.dst) for d in trace.deps if d.kind == "RAW" and d.src != d.dst}
    last_fragment: dict[int, int] = {}
    for t in sorted(trace.fragments, key=lambda t: t.id):
        if t.instance in last_fragment:
            edges.add((last_fragment[t.instance], t.id))
        elif t.parent in ids:
            edges.add((t.parent, t.id))
        last_fragment[t.instance] = t.id
    return edges


def makespans(trace: TaskTrace, cores, policy="cp", overhead=0) -> list[int]:
    dag = trace.dag
    return [simulate(dag, c, policy, overhead).makespan for c in cores]


def test_chain_never_speeds_up():
    t = make([("main", -1, 2), ("a", 0, 10), ("main", -1, 0), ("a", 2, 10), ("main", -1, 0), ("a", 4, 10),
              ("main", -1, 1)], [(1, 3), (3, 5), (5, 6)])
    assert t.t1 == 33 and t.tinf == 33
    assert makespans(t, [1, 2, 8, None]) == [33, 33, 33, 33]


def test_fork_join():
    assert makespans(fork_join(), [1, 2, 3, 4, None]) == [40, 20, 20, 10, 10]


def test_amdahl_serial_fraction():
    t = make([("main", -1, 30)] + [("work", 0, 10)] * 7, [])
    result = study(t.dag, [1, 7, None], "cp", Machine(instructions_per_second=10))
    assert result.t1 == 10.0 and result.tinf == 4.0 and result.parallelism == 2.5
    rows = list(result.table())
    assert [r["time"] for r in rows] == [10.0, 4.0, 4.0]
    assert rows[1]["speedup"] == pytest.approx(1 / (0.3 + 0.7 / 7))
    assert rows[1]["efficiency"] == pytest.approx(2.5 / 7)
    assert rows[2]["cores"] == math.inf and math.isnan(rows[2]["efficiency"]) and rows[2]["cores_used"] == 7
    assert result.table().records()[2]["cores"] == "inf" and result.table().records()[2]["efficiency"] is None


def test_critical_path_first_beats_fifo_by_one():
    # x1, x2, y (1 each) and z (3) reading y, all created at once; 2 cores.
    # FIFO runs x1,x2 then y then z: 5. CP runs y,x1 then z,x2: 4.
    t = make([("main", -1, 0), ("x", 0, 1), ("x", 0, 1), ("y", 0, 1), ("z", 0, 3)], [(3, 4)])
    assert makespans(t, [2], "fifo") == [5]
    assert makespans(t, [2], "cp") == [4]


def test_breadth_first_takes_tasks_as_they_become_ready():
    """a (1), b (4), c (4, reads a), d (6), all created at once; 2 cores.
    fifo, creation order: a,b; then c (created before d) at 1; d at 4 on b's core: 10.
    bf, ready order: a,b,d were ready first, c only at 1: a,b; d at 1; c at 4: 8.
    cp, bottom levels a 5, b 4, c 4, d 6: d,a; then b (4, created first) at 1; c at 5: 9."""
    t = make([("main", -1, 0), ("a", 0, 1), ("b", 0, 4), ("c", 0, 4), ("d", 0, 6)], [(1, 3)])
    assert [makespans(t, [2], p)[0] for p in ("fifo", "bf", "cp")] == [10, 8, 9]
    bf = simulate(t.dag, 2, "bf")
    assert bf.start.tolist() == [0, 0, 0, 4, 1]
    assert makespans(t, [1, None], "bf") == [15, 6]


def test_unbounded_cores_give_exactly_the_critical_path():
    rng = random.Random(7)
    rows = [("main", -1, rng.randint(0, 50))]
    raw = []
    for i in range(1, 400):
        if rng.random() < 0.1:
            rows.append(("main", -1, rng.randint(0, 50)))
        else:
            creator = max(k for k, r in enumerate(rows) if r[0] == "main")
            rows.append((rng.choice("abc"), creator, rng.randint(1, 10_000)))
            raw += [(rng.randrange(1, i), i) for _ in range(rng.randint(0, 3)) if rows[-1][0] != "main"]
    raw = [(s, d) for s, d in raw if rows[s][0] != "main"]
    t = make(rows, raw, war=[(d, s) for s, d in raw[:20]])
    assert makespans(t, [None], "cp") == makespans(t, [None], "fifo") == [t.tinf]
    one, many = makespans(t, [1, 10_000])
    assert one == t.t1 and many == t.tinf


def test_overhead_is_paid_by_tasks_not_main():
    assert makespans(fork_join(), [4, 1], overhead=5) == [15, 60]
    speedups = study(fork_join().dag, [4], "cp", Machine(), overhead=5).table().column("speedup")
    assert speedups[0] == pytest.approx(40 / 15)


def test_utilisation_and_profile():
    s = simulate(fork_join(width=3).dag, 2)
    assert s.makespan == 20
    assert utilisation(s).tolist() == [1.0, 0.5]
    times, running = parallelism_profile(s)
    assert times.tolist() == [0, 10, 20] and running.tolist() == [2, 1, 0]


def test_idle_cores_count_in_utilisation():
    """A chain on 4 cores keeps one core busy: 4 utilisations, efficiency 1/4."""
    t = make([("main", -1, 0), ("a", 0, 10), ("a", 0, 10), ("a", 0, 10)], [(1, 2), (2, 3)])
    s = simulate(t.dag, 4)
    assert utilisation(s).tolist() == [1.0, 0.0, 0.0, 0.0]
    result = study(t.dag, [4], "cp", Machine())
    assert result.utilisation_table().column("busy") == [1.0, 0.0, 0.0, 0.0]
    assert next(iter(result.table())) == {"cores": 4, "time": 30 / Machine().rate, "speedup": 1.0, "efficiency": 0.25,
                                          "cores_used": 1, "busy_min": 0.0, "busy_max": 1.0}


def test_fast_loader_matches_schedule_edges(tmp_path):
    rows = [("main", -1, 3), ("a", 0, 5), ("b", 1, 7), ("main", -1, 2), ("a", 3, 4), ("main", -1, 1)]
    t = make(rows, [(1, 4), (2, 4), (4, 5), (4, 4)], war=[(4, 1)])
    save(t, tmp_path / "d")
    fast, slow = load_dag(tmp_path / "d"), t.dag
    assert set(zip(fast.src.tolist(), fast.dst.tolist())) == precedence(t)
    for name in ("ids", "counter", "weight", "src", "dst", "dep_src", "dep_dst", "dep_bytes", "is_main"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    assert fast.names == slow.names


def test_loader_reads_quoted_names(tmp_path):
    save(make([("main", -1, 1), ('odd, "name"', 0, 2)], []), tmp_path / "d")
    assert load_dag(tmp_path / "d").names == ["main", 'odd, "name"']


def test_war_does_not_constrain():
    t = make([("main", -1, 0), ("a", 0, 5), ("b", 0, 5)], [], war=[(1, 2)])
    assert makespans(t, [2, None]) == [5, 5]


def test_critical_path_first_beats_fifo_by_five():
    """main(1) creates a1(5), a2(5), c(1), d(10) with c -> d (RAW); two cores.

    FIFO (creation order): t=1 a1, a2 start; t=6 c; t=7 d, which ends at 17.
    CP (bottom levels a1 = a2 = 5, c = 11, d = 10): t=1 c and a1; t=2 d on c's core; t=6 a2;
    d ends at 12 = the critical path 1 + 1 + 10, so CP wins by exactly 5.
    """
    t = make([("main", -1, 1), ("a", 0, 5), ("a", 0, 5), ("c", 0, 1), ("d", 0, 10)], [(3, 4)])
    dag = t.dag
    fifo, cp = simulate(dag, 2, "fifo"), simulate(dag, 2, "cp")
    assert fifo.makespan == 17 and cp.makespan == 12 == t.tinf
    assert fifo.start.tolist() == [0, 1, 1, 6, 7] and cp.start.tolist() == [0, 1, 6, 1, 2]


@pytest.mark.parametrize("seed", range(25))
def test_schedules_are_valid_and_within_graham_bounds(seed):
    rng = random.Random(seed)
    t = random_trace(rng, rng.randint(2, 60))
    dag = t.dag
    edges = precedence(t)
    for policy in ("cp", "fifo"):
        assert simulate(dag, None, policy).makespan == t.tinf
        assert simulate(dag, 1, policy).makespan == t.t1
        for cores in (2, 3, 5):
            s = simulate(dag, cores, policy)
            start, finish, core = s.start.tolist(), s.finish.tolist(), s.core.tolist()
            assert max(t.tinf, -(-t.t1 // cores)) <= s.makespan <= t.t1 / cores + t.tinf
            assert all(finish[a] <= start[b] for a, b in edges)
            assert all(0 <= c < cores for c in core)
            last_end: dict[int, int] = {}
            for a, b, c in sorted(zip(start, finish, core)):  # no two instances overlap on a core
                if b > a:
                    assert last_end.get(c, 0) <= a
                    last_end[c] = b


def test_cycles_unknown_ids_and_policies_are_errors():
    with pytest.raises(ValueError, match="cycle"):
        simulate(make([("main", -1, 1), ("a", 0, 1), ("b", 0, 1)], [(1, 2), (2, 1)]).dag, 2)
    with pytest.raises(TraceDirError, match=r"^deps.csv:2: dependency 0 -> 7 names a task that is not in tasks.csv"):
        make([("main", -1, 1)], [(0, 7)]).dag  # noqa: B018 (the property raises)
    with pytest.raises(ValueError, match="policy"):
        simulate(fork_join().dag, 2, "lifo")
    assert simulate(make([], []).dag, 4).makespan == 0


def test_ids_need_not_be_row_numbers():
    t = fork_join()
    shifted = TaskTrace([Fragment(x.id + 100, x.name, x.instance + 100, x.parent + 100 if x.parent >= 0 else -1,
                                      x.start, x.end, x.instructions) for x in t.fragments],
                        [Dependency(d.src + 100, d.dst + 100, d.kind, d.object, d.bytes) for d in t.deps], t.objects)
    assert makespans(shifted, [1, 2, None]) == makespans(t, [1, 2, None]) == [40, 20, 10]


@pytest.mark.parametrize("seed", range(10))
def test_native_bottom_levels_are_the_python_ones(seed, monkeypatch):
    """levels.c on graphs whose edges go forward (every traced one) gives what the Python walk
    gives; a graph whose edges do not (ids out of creation order) takes the walk."""
    rng = random.Random(seed)
    dag = random_trace(rng, rng.randint(2, 300)).dag
    duration = dag.weight + np.array([rng.randint(0, 9) for _ in range(dag.n)])
    assert dag_module.forward_sorted(dag)
    native = dag_module.bottom_levels(dag, duration)
    monkeypatch.setattr(dag_module, "forward_sorted", lambda d: False)
    assert native == dag_module.bottom_levels(dag, duration)
    backwards = make([("main", -1, 1), ("a", 0, 5), ("b", 0, 7)], [(2, 1)]).dag
    monkeypatch.undo()
    assert not dag_module.forward_sorted(backwards)
    assert dag_module.bottom_levels(backwards, backwards.weight) == [13, 5, 12]


def test_help_first_creator_keeps_its_core_and_bf_puts_the_chain_behind_the_sides():
    """The issue's creator pattern, K = 32, 2 cores. Help-first: main creates all 64 tasks at time 0
    on core 0; core 1 takes chain 0 [0, 2], core 0 then sides 0, 1 [0, 2]. At 2 chain 1 becomes
    ready: bf queues it behind sides 2..31, which both cores run in 15 units; then the 31 chains
    one after the other: 2 + 15 + 62 = 79, speedup 96 / 79 = 1.22 (libgomp measured 1.19-1.33).
    cp and fifo run chain 1 first (longest path; created before side 2): the chain is never
    delayed and the sides fill the other core: 2K = 64, speedup 1.5."""
    t = chain_and_side(32)
    assert t.t1 == 96
    assert [makespans(t, [2], p)[0] for p in ("bf", "fifo", "cp")] == [79, 64, 64]
    bf = simulate(t.dag, 2, "bf")
    chains = [4 * i + 1 for i in range(32)]
    assert [bf.start[c] for c in chains[:3]] == [0, 17, 19] and bf.finish[chains[-1]] == 79
    assert set(bf.core[[0, 2, 4, 126, 128]].tolist()) == {0}  # main never left core 0


def test_work_first_runs_the_child_and_queues_the_creator():
    """chain/side with K = 2 on 2 cores, bf, work-first. t=0: main's fragment 0 ends, chain 0 runs
    on its core 0 [0, 2]; main's fragment 2 (queued, before every task) takes core 1 and creates
    side 0, which runs there [0, 1]. t=1: main's fragment 4 on core 1 creates chain 1, which
    waits for chain 0: main goes on (fragment 6) and creates side 1, which runs [1, 2]. t=2:
    chain 1 [2, 4] and main's last fragment. Makespan 4, the chain's own length."""
    t = chain_and_side(2)
    s = simulate(t.dag, 2, "bf", creation="work-first")
    assert s.start.tolist() == [0, 0, 0, 0, 1, 2, 1, 1, 2]
    assert s.core.tolist() == [0, 0, 1, 1, 1, 1, 1, 1, 0]
    assert s.makespan == 4
    help_first = simulate(t.dag, 2, "bf")
    assert help_first.start.tolist() == [0, 0, 0, 0, 0, 2, 0, 1, 0] and help_first.makespan == 4


def test_a_continuation_that_waited_for_data_goes_before_queued_tasks():
    """main creates P and ends; P creates A (3), B (5) and C (5), one fragment (1) before each,
    then reads A in its last fragment (1). 2 cores, bf, help-first. Rows: 0 main, 1 P, 2 A, 3 P,
    4 B, 5 P, 6 C, 7 P, 8 main.
    t=0: main on core 0 runs both its fragments; P's first fragment takes core 1 [0, 1].
    t=1: A is queued and P goes on on core 1 [1, 2]; core 0 takes A [1, 4]. t=2: B queued, P on
    [2, 3]. t=3: C queued; P's last fragment waits for A: core 1 takes B [3, 8]. t=4: A ends, P's
    last fragment is ready and goes before C, which was queued first: P [4, 5] on core 0, then C
    [5, 10]. (Queued behind C, as a task would be under bf, it would start at 8.)"""
    tasks = [Fragment(0, "main", 0, -1, 0, 0, 0), Fragment(1, "P", 1, 0, 0, 0, 1),
             Fragment(2, "A", 2, 1, 0, 0, 3), Fragment(3, "P", 1, 0, 0, 0, 1),
             Fragment(4, "B", 4, 3, 0, 0, 5), Fragment(5, "P", 1, 0, 0, 0, 1),
             Fragment(6, "C", 6, 5, 0, 0, 5), Fragment(7, "P", 1, 0, 0, 0, 1),
             Fragment(8, "main", 0, -1, 0, 0, 0)]
    s = simulate(TaskTrace(tasks, [Dependency(2, 7, "RAW", "x", 8)], []).dag, 2, "bf")
    assert s.start.tolist() == [0, 0, 1, 1, 3, 2, 5, 4, 0]
    assert s.core.tolist() == [0, 1, 0, 1, 1, 1, 0, 0, 0]
    assert s.makespan == 10


def test_runtime_costs_fall_where_they_occur():
    """main creates 4 tasks of 10, 2 cores, fifo; creating a task costs its creator 2, starting
    one costs the core that runs it 1. main's fragments take 2 each on core 0 [0, 8]; task 0
    [2, 13] on core 1; task 1 [8, 19] on core 0 once main is done; task 2 [13, 24]; task 3
    [19, 30]. T1 stays 40 (no runtime in the sequential run)."""
    t = program(*[("w", 10, [])] * 4)
    machine = Machine(instructions_per_second=1e9, creation_cost=2e-9, start_cost=1e-9)
    result = study(t.dag, [2, 1], "fifo", machine)
    first, one = result.schedules
    assert first.start.tolist() == [0, 2, 2, 8, 4, 13, 6, 19, 8] and first.makespan == 30
    assert one.makespan == 40 + 4 * 2 + 4 * 1
    assert result.table().column("speedup")[0] == pytest.approx(40 / 30)
    assert (result.overhead, result.creation_cost) == (1, 2)


def reference_schedule(dag, cores, policy, overhead, creation, creation_cost) -> tuple[list[int], list[int]]:
    """(start, core) of every fragment: the model of list_scheduler.py's docstring stated in
    Python, one event at a time, with heapq (tareador's own loop until it moved to C)."""
    n = dag.n
    dur = dag_module.durations(dag, overhead, creation_cost).tolist()
    offsets, succ = dag_module.successors(dag)
    levels = dag_module.bottom_levels(dag, dag_module.durations(dag, overhead, creation_cost))
    top = max(levels, default=0) + 1
    key = [(top - lv) * n + i if policy == "cp" and cores else i for i, lv in enumerate(levels)]
    indegree = dag_module.indegrees(dag)
    follow, continuation = dag.next_fragment.tolist(), (~dag.starts_instance).tolist()
    child = [-1] * n
    if creation == "work-first":
        for i in reversed(np.flatnonzero(dag.creator >= 0).tolist()):
            child[dag.creator[i]] = i
    start, core, taken = [0] * n, [0] * n, [False] * n
    tasks, resumed, running, free = sorted(key[i] for i in range(n) if indegree[i] == 0), [], [], []
    became_ready, next_core, now, limit = 1, 0, 0, n if cores is None else min(cores, n)

    def run(i: int, c: int) -> None:
        start[i], core[i], taken[i] = now, c, True
        heapq.heappush(running, (now + dur[i]) * n + i)

    while tasks or resumed or running:
        while (resumed or tasks) and (free or next_core < limit):
            i = heapq.heappop(resumed if resumed else tasks) % n
            c = heapq.heappop(free) if free else next_core
            next_core += c == next_core
            run(i, c)
        now = running[0] // n
        ended, ready = [], []
        while running and running[0] // n == now:
            ended.append(i := heapq.heappop(running) % n)
            for j in succ[offsets[i]:offsets[i + 1]]:
                indegree[j] -= 1
                ready += [j] if indegree[j] == 0 else []
        for i in ended:
            j = child[i] if child[i] >= 0 and indegree[child[i]] == 0 and not taken[child[i]] else follow[i]
            if j >= 0 and indegree[j] == 0 and not taken[j]:
                run(j, core[i])
            else:
                heapq.heappush(free, core[i])
        for j in (j for j in ready if not taken[j]):
            by_time = continuation[j] or policy == "bf"
            heapq.heappush(resumed if continuation[j] else tasks, became_ready * n + j if by_time else key[j])
            became_ready += 1
    return start, core


@pytest.mark.parametrize("seed", range(40))
def test_native_loop_is_the_model(seed):
    """list_scheduler.c against the model stated in Python, on random traces (nested tasks, main
    waiting on results), every policy, creation model and a few core counts and runtime costs."""
    rng = random.Random(seed)
    dag = random_trace(rng, rng.randint(2, 150)).dag
    for cores in (1, 2, 3, None):
        for policy in ("cp", "fifo", "bf"):
            for creation in ("help-first", "work-first"):
                costs = rng.choice([(0, 0), (3, 0), (0, 2), (5, 7)])
                s = simulate(dag, cores, policy, costs[0], creation=creation, creation_cost=costs[1])
                assert (s.start.tolist(), s.core.tolist()) == reference_schedule(dag, cores, policy, costs[0], creation,
                                                                                 costs[1])
