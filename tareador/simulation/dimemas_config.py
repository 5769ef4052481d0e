"""A Dimemas 5.5.0 configuration (.cfg) and the scheduler and communications files it names, read
into a Machine (simulation/machine.py).

Read in Dimemas' source (input/new_configuration.c, comm_configuration.c, sched/SCH_*.c,
model/task.c) and checked against its runs. Every line either means what it means to Dimemas or
is refused in one line naming the file and line: a record name Dimemas does not know (it stops
there too, "Unknown configuration record type"), a record this replay does not model, and what
Dimemas itself would skip without a word (a line holding "//" after a record, a "/*" comment
closed on its own line, which makes it skip every later line up to the next "*/"). What is read
and changes nothing here (the quantum of a communications file, a busy wait) is a warning.

- "node information": the 13-field form (machine id, architecture, ...) and the 14-field one
  with a node id after the machine id, which Dimemas ignores (nodes take the records' order);
  "multi node information" defines its count of nodes at once. Together they define exactly the
  nodes of "environment information", all alike (replay has one kind of node).
- "mapping information" {trace, tasks, [n] {node, ...}}: task t runs on the t-th node listed
  (Dimemas 5.5.0 crashes on this record: its TASK_Init drops the nodes it mapped); "predefined
  mapping information": "N TASKS_PER_NODE" (N >= 1; Dimemas refuses 0), "FILL_NODES" (a task
  per CPU), "INTERLEAVED" (task t on node t mod nodes). One mapping in all: a second would map
  a second application, which replay does not simulate.
- "modules information" {type, value, factor}: every CPU burst a thread runs while the
  module's event (type, value) is its innermost open module takes time / factor (0:
  instantaneous, < 0: -factor seconds), before the node's relative speed divides it. An event
  of value v != 0 opens module (type, v) if one is defined; an event (type, 0) closes the
  innermost open module if its type is type (model/task.c module_entrance, module_exit,
  recompute_work_upon_modules). Dimemas adds a module only after a mapping record (else it
  drops it with a warning): replay refuses one before.
- "configuration files" {scheduler, file system, communications, sensitivity}: the scheduler
  file (below); a file-system file (it times I/O records, which replay's traces never have);
  the communications file (below); a sensitivity (random values) file is refused.
- Communications file, one line each: "Machine policy: 0 FIFO|RR|BOOST" (RR and BOOST must be
  followed by "Quantum size (bytes): N", which Dimemas 5.5.0 reads and uses nowhere): under
  RR and BOOST a message never waits for a bus, and one that starts while more messages than
  buses are under way moves at bandwidth x buses / messages, holding its bus and links for the
  full-bandwidth time only (model/communic.c really_send_*, recompute_*_bandwidth); "Machine
  globalop: 0 id FIN_MODEL FIN_SIZE FOUT_MODEL FOUT_SIZE" and "id FIN_MODEL FIN_SIZE FOUT_MODEL
  FOUT_SIZE contention" set one global operation's fans (simulation/global_ops.py; Dimemas skips
  MPI_Reduce in the first form only); "Flight time:" and "External globalop:" are between
  machines and change nothing on one. A "Policy: NAME" line is refused: Dimemas 5.5.0 takes it
  only when an uninitialised flag happens to be true (never in the build checked).
- Scheduler file: "Policy: FIFO|RR|SS_MPI_CP", then for FIFO and RR "Context switch cost
  (seconds)", "Busy wait (seconds)" and for RR "Quantum (seconds)". SS_MPI_CP reads nothing past
  its policy line, so under it a context-switch cost costs nothing, here as there.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from tareador.errors import MachineError
from tareador.formats.dimemas import GLOBAL_OPS, GLOP_REDUCE
from tareador.simulation.machine import Machine, checked, read_text
from tareador.simulation.policies import DIMEMAS_SCHEDULERS

DIMEMAS_POLICIES = DIMEMAS_SCHEDULERS  # Dimemas scheduler names -> ours
DIMEMAS_BUS_POLICIES = {"FIFO": "fifo", "RR": "rr", "BOOST": "rr"}
FAN_MODELS = {"0": 0, "CTE": 1, "LIN": 2, "LOG": 3}  # GOP_MODEL_* (define.h)
FAN_SIZES = {"MIN": 1, "MAX": 2, "MEAN": 3, "2MAX": 4, "S+R": 5}  # GOP_SIZE_*; 0 (CURR) is the default
NODE_FIELDS = ("cores_per_node", "relative_speed", "intra_latency", "intra_bandwidth", "intra_buses",
               "intra_in_links", "intra_out_links", "inter_latency", "in_links", "out_links")
NODE_KINDS = (int, float, float, float, int, int, int, float, int, int)

# One `"record name" {fields};;` per line.
_RECORD = re.compile(r'^"([^"]+)"\s*\{(.*)\}\s*;?;?\s*$')
_FIELD = re.compile(r'\s*("[^"]*"|\[\d+\]\s*\{[^}]*\}|[^,]*)\s*(?:,|$)')


@dataclass
class _Reading:
    """What the records read so far say."""

    path: Path
    values: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    nodes: int = 0  # defined by node records
    node_params: set = field(default_factory=set)
    environment: int = 0  # line of the "environment information" record, 0: none yet
    mapped: int = 0  # line of the mapping record, 0: none yet
    modules: dict = field(default_factory=dict)

    def fail(self, lineno: int, why: str) -> NoReturn:
        raise MachineError(f"{self.path}:{lineno}: {why}")

    def num(self, rec: str, lineno: int, items: list[str], i: int, kind=float):
        try:
            value = float(items[i])
        except (IndexError, ValueError):
            self.fail(lineno, f"field {i + 1} of {rec!r} is not a number")
        if kind is int and not value.is_integer():
            self.fail(lineno, f"field {i + 1} of {rec!r} must be a whole number, not {items[i]}")
        return kind(value)

    def count(self, rec: str, lineno: int, items: list[str], *expected: int) -> None:
        if len(items) not in expected:
            self.fail(lineno, f"{rec!r} has {len(items)} fields, Dimemas reads {' or '.join(map(str, expected))}")


def parse_cfg(text: str, path: Path | str = "<cfg>") -> Machine:
    r = _Reading(Path(path))
    for lineno, name, items in _records(text, r):
        handler = _HANDLERS.get(name)
        if handler is None:
            close = difflib.get_close_matches(name, _HANDLERS, n=1)
            r.fail(lineno, f"unknown record {name!r}{f' (did you mean {close[0]!r}?)' if close else ''}; Dimemas "
                           "stops there too ('Unknown configuration record type')")
        handler(r, name, lineno, items)
    if not r.environment:
        raise MachineError(f'{r.path}: no "environment information" record; is this a Dimemas configuration?')
    if not r.nodes:
        raise MachineError(f'{r.path}: no "multi node information" or "node information" record')
    if r.nodes != r.values["nodes"]:
        raise MachineError(f'{r.path}: its node records define {r.nodes} nodes, "environment information" says '
                           f"{r.values['nodes']}; Dimemas refuses that too")
    if len(r.node_params) > 1:
        raise MachineError(f"{r.path}: nodes with different parameters are not supported")
    if r.values.get("relative_speed", 1.0) <= 0:
        raise MachineError(f"{r.path}: relative speed {r.values['relative_speed']} (instantaneous bursts) is not "
                           "supported")
    r.values["modules"] = tuple((t, v, f) for (t, v), f in r.modules.items())
    r.values["warnings"] = tuple(r.warnings)
    return checked(r.values, r.path)


def _records(text: str, r: _Reading):
    """(line, record name, fields) of each record, skipping comments as Dimemas does: the first
    line, lines holding "//", and from a line holding "/*" to the next holding "*/"."""
    in_comment = False
    for lineno, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if lineno == 1 or not line:
            continue
        if in_comment:
            in_comment = "*/" not in line
            if not in_comment and not line.endswith("*/"):
                r.fail(lineno, "Dimemas skips the whole line that closes a /* comment, so the text after '*/' here "
                               "would be lost; put it on a line of its own")
            continue
        if "//" in line:
            if not line.startswith("//"):
                r.fail(lineno, "Dimemas skips every line that holds '//', this record too; put the comment on a line "
                               "of its own")
            continue
        if "/*" in line:
            if not line.startswith("/*") or "*/" in line:
                r.fail(lineno, "Dimemas takes a line holding '/*' as the start of a comment that ends only at a later "
                               "line holding '*/' (skipping everything between); open and close /* comments on lines "
                               "of their own, or use //")
            in_comment = True
            continue
        m = _RECORD.match(line)
        if not m:
            r.fail(lineno, f"not a Dimemas configuration record: {line[:60]!r}")
        yield lineno, m.group(1), _fields(m.group(2))


def _fields(body: str) -> list[str]:
    out = [m.group(1) for m in _FIELD.finditer(body)]
    return out[:-1] if out and out[-1] == "" else out


def _unquoted(item: str) -> str:
    return item.strip().strip('"').strip()


def _wan(r: _Reading, rec: str, lineno: int, items: list[str]) -> None:
    r.count(rec, lineno, items, 7)
    if r.num(rec, lineno, items, 1, int) != 1 or r.num(rec, lineno, items, 2, int) != 0:
        r.fail(lineno, "several machines, or dedicated connections between them, are not modelled: replay simulates "
                       "one machine (1 machine, 0 dedicated connections)")


def _environment(r: _Reading, rec: str, lineno: int, items: list[str]) -> None:
    r.count(rec, lineno, items, 7)
    if r.environment:
        r.fail(lineno, f"a second {rec!r} (the first is at line {r.environment}) is a second machine; replay "
                       "simulates one")
    if r.num(rec, lineno, items, 1, int) != 0:
        r.fail(lineno, "the machine id must be 0: replay simulates one machine")
    r.environment = lineno
    r.values["nodes"] = r.num(rec, lineno, items, 3, int)
    r.values["inter_bandwidth"] = r.num(rec, lineno, items, 4)
    r.values["buses"] = r.num(rec, lineno, items, 5, int)
    r.values["collective_model"] = r.num(rec, lineno, items, 6, int)


def _node(r: _Reading, rec: str, lineno: int, items: list[str]) -> None:
    """A "node information" record (13 fields, or 14 with a node id Dimemas ignores) or a "multi
    node information" one (14: machine id, node count, ...)."""
    if rec == "node information" and len(items) == 11:
        r.fail(lineno, "the old 11-field 'node information' (no intra-node buses and links) is not supported; use the "
                       "13-field form")
    r.count(rec, lineno, items, *((13, 14) if rec == "node information" else (14,)))
    if r.num(rec, lineno, items, 0, int) != 0:
        r.fail(lineno, "the machine id must be 0: replay simulates one machine")
    first = len(items) - 11
    count = r.num(rec, lineno, items, 1, int) if rec == "multi node information" else 1
    if rec == "node information" and first == 3:
        r.num(rec, lineno, items, 1, int)  # the node id: a number, which Dimemas then ignores
    if count < 1:
        r.fail(lineno, f"a node count of {count}; Dimemas needs at least 1")
    node = tuple(r.num(rec, lineno, items, first + i, k) for i, k in enumerate(NODE_KINDS))
    r.nodes += count
    r.node_params.add(node)
    r.values.update(zip(NODE_FIELDS, node, strict=True))


