"""Dependence hints: what each task type reads and writes, as OpenMP / OmpSs-2 clauses.

From accesses.csv (per fragment and object: the bytes read before being written, the bytes
written) and calls.csv (the task body a task instance called right after its start marker, with
its arguments). For every instance, an object is named through the argument that points into it
when there is one (ranges then count from that pointer, so tiles of different instances merge
into one clause), else by the object's own name; the instances of a type are merged:
  in     the instances read it before writing it, and never write it
  out    they write it, and read only what they wrote first
  inout  both
Objects nobody writes inside the analysed region carry no dependence and get no clause (read
only), nor do the creator's locals a task reads without being passed a pointer to them (the
values its arguments are computed from: firstprivate in OpenMP).

Limits: a range is the hull of the bytes (one clause per object, as OpenMP wants list items
identical or disjoint), merged over the instances of a type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import networkx as nx

from tareador.analyses.signatures import Signature, signature
from tareador.errors import TraceDirError
from tareador.taskgraph.metrics import critical_path_length, schedule_edges
from tareador.taskgraph.model import RAW, WAR, WAW, Access, Dependency, TaskCall, TaskTrace
from tareador.taskgraph.store import load_trace, read_table

IN, OUT, INOUT = "in", "out", "inout"
_HEX = re.compile(r"0x[0-9a-f]+")  # calls.csv's arguments, as decode writes them


@dataclass
class Clause:
    """One object a task type depends on, and how."""

    target: str  # how the pragma names it: the call's argument expression, the parameter, or the object
    parameter: str  # the task body's parameter it was passed as ('' if not passed)
    position: int  # the argument's position from 0, -1 if not passed
    kind: str  # heap, global, stack
    example: str  # the object of the first instance, as objects.csv names it
    size: int  # its size in bytes
    mode: str = IN
    read: tuple[int, int] | None = None  # hull of the bytes read before written, from the pointer
    written: tuple[int, int] | None = None
    element: int = 1  # bytes per element of the section (the parameter's pointee when divisible)
    instances: int = 0
    parts: set = field(default_factory=set)  # the distinct ranges single instances wrote

    @property
    def span(self) -> tuple[int, int]:
        """Bytes the clause covers: what its mode needs."""
        ranges = [r for r in (self.read if self.mode != OUT else None, self.written if self.mode != IN else None) if r]
        return min(r[0] for r in ranges), max(r[1] for r in ranges)


@dataclass
class TypeHints:
    name: str
    function: str  # the task body, '' when the task is not a call made right after its marker
    instances: int
    clauses: list[Clause] = field(default_factory=list)
    read_only: list[str] = field(default_factory=list)  # objects read, written by nobody in the region
    captured: list[str] = field(default_factory=list)  # the creator's locals, read to compute arguments


@dataclass
class Hints:
    types: list[TypeHints]
    warnings: list[str]
    tinf: int  # with renaming (what tareador simulates)
    tinf_without_renaming: int  # with the WAR/WAW between tasks kept, as OpenMP keeps them
    pragma_deps: list[Dependency]  # what OpenMP derives from the pragmas (and main's reads of task results)
    tinf_pragmas: int  # T∞ under pragma_deps

    def pragma_trace(self, trace: TaskTrace) -> TaskTrace:
        """trace with the dependences the pragmas give instead of the traced ones: simulate it to
        predict the OpenMP run of the generated pragmas (``dag_from_trace``)."""
        return TaskTrace(trace.fragments, self.pragma_deps, trace.objects, trace.summary, trace.path)


def _hull(a: tuple[int, int] | None, b: tuple[int, int] | None) -> tuple[int, int] | None:
    if a is None or b is None:
        return a or b
    return min(a[0], b[0]), max(a[1], b[1])


def _shift(r: tuple[int, int] | None, by: int) -> tuple[int, int] | None:
    return None if r is None else (r[0] - by, r[1] - by)


def _instance_accesses(rows: list[Access]) -> dict[str, tuple]:
    """object -> (read hull, written hull) over the fragments of one instance."""
    merged: dict[str, tuple] = {}
    for a in rows:
        read = (a.read_lo, a.read_hi) if a.read_lo >= 0 else None
        written = (a.write_lo, a.write_hi) if a.write_lo >= 0 else None
        old = merged.get(a.object, (None, None))
        merged[a.object] = (_hull(old[0], read), _hull(old[1], written))
    return merged


def _argument_values(args: list[int], sig: Signature) -> dict[int, int]:
    """Parameter position -> value, for the pointer parameters (DWARF): the integer-class ones take
    the registers, then the stack words, in order; without DWARF, the 6 registers by position."""
    if not sig.parameters:
        return dict(enumerate(args[:6]))
    values, slot = {}, 0
    for n, p in enumerate(sig.parameters):
        if p.floating:
            continue
        if p.pointee_size is not None and slot < len(args):
            values[n] = args[slot]
        slot += 1
    return values


def _pointed(values: dict[int, int], address: int, size: int) -> int:
    """Position of the first pointer argument pointing into [address, address + size), -1 if none."""
    return next((n for n, value in values.items() if address <= value < address + size), -1)


def _clause_names(sig: Signature, position: int, fallback: str) -> tuple[str, str]:
    """(target, parameter) for an argument position."""
    parameter = sig.parameters[position].name if position < len(sig.parameters) else ""
    argument = sig.arguments[position] if position < len(sig.arguments) and len(sig.arguments) == len(
        sig.parameters) else ""
    return argument or parameter or fallback, parameter


def _merge(th: TypeHints, clauses: dict[tuple, Clause], sig: Signature, args: dict[int, int], o,
           read: tuple[int, int] | None, written: tuple[int, int] | None, written_in_region: bool) -> None:
    """One instance's accesses to object o, into its type's clauses (or its read-only and
    captured lists)."""
    position = _pointed(args, o.address, o.size)
    if position < 0 and (not written_in_region or o.kind == "stack"):
        listed = th.read_only if not written_in_region else th.captured
        if o.name not in listed:
            listed.append(o.name)
        return
    offset = args[position] - o.address if position >= 0 else 0
    key = ("arg", position) if position >= 0 else ("object", o.name)
    c = clauses.get(key)
    if c is None:
        target, parameter = _clause_names(sig, position, f"arg{position + 1}") if position >= 0 else (o.name, "")
        pointee = sig.parameters[position].pointee_size if 0 <= position < len(sig.parameters) else None
        c = clauses[key] = Clause(target, parameter, position, o.kind, o.name, o.size, element=pointee or 1)
    c.read = _hull(c.read, _shift(read, offset))
    c.written = _hull(c.written, _shift(written, offset))
    if written:
        c.parts.add(_shift(written, offset))
    c.instances += 1


def hints(trace: TaskTrace, accesses: list[Access], calls: list[TaskCall],
          signatures: dict[tuple[str, int, int], Signature]) -> Hints:
    """signatures: per (module, function offset, call site offset) of calls.csv."""
    by_id = {t.id: t for t in trace.fragments}
    objects = {o.name: o for o in trace.objects}
    written_in_region = {a.object for a in accesses if a.write_lo >= 0}
    per_instance: dict[int, list[Access]] = {}
    for a in accesses:
        t = by_id.get(a.task)
        if t is not None and not t.is_main:
            per_instance.setdefault(t.instance, []).append(a)
    call_of = {c.task: c for c in calls}
    types: dict[str, TypeHints] = {}
    clauses: dict[str, dict[tuple, Clause]] = {}
    instance_args: dict[int, dict[int, int]] = {}
    for instance in sorted({t.instance for t in trace.fragments if not t.is_main}):
        name = by_id[instance].name
        call = call_of.get(instance)
        sig = signatures.get((call.module, call.function_offset, call.site_offset)) if call else None
        sig = sig or Signature(call.function if call else "", (), ())
        args = instance_args[instance] = _argument_values([int(v, 16) for v in call.args.split(";")] if call else [],
                                                          sig)
        th = types.setdefault(name, TypeHints(name, sig.function, 0))
        if th.function != sig.function:
            th.function = ""
        th.instances += 1
        for obj_name, (read, written) in _instance_accesses(per_instance.get(instance, [])).items():
            _merge(th, clauses.setdefault(name, {}), sig, args, objects[obj_name], read, written,
                   obj_name in written_in_region)
    for name, th in types.items():
        for c in clauses.get(name, {}).values():
            c.mode = INOUT if c.read and c.written else OUT if c.written else IN
            lo, hi = c.span
            if c.element > 1 and (lo % c.element or hi % c.element):
                c.element = 1
        th.clauses = sorted(clauses.get(name, {}).values(), key=lambda c: (c.position < 0, c.position, c.target))
    warnings, tinf_kept = _warnings(trace, list(types.values()))
    deps = _pragma_deps(trace, types, instance_args, objects)
    return Hints(sorted(types.values(), key=lambda t: t.name), warnings, trace.tinf, tinf_kept, deps,
                 critical_path_length(trace.fragments, deps))


def _pragma_deps(trace: TaskTrace, types: dict[str, TypeHints], instance_args: dict[int, dict[int, int]],
                 objects: dict) -> list[Dependency]:
    """The dependences an OpenMP runtime derives from the pragmas, instance by instance in
    creation order, each list item known by the address it starts at (what libgomp compares): an
    in follows the last out or inout of its address; an out or inout follows it and every in
    since. Main's reads of what tasks wrote stay (the taskwaits the hints ask for)."""
    by_id = {t.id: t for t in trace.fragments}
    last_fragment = {t.instance: t.id for t in sorted(trace.fragments, key=lambda t: t.id)}
    deps = [d for d in trace.deps if d.kind == RAW and (by_id[d.src].is_main or by_id[d.dst].is_main)]
    last_out: dict[int, int] = {}
    readers: dict[int, list[int]] = {}
    for instance, args in sorted(instance_args.items()):
        for c in types[by_id[instance].name].clauses:
            if c.position >= 0 and c.position not in args:
                continue
            address = (args[c.position] if c.position >= 0 else objects[c.example].address) + c.span[0]
            before = [last_out[address]] if address in last_out else []
            if c.mode == IN:
                readers.setdefault(address, []).append(instance)
            else:
                before += readers.pop(address, [])
                last_out[address] = instance
            deps += [Dependency(last_fragment[b], instance, RAW, c.example, 0) for b in before if b != instance]
    return deps


