"""From what task instances read and wrote to one list item per region, named per task type.

OpenMP matches the list items of sibling tasks by the address they start at and wants items
identical or disjoint; a dependence is lost when a reader names bytes of an object from another
start than their writer does. So the bytes that need a dependence (those task instances write:
what the program's own code writes before creating a task reaches it by the creation) are cut
into *regions*, one per object stretch where what task instances read and wrote overlaps (among
those holding bytes a task wrote), and every instance that touches a region gets the whole
region as its item: one start and one length, whatever task type names it. An instance names a
region through the pointer argument that points at its start (else the nearest one below it, else
above), so that tiles of one allocation are each named by the expression that addresses them
(``A[k][k][0:TS*TS]``, ``TILE(i, k)[0]``); a task type prints one item per argument, so where its
instances would need different offsets or lengths from one argument, the regions it names that
way are merged (serialising those instances, which the warnings say), and where one region is
still named from different offsets, by the object itself.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from tareador.analyses.signatures import POINTER, POINTERS, Signature
from tareador.taskgraph.model import Access, DataObject, Dependency

IN, OUT, INOUT = "in", "out", "inout"
Range = tuple[int, int]
Key = tuple[Literal["arg"], int] | tuple[Literal["object"], str]  # ("arg", position) or ("object", object name)


@dataclass
class Clause:
    """One list item of a task type, and what its instances did in the region it names."""

    target: str  # how the pragma names it: the call's argument expression, the parameter, or the object
    parameter: str  # the task body's parameter it was passed as ('' if not passed)
    position: int  # the argument's position from 0, -1 if not passed
    kind: str  # heap, global, stack
    example: str  # the object of the first instance, as objects.csv names it
    size: int  # its size in bytes
    span: Range  # the item, in bytes from the pointer (from the object's start if not passed)
    mode: str = IN
    read: Range | None = None  # hull of the bytes read before written, from the pointer
    written: Range | None = None
    element: int = 1  # bytes per element of the section (the parameter's pointee when divisible)
    instances: int = 0  # distinct instances that touched the region
    parts: int = 0  # most distinct ranges the instances wrote of one region
    first_element: bool = False  # printed as the region's first element (see ``first_elements``)
    shared: str = ""  # the creator's variable the item is part of (``shared_variable``)


@dataclass
class Instance:
    """A task instance as hints sees it: its type, body and pointer arguments, what it accessed."""

    id: int
    type: str
    signature: Signature
    args: dict[int, int]  # parameter position -> value
    called: bool  # it called its body right after its marker (calls.csv): part 0 evaluated the arguments
    accesses: list[Access] = field(default_factory=list)

    def body_reads(self) -> set[str]:
        """The objects its body read (not the evaluation of the body call's arguments)."""
        return {a.object for a in self.accesses if a.read_lo >= 0 and (a.part or not self.called)}


@dataclass
class Use:
    """One instance's accesses to one region, ranges from the object's start."""

    read: Range | None = None
    written: Range | None = None


def hull(a: Range | None, b: Range | None) -> Range | None:
    if a is None or b is None:
        return a or b
    return min(a[0], b[0]), max(a[1], b[1])


def _clip(r: Range | None, to: Range) -> Range | None:
    if r is None or r[1] <= to[0] or r[0] >= to[1]:
        return None
    return max(r[0], to[0]), min(r[1], to[1])


def _merged(ranges: list[Range]) -> list[Range]:
    """Sorted, overlapping ranges merged (ranges that only touch stay apart)."""
    out: list[Range] = []
    for lo, hi in sorted(ranges):
        if out and lo < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _ranges(a: Access) -> tuple[Range | None, Range | None]:
    return (a.read_lo, a.read_hi) if a.read_lo >= 0 else None, (a.write_lo, a.write_hi) if a.write_lo >= 0 else None


def consolidate(i: Instance, objects: dict[str, DataObject]) -> None:
    """Rejoin the parts the tracer cut at argument values that are not the body's pointer
    parameters (the registers a call with fewer arguments leaves as they were, which may point
    anywhere): one read and one write hull per object, before the call and per stretch between
    pointer arguments after it, per fragment."""
    pairs = [(a.task, a.object) for a in i.accesses]
    if len(set(pairs)) == len(pairs):  # nothing was cut
        return
    cuts = sorted(set(i.args.values()))
    merged: dict[tuple[int, str, int], list[Range | None]] = {}
    for a in i.accesses:
        read, written = _ranges(a)
        first = min(r[0] for r in (read, written) if r)
        part = bisect_right(cuts, objects[a.object].address + first) + 1 if a.part else 0
        at = merged.setdefault((a.task, a.object, part), [None, None])
        at[0], at[1] = hull(at[0], read), hull(at[1], written)
    i.accesses = [Access(task, o, part, *(read or (-1, -1)), *(written or (-1, -1)))
                  for (task, o, part), (read, written) in merged.items()]


class Regions:
    """Per object, its regions in address order, with what finds those a range overlaps."""

    def __init__(self, by_object: dict[str, list[Range]]):
        self.of = by_object
        self._ends = {o: [hi for _, hi in r] for o, r in by_object.items()}

    def touched(self, obj: str, r: Range) -> range:
        """Indices of the regions of obj that r overlaps."""
        mine = self.of.get(obj)
        if not mine:
            return range(0)
        first = last = bisect_right(self._ends[obj], r[0])
        while last < len(mine) and mine[last][0] < r[1]:
            last += 1
        return range(first, last)

    def cover(self, obj: str, lo: int, hi: int) -> None:
        """One region for [lo, hi) and every region it overlaps."""
        self.of[obj] = _merged([*self.of[obj], (lo, hi)])
        self._ends[obj] = [e for _, e in self.of[obj]]


def task_regions(instances: list[Instance]) -> Regions:
    """Per object, the stretches where what task instances read and wrote overlaps, among those
    holding bytes a task wrote: every item on them starts where the stretch starts, so that a
    reader of part of what a writer wrote (fwd reading the lower triangle of the block lu0 wrote)
    names it from the same start."""
    touched: dict[str, list[Range]] = defaultdict(list)
    written: dict[str, list[int]] = defaultdict(list)
    for i in instances:
        for a in i.accesses:
            read, w = _ranges(a)
            touched[a.object] += [r for r in (read, w) if r]
            if w:
                written[a.object].append(w[0])
    regions = {}
    for o, starts in written.items():
        stretches = _merged(touched[o])
        firsts = [lo for lo, _ in stretches]
        keep = {bisect_right(firsts, w) - 1 for w in starts}
        regions[o] = [r for k, r in enumerate(stretches) if k in keep]
    return Regions(regions)


def uses(i: Instance, regions: Regions) -> tuple[dict[tuple[str, int], Use], list[str]]:
    """What instance i did in each (object, region index); and the objects it read outside every
    region (no dependence: nothing a task wrote)."""
    found: dict[tuple[str, int], Use] = {}
    outside: list[str] = []
    for a in i.accesses:
        read, written = _ranges(a)
        for r, is_write in ((read, False), (written, True)):
            if r is None:
                continue
            hit = regions.touched(a.object, r)
            if not hit and a.object not in outside:
                outside.append(a.object)
            for k in hit:
                u = found.setdefault((a.object, k), Use())
                if is_write:
                    u.written = hull(u.written, _clip(r, regions.of[a.object][k]))
                else:
                    u.read = hull(u.read, _clip(r, regions.of[a.object][k]))
    return found, outside


def _naming_argument(args: dict[int, int], obj: DataObject, region: Range) -> tuple[int, int] | None:
    """(position, value from the object's start) of the pointer argument that names a region: the
    one at its start, else the nearest below it, else the nearest above; None if no argument
    points into the object."""
    inside = sorted((v - obj.address, p) for p, v in args.items() if obj.address <= v < obj.address + obj.size)
    exact = [(v, p) for v, p in inside if v == region[0]]
    below = [(v, p) for v, p in inside if v < region[0]]
    above = [(v, p) for v, p in inside if v > region[0]]
    best = exact[0] if exact else max(below, key=lambda x: (x[0], -x[1])) if below else above[0] if above else None
    return None if best is None else (best[1], best[0])


@dataclass
class Named:
    """A use of a region as a task type names it."""

    instance: int
    obj: DataObject
    region: Range
    offset: int  # region start from the naming pointer (from the object's start for object keys)
    use: Use


def name_uses(instances: list[Instance], regions: Regions, objects: dict[str, DataObject],
              by_object: set[tuple[str, str]]) -> tuple[dict[tuple[str, Key], list[Named]], dict[int, list[str]]]:
    """Every use of a region, grouped by (task type, key); and per instance, the objects it read
    outside every region."""
    named: dict[tuple[str, Key], list[Named]] = defaultdict(list)
    outside = {}
    for i in instances:
        found, outside[i.id] = uses(i, regions)
        for (obj_name, k), u in found.items():
            o, region = objects[obj_name], regions.of[obj_name][k]
            arg = None if (i.type, obj_name) in by_object else _naming_argument(i.args, o, region)
            key: Key = ("arg", arg[0]) if arg else ("object", obj_name)
            named[(i.type, key)].append(Named(i.id, o, region, region[0] - arg[1] if arg else region[0], u))
    return named, outside


def _uniform(items: list[Named]) -> bool:
    """Whether every instance names the same (offset, length) items through the key."""
    if len({(n.offset, n.region[1] - n.region[0]) for n in items}) == 1:
        return True
    per: dict[int, set[Range]] = defaultdict(set)
    for n in items:
        per[n.instance].add((n.offset, n.region[1] - n.region[0]))
    return len({frozenset(s) for s in per.values()}) == 1


@dataclass
class Settled:
    """Regions, and their uses as each task type names them."""

    regions: Regions
    named: dict[tuple[str, Key], list[Named]]
    outside: dict[int, list[str]]  # per instance, the objects it read outside every region


def settle_regions(instances: list[Instance], objects: dict[str, DataObject]) -> Settled:
    """Regions and their names, coarsened until each task type names every region through an
    argument from one offset: merge what one argument names at several offsets, then name by the
    object what still differs."""
    regions = task_regions(instances)
    by_object: set[tuple[str, str]] = set()
    while True:
        named, outside = name_uses(instances, regions, objects, by_object)
        bad = [(t, items) for (t, key), items in named.items() if key[0] == "arg" and not _uniform(items)]
        if not bad:
            return Settled(regions, named, outside)
        for t, items in bad:
            spans: dict[str, set[Range]] = defaultdict(set)
            for n in items:
                spans[n.obj.name].add(n.region)
            if any(len(s) > 1 for s in spans.values()):
                for obj_name, s in spans.items():
                    regions.cover(obj_name, min(r[0] for r in s), max(r[1] for r in s))
            else:
                by_object.update((t, obj_name) for obj_name in spans)


def own_locals(settled: Settled, accesses: list[Access], instance_of: dict[int, int],
               deps: Sequence[Dependency]) -> dict[str, list[str]]:
    """Drop the stack regions no argument names that one instance alone touches (main's code
    counting as one instance): locals of the task's own block, private to it in OpenMP. An
    instance's accesses to its own frames are not recorded (the parent reading what its child
    wrote into its local): a dependence between two instances on such an object counts them both.
    Returns, per task type, the objects dropped."""
    regions, named = settled.regions, settled.named
    candidates = {key[1] for (_, key), items in named.items() if key[0] == "object" and items[0].obj.kind == "stack"}
    touched: dict[tuple[str, int], set[int]] = defaultdict(set)  # (object, instance) -> region indices
    for a in accesses:
        if a.object in candidates:
            for r in _ranges(a):
                touched[(a.object, instance_of[a.task])].update(regions.touched(a.object, r) if r else ())
    touchers: dict[tuple[str, int], set[int]] = defaultdict(set)
    for (o, i), ks in touched.items():
        for k in ks:
            touchers[(o, k)].add(i)
    for d in deps:
        ends = (instance_of[d.src], instance_of[d.dst])
        if d.object in candidates and ends[0] != ends[1]:
            for x, y in (ends, ends[::-1]):
                for k in touched.get((d.object, x), ()) if (d.object, y) not in touched else ():
                    touchers[(d.object, k)].add(y)
    shared = {(o, regions.of[o][k]) for (o, k), who in touchers.items() if len(who) > 1}
    dropped: dict[str, list[str]] = defaultdict(list)
    for (t, key), items in named.items():
        if key[0] == "object" and key[1] in candidates:
            kept = [n for n in items if (n.obj.name, n.region) in shared]
            if len(kept) < len(items) and items[0].obj.name not in dropped[t]:
                dropped[t].append(items[0].obj.name)
            items[:] = kept
    for empty in [k for k, items in named.items() if not items]:
        del named[empty]
    return dropped


def _names(sig: Signature, position: int) -> tuple[str, str]:
    """(target, parameter) for an argument position."""
    parameter = sig.parameters[position].name if position < len(sig.parameters) else ""
    argument = sig.arguments[position] if position < len(sig.arguments) and len(sig.arguments) == len(
        sig.parameters) else ""
    return argument or parameter or f"arg{position + 1}", parameter


def clause(key: Key, items: list[Named], sig: Signature) -> Clause:
    """The list item a task type prints for one (key, offset, length), from its instances' uses."""
    first = items[0]
    o, offset, length = first.obj, first.offset, first.region[1] - first.region[0]
    position = key[1] if key[0] == "arg" else -1
    target, parameter = _names(sig, position) if position >= 0 else (o.name, "")
    c = Clause(target, parameter, position, o.kind, o.name, o.size, (offset, offset + length))
    parts: dict[tuple[str, Range], set[Range]] = defaultdict(set)
    for n in items:
        shift = n.region[0] - n.offset  # the pointer, from the object's start
        c.read = hull(c.read, None if n.use.read is None else (n.use.read[0] - shift, n.use.read[1] - shift))
        c.written = hull(c.written, None if n.use.written is None else (n.use.written[0] - shift,
                                                                        n.use.written[1] - shift))
        if n.use.written:
            parts[(n.obj.name, n.region)].add((n.use.written[0] - n.region[0], n.use.written[1] - n.region[0]))
    c.mode = INOUT if c.read and c.written else OUT if c.written else IN
    c.instances = len({n.instance for n in items})
    c.parts = max((len(s) for s in parts.values()), default=0)
    pointee = sig.parameters[position].pointee_size if 0 <= position < len(sig.parameters) else None
    c.element = pointee if pointee and offset % pointee == 0 and length % pointee == 0 else 1
    c.shared = shared_variable(c, dict(sig.caller_variables))
    return c


_SUBSCRIPTED = r"[A-Za-z_]\w*(?:\s*\[[^\[\]]*(?:\[[^\[\]]*\])*[^\[\]]*\])*"


def array_base(target: str) -> tuple[str, str | None] | None:
    """target as base plus index in C, the base an identifier with subscripts, the only thing an
    OpenMP array section may follow in GCC 12: A[k][k] is (A[k][k], ''), &x[i] and x + i are
    (x, i), &x is (x, None); None for anything else (a macro or function call, a cast)."""
    t = target.strip()
    if re.fullmatch(_SUBSCRIPTED, t):
        return t, ""
    m = re.fullmatch(rf"&\s*({_SUBSCRIPTED})\s*\[([^\[\]]+)\]", t) or re.fullmatch(rf"({_SUBSCRIPTED})\s*\+\s*(.+)", t)
    if m:
        return m.group(1), m.group(2).strip()
    m = re.fullmatch(rf"&\s*({_SUBSCRIPTED})", t)
    return (m.group(1), None) if m else None


def expressible(c: Clause) -> bool:
    """Whether an array section (or, for &x covered whole, x) can say the item in GCC 12."""
    split = array_base(c.target)
    if split is None:
        return False
    if split[1] is None:
        return c.span == (0, c.element)
    return bool(split[1]) or c.span[0] >= 0


def shared_variable(c: Clause, kinds: dict[str, str]) -> str:
    """The creator's variable whose own storage the item is part of, which an OpenMP task must
    share (it copies the locals of the function creating it): x for ``&x``, for an array x
    (``x``, ``x + i``, ``&x[i]``), for an array of pointers only when its elements are not
    followed (``x``, not ``x[i]``). Not a pointer variable: the item is what it points at, which
    the task's copy of the pointer reaches; sharing the pointer itself would leave the task the
    creator's variable, gone once the creator returns. kinds: the caller's variables
    (``Signature.caller_variables``); one not found there is shared."""
    split = array_base(c.target) if c.kind == "stack" and c.position >= 0 else None
    if not split:
        return ""
    identifier = re.match(r"[A-Za-z_]\w*", split[0])
    assert identifier is not None  # array_base's base starts with one
    name = identifier.group(0)
    kind, followed = kinds.get(name), split[0] != name
    if split[1] is None or kind is None or (kind != POINTER and not (kind == POINTERS and followed)):
        return name
    return ""


def _needs_first_element(c: Clause) -> bool:
    """An item named through an argument in elements that no array section can express."""
    return c.position >= 0 and c.element > 1 and not expressible(c)


def first_elements(named_by: list[tuple[Clause, set[tuple[str, Range]]]]) -> None:
    """Where one item of a region must be its first element (``TILE(i, k)[0]``: no section), every
    item naming that region (and, transitively, the regions those name) is printed so, keeping the
    items of a region identical, as OpenMP wants; the runtime compares their start anyway."""
    root = list(range(len(named_by)))

    def find(k: int) -> int:
        while root[k] != k:
            root[k] = root[root[k]]
            k = root[k]
        return k

    owner: dict[tuple[str, Range], int] = {}
    for k, (_, regions) in enumerate(named_by):
        for r in regions:
            root[find(k)] = find(owner.setdefault(r, k))
    forced = {find(k) for k, (c, _) in enumerate(named_by) if _needs_first_element(c)}
    for k, (c, _) in enumerate(named_by):
        c.first_element = find(k) in forced and c.position >= 0 and c.element > 1


def type_clauses(named: dict[tuple[str, Key], list[Named]], signature_of: dict[str, Signature]) -> dict[
        str, list[Clause]]:
    """Per task type, its list items: one per (key, offset, length)."""
    out: dict[str, list[Clause]] = defaultdict(list)
    named_by = []
    for (t, key), items in named.items():
        groups: dict[Range | tuple[str, Range], list[Named]] = defaultdict(list)
        for n in items:
            groups[(n.offset, n.region[1] - n.region[0]) if key[0] == "arg" else (n.obj.name, n.region)].append(n)
        for g in groups.values():
            out[t].append(clause(key, g, signature_of[t]))
            named_by.append((out[t][-1], {(n.obj.name, n.region) for n in g}))
    first_elements(named_by)
    for t in out:
        out[t].sort(key=lambda c: (c.position < 0, c.position, c.target, c.span))
    return out
