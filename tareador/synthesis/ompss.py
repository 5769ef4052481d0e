"""Tareador's two traces of a traced run, for ``tareador replay`` or the real Dimemas.

``authentic.dim`` is the sequential run (one thread); ``ompss.dim`` is the potential parallel
run, one thread per task instance with dependencies as messages between threads of one task.
The record templates of a task instance's thread and of a dependency are shared with the
MPI/OmpSs trace of an MPI run (``synthesis.mpi_ompss``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from tareador.formats.dimemas import SYNC_IMMEDIATE, write_dim, write_task_labels
from tareador.formats.paraver import DEP_TAG, PRIORITY_EVENT, TASK_EVENT, task_type_values
from tareador.taskgraph.dag import Dag, bottom_levels, csr, durations


def ompss_blocks(names: list[str], instructions: np.ndarray, src: np.ndarray, dst: np.ndarray,
                 priority: list[int], instructions_per_second: float) -> Iterator[str]:
    """One thread per task instance: wait for each predecessor, run, notify each successor
    (``task_thread``)."""
    n = len(names)
    soff, succ = csr(src, dst, n)
    poff, pred = csr(dst, src, n)
    values = task_type_values(names)
    tvalue = [values[name] for name in names]
    work = instructions.tolist()
    receive, send = dependency_records(0, 0)
    for i in range(n):
        recvs = "".join([receive.format(i, p) for p in pred[poff[i]:poff[i + 1]]])
        sends = "".join([send.format(i, s) for s in succ[soff[i]:soff[i + 1]]])
        yield task_thread(0, i, priority[i], tvalue[i], recvs, f"1:0:{i}:{work[i] / instructions_per_second:.9f}\n",
                          sends)


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
    """Tareador's potential parallel run: instances 0..n-1, precedence edges src[k] -> dst[k].
    Returns the .dim and its .pcf (see ``write_task_labels``)."""
    blocks = ompss_blocks(names, instructions, src, dst, priority, instructions_per_second)
    return [write_dim(path, "ompss", [len(names)], blocks), write_task_labels(path, names)]


def write_authentic(path: str | Path, names: list[str], instructions: np.ndarray, order: np.ndarray,
                    instructions_per_second: float = 1e9) -> list[Path]:
    """The sequential run: one thread, each instance's burst in ``order`` (the order they started).
    Returns the .dim and its .pcf (see ``write_task_labels``).

    A nested instance's burst follows its parent's whole burst: instruction counts exclude
    children, so the total (and the simulated time) is exact, the interleaving is not.
    """
    values = task_type_values(names)
    work = instructions.tolist()
    text = "1:0:0:0.000000000\n" + "".join(
        f"20:0:0:{TASK_EVENT}:{values[names[i]]}\n1:0:0:{work[i] / instructions_per_second:.9f}\n"
        f"20:0:0:{TASK_EVENT}:0\n" for i in order.tolist())
    return [write_dim(path, "authentic", [1], [text]), write_task_labels(path, names)]


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
