"""Chrome trace-event JSON of a simulated or replayed run, for chrome://tracing, Perfetto or speedscope."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tareador.files import output_file, printable
from tareador.formats import mpi_events
from tareador.formats.paraver import TASK_EVENT, ParaverRun


def write_chrome(path: str | Path, title: str, names: list[str], ids: np.ndarray, start_us: np.ndarray,
                 dur_us: np.ndarray, core: np.ndarray, dep_src: np.ndarray, dep_dst: np.ndarray) -> Path:
    """One track per core, one slice per task instance, a flow arrow per RAW dependency.

    Flows start mid-slice because viewers bind a flow to the slice enclosing its timestamp.
    """
    events: list[dict] = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": title}}]
    events += [{"ph": "M", "name": "thread_name", "pid": 1, "tid": c, "args": {"name": f"core {c + 1}"}}
               for c in range(int(core.max(initial=-1)) + 1)]
    for name, i, s, d, c in zip(names, ids.tolist(), start_us.tolist(), dur_us.tolist(), core.tolist()):
        events.append({"ph": "X", "name": name, "cat": "task", "pid": 1, "tid": c, "ts": s, "dur": d,
                       "args": {"id": i}})
    mid = (start_us + dur_us / 2).tolist()
    for k, (a, b) in enumerate(zip(dep_src.tolist(), dep_dst.tolist())):
        events.append({"ph": "s", "name": "dependency", "cat": "dependency", "id": k, "pid": 1,
                       "tid": int(core[a]), "ts": mid[a]})
        events.append({"ph": "f", "bp": "e", "name": "dependency", "cat": "dependency", "id": k, "pid": 1,
                       "tid": int(core[b]), "ts": float(start_us[b])})
    return _dump(path, events)


def write_replay_chrome(path: str | Path, title: str, run: ParaverRun) -> Path:
    """A replayed Dimemas trace (its Paraver run): a process per Dimemas task (MPI rank), a track
    per thread, a slice from each task-type or MPI call event that sets a value to the next event
    of its type on the thread, and a flow arrow per message from its logical send to its
    physical receive (where the receiver can have it)."""
    tasks = sorted({t for t, _h, _n in run.threads})
    labels = run.thread_labels or [f"thread {t}.{h}" for t, h, _n in run.threads]
    events: list[dict] = [{"ph": "M", "name": "process_name", "pid": t + 1, "tid": 0,
                           "args": {"name": title if len(tasks) == 1 else f"rank {t}"}} for t in tasks]
    events += [{"ph": "M", "name": "thread_name", "pid": t + 1, "tid": h, "args": {"name": label}}
               for (t, h, _n), label in zip(run.threads, labels)]
    ev = run.events
    keep = np.flatnonzero(np.isin(ev.get("type", np.zeros(0, np.int64)), [TASK_EVENT, *mpi_events.TYPE_LABELS]))
    order = keep[np.lexsort((keep, ev["type"][keep], ev["thread"][keep]))] if len(keep) else keep
    thread, etype, value, when = (ev[k][order] for k in ("thread", "type", "value", "time"))
    opens = np.flatnonzero((value[:-1] != 0) & (thread[1:] == thread[:-1]) & (etype[1:] == etype[:-1]))
    names = {t: values for t, (_label, values) in run.event_labels.items()}
    for i in opens.tolist():
        t, h, _n = run.threads[int(thread[i])]
        kind, v = int(etype[i]), int(value[i])
        events.append({"ph": "X", "name": printable(names.get(kind, {}).get(v, f"{kind}:{v}")),
                       "cat": "task" if kind == TASK_EVENT else "MPI", "pid": t + 1, "tid": h,
                       "ts": when[i] / 1e3, "dur": (when[i + 1] - when[i]) / 1e3})
    c = run.comms
    for k in range(len(c.get("thread", ()))):
        (st, sh, _), (rt, rh, _) = run.threads[int(c["thread"][k])], run.threads[int(c["rthread"][k])]
        flow = {"name": "message", "cat": "message", "id": k,
                "args": {"bytes": int(c["size"][k]), "tag": int(c["tag"][k])}}
        events.append({**flow, "ph": "s", "pid": st + 1, "tid": sh, "ts": c["lsend"][k] / 1e3})
        events.append({**flow, "ph": "f", "bp": "e", "pid": rt + 1, "tid": rh, "ts": c["precv"][k] / 1e3})
    return _dump(path, events)


def _dump(path: str | Path, events: list[dict]) -> Path:
    path = Path(path)
    with output_file(path) as f:
        json.dump({"traceEvents": events, "displayTimeUnit": "ns"}, f, separators=(",", ":"))
    return path