def _warnings(trace: TaskTrace, types: list[TypeHints]) -> tuple[list[str], int]:
    warnings = []
    for th in sorted(types, key=lambda t: t.name):
        for c in th.clauses:
            if c.kind == "global" and c.position < 0:
                warnings.append(f"{th.name}: global {c.target} is accessed ({c.mode}) but not passed to the task: "
                                f"the clause names it directly; pass it as an argument to make the dependence visible")
        unnamed = [c.target for c in th.clauses if c.position < 0 and c.kind != "global"]
        if unnamed:
            warnings.append(f"{th.name}: {', '.join(unnamed)} reach the task through no argument and have no name in "
                            f"the program: its pragmas name them as objects.csv does; make the task a call of a "
                            f"function that is passed them, right after its marker")
        for c in th.clauses:
            if len(c.parts) > 1:
                warnings.append(f"{th.name}: its instances write {len(c.parts)} different parts of {c.target}: the "
                                f"merged clause covers them all, so OpenMP runs the instances one after another; "
                                f"if the parts are independent, give each instance its own list item")
    by_id = {t.id: t for t in trace.fragments}
    ordered = nx.DiGraph(list(schedule_edges(trace.fragments, trace.deps)))
    reach: dict[int, set[int]] = {}

    def unordered(d) -> bool:
        if d.src not in reach:
            reach[d.src] = nx.descendants(ordered, d.src) if d.src in ordered else set()
        return d.dst not in reach[d.src]

    waits: dict[str, set[int]] = {}
    for d in trace.deps:
        if d.kind == RAW and by_id[d.dst].is_main and not by_id[d.src].is_main:
            waits.setdefault(d.object, set()).add(d.dst)
    for obj, fragments in sorted(waits.items()):
        warnings.append(f"the program's own code reads {obj} after tasks wrote it, at {len(fragments)} place(s): "
                        f"put a #pragma omp taskwait (OmpSs-2: #pragma oss taskwait) before each")
    between_tasks = [d for d in trace.deps if d.kind in (WAR, WAW) and d.src != d.dst
                     and not by_id[d.src].is_main and not by_id[d.dst].is_main
                     and by_id[d.src].instance != by_id[d.dst].instance]
    kept = [d for d in between_tasks if unordered(d)]
    races: dict[tuple, int] = {}
    for d in kept:
        a, b = by_id[d.src].name, by_id[d.dst].name
        if d.kind == WAW and a != b:
            key = (d.object, *sorted((a, b)))
            races[key] = races.get(key, 0) + 1
    for (obj, a, b), n in sorted(races.items()):
        warnings.append(f"{obj} is written by {a} and {b} with nothing ordering them ({n} pair(s)): a race if "
                        f"taskified without a depend clause on it in both")
    tinf_kept = trace.tinf
    if kept:
        counts = {k: sum(1 for d in kept if d.kind == k) for k in (WAR, WAW)}
        tinf_kept = critical_path_length(trace.fragments, list(trace.deps) + [replace(d, kind=RAW) for d in kept])
        warnings.append(f"OpenMP keeps {counts[WAR]} WAR and {counts[WAW]} WAW dependence(s) between tasks that a "
                        f"renaming runtime (and tareador's prediction) removes: T∞ {trace.tinf} -> {tinf_kept} "
                        f"instructions, parallelism {trace.t1 / trace.tinf:.2f} -> {trace.t1 / tinf_kept:.2f}")
    return warnings, tinf_kept


