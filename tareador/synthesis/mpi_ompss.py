"""The MPI/OmpSs artificial trace of an MPI run (thesis ch. 4.3): ``ompss.dim``, the potential
run where every rank schedules its task instances in dataflow order on its own cores.

The model, per rank (one Dimemas task per rank, as in authentic.dim):

- Thread 0 is the program's own code: main's fragments (tasks.csv rows with parent -1) in
  order, and the rank's MPI calls at their place on the instruction counter among them (the
  calls made outside tareador_ON/OFF, task -1, too), with exactly the records authentic.dim
  writes for them (``formats.dimemas_mpi.call_records``). Its bursts are its own instructions:
  the counter minus what the rank's task fragments ran.
- Every task fragment (parent >= 0) is a thread of its own, as in the single-process ompss.dim:
  an empty burst, its priority (event 6999), its task type (event 7003), a receive from each
  predecessor, its burst, the end of its type, a send to each successor. An MPI call a task
  fragment made stays in its thread at its place.
- Precedence is the rank's ``Dag`` (taskgraph/dag.py: RAW dependencies, the fragments of an instance
  in order, a task after the fragment that created it). A dependency between two task fragments
  is a message between their threads; into a main fragment, thread 0 receives it before the
  fragment; out of one, thread 0 sends it after the fragment's end.
- The MPI calls keep their order in the rank: of the calls that become records, each one whose
  predecessor (in the rank's call order) was made by another task fragment waits for that
  fragment: fragment to fragment as a dependency, a task fragment to a call of thread 0 as a
  receive just before the call, a call of thread 0 to a task fragment as a send just after it
  (none where a dependency already orders the two). So a send waits for the task that produced
  its buffer (its RAW dependency), and a task that reads a received buffer waits for the
  fragment whose call completed the receive.
- A task thread that notifies thread 0 ends with an empty burst: the engine (as Dimemas) hands
  the core of a thread that ends on before the same-time arrival of its last message, so
  thread 0 would queue behind a ready task of lower priority; with the burst, the thread keeps
  its core until thread 0 is woken, and thread 0 takes it.
- Dependency messages are thread-aware, 1 byte, tag DEP_TAG, immediate sends, on communicator
  ``DEPENDENCY_COMM``, which no MPI record uses (the run's communicators are numbered from 0, and
  collectives written as messages use the next numbers), so that a dependency can never match an
  MPI receive (Dimemas matches a receive from any thread of a task on tag and communicator; the
  bundled engine's keys already tell thread-aware messages apart, simulation/dimemas_engine.py ``plan``).
  The replay engine takes them as instantaneous, as the thesis' extended Dimemas did ("a task
  synchronization as an intra-node instantaneous MPI transfer"): the machine's network is the
  MPI messages'; Dimemas 5.5.0 itself would charge them the intra-node latency.
- Priorities (event 6999, read only under SS_MPI_CP / ``cp``): a task fragment's bottom level
  in the rank's graph (the MPI order included), where every fragment that makes MPI calls, main's
  too, counts as T1 + 1 instructions more than it runs; thread 0 above every task. The thesis
  gives tasks holding MPI calls outstanding priority, so that messages leave as early as the data
  allows: here a ready task that feeds more MPI calls runs first, then the longest path (a task
  whose buffer the next send takes goes before a longer one no MPI call waits for), and thread 0
  takes a core before any task.

Why it cannot deadlock: every edge goes from a fragment to one with a higher id (fragments ran
one after the other in id order, and a call's order edge comes from a fragment that ran before
it), sends never block (immediate), so by induction on the id every fragment's receives are
answered by fragments that run and send without waiting on it; thread 0 reaches main fragment m
once the lower main fragments ran, whose receives came from lower fragments. The MPI calls of a
rank happen in the order they did in the traced run, so the ranks' MPI traffic matches as in
authentic.dim, which replays.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import numpy as np

from tareador.formats.dimemas import DEPENDENCY_COMM, write_dim
from tareador.synthesis.mpi_authentic import on_thread, thread_block, write_labels
from tareador.synthesis.ompss import dependency_records, task_thread, thread_start
from tareador.taskgraph.dag import Dag, bottom_levels, csr, sorted_unique
from tareador.taskgraph.model import MpiCall, TaskTrace


def write_mpi_ompss(path: str | Path, names: list[str], blocks_by_rank: Sequence[list[str]],
                    communicators: dict[int, tuple[int, ...]] | None = None) -> list[Path]:
    """ompss.dim from each rank's thread blocks (``rank_threads``) and its .pcf (task type names);
    ``communicators``: the definitions its global operations need, as authentic.dim's."""
    blocks = (block for rank in blocks_by_rank for block in rank)
    return [write_dim(path, "ompss", [len(b) for b in blocks_by_rank], blocks, communicators),
            write_labels(path, names)]


