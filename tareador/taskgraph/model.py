"""The boundary between tracing and everything after it.

A traced run becomes a list of task instances in creation order, a list of dependencies
between them and the data objects the dependencies go through. Time is measured in executed
instructions, which is deterministic from run to run, unlike wall-clock time under Frida.

Scheduling semantics every later stage relies on (one model for main and for nested tasks):
- each row is a *fragment*: a task instance that creates tasks is cut at every creation, as the
  program's own sequential code (``main``) is cut at every task it creates; a task instance that
  creates none is one fragment. ``instance`` (the id of its first fragment) groups them;
- the fragments of one instance run in id order, each after the previous one;
- a task instance starts no earlier than the end of the fragment that created it (``parent``);
- otherwise only RAW dependencies constrain the schedule: a parent's fragment that reads what its
  child wrote waits for the child, one that does not runs beside it; WAR and WAW are reported,
  not enforced.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from tareador.taskgraph.dag import Dag, build, schedule_edges, span
from tareador.taskgraph.mpi_calls import NONBLOCKING, SYNCHRONOUS_SENDS
from tareador.taskgraph.tables import DEPENDENCY_KINDS as DEPENDENCY_KINDS
from tareador.taskgraph.tables import RAW as RAW
from tareador.taskgraph.tables import WAR as WAR
from tareador.taskgraph.tables import WAW as WAW
from tareador.taskgraph.tables import tables_of

MAIN = "main"
PROGRAM = "main (program)"  # main's own code as a task type, apart from a task that happens to be named main


@dataclass(frozen=True)
class Fragment:
    """One fragment of a task instance (the whole instance when it creates no tasks): a row of
    tasks.csv. "Instance" always means the whole task instance, which ``instance`` names."""

    id: int  # creation order: the order fragments started in the sequential run
    name: str  # task type; ``main`` for the program's own code
    instance: int  # id of the instance's first fragment (main's fragments share one)
    parent: int  # the fragment that created the instance; -1 for main
    start: int  # global instruction counter when the fragment started
    end: int  # ... and when it ended
    instructions: int  # executed by this fragment itself

    @property
    def is_main(self) -> bool:
        """A fragment of the program's own code, not of a task (a task may be named main)."""
        return self.parent < 0

    @property
    def starts_instance(self) -> bool:
        return self.id == self.instance


@dataclass(frozen=True)
class Dependency:
    src: int
    dst: int
    kind: str  # RAW, WAR or WAW: tables.py's, which checks deps.csv's column (also importable from here)
    object: str  # DataObject.name (unique within a trace)
    bytes: int  # distinct bytes of the object that carry it


@dataclass(frozen=True)
class DataObject:
    id: int
    name: str  # unique: heap blocks get an instance suffix
    kind: str  # heap, global, stack
    address: int
    size: int
    site: str  # allocation site, symbol or frame function


@dataclass(frozen=True)
class Access:
    """What one fragment read and wrote of one part of one object (a row of accesses.csv), for
    tareador hints: byte ranges [lo, hi) relative to the object's start; read = read before the
    fragment wrote it. -1, -1 where it read (or wrote) nothing. Part 0: before the instance called
    its body (evaluating the arguments), or all of an instance without a body call; part k >= 1:
    after the call, the bytes from its (k-1)-th smallest argument value up to the k-th."""

    task: int  # the fragment
    object: str  # DataObject.name
    part: int
    read_lo: int
    read_hi: int
    write_lo: int
    write_hi: int


@dataclass(frozen=True)
class TaskCall:
    """The direct call a task instance made right after its start marker (a row of calls.csv):
    its task body, with the integer arguments it was given."""

    task: int  # the instance's first fragment
    function: str
    module: str  # path of the file holding the function and the call
    function_offset: int  # from the module's start
    site_offset: int  # the call instruction
    args: str  # rdi, rsi, rdx, rcx, r8, r9 and the first 2 stack words (integer arguments 7, 8), hex, ';'-separated


