"""What an OpenMP runtime derives from the printed pragmas, and whether that keeps every traced
dependence.

The pragmas are replayed as a runtime reads them: instance by instance in creation order, each
list item evaluated with the instance's arguments and known by the address it starts at (what
libgomp and the LLVM runtime compare), among the children of one task only (siblings): an ``in``
follows the last ``out``/``inout`` of its address, an ``out``/``inout`` that one and every ``in``
since; a task's successors wait for it to end, not for its children. The taskwaits the hints ask
for wait for every child created before them. Then every dependence the trace recorded between
two task instances, or from a task to the code that created it, must be a path of that graph:
OpenMP renames nothing, so a RAW, WAR or WAW it does not order is a race.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tareador.analyses.hint_clauses import IN, Clause, Instance
from tareador.taskgraph.dag import Dag, indices, reaches
from tareador.taskgraph.model import RAW, DataObject, Dependency, Fragment

Stamp = tuple[int, bool]  # (outs of the item so far, whether this instance is one)


@dataclass
class Structure:
    """Who created whom: the instance of each fragment, each instance's parent instance, its
    first and last fragment; main's fragments share one instance."""

    instance_of: dict[int, int]
    parent_of: dict[int, int]  # task instance -> the instance that created it
    last_fragment: dict[int, int]
    is_main: dict[int, bool]  # per fragment

    @classmethod
    def of(cls, fragments: Sequence[Fragment]) -> Structure:
        ordered = sorted(fragments, key=lambda t: t.id)
        instance_of = {t.id: t.instance for t in ordered}
        return cls(instance_of, {t.instance: instance_of[t.parent] for t in ordered if t.id == t.instance and
                                 t.parent in instance_of}, {t.instance: t.id for t in ordered},
                   {t.id: t.is_main for t in ordered})

    def descends(self, instance: int, ancestor: int) -> bool:
        """Whether instance was created, directly or not, by ancestor."""
        while instance in self.parent_of:
            instance = self.parent_of[instance]
            if instance == ancestor:
                return True
        return False


@dataclass
class PragmaRun:
    """The edges OpenMP derives, fragment id to fragment id, each with the object it is about."""

    src: list[int]
    dst: list[int]
    objects: list[str]
    stamps: dict[int, dict[tuple[int, int], Stamp]]  # instance -> (parent, address) -> stamp

    def dependencies(self) -> list[Dependency]:
        return [Dependency(s, d, RAW, o, 0) for s, d, o in zip(self.src, self.dst, self.objects, strict=True)]


def item_address(c: Clause, i: Instance, objects: dict[str, DataObject]) -> int | None:
    """Where the list item of clause c starts for instance i; None if its argument is unknown."""
    if c.position < 0:
        return objects[c.example].address + c.span[0]
    return i.args[c.position] + c.span[0] if c.position in i.args else None


def replay(instances: list[Instance], clauses: dict[str, list[Clause]], objects: dict[str, DataObject],
           s: Structure, waits: list[int]) -> PragmaRun:
    """The edges of the pragmas (and of a taskwait before each fragment in waits)."""
    run = PragmaRun([], [], [], {})
    last_out: dict[tuple[int, int], int] = {}
    readers: dict[tuple[int, int], list[int]] = defaultdict(list)
    outs: dict[tuple[int, int], int] = defaultdict(int)
    for i in sorted(instances, key=lambda i: i.id):
        stamps = run.stamps[i.id] = {}
        scope = s.parent_of.get(i.id, -1)
        for c in clauses.get(i.type, []):
            address = item_address(c, i, objects)
            if address is None:
                continue
            item = (scope, address)
            before = [last_out[item]] if item in last_out else []
            if c.mode == IN:
                readers[item].append(i.id)
            else:
                before += readers.pop(item, [])
                last_out[item] = i.id
                outs[item] += 1
            stamps[item] = (outs[item], c.mode != IN)
            for b in before:
                if b != i.id:
                    run.src.append(s.last_fragment[b])
                    run.dst.append(i.id)
                    run.objects.append(c.example)
    _taskwait_edges(run, instances, s, waits)
    return run


def _taskwait_edges(run: PragmaRun, instances: list[Instance], s: Structure, waits: list[int]) -> None:
    """A taskwait before fragment f waits for the children of f's instance created before it
    (those before an earlier taskwait of the instance are already behind that one)."""
    children: dict[int, list[int]] = defaultdict(list)
    for i in sorted(instances, key=lambda i: i.id):
        children[s.parent_of.get(i.id, -1)].append(i.id)
    done: dict[int, int] = defaultdict(int)
    for f in sorted(waits):
        parent = s.instance_of[f]
        mine, start = children[parent], done[parent]
        end = bisect_left(mine, f, lo=start)
        done[parent] = end
        run.src += [s.last_fragment[c] for c in mine[start:end]]
        run.dst += [f] * (end - start)
        run.objects += [""] * (end - start)


def ordered_by_items(run: PragmaRun, u: int, v: int) -> bool:
    """Whether instance v, created after its sibling u, waits for u through one list item: one of
    them writes it, or an out came between them."""
    mine, theirs = run.stamps.get(u, {}), run.stamps.get(v, {})
    for item, (outs_u, out_u) in mine.items():
        if item in theirs:
            outs_v, out_v = theirs[item]
            if out_u or out_v or outs_u < outs_v:
                return True
    return False


def unenforced(run: PragmaRun, dag: Dag, s: Structure, required: list[Dependency]) -> list[Dependency]:
    """The required dependences that the pragmas' graph (dag) does not contain as paths."""
    rest = []
    for d in required:
        u, v = s.instance_of[d.src], s.instance_of[d.dst]
        if s.is_main[d.src] or s.is_main[d.dst] or u > v or s.parent_of.get(u) != s.parent_of.get(v) or \
                not ordered_by_items(run, u, v):
            rest.append(d)
    if not rest:
        return []
    src = indices(dag, np.array([d.src for d in rest], np.int64))
    dst = indices(dag, np.array([d.dst for d in rest], np.int64))
    return [d for d, ok in zip(rest, reaches(dag, src, dst).tolist(), strict=True) if not ok]
