"""Dependence hints: what each task type reads and writes, as OpenMP / OmpSs-2 clauses.

From accesses.csv (per fragment, object and stretch between the body call's arguments: the bytes
read before being written, the bytes written) and calls.csv (the task body a task instance called
right after its start marker, with its arguments). The bytes task instances write are cut into
regions, each one list item for every task type that touches it (``hint_clauses``); the instances
of a type are merged:
  in     the instances read it before writing it, and never write it
  out    they write it, and read only what they wrote first
  inout  both
What no task writes needs no clause: data nobody writes in the region (read only), the creator's
locals a task reads to compute its arguments (firstprivate in OpenMP), and what the code that
creates the tasks wrote before creating them. The printed pragmas are then replayed as OpenMP
reads them (``pragma_dag``), and every traced dependence they do not order is a warning: the
pragmas never race silently.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from tareador.analyses.hint_clauses import (
    IN,
    INOUT,
    OUT,
    Clause,
    Instance,
    consolidate,
    own_locals,
    settle_regions,
    type_clauses,
)
from tareador.analyses.pragma_dag import PragmaRun, Structure, replay, unenforced
from tareador.analyses.signatures import Signature, signature
from tareador.errors import TraceDirError
from tareador.taskgraph.dag import Dag, indices, reaches, span, with_edges
from tareador.taskgraph.model import RAW, WAR, WAW, Access, DataObject, Dependency, TaskCall, TaskTrace
from tareador.taskgraph.store import load_trace, read_table

__all__ = ["IN", "OUT", "INOUT", "Clause", "TypeHints", "Hints", "hints", "load_hints"]

_HEX = re.compile(r"0x[0-9a-f]+")  # calls.csv's arguments, as decode writes them


@dataclass
class TypeHints:
    name: str
    function: str  # the task body, '' when the task is not a call made right after its marker
    instances: int
    clauses: list[Clause] = field(default_factory=list)
    read_only: list[str] = field(default_factory=list)  # objects read, written by nobody in the region
    captured: list[str] = field(default_factory=list)  # the creator's locals, read to compute arguments
    set_before: list[str] = field(default_factory=list)  # read, written only by the code creating tasks
    own_locals: list[str] = field(default_factory=list)  # the creator's locals only this task touches


@dataclass
class Hints:
    types: list[TypeHints]
    warnings: list[str]
    tinf: int  # with renaming (what tareador simulates)
    tinf_without_renaming: int  # with the WAR/WAW between tasks kept, as OpenMP keeps them
    run: PragmaRun  # what OpenMP derives from the pragmas (and the taskwaits asked for)
    tinf_pragmas: int  # T∞ under the pragmas
    unenforced: list[Dependency] = field(default_factory=list)  # traced dependences the pragmas do not order

    @cached_property
    def pragma_deps(self) -> list[Dependency]:
        """The dependences OpenMP derives from the pragmas and the taskwaits, fragment to fragment."""
        return self.run.dependencies()

    def pragma_trace(self, trace: TaskTrace) -> TaskTrace:
        """trace with the dependences the pragmas give instead of the traced ones: simulate it to
        predict the OpenMP run of the generated pragmas (its ``dag``)."""
        return TaskTrace(trace.fragments, self.pragma_deps, trace.objects, trace.summary, trace.path)

    def __repr__(self) -> str:
        return (f"<Hints {len(self.types)} task types, {len(self.warnings)} warnings, "
                f"{len(self.unenforced)} dependences the pragmas do not order>")


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


def _instances(trace: TaskTrace, accesses: list[Access], calls: list[TaskCall],
               signatures: dict[tuple[str, int, int], Signature]) -> list[Instance]:
    """The task instances in creation order, with their bodies, arguments and accesses."""
    by_id = {t.id: t for t in trace.fragments}
    call_of = {c.task: c for c in calls}
    out: dict[int, Instance] = {}
    for t in sorted(trace.fragments, key=lambda t: t.id):
        if t.is_main or t.id != t.instance:
            continue
        call = call_of.get(t.id)
        sig = signatures.get((call.module, call.function_offset, call.site_offset)) if call else None
        sig = sig or Signature(call.function if call else "", (), ())
        args = [int(v, 16) for v in call.args.split(";")] if call else []
        out[t.id] = Instance(t.id, t.name, sig, _argument_values(args, sig), call is not None)
    for a in accesses:
        i = out.get(by_id[a.task].instance) if a.task in by_id else None
        if i is not None:
            i.accesses.append(a)
    objects = {o.name: o for o in trace.objects}
    for i in out.values():
        consolidate(i, objects)
    return list(out.values())


def _type_hints(instances: list[Instance], clauses: dict[str, list[Clause]], outside: dict[int, list[str]],
                objects: dict[str, DataObject], written: set[str]) -> list[TypeHints]:
    """One TypeHints per task type: its clauses, and what its instances read outside every region."""
    types: dict[str, TypeHints] = {}
    for i in instances:
        th = types.setdefault(i.type, TypeHints(i.type, i.signature.function, 0, clauses.get(i.type, [])))
        if th.function != i.signature.function:
            th.function = ""
        th.instances += 1
        for name in outside[i.id]:
            o = objects[name]
            listed = th.read_only if name not in written else th.captured if o.kind == "stack" else th.set_before
            if name not in listed:
                listed.append(name)
    return sorted(types.values(), key=lambda t: t.name)


def hints(trace: TaskTrace, accesses: list[Access], calls: list[TaskCall],
          signatures: dict[tuple[str, int, int], Signature]) -> Hints:
    """signatures: per (module, function offset, call site offset) of calls.csv."""
    objects = {o.name: o for o in trace.objects}
    s = Structure.of(trace.fragments)
    instances = _instances(trace, accesses, calls, signatures)
    settled = settle_regions(instances, objects)
    private = own_locals(settled, accesses, s.instance_of, trace.deps)
    signature_of: dict[str, Signature] = {}
    for i in instances:
        signature_of.setdefault(i.type, i.signature)
    clauses = type_clauses(settled.named, signature_of)
    types = _type_hints(instances, clauses, settled.outside, objects, {a.object for a in accesses if a.write_lo >= 0})
    for th in types:
        th.own_locals = private.get(th.name, [])
    touching = {(n.instance, n.obj.name) for items in settled.named.values() for n in items}
    body_reads = {(i.id, o) for i in instances for o in i.body_reads()}
    required = [d for d in trace.deps if s.instance_of[d.src] != s.instance_of[d.dst]
                and not _captured(d, s, objects, touching, body_reads)]
    waits = _waits(required, s)
    run = replay(instances, clauses, objects, s, sorted(waits))
    structure = TaskTrace(trace.fragments, [], trace.objects, trace.summary, trace.path).dag
    dag = _with_dependencies(structure, run.src, run.dst)
    missing = unenforced(run, dag, s, required)
    raw = [d for d in trace.deps if d.kind == RAW]
    traced = _with_dependencies(structure, [d.src for d in raw], [d.dst for d in raw])
    warnings, tinf_kept = _warnings(trace, traced, s, types, waits, required)
    warnings += _unenforced_warning(trace, s, missing)
    return Hints(types, warnings, span(traced), tinf_kept, run, span(dag), missing)


def _with_dependencies(structure: Dag, src: list[int], dst: list[int]) -> Dag:
    """The fragments' own order and their creations, with edges src -> dst (fragment ids)."""
    keep = np.array(src, np.int64) != np.array(dst, np.int64)
    return with_edges(structure, indices(structure, np.array(src, np.int64)[keep]),
                      indices(structure, np.array(dst, np.int64)[keep]))


