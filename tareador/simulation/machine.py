"""The simulated machine, from a readable TOML file or from a Dimemas configuration (.cfg).

Units follow Dimemas so that one machine drives both replays identically: seconds, bandwidth in
MB/s with MB = 2^20 bytes (0 = instantaneous), 0 buses = unlimited, in and out links both 0 =
unlimited (exactly one 0: max(in, out) half-duplex links), and the relative CPU speed divides
every burst. Traced instruction counts become seconds through
``instructions_per_second`` (times the relative speed). A .cfg is read by simulation/dimemas_config.py,
a machine file by path or bundled name by simulation/machine_files.py.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from tareador.errors import MachineError
from tareador.simulation.policies import DIMEMAS

POLICIES = DIMEMAS.names  # a machine file's scheduler is Dimemas'
# How a message gets a bus (Dimemas' communication policy): "fifo" waits in the bus's queue;
# "rr" never waits, and a message that starts while more messages than buses are under way
# moves at bandwidth x buses / messages (Dimemas' RR and BOOST, which 5.5.0 treats alike).
BUS_POLICIES = ("fifo", "rr")
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
    mapping: tuple[int, ...] = ()  # the node of each task (rank), Dimemas' "mapping information"; () = tasks_per_node
    interleaved: bool = False  # Dimemas' INTERLEAVED predefined mapping: task t on node t mod nodes
    modules: tuple[tuple[int, int, float], ...] = ()  # (event type, value, speed factor): Dimemas' modules (below)
    bus_policy: str = "fifo"  # BUS_POLICIES
    # Per global operation id, Dimemas' fan-in model, fan-in size, fan-out model, fan-out size
    # (simulation/global_ops.py); operations not listed keep collective_model and their own sizes.
    collective_models: tuple[tuple[int, int, int, int, int], ...] = ()
    warnings: tuple[str, ...] = field(default=(), compare=False)  # what the file says that changes nothing here
    # The task runtime (simulate only): what a thread does once it created a task, and what
    # creating and starting a task cost (benchmarks/runtime_costs.py measures libgomp's).
    creation: str = "help-first"  # help-first: it goes on, the task is queued; work-first: it runs the task
    creation_cost: float = 0.0  # seconds the creating core spends per task it creates
    start_cost: float = 0.0  # seconds the core that runs a task spends starting it (and ending it)

    def seconds_to_units(self, seconds: float) -> int:
        """A cost in seconds of this machine as whole units of the simulation (instructions, or
        nanoseconds when the durations are measured): what the list scheduler adds."""
        return round(seconds * self.rate)

    @property
    def rate(self) -> float:
        """Instructions per simulated second."""
        return self.instructions_per_second * self.relative_speed

    def node_of_tasks(self, ntasks: int) -> list[int]:
        """The node of each task (MPI rank): the explicit mapping, INTERLEAVED (round robin), or
        Dimemas' N TASKS_PER_NODE / FILL_NODES: tasks fill node 0, then node 1, ...

        A machine too small for the trace is refused rather than grown: its node count is the
        machine being studied, and a silently larger one would answer another question. A longer
        mapping than the trace has tasks is used in part, as Dimemas does.
        """
        if self.mapping:
            if len(self.mapping) < ntasks:
                raise MachineError(f"the machine's mapping places {len(self.mapping)} ranks but the trace has "
                                   f"{ntasks}; list a node for every rank, or map them with --ranks-per-node")
            return list(self.mapping[:ntasks])
        if self.interleaved:
            return [t % self.nodes for t in range(ntasks)]
        per_node = self.tasks_per_node or self.cores_per_node
        need = -(-ntasks // per_node)
        if need > self.nodes:
            raise MachineError(f"{ntasks} ranks at {per_node} per node need {need} nodes but the machine has "
                               f"{self.nodes}; give it more nodes or more ranks per node (tasks_per_node, "
                               f"--ranks-per-node {-(-ntasks // self.nodes)})")
        return [t // per_node for t in range(ntasks)]


def in_nanoseconds(machine: Machine) -> Machine:
    """The machine for measured durations (tareador time), whose units are nanoseconds: 10^9 per
    second (relative_speed still divides them); its task overhead, given in instructions, turned
    into nanoseconds at its instruction rate."""
    overhead = round(machine.task_overhead * 1e9 / machine.instructions_per_second)
    return replace(machine, instructions_per_second=1e9, task_overhead=overhead)


TOML_SECTIONS = {
    "cpu": ("nodes", "cores_per_node", "relative_speed", "instructions_per_second", "task_overhead",
            "tasks_per_node", "mapping"),
    "network": ("intra_latency", "intra_bandwidth", "intra_buses", "intra_in_links", "intra_out_links",
                "inter_latency", "inter_bandwidth", "buses", "in_links", "out_links", "collective_model", "bus_policy"),
    "scheduler": ("policy", "quantum", "context_switch"),
    "runtime": ("creation", "creation_cost", "start_cost"),
}
CREATION_MODELS = ("help-first", "work-first")


def read_text(path: Path, what: str) -> str:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise MachineError(f"cannot read {what} {path}: {e.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise MachineError(f"{path}:{line}: byte 0x{data[e.start]:02x} is not UTF-8; a {what} is plain text") from None


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
    return checked(values, path)


# Fields a .cfg reader fills with what it checked itself (simulation/dimemas_config.py).
CHECKED_BY_READER = ("interleaved", "modules", "collective_models", "warnings")


def checked(values: dict, path) -> Machine:
    """The machine of ``values`` (field name -> value as the file gave it), or MachineError."""
    types = {f.name: f.type for f in fields(Machine)}
    out = {}
    for key, value in values.items():
        if key in ("policy", "bus_policy", "creation"):
            value = str(value).lower()
        elif key == "mapping":
            value = _mapping(value, path)
        elif key in CHECKED_BY_READER:
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
    if m.creation not in CREATION_MODELS:
        raise MachineError(f"{path}: creation {m.creation!r} is not one of {', '.join(CREATION_MODELS)}")
    if m.policy == "rr" and m.quantum <= 0:
        raise MachineError(f"{path}: the rr policy needs a quantum > 0 (seconds)")
    if m.bus_policy not in BUS_POLICIES:
        raise MachineError(f"{path}: bus_policy {m.bus_policy!r} is not one of {', '.join(BUS_POLICIES)}")
    if m.mapping and max(m.mapping) >= m.nodes:
        raise MachineError(f"{path}: the mapping puts rank {m.mapping.index(max(m.mapping))} on node "
                           f"{max(m.mapping)}, but the machine's nodes are 0..{m.nodes - 1}")
    return m


def _mapping(value, path) -> tuple[int, ...]:
    """A list of node numbers, one per rank."""
    if (not isinstance(value, (list, tuple)) or not value
            or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in value)):
        raise MachineError(f"{path}: mapping must list the node (a number from 0) of each rank, e.g. [0, 0, 1, 1], "
                           f"not {value!r}")
    return tuple(value)
