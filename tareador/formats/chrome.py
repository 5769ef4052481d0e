"""Chrome trace-event JSON of a simulated run, for chrome://tracing, Perfetto or speedscope."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tareador.files import output_file


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
    path = Path(path)
    with output_file(path) as f:
        json.dump({"traceEvents": events, "displayTimeUnit": "ns"}, f, separators=(",", ":"))
    return path