def rank_threads(rank: int, trace: TaskTrace, calls: Sequence[MpiCall], texts: dict[int, str],
                 values: dict[str, int], instructions_per_second: float = 1e9) -> list[str]:
    """A rank's threads in ompss.dim: thread 0, then each task fragment in id order.

    ``texts`` are the records of its calls by seq (``by_rank(call_records(...))[rank]``),
    ``values`` the run's task type numbers. Each rank is independent of the others: postprocess
    runs this in parallel.
    """
    return _threads(rank, trace, trace.dag, [c for c in calls if c.seq in texts], texts, values,
                    instructions_per_second)


def _threads(rank: int, trace: TaskTrace, dag: Dag, calls: list[MpiCall], texts: dict[int, str],
             values: dict[str, int], ips: float) -> list[str]:
    tasks, n, main = trace.fragments, dag.n, dag.is_main.tolist()
    thread = (np.cumsum(~dag.is_main) * ~dag.is_main).tolist()  # 0 for main's fragments, 1.. for task fragments
    index = {t.id: i for i, t in enumerate(tasks)}
    order = _mpi_order(calls, index, main, set((dag.src * n + dag.dst).tolist()), n)
    edges = sorted_unique(np.concatenate([dag.src * n + dag.dst, np.array(order.between, np.int64)]))
    src, dst = edges // n, edges % n
    priority = _priorities(dag, order, src, dst, calls, index)
    poff, pred = csr(dst, src, n)
    soff, succ = csr(src, dst, n)
    receive, send = dependency_records(rank, DEPENDENCY_COMM)

    def receives(i: int, sources: list[int]) -> str:
        return "".join([receive.format(thread[i], thread[p]) for p in sources if not (main[i] and main[p])])

    def sends(i: int, targets: list[int]) -> str:
        return "".join([send.format(thread[i], thread[s]) for s in targets if not (main[i] and main[s])])

    mains = [i for i in range(n) if main[i]]
    around = {("f", tasks[i].id): (receives(i, pred[poff[i]:poff[i + 1]]), sends(i, succ[soff[i]:soff[i + 1]]))
              for i in mains}
    for seq in order.waits.keys() | order.notifies.keys():
        around["c", seq] = ("".join(receive.format(0, thread[f]) for f in order.waits.get(seq, [])),
                            "".join(send.format(0, thread[g]) for g in order.notifies.get(seq, [])))
    on_zero = [c for c in calls if c.task not in index or main[index[c.task]]]
    blocks = [thread_block(rank, 0, thread_start(rank, 0, priority[-1]), [tasks[i] for i in mains], on_zero, texts,
                           values, ips, _own_clock(trace, main), around)]
    made = defaultdict(list)
    for c in calls:
        if c.task in index and not main[index[c.task]]:
            made[index[c.task]].append(c)
    work = dag.weight.tolist()
    for i in (i for i in range(n) if not main[i]):
        t, f, after = thread[i], tasks[i], succ[soff[i]:soff[i + 1]]
        into = receives(i, pred[poff[i]:poff[i + 1]]) + receive.format(t, 0) * order.from_zero[i]
        out = sends(i, after) + send.format(t, 0) * order.to_zero[i]
        if order.to_zero[i] or any(main[s] for s in after):
            out += f"1:{rank}:{t}:0.000000000\n"  # keeps the core until thread 0 is woken (see the docstring)
        if i in made:
            blocks.append(thread_block(rank, t, thread_start(rank, t, priority[i]), [f], made[i],
                                       {c.seq: on_thread(texts[c.seq], t) for c in made[i]}, values, ips,
                                       partial(operator.add, -f.start), {("f", f.id): (into, out)}))  # counter - start
        else:
            blocks.append(task_thread(rank, t, priority[i], values[f.name], into,
                                      f"1:{rank}:{t}:{work[i] / ips:.9f}\n", out))
    return blocks