def _captured(d: Dependency, s: Structure, objects: dict[str, DataObject], touching: set[tuple[int, str]],
              body_reads: set[tuple[int, str]]) -> bool:
    """A WAR/WAW from a task to its creator's code on the creator's locals that the task only read
    to compute its body's arguments (or that it touched outside every region): firstprivate
    values in OpenMP, no dependence."""
    src, dst = s.instance_of[d.src], s.instance_of[d.dst]
    private = (src, d.object) not in touching or (d.kind == WAR and (src, d.object) not in body_reads)
    creator = s.is_main[d.dst] or s.descends(src, dst)
    return d.kind != RAW and objects[d.object].kind == "stack" and private and creator


def _waits(required: list[Dependency], s: Structure) -> dict[int, list[Dependency]]:
    """Fragments of a task's creator that use what the task (or its descendants) accessed: a
    taskwait goes before each."""
    waits: dict[int, list[Dependency]] = defaultdict(list)
    for d in required:
        src, dst = s.instance_of[d.src], s.instance_of[d.dst]
        if not s.is_main[d.src] and (s.is_main[d.dst] or s.descends(src, dst)):
            waits[d.dst].append(d)
    return waits


def _taskwait_warnings(trace: TaskTrace, s: Structure, waits: dict[int, list[Dependency]]) -> list[str]:
    by_id = {t.id: t for t in trace.fragments}
    places: dict[tuple[str, str, bool], set[int]] = defaultdict(set)
    for f, deps in waits.items():
        for d in deps:
            # the frames of one function (stack:f, stack:f#1, ...) hold the same variables of the source
            obj = d.object.rsplit("#", 1)[0] if d.object.startswith("stack:") else d.object
            places[(by_id[f].name if not s.is_main[f] else "", obj, d.kind == RAW)].add(f)
    out = []
    for (creator, obj, reads), fragments in sorted(places.items()):
        who = f"{creator}: its code after creating tasks" if creator else "the program's own code"
        what = (f"reads {obj} after tasks wrote it" if reads else
                f"writes {obj} that tasks read or wrote before")
        out.append(f"{who} {what}, at {len(fragments)} place(s): put a #pragma omp taskwait (OmpSs-2: "
                   f"#pragma oss taskwait) before each")
    return out


