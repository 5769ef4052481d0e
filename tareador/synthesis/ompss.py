"""Tareador's two traces of a traced run, for ``tareador replay`` or the real Dimemas.

``authentic.dim`` is the sequential run (one thread); ``ompss.dim`` is the potential parallel
run, one thread per task instance with dependencies as messages between threads of one task.
The record templates of a task instance's thread and of a dependency are shared with the
MPI/OmpSs trace of an MPI run (``synthesis.mpi_ompss``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tareador.formats.dimemas import SYNC_IMMEDIATE, write_dim_rows, write_task_labels
from tareador.formats.paraver import DEP_TAG, PRIORITY_EVENT, TASK_EVENT, task_type_values
from tareador.formats.text_rows import Layout, Rows, integer, real
from tareador.taskgraph.dag import Dag, bottom_levels, durations


def ompss_rows(names: list[str], instructions: np.ndarray, src: np.ndarray, dst: np.ndarray,
               priority: list[int], instructions_per_second: float) -> tuple[Rows, np.ndarray]:
    """One thread per task instance, as ``task_thread`` writes it (receive from each predecessor,
    run, send to each successor), made in bulk: (records, each thread's first record)."""
    n = len(names)
    values = task_type_values(names)
    tvalue = np.fromiter((values[name] for name in names), np.int64, n)
    thread = integer(np.arange(n))
    by_dst = np.argsort(dst, kind="stable")
    indegree, outdegree = np.bincount(dst, minlength=n), np.bincount(src, minlength=n)
    first = np.concatenate([[0], np.cumsum(5 + indegree + outdegree)[:-1]]).astype(np.int64)
    kind = np.zeros(int(first[-1] + 5 + indegree[-1] + outdegree[-1]) if n else 0, np.int8)
    source = np.zeros(len(kind), np.int64)

    def place(at: np.ndarray, layout: int, rows: np.ndarray) -> None:
        kind[at], source[at] = layout, rows

    everyone = np.arange(n)
    for k in range(3):
        place(first + k, k, everyone)
    rank = np.arange(len(dst)) - np.concatenate([[0], np.cumsum(indegree)[:-1]])[dst[by_dst]]
    place(first[dst[by_dst]] + 3 + rank, 3, by_dst)
    place(first + 3 + indegree, 4, everyone)
    place(first + 4 + indegree, 5, everyone)
    rank = np.arange(len(src)) - np.concatenate([[0], np.cumsum(outdegree)[:-1]])[src]  # src is sorted
    place(first[src] + 5 + indegree[src] + rank, 6, np.arange(len(src)))
    receiver, sender = integer(dst), integer(src)
    layouts: list[Layout] = [
        ["1:0:", thread, ":0.000000000\n"],
        ["20:0:", thread, f":{PRIORITY_EVENT}:", integer(np.maximum(priority, 1)), "\n"],
        ["20:0:", thread, f":{TASK_EVENT}:", integer(tvalue), "\n"],
        ["3:0:", receiver, ":0:", sender, f":1:{DEP_TAG}:0:0\n"],
        ["1:0:", thread, ":", real(np.asarray(instructions, np.int64) / instructions_per_second, 9), "\n"],
        ["20:0:", thread, f":{TASK_EVENT}:0\n"],
        ["2:0:", sender, ":0:", receiver, f":1:{DEP_TAG}:0:{SYNC_IMMEDIATE}\n"],
    ]
    return Rows(layouts, source, kind), first


def dependency_records(task: int, comm: int) -> tuple[str, str]:
    """Templates (``.format(thread, partner thread)``) of a dependency's receive and send between
    two threads of one Dimemas task: thread-aware, 1 byte, tag DEP_TAG, the send immediate (a
    thread never waits for its successors to take its notices), on communicator ``comm``."""
    return (f"3:{task}:{{0}}:{task}:{{1}}:1:{DEP_TAG}:{comm}:0\n",
            f"2:{task}:{{0}}:{task}:{{1}}:1:{DEP_TAG}:{comm}:{SYNC_IMMEDIATE}\n")


def task_thread(task: int, thread: int, priority: int, type_value: int, receives: str, body: str, sends: str) -> str:
    """A task instance's thread: an empty burst (Dimemas needs one), its scheduling priority
    (event 6999, for SS_MPI_CP: the remaining critical path), its task type (event 7003), the
    receives from its predecessors, its ``body`` (bursts), the end of its type, the sends to
    its successors.

    The task type comes before the receives, so in Paraver it also covers the wait for them: an
    event between a thread's last receive and its burst would make Dimemas requeue the thread
    there and change the schedule (see tests/test_replay_dimemas.py).
    """
    return (f"{thread_start(task, thread, priority)}20:{task}:{thread}:{TASK_EVENT}:{type_value}\n{receives}{body}"
            f"20:{task}:{thread}:{TASK_EVENT}:0\n{sends}")


def thread_start(task: int, thread: int, priority: int) -> str:
    return f"1:{task}:{thread}:0.000000000\n20:{task}:{thread}:{PRIORITY_EVENT}:{max(priority, 1)}\n"


def write_ompss(path: str | Path, names: list[str], instructions: np.ndarray, src: np.ndarray, dst: np.ndarray,
                priority: list[int], instructions_per_second: float = 1e9) -> list[Path]:
    """Tareador's potential parallel run: instances 0..n-1, precedence edges src[k] -> dst[k]
    sorted by src. Returns the .dim and its .pcf (see ``write_task_labels``)."""
    rows, first = ompss_rows(names, instructions, src, dst, priority, instructions_per_second)
    return [write_dim_rows(path, "ompss", [len(names)], rows, first), write_task_labels(path, names)]


def write_authentic(path: str | Path, names: list[str], instructions: np.ndarray, order: np.ndarray,
                    instructions_per_second: float = 1e9) -> list[Path]:
    """The sequential run: one thread, each instance's burst in ``order`` (the order they started).
    Returns the .dim and its .pcf (see ``write_task_labels``).

    A nested instance's burst follows its parent's whole burst: instruction counts exclude
    children, so the total (and the simulated time) is exact, the interleaving is not.
    """
    values = task_type_values(names)
    tvalue = np.fromiter((values[name] for name in names), np.int64, len(names))
    seconds = real(np.asarray(instructions, np.int64) / instructions_per_second, 9)
    layouts: list[Layout] = [["1:0:0:0.000000000\n"], [f"20:0:0:{TASK_EVENT}:", integer(tvalue), "\n1:0:0:", seconds,
                                         f"\n20:0:0:{TASK_EVENT}:0\n"]]
    rows = Rows(layouts, np.concatenate([[0], order]), np.minimum(np.arange(len(order) + 1), 1))
    return [write_dim_rows(path, "authentic", [1], rows, np.zeros(1, np.int64)), write_task_labels(path, names)]


def write_dim_traces(dag: Dag, directory, instructions_per_second: float, overhead: int = 0,
                     creation_cost: int = 0) -> list[Path]:
    """ompss.dim and authentic.dim of the trace, for ``tareador replay`` or the real Dimemas, each
    with its .pcf naming the task types; ompss.dim's bursts with the runtime's costs
    (``dag.durations``). The weights are in units of ``instructions_per_second``: instructions, or
    measured nanoseconds at 10^9 per second."""
    directory = Path(directory)
    duration = durations(dag, overhead, creation_cost)
    return [*write_ompss(directory / "ompss.dim", dag.names, duration, dag.src, dag.dst,
                         bottom_levels(dag, duration), instructions_per_second),
            *write_authentic(directory / "authentic.dim", dag.names, dag.weight, np.lexsort((dag.ids, dag.counter)),
                             instructions_per_second)]