def _mapping(r: _Reading, rec: str, lineno: int, items: list[str]) -> None:
    """A "mapping information" record {trace, tasks, [n] {nodes}}, or a "predefined mapping information" one."""
    if r.mapped:
        r.fail(lineno, f"a second mapping (the first is at line {r.mapped}) maps a second application; replay "
                       "simulates one")
    r.mapped = lineno
    if rec == "predefined mapping information":
        r.count(rec, lineno, items, 1, 2)
        _predefined(r, lineno, _unquoted(items[-1]))
        return
    r.count(rec, lineno, items, 3)
    m = re.fullmatch(r"\[(\d+)\]\s*\{(.*)\}", items[2].strip(), re.S)
    nodes = [v.strip() for v in m.group(2).split(",")] if m else []
    if not m or not all(re.fullmatch(r"\d+", v) for v in nodes) or len(nodes) != int(m.group(1)):
        r.fail(lineno, f"field 3 of {rec!r} must be the node of each task, as [n] {{node, ...}} with n nodes, not "
                       f"{items[2].strip()!r}")
    r.values["mapping"] = tuple(int(v) for v in nodes)


def _predefined(r: _Reading, lineno: int, text: str) -> None:
    m = re.fullmatch(r"(\d+)\s+TASKS_PER_NODE", text)
    if m and int(m.group(1)) > 0:
        r.values["tasks_per_node"] = int(m.group(1))
    elif m:
        r.fail(lineno, "0 TASKS_PER_NODE maps no task (Dimemas refuses it too); give at least 1, or FILL_NODES for a "
                       "task per CPU")
    elif text == "FILL_NODES":
        r.values["tasks_per_node"] = 0
    elif text == "INTERLEAVED":
        r.values["interleaved"] = True
    else:
        r.fail(lineno, f"predefined mapping {text!r} is not one of 'N TASKS_PER_NODE', 'FILL_NODES', 'INTERLEAVED'")