def load_hints(trace_dir: str | Path) -> Hints:
    """The hints of a trace directory: ``tareador.hints(DIR)``, what ``tareador hints`` prints."""
    trace = load_trace(trace_dir)
    remedy = "trace the program again with this version of tareador (older traces have no access summaries)"
    accesses = read_table(Path(trace_dir) / "accesses.csv", Access, remedy)
    calls = read_table(Path(trace_dir) / "calls.csv", TaskCall, remedy)
    _check(Path(trace_dir), {o.name for o in trace.objects}, accesses, calls)
    sites = {(c.module, c.function_offset, c.site_offset): c for c in calls}
    return hints(trace, accesses, calls, {key: signature(c.module, c.function, c.function_offset, c.site_offset)
                                          for key, c in sites.items()})


def _check(d: Path, objects: set[str], accesses: list[Access], calls: list[TaskCall]) -> None:
    """What hints() relies on beyond the columns' types, named by file and line (rows start at 2)."""
    for line, a in enumerate(accesses, start=2):
        if a.object not in objects:
            raise TraceDirError(f"{d / 'accesses.csv'}:{line}: object {a.object!r} is not in objects.csv; the file "
                                "is corrupt")
    for line, c in enumerate(calls, start=2):
        if not all(_HEX.fullmatch(v) for v in c.args.split(";")):
            raise TraceDirError(f"{d / 'calls.csv'}:{line}: arguments {c.args!r} are not ';'-separated hex numbers; "
                                "the file is corrupt")