def _warnings(trace: TaskTrace, traced: Dag, s: Structure, types: list[TypeHints],
              waits: dict[int, list[Dependency]], required: list[Dependency]) -> tuple[list[str], int]:
    warnings = []
    for th in types:
        for c in th.clauses:
            if c.kind == "global" and c.position < 0:
                warnings.append(f"{th.name}: global {c.target} is accessed ({c.mode}) but not passed to the task: "
                                f"the clause names it directly; pass it as an argument to make the dependence visible")
        unnamed = list(dict.fromkeys(c.target for c in th.clauses if c.position < 0 and c.kind != "global"))
        if unnamed:
            warnings.append(f"{th.name}: {', '.join(unnamed)} reach the task through no argument and have no name in "
                            f"the program: its pragmas name them as objects.csv does; make the task a call of a "
                            f"function that is passed them, right after its marker")
        for c in th.clauses:
            if c.parts > 1:
                warnings.append(f"{th.name}: its instances write {c.parts} different parts of {c.target}: the "
                                f"merged clause covers them all, so OpenMP runs the instances one after another; "
                                f"if the parts are independent, give each instance its own list item")
    warnings += _taskwait_warnings(trace, s, waits)
    kept = _kept(required, traced, s)
    races: Counter = Counter()
    by_id = {t.id: t for t in trace.fragments}
    for d in kept:
        a, b = by_id[d.src].name, by_id[d.dst].name
        if d.kind == WAW and a != b:
            races[(d.object, *sorted((a, b)))] += 1
    for (obj, a, b), n in sorted(races.items()):
        warnings.append(f"{obj} is written by {a} and {b} with nothing ordering them ({n} pair(s)): a race if "
                        f"taskified without a depend clause on it in both")
    tinf, tinf_kept = span(traced), span(traced)
    if kept:
        counts = Counter(d.kind for d in kept)
        tinf_kept = span(with_edges(traced, indices(traced, np.array([d.src for d in kept])),
                                    indices(traced, np.array([d.dst for d in kept]))))
        warnings.append(f"OpenMP keeps {counts[WAR]} WAR and {counts[WAW]} WAW dependence(s) between tasks that a "
                        f"renaming runtime (and tareador's prediction) removes: T∞ {tinf} -> {tinf_kept} "
                        f"instructions, parallelism {traced.t1 / tinf:.2f} -> {traced.t1 / tinf_kept:.2f}")
    return warnings, tinf_kept


def _kept(required: list[Dependency], traced: Dag, s: Structure) -> list[Dependency]:
    """The WAR/WAW between task instances that the RAW dependences do not order already, among
    those OpenMP must keep (not a creator's local a task read to compute its arguments: a
    firstprivate value, copied when the task is created)."""
    between = [d for d in required if d.kind in (WAR, WAW) and not s.is_main[d.src] and not s.is_main[d.dst]]
    if not between:
        return []
    ordered = reaches(traced, indices(traced, np.array([d.src for d in between])),
                      indices(traced, np.array([d.dst for d in between])))
    return [d for d, ok in zip(between, ordered.tolist(), strict=True) if not ok]


def _unenforced_warning(trace: TaskTrace, s: Structure, missing: list[Dependency]) -> list[str]:
    """The traced dependences the pragmas do not order, by kind, task types and object."""
    if not missing:
        return []
    by_id = {t.id: t for t in trace.fragments}
    groups = Counter((d.kind, by_id[d.src].name if not s.is_main[d.src] else "main",
                      by_id[d.dst].name if not s.is_main[d.dst] else "main",
                      d.object.rsplit("#", 1)[0] if d.object.startswith("heap:") else d.object) for d in missing)
    listed = [f"{kind} {a} -> {b} on {obj} ({n})" for (kind, a, b, obj), n in
              sorted(groups.items(), key=lambda g: (-g[1], g[0]))]
    more = f", and {len(listed) - 12} more" if len(listed) > 12 else ""
    return [f"the pragmas do not order {len(missing)} traced dependence(s), a race if pasted as they are: "
            f"{', '.join(listed[:12])}{more}; order them by hand (items on the tasks' parents, a taskwait, a "
            f"taskgroup) or change the code"]


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