def _module(r: _Reading, rec: str, lineno: int, items: list[str]) -> None:
    r.count(rec, lineno, items, 3)
    kind, value, factor = (r.num(rec, lineno, items, 0, int), r.num(rec, lineno, items, 1, int),
                           r.num(rec, lineno, items, 2))
    if not r.mapped:
        r.fail(lineno, "a module before the mapping record: Dimemas drops it ('No applications defined when adding "
                       "module'); put 'modules information' after the mapping")
    if kind < 0 or value <= 0:
        r.fail(lineno, f"module ({kind}, {value}): the event type must be >= 0 and the value > 0 (a value 0 closes "
                       "a module)")
    if (kind, value) in r.modules:
        r.fail(lineno, f"module ({kind}, {value}) is defined twice")
    r.modules[kind, value] = factor


def _configuration_files(r: _Reading, rec: str, lineno: int, items: list[str]) -> None:
    r.count(rec, lineno, items, 4)
    scheduler, file_system, communications, sensitivity = map(_unquoted, items)
    if scheduler:
        r.values.update(_scheduler_file(r, r.path.parent / scheduler))
    if file_system:
        read_text(r.path.parent / file_system, "Dimemas file system file")  # Dimemas stops when it cannot open it
    if communications:
        r.values.update(_communications_file(r, r.path.parent / communications))
    if sensitivity:
        r.fail(lineno, f"the sensitivity file {sensitivity} (random variations of bandwidths and latencies) is not "
                       "modelled; leave the fourth name empty")