@dataclass
class _Order:
    """What keeping the rank's MPI calls in order adds to its graph."""

    between: list[int] = field(default_factory=list)  # task fragment -> task fragment, as src * n + dst
    waits: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))  # seq of a thread-0 call ->
    notifies: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))  # fragments before / after it
    from_zero: dict[int, int] = field(default_factory=lambda: defaultdict(int))  # fragment -> receives from thread 0
    to_zero: dict[int, int] = field(default_factory=lambda: defaultdict(int))  # fragment -> sends to thread 0
    ranked: list[tuple[int, int]] = field(default_factory=list)  # all of them as fragment pairs, for the priorities


def _mpi_order(calls: list[MpiCall], index: dict[int, int], main: list[bool], edges: set[int], n: int) -> _Order:
    """Each call (of those that are records, in the rank's order) after the previous one: only
    where the two are made by different threads and the previous is a task fragment's or the
    next is (thread 0's calls are in order on thread 0)."""
    order = _Order()
    previous: tuple[int | None, MpiCall] | None = None
    for c in calls:
        i = index.get(c.task)
        unit = i if i is not None and not main[i] else None  # None: thread 0
        if previous is not None:
            before, p = previous
            holder = index.get(c.task) if unit is None else None  # the main fragment of a thread-0 call
            source = index.get(p.task) if before is None else None
            if before is not None and unit is not None and before != unit:
                order.between.append(before * n + unit)
                order.ranked.append((before, unit))
            elif before is not None and unit is None and (holder is None or before * n + holder not in edges):
                order.waits[c.seq].append(before)
                order.to_zero[before] += 1
                if holder is not None:
                    order.ranked.append((before, holder))
            elif before is None and unit is not None and (source is None or source * n + unit not in edges):
                order.notifies[p.seq].append(unit)
                order.from_zero[unit] += 1
                if source is not None:
                    order.ranked.append((source, unit))
        previous = (unit, c)
    return order


def _priorities(dag: Dag, order: _Order, src: np.ndarray, dst: np.ndarray, calls: list[MpiCall],
                index: dict[int, int]) -> list[int]:
    """Bottom levels in the rank's graph with the MPI order, each fragment that makes MPI calls
    (main's too) counted as T1 + 1 instructions more; the last entry, thread 0's, above them all."""
    n = dag.n
    ranked = np.array([a * n + b for a, b in order.ranked], np.int64)
    edges = sorted_unique(np.concatenate([src * n + dst, ranked]))
    calling = np.zeros(n, np.int64)
    calling[[index[c.task] for c in calls if c.task in index]] = dag.t1 + 1
    levels = bottom_levels(replace(dag, src=edges // n, dst=edges % n), dag.weight + calling)
    return levels + [max(levels, default=0) + 1]


def _own_clock(trace: TaskTrace, main: list[bool]):
    """Thread 0's time at a counter: the counter minus the task fragments that ended by then
    (fragments are disjoint intervals of the counter, and thread 0 never stands inside one)."""
    tasks = [t for t, is_main in zip(trace.fragments, main) if not is_main]
    ends = np.array(sorted(t.end for t in tasks), np.int64)
    ran = np.concatenate([[0], np.cumsum([t.end - t.start for t in sorted(tasks, key=lambda t: t.end)])]).tolist()
    return lambda counter: counter - ran[int(np.searchsorted(ends, counter, side="right"))]
