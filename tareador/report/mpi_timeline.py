"""An MPI run's replay as a timeline: a row per rank (per thread for the MPI/OmpSs run), its
computation coloured by task type, its MPI calls as states coloured by function, its messages as
arrows.

It reads what the Dimemas-model replay recorded for Paraver (``ReplayResult.paraver``): the
running states, the task-type events (7003) and Extrae's MPI call events (a call's value while the
rank is in it, 0 once it left), and the communication records, so the page shows what
``tareador replay --prv`` would show in Paraver.
"""

from __future__ import annotations

import numpy as np

from tareador.formats import mpi_events
from tareador.formats.paraver import RUNNING, TASK_EVENT, ParaverRun
from tareador.render.graph import MAIN_COLOUR, PALETTE
from tareador.report.bars import Bars
from tareador.report.figures import Arrows

ARROW_LIMIT = 5_000  # messages drawn; beyond, arrows cover the chart and slow it down
MPI_COLOURS = ["#882255", "#DDCC77", "#117733", "#332288", "#CC6677", "#88CCEE", "#44AA99", "#999933", "#AA4499",
               "#661100", "#6699CC", "#888888"]  # Paul Tol's muted set, apart from the task types' colours


def _calls(p: ParaverRun) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """(thread, begin, end, name) of every MPI call interval, from the enter / leave event pairs."""
    names = {(t, v): name for name, (t, v) in mpi_events.CALLS.items()}
    e = p.events
    mpi = np.isin(e["type"], list(mpi_events.TYPE_LABELS))
    order = np.lexsort((e["time"][mpi], e["thread"][mpi]))
    thread, time, etype, value = (e[k][mpi][order] for k in ("thread", "time", "type", "value"))
    begin = np.flatnonzero(value != 0)
    after = begin + 1
    ok = (after < len(value)) & (thread[np.minimum(after, len(value) - 1)] == thread[begin])
    begin, after = begin[ok], after[ok]
    called = zip(etype[begin].tolist(), value[begin].tolist(), strict=True)
    return thread[begin], time[begin], time[after], [names.get(key, f"MPI call {key[1]}") for key in called]


def _running(p: ParaverRun) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """(thread, begin, end, task type) of every running state: the type is the last task event
    (7003) of the thread at or before the state began."""
    s, e = p.states, p.events
    run = (s["state"] == RUNNING) & (s["end"] > s["begin"])
    thread, begin, end = s["thread"][run], s["begin"][run], s["end"][run]
    labels = p.event_labels.get(TASK_EVENT, ("", {}))[1]
    task = e["type"] == TASK_EVENT
    order = np.lexsort((e["time"][task], e["thread"][task]))  # stable: same-time events keep their order
    ev_thread, ev_value = e["thread"][task][order], e["value"][task][order]
    span = int(p.end_time) + 1
    at = np.searchsorted(ev_thread * span + e["time"][task][order], thread * span + begin, side="right") - 1
    found = at >= 0
    found[found] &= ev_thread[at[found]] == thread[found]
    value = np.where(found, ev_value[np.maximum(at, 0)] if len(ev_value) else 0, 0)
    kinds = [labels.get(v, "running") if v else "running" for v in value.tolist()]
    return thread, begin, end, kinds


def run_bars(p: ParaverRun, scale: float) -> Bars:
    """Computation and MPI calls on a row per Paraver thread; ``scale`` turns ns into display units."""
    t1, b1, e1, k1 = _running(p)
    t2, b2, e2, k2 = _calls(p)
    tasks = list(dict.fromkeys(sorted(set(k1))))
    calls = sorted(set(k2))
    kinds = tasks + calls
    colours = [MAIN_COLOUR if k == "main" else PALETTE[i % len(PALETTE)] for i, k in enumerate(tasks)]
    colours += [MPI_COLOURS[i % len(MPI_COLOURS)] for i in range(len(calls))]
    code = {k: i for i, k in enumerate(kinds)}
    rows = p.thread_labels or [f"thread {i}" for i in range(len(p.threads))]
    return Bars(row=np.concatenate([t1, t2]).astype(np.int64), start=np.concatenate([b1, b2]) * scale,
                end=np.concatenate([e1, e2]) * scale, kind=np.array([code[k] for k in k1 + k2], np.int64),
                kinds=kinds, colours=colours, rows=rows)


def message_arrows(p: ParaverRun, scale: float) -> Arrows:
    """An arrow per message between ranks, from when it left to when it arrived; the dependencies
    between a rank's own threads (MPI/OmpSs) are not messages and are left out."""
    c = p.comms
    if not len(c.get("thread", ())):
        return Arrows(*(np.zeros(0),) * 4)
    task = np.array([t for t, _h, _n in p.threads], np.int64)
    between = task[c["thread"]] != task[c["rthread"]]
    keep = np.flatnonzero(between)
    omitted = None
    if len(keep) > ARROW_LIMIT:
        omitted = f"{len(keep):,} messages: the first {ARROW_LIMIT:,} are drawn"
        keep = keep[np.argsort(c["psend"][keep], kind="stable")[:ARROW_LIMIT]]
    return Arrows(c["psend"][keep] * scale, c["thread"][keep].astype(float), c["precv"][keep] * scale,
                  c["rthread"][keep].astype(float), omitted)