def _ignored(r: _Reading, rec: str, lineno: int, items: list[str]) -> None:
    """A record that changes nothing in a replay of a trace without I/O."""


def _refused(r: _Reading, rec: str, lineno: int, items: list[str]) -> None:
    r.fail(lineno, f"{rec!r} is not modelled: replay simulates one machine of CPUs")


_HANDLERS = {
    "wide area network information": _wan, "environment information": _environment, "node information": _node,
    "multi node information": _node, "mapping information": _mapping, "predefined mapping information": _mapping,
    "configuration files": _configuration_files, "modules information": _module, "file system parameters": _ignored,
    "dedicated connection information": _refused, "accelerator node information": _refused,
}

# The labels Dimemas' schedulers read (sched/SCH_fifo.c, SCH_rr.c), with the key each sets.
_SCHEDULER_LABELS = {"Context switch cost": "context_switch", "Quantum": "quantum"}


def _scheduler_file(r: _Reading, path: Path) -> dict:
    """'Policy: NAME' then 'Label (seconds): value' lines (module docstring)."""
    lines = read_text(path, "Dimemas scheduler file").splitlines()
    m = re.match(r"\s*Policy:\s*(\S+)", lines[0] if lines else "")
    if not m:
        raise MachineError(f"{path}:1: expected 'Policy: NAME'")
    if m.group(1) not in DIMEMAS_POLICIES:
        raise MachineError(f"{path}:1: policy {m.group(1)} is not supported ({', '.join(DIMEMAS_POLICIES)})")
    out: dict = {"policy": DIMEMAS_POLICIES[m.group(1)]}
    if out["policy"] == "cp":
        return out
    for lineno, line in enumerate(lines[1:], start=2):
        q = re.match(r"\s*(Context switch cost|Quantum|Busy wait) \(seconds\):\s*(\S+)", line)
        if not q:
            continue
        try:
            value = float(q.group(2))
        except ValueError:
            raise MachineError(f"{path}:{lineno}: {q.group(1).lower()} {q.group(2)!r} is not a number of "
                               "seconds") from None
        if q.group(1) == "Busy wait":
            if value > 0:
                r.warnings.append(f"{path}:{lineno}: a busy wait of {q.group(2)} s is not modelled: a receiver "
                                  "blocks at once (Dimemas 5.5.0 spins first, and loses a message that arrives "
                                  "meanwhile)")
            continue
        out[_SCHEDULER_LABELS[q.group(1)]] = value
    return out