@dataclass(frozen=True)
class MpiCall:
    """One MPI call of one rank (a row of mpi.csv); -1 and '' where a field does not apply."""

    rank: int  # in MPI_COMM_WORLD
    seq: int  # order of the call in the rank (MPI_Sendrecv: two rows, its send then its receive)
    call: str  # the MPI function as called (MPI_Isend, MPI_Allreduce_c, ...)
    peer: int  # partner as a world rank; the root of a rooted collective
    tag: int
    comm: int  # Communicator.comm
    bytes: int  # sent, or received; a collective: what this rank sends
    object: str  # DataObject.name of the buffer, '' if none
    posted: int  # instruction counter at the call (time inside MPI is not counted)
    completed: int  # ... when the operation completed: at the Wait/Test for a non-blocking one
    request: str  # the request number a non-blocking call started; those a Wait/Test completed, ';'-joined
    task: int  # the fragment (Fragment.id) that made the call, -1 outside the analysed region

    @property
    def operation(self) -> str:
        """The call's name without the large-count suffix: MPI_Send_c does what MPI_Send does."""
        return self.call.removesuffix("_c")

    @property
    def requests(self) -> tuple[int, ...]:
        return tuple(int(r) for r in self.request.split(";")) if self.request else ()

    @property
    def nonblocking(self) -> bool:
        """A call that starts an operation a Wait or Test completes."""
        return self.operation in NONBLOCKING

    @property
    def rendezvous(self) -> bool:
        """A send that completes only once its receive has started."""
        return self.operation in SYNCHRONOUS_SENDS



@dataclass(frozen=True)
class Communicator:
    comm: int  # 0 MPI_COMM_WORLD, 1 MPI_COMM_SELF, then 2.. in the order the rank created or first used them
    size: int
    ranks: str  # the world ranks of its members in communicator rank order, ';'-joined

    @property
    def members(self) -> tuple[int, ...]:
        return tuple(int(r) for r in self.ranks.split(";")) if self.ranks else ()


@dataclass
class TaskTrace:
    """A loaded trace directory: what ``tareador.load(dir)`` returns (``fragments``: tasks.csv's rows)."""

    fragments: Sequence[Fragment]  # a list, or the mapped tables' Rows (taskgraph/columns.py)
    deps: Sequence[Dependency]
    objects: list[DataObject]
    summary: dict = field(default_factory=dict)
    path: str | None = None

    @cached_property
    def dag(self) -> Dag:
        """The task graph as arrays (taskgraph/dag.py), checked: what T∞, the simulators and the
        drawing work on. TraceDirError naming the row at fault of a trace that is not consistent."""
        return build(tables_of(self.fragments, self.deps), Path(self.path) if self.path else None)

    @cached_property
    def graph(self):
        """A networkx.DiGraph of the fragments, for whoever wants networkx's algorithms (tareador
        itself works on ``dag``; networkx is imported on first use, not by every command).

        Edge attribute ``deps`` lists every Dependency between the pair (WAR and WAW too);
        ``order`` marks the schedule's edges (main's sequence, task creation) that no
        dependency carries.
        """
        import networkx as nx

        g = nx.DiGraph()
        for t in self.fragments:
            g.add_node(t.id, name=t.name, instructions=t.instructions, parent=t.parent)
        for d in self.deps:
            if d.src != d.dst:
                if not g.has_edge(d.src, d.dst):
                    g.add_edge(d.src, d.dst, deps=[], order=False)
                g.edges[d.src, d.dst]["deps"].append(d)
        for src, dst in schedule_edges(self.dag):
            if not g.has_edge(src, dst):
                g.add_edge(src, dst, deps=[], order=True)
        return g

    @property
    def task_types(self) -> list[str]:
        return sorted({t.name for t in self.fragments if not t.is_main})

    @property
    def instances(self) -> int:
        """Task instances, each counted once however many fragments it has."""
        return sum(1 for t in self.fragments if t.starts_instance and not t.is_main)

    @property
    def t1(self) -> int:
        return sum(t.instructions for t in self.fragments)

    @cached_property
    def tinf(self) -> int:
        """The critical path: DependencyCycle (a ValueError) if the precedence has a cycle."""
        return span(self.dag)

    @property
    def parallelism(self) -> float:
        return self.t1 / self.tinf if self.tinf else 1.0

    def __repr__(self) -> str:
        """One line, however many fragments (the dataclass' would print every row)."""
        where = f" {self.path}" if self.path else ""
        return (f"<TaskTrace{where}: {self.instances} task instances of {len(self.task_types)} types, "
                f"{len(self.fragments)} fragments, {len(self.deps)} dependencies, {len(self.objects)} objects>")
