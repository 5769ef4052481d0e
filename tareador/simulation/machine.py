"""The simulated machine, from a readable TOML file or from a Dimemas configuration (.cfg).

Units follow Dimemas so that one machine drives both replays identically: seconds, bandwidth in
MB/s with MB = 2^20 bytes (0 = instantaneous), 0 buses = unlimited, in and out links both 0 =
unlimited (exactly one 0: max(in, out) half-duplex links), and the relative CPU speed divides
every burst. Traced instruction counts become seconds through
``instructions_per_second`` (times the relative speed).
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

from tareador.errors import MachineError

POLICIES = ("fifo", "cp", "rr")
# Dimemas scheduler names -> ours; SS_MPI_CP is the critical-path policy Tareador uses.
DIMEMAS_POLICIES = {"FIFO": "fifo", "SS_MPI_CP": "cp", "RR": "rr"}
MB = float(1 << 20)
# Every CPU is a line of the results (utilisation per core) and of the Paraver files, so a
# machine's size is bounded by what those can list; the simulations themselves only ever touch
# as many CPUs as can be busy at once.
MAX_CPUS = 1 << 20
MAX_COUNT = (1 << 31) - 1  # whole numbers (links, buses, instructions of overhead): ample, and exact in C


@dataclass(frozen=True)
class Machine:
    nodes: int = 1
    cores_per_node: int = 1
    relative_speed: float = 1.0
    instructions_per_second: float = 1e9
    task_overhead: int = 0  # instructions the runtime spends creating/scheduling each task instance
    intra_latency: float = 0.0
    intra_bandwidth: float = 0.0
    intra_buses: int = 0
    intra_in_links: int = 0
    intra_out_links: int = 0
    inter_latency: float = 0.0
    inter_bandwidth: float = 0.0
    buses: int = 0
    in_links: int = 0
    out_links: int = 0
    tasks_per_node: int = 1  # Dimemas' predefined mapping; 0 fills each node's cores
    policy: str | None = None  # None: the file names none (replay then queues FIFO, as Dimemas; simulate uses cp)
    quantum: float = 0.0  # seconds, round robin only
    context_switch: float = 0.0  # seconds a thread spends each time it gets a CPU, before running
    collective_model: int = 1  # Dimemas' model of global operations: 1 constant, 2 linear, 3 logarithmic
    collectives_file: str = ""  # a .cfg's collective-model file (replay refuses global operations then)

    @property
    def rate(self) -> float:
        """Instructions per simulated second."""
        return self.instructions_per_second * self.relative_speed

    def node_of_tasks(self, ntasks: int) -> list[int]:
        """Dimemas' predefined mapping: tasks (MPI ranks) fill node 0, then node 1, ...

        A machine too small for the trace is refused rather than grown: its node count is the
        machine being studied, and a silently larger one would answer another question.
        """
        per_node = self.tasks_per_node or self.cores_per_node
        need = -(-ntasks // per_node)
        if need > self.nodes:
            raise MachineError(f"{ntasks} ranks at {per_node} per node need {need} nodes but the machine has "
                               f"{self.nodes}; give it more nodes or more ranks per node (tasks_per_node, "
                               f"--ranks-per-node {-(-ntasks // self.nodes)})")
        return [t // per_node for t in range(ntasks)]


TOML_SECTIONS = {
    "cpu": ("nodes", "cores_per_node", "relative_speed", "instructions_per_second", "task_overhead",
            "tasks_per_node"),
    "network": ("intra_latency", "intra_bandwidth", "intra_buses", "intra_in_links", "intra_out_links",
                "inter_latency", "inter_bandwidth", "buses", "in_links", "out_links", "collective_model"),
    "scheduler": ("policy", "quantum", "context_switch"),
}


def _read_text(path: Path, what: str) -> str:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise MachineError(f"cannot read {what} {path}: {e.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise MachineError(f"{path}:{line}: byte 0x{data[e.start]:02x} is not UTF-8; a {what} is plain text") from None


BUNDLED = Path(__file__).resolve().parents[1] / "machines"


def bundled_machines() -> list[str]:
    """The names ``--machine`` takes for the machine files shipped with the package."""
    return sorted(p.stem for p in BUNDLED.iterdir()
                  if p.suffix == ".toml" or (p.suffix == ".cfg" and p.read_text().startswith("#DIMEMAS_CONFIGURATION")))


def machine_path(name: str | Path) -> Path:
    """A machine file by path, or a bundled one by bare name (``laptop``, ``cluster``): a pip
    install has no examples/ directory, and a path is what users of Dimemas already write."""
    path = Path(name)
    if path.exists() or len(path.parts) > 1 or path.suffix:
        return path
    for suffix in (".toml", ".cfg"):
        if (BUNDLED / f"{name}{suffix}").exists():
            return BUNDLED / f"{name}{suffix}"
    raise MachineError(f"no machine file {name} and no bundled machine of that name; bundled: "
                       f"{', '.join(bundled_machines())}")


def load_machine(path: str | Path) -> Machine:
    path = machine_path(path)
    text = _read_text(path, "machine file")
    if text.lstrip().startswith("#DIMEMAS_CONFIGURATION"):
        return parse_cfg(text, path)
    return parse_toml(text, path)


def parse_toml(text: str, path: Path | str = "<toml>") -> Machine:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise MachineError(f"{path}: not a TOML machine file ({e})") from None
    values = {}
    for section, table in doc.items():
        if section not in TOML_SECTIONS or not isinstance(table, dict):
            raise MachineError(f"{path}: unknown section [{section}]; expected {', '.join(TOML_SECTIONS)}")
        for key, value in table.items():
            if key not in TOML_SECTIONS[section]:
                raise MachineError(f"{path}: unknown key {key!r} in [{section}]; "
                                   f"expected one of {', '.join(TOML_SECTIONS[section])}")
            values[key] = value
    return _checked(values, path)


def _checked(values: dict, path) -> Machine:
    types = {f.name: f.type for f in fields(Machine)}
    out = {}
    for key, value in values.items():
        if key == "policy":
            value = str(value).lower()
        elif key == "collectives_file":
            pass
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise MachineError(f"{path}: {key} must be a number, not {value!r}")
        elif value < 0 or not math.isfinite(value):
            raise MachineError(f"{path}: {key} must be a finite number >= 0, not {value!r}")
        elif types[key] == "int":
            if value != int(value):
                raise MachineError(f"{path}: {key} must be a whole number, not {value!r}")
            if value > MAX_COUNT and key not in ("nodes", "cores_per_node"):  # those: MAX_CPUS below
                raise MachineError(f"{path}: {key} = {value:g} is too large; at most {MAX_COUNT}")
            value = int(value)
        out[key] = value
    m = Machine(**out)
    if m.nodes < 1 or m.cores_per_node < 1:
        raise MachineError(f"{path}: nodes and cores_per_node must be at least 1")
    if m.nodes * m.cores_per_node > MAX_CPUS:
        raise MachineError(f"{path}: {m.nodes * m.cores_per_node} CPUs (nodes x cores_per_node) are more than the "
                           f"{MAX_CPUS} tareador simulates (it lists every CPU in its results); use fewer")
    if m.instructions_per_second <= 0 or m.relative_speed <= 0:
        raise MachineError(f"{path}: instructions_per_second and relative_speed must be positive")
    if m.policy is not None and m.policy not in POLICIES:
        raise MachineError(f"{path}: policy {m.policy!r} is not one of {', '.join(POLICIES)}")
    if m.collective_model not in (1, 2, 3):
        raise MachineError(f"{path}: collective_model must be 1 (constant), 2 (linear) or 3 (logarithmic), "
                           f"Dimemas' models of global operations, not {m.collective_model}")
    if m.policy == "rr" and m.quantum <= 0:
        raise MachineError(f"{path}: the rr policy needs a quantum > 0 (seconds)")
    return m


# Dimemas configuration: one `"record name" {fields};;` per line, /* comments */ allowed.
_RECORD = re.compile(r'^"([^"]+)"\s*\{(.*)\}\s*;?;?\s*$')
_FIELD = re.compile(r'\s*("[^"]*"|\[\d+\]\s*\{[^}]*\}|[^,]*)\s*(?:,|$)')


def _cfg_fields(body: str) -> list[str]:
    out = [m.group(1) for m in _FIELD.finditer(body)]
    return out[:-1] if out and out[-1] == "" else out


def parse_cfg(text: str, path: Path | str = "<cfg>") -> Machine:
    path = Path(path)
    records = {}
    body = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    for lineno, line in enumerate(body.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _RECORD.match(line)
        if not m:
            raise MachineError(f"{path}:{lineno}: not a Dimemas configuration record: {line[:60]!r}")
        records.setdefault(m.group(1), []).append((lineno, _cfg_fields(m.group(2))))
    values: dict = {}

    def num(rec: str, lineno: int, items: list[str], i: int, kind=float):
        try:
            value = float(items[i])
        except (IndexError, ValueError):
            raise MachineError(f"{path}:{lineno}: field {i + 1} of {rec!r} is not a number") from None
        if kind is int and not value.is_integer():
            raise MachineError(f"{path}:{lineno}: field {i + 1} of {rec!r} must be a whole number, not {items[i]}")
        return kind(value)

    if "environment information" not in records:
        raise MachineError(f'{path}: no "environment information" record; is this a Dimemas configuration?')
    lineno, env = records["environment information"][0]
    values["nodes"] = num("environment information", lineno, env, 3, int)
    values["inter_bandwidth"] = num("environment information", lineno, env, 4)
    values["buses"] = num("environment information", lineno, env, 5, int)
    values["collective_model"] = num("environment information", lineno, env, 6, int)
    # "multi node information" starts with machine id and node count, "node information" with
    # machine id and an architecture name: the per-node fields start at different positions.
    node_records = [("multi node information", 3, r) for r in records.get("multi node information", [])]
    node_records += [("node information", 2, r) for r in records.get("node information", [])]
    if not node_records:
        raise MachineError(f'{path}: no "multi node information" or "node information" record')
    seen = set()
    for rec, first, (lineno, items) in node_records:
        names = ("cores_per_node", "relative_speed", "intra_latency", "intra_bandwidth", "intra_buses",
                 "intra_in_links", "intra_out_links", "inter_latency", "in_links", "out_links")
        kinds = (int, float, float, float, int, int, int, float, int, int)
        node = tuple(num(rec, lineno, items, first + i, k) for i, k in enumerate(kinds))
        seen.add(node)
        values.update(zip(names, node))
    if len(seen) > 1:
        raise MachineError(f"{path}: nodes with different parameters are not supported")
    for lineno, items in records.get("predefined mapping information", []):
        values["tasks_per_node"] = _predefined_mapping(items[-1].strip('"'), path, lineno)
    for lineno, items in records.get("configuration files", []):
        sched = items[0].strip().strip('"') if items else ""
        if sched:
            values.update(_scheduler_file(path.parent / sched))
        values["collectives_file"] = items[2].strip().strip('"') if len(items) > 2 else ""
    if values.get("relative_speed", 1.0) <= 0:
        raise MachineError(f"{path}: relative speed {values['relative_speed']} (instantaneous or fixed-duration "
                           "bursts) is not supported")
    return _checked(values, path)


def _predefined_mapping(text: str, path, lineno: int) -> int:
    m = re.fullmatch(r"\s*(\d+)\s+TASKS_PER_NODE\s*", text)
    if m:
        return int(m.group(1))
    if text.strip() == "FILL_NODES":
        return 0
    raise MachineError(f"{path}:{lineno}: predefined mapping {text!r} is not supported "
                       "(use 'N TASKS_PER_NODE' or 'FILL_NODES')")


# The labels Dimemas' schedulers read (sched/SCH_fifo.c, SCH_rr.c), with the key each sets.
_SCHEDULER_LABELS = {"Context switch cost": "context_switch", "Quantum": "quantum"}


def _scheduler_file(path: Path) -> dict:
    """Dimemas scheduler definition: 'Policy: NAME' then 'Label (seconds): value' lines.

    Dimemas' SS_MPI_CP reads nothing past the policy line, so under it a context-switch cost in
    the file costs nothing there; it costs nothing here either, so that both replays agree.
    """
    lines = _read_text(path, "Dimemas scheduler file").splitlines()
    m = re.match(r"\s*Policy:\s*(\S+)", lines[0] if lines else "")
    if not m:
        raise MachineError(f"{path}:1: expected 'Policy: NAME'")
    if m.group(1) not in DIMEMAS_POLICIES:
        raise MachineError(f"{path}:1: policy {m.group(1)} is not supported ({', '.join(DIMEMAS_POLICIES)})")
    out: dict = {"policy": DIMEMAS_POLICIES[m.group(1)]}
    if out["policy"] == "cp":
        return out
    for lineno, line in enumerate(lines[1:], start=2):
        q = re.match(r"\s*(Context switch cost|Quantum) \(seconds\):\s*(\S+)", line)
        if q:
            try:
                out[_SCHEDULER_LABELS[q.group(1)]] = float(q.group(2))
            except ValueError:
                raise MachineError(f"{path}:{lineno}: {q.group(1).lower()} {q.group(2)!r} is not a number of "
                                   "seconds") from None
    return out