def _communications_file(r: _Reading, path: Path) -> dict:
    """Its bus policy and per-operation collective models (module docstring)."""
    out: dict = {"bus_policy": "fifo"}
    models: dict[int, tuple[int, int, int, int]] = {}
    quantum_after = ""  # the policy whose quantum the next line must give
    for lineno, line in enumerate(read_text(path, "Dimemas communications file").splitlines(), start=1):
        text = line.strip()
        where = f"{path}:{lineno}"
        if quantum_after:
            q = re.fullmatch(r"Quantum size \(bytes\):\s*(-?\d+)", text)
            if not q:
                raise MachineError(f"{where}: expected 'Quantum size (bytes): N' after the {quantum_after} policy "
                                   "(Dimemas stops here too)")
            r.warnings.append(f"{where}: the quantum of {q.group(1)} bytes changes nothing: Dimemas 5.5.0 reads it "
                              "and uses it nowhere, nor does replay")
            quantum_after = ""
        elif not text or text.startswith("#"):
            continue
        elif m := re.fullmatch(r"Machine policy:\s*(-?\d+)\s+(\S+)", text):
            _machine_zero(m.group(1), where)
            if m.group(2) not in DIMEMAS_BUS_POLICIES:
                raise MachineError(f"{where}: communication policy {m.group(2)} is not one of "
                                   f"{', '.join(DIMEMAS_BUS_POLICIES)}")
            out["bus_policy"] = DIMEMAS_BUS_POLICIES[m.group(2)]
            quantum_after = m.group(2) if m.group(2) != "FIFO" else ""
        elif text.startswith("Policy:"):
            raise MachineError(f"{where}: Dimemas 5.5.0 reads a 'Policy:' line of a communications file only when an "
                               "uninitialised flag happens to be set (it ignores it in practice); write 'Machine "
                               "policy: 0 NAME'")
        elif m := re.fullmatch(r"Flight time:\s*(-?\d+)\s+(\S+)", text):
            _machine_zero(m.group(1), where)
            _number(m.group(2), where)  # between machines: nothing to time on one
        elif m := re.fullmatch(r"Machine globalop:\s*(-?\d+)\s+(-?\d+)((?:\s+\S+){4})", text):
            _machine_zero(m.group(1), where)
            glop, fans = _global_op(m.group(2), m.group(3).split(), where)
            if glop == GLOP_REDUCE:
                r.warnings.append(f"{where}: Dimemas 5.5.0 skips a 'Machine globalop' line for MPI_Reduce (it "
                                  "stays constant), and so does replay")
            else:
                models[glop] = fans
        elif m := re.fullmatch(r"External globalop:\s*(-?\d+)((?:\s+\S+){4})", text):
            _global_op(m.group(1), m.group(2).split(), where)  # the network between machines: none here
        elif m := re.fullmatch(r"(-?\d+)((?:\s+\S+){4})\s+(\S+)", text):
            _number(m.group(3), where)  # "contention": read and unused by Dimemas
            glop, fans = _global_op(m.group(1), m.group(2).split(), where)
            models[glop] = fans
        else:
            raise MachineError(f"{where}: not a line of a Dimemas communications file (Dimemas would skip it without "
                               f"a word): {text[:60]!r}")
    if quantum_after:
        raise MachineError(f"{path}: the {quantum_after} policy needs a 'Quantum size (bytes): N' line after it")
    out["collective_models"] = tuple((glop, *fans) for glop, fans in sorted(models.items()))
    return out


def _machine_zero(text: str, where: str) -> None:
    if int(text) != 0:
        raise MachineError(f"{where}: machine {text}: replay simulates one machine, 0")


def _number(text: str, where: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise MachineError(f"{where}: {text!r} is not a number") from None


def _global_op(glop_text: str, fans: list[str], where: str) -> tuple[int, tuple[int, int, int, int]]:
    """A global operation id and its FIN_MODEL FIN_SIZE FOUT_MODEL FOUT_SIZE."""
    glop = int(glop_text)
    if not 0 <= glop < len(GLOBAL_OPS):
        raise MachineError(f"{where}: global operation {glop} is not one of Dimemas' 0..{len(GLOBAL_OPS) - 1}")
    for text, table, what in zip(fans, (FAN_MODELS, FAN_SIZES) * 2, ("model", "size") * 2, strict=True):
        if text not in table:
            raise MachineError(f"{where}: {text!r} is not a fan {what} ({', '.join(table)})")
    return glop, (FAN_MODELS[fans[0]], FAN_SIZES[fans[1]], FAN_MODELS[fans[2]], FAN_SIZES[fans[3]])
