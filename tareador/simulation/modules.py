"""Dimemas' modules: a speed factor for the CPU bursts a thread runs inside an event's module.

A module is an event (type, value), with a factor (simulation/dimemas_config.py reads them from a
.cfg's "modules information"). Per thread, as in Dimemas 5.5.0 (model/task.c module_entrance,
module_exit, recompute_work_upon_modules, on the lists of utils/list.c): the open modules are a
list; an event of value v != 0 puts module (type, v), when one is defined, at its front; an
event (type, 0), of any type, takes the list's last module (the earliest opened) off it when
that one's type is type, else moves that one to the front; a burst takes its time / factor of the module at the
front (factor 0: no time; < 0: -factor seconds whatever its length), and then the node's
relative speed divides it. (With modules opened and closed one at a time, as tareador writes
its task types, that is simply the module the burst runs in.) In a tareador
trace the task type's event 7003 frames each task (its value: the .pcf's name of the type), so a
module (7003, v) makes every instance of task type v that much faster; MPI calls' events
(50000001...) frame no burst.

What is open at a burst depends on the thread's own events only, so it is found before the run.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from tareador.formats.dimemas import EVENT, DimTrace

NS = 1e9


def burst_ns(trace: DimTrace, modules: tuple[tuple[int, int, float], ...], bursts: np.ndarray) -> np.ndarray:
    """The ns of each burst record (trace order) under the modules, before the relative speed."""
    ns = trace.secs[bursts] * NS
    if not modules:
        return ns
    factors = {(kind, value): factor for kind, value, factor in modules}
    events = np.flatnonzero(trace.op == EVENT)
    # Those that can change the list: an event (t, v != 0) of a module's type, and every (t, 0).
    events = events[np.isin(trace.a[events], [kind for kind, _, _ in modules]) | (trace.b[events] == 0)]
    if not len(events):
        return ns
    open_after = _open_after(trace, events, factors)
    last = np.searchsorted(events, bursts) - 1  # the thread's last such event before the burst, if it is its own
    mine = last >= 0
    mine[mine] = trace.gthread[events[last[mine]]] == trace.gthread[bursts[mine]]
    module = np.where(mine, open_after[np.maximum(last, 0)], -1)
    table = np.array(list(factors.values()) or [1.0])
    factor = table[np.maximum(module, 0)]
    inside = module >= 0
    scaled = np.divide(ns, factor, out=np.zeros_like(ns), where=inside & (factor > 0))
    scaled[inside & (factor < 0)] = -factor[inside & (factor < 0)] * NS
    return np.where(inside, scaled, ns)


def _open_after(trace: DimTrace, events: np.ndarray, factors: dict) -> np.ndarray:
    """Per event, the index (in ``factors``' order) of the module at the front of the open list
    after it (module docstring), -1: none."""
    index = {key: i for i, key in enumerate(factors)}
    result = np.full(len(events), -1, np.int64)
    opened: deque[tuple[int, int]] = deque()  # (type, index) of the open modules, the front first
    thread = -1
    for i, (g, kind, value) in enumerate(zip(trace.gthread[events].tolist(), trace.a[events].tolist(),
                                             trace.b[events].tolist(), strict=True)):
        if g != thread:
            opened, thread = deque(), g
        if value != 0:
            if (kind, value) in index:
                opened.appendleft((kind, index[kind, value]))
        elif opened:
            last = opened.pop()
            if last[0] != kind:
                opened.appendleft(last)
        result[i] = opened[0][1] if opened else -1
    return result
