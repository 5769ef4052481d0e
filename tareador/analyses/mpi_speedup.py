"""Cores per rank of an MPI run: the MPI/OmpSs what-if of ``tareador simulate RUN_DIR``.

Each configuration replays the run's ompss.dim (tareador.synthesis.mpi_ompss) with the Dimemas-model
engine on the machine's network, its ranks mapped to nodes as the machine says
(``Machine.tasks_per_node``, or as many as a node has cores), each node with c cores per rank it
holds; ``inf`` gives every node as many cores as its ranks have threads. The reference is the
authentic MPI run, authentic.dim with one core per rank on the same network: speedup = its time
over the configuration's, efficiency = speedup / c.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from tareador.analyses.table import Table, Tabular, unbounded
from tareador.errors import MachineError
from tareador.formats.dimemas import DimTrace
from tareador.simulation.dimemas_engine import ReplayResult, replay
from tareador.simulation.machine import Machine


@dataclass
class Configuration:
    cores_per_rank: int | None  # None: as many as the busiest node's threads
    cores_per_node: int
    result: ReplayResult

    @property
    def label(self) -> str:
        return "inf" if self.cores_per_rank is None else str(self.cores_per_rank)


@dataclass
class MpiStudy(Tabular):
    ranks: int
    ranks_per_node: int
    policy: str
    authentic: ReplayResult  # one core per rank
    configurations: list[Configuration]

    def table(self) -> Table:
        """One row per configuration; efficiency NaN and cores_per_rank inf for the unbounded one."""
        rows = []
        for c in self.configurations:
            time = c.result.makespan
            speedup = self.authentic.makespan / time if time else 1.0
            rows.append((unbounded(c.cores_per_rank), c.cores_per_node, time, speedup,
                         math.nan if c.cores_per_rank is None else speedup / c.cores_per_rank))
        return Table.of("mpi_speedup", (("cores_per_rank", "count"), ("cores_per_node", "int"), ("time", "float"),
                                        ("speedup", "float"), ("efficiency", "float")), rows)

    def as_json(self) -> dict:
        return {"ranks": self.ranks, "ranks_per_node": self.ranks_per_node, "policy": self.policy,
                "authentic": self.authentic.makespan, "results": self.table().records()}

    def __repr__(self) -> str:
        return (f"<MpiStudy {self.ranks} ranks ({self.ranks_per_node} per node), authentic "
                f"{self.authentic.makespan:.6g} s, cores per rank {', '.join(c.label for c in self.configurations)}>")


def ranks_per_node(machine: Machine, ranks: int | None = None) -> int:
    """The ranks on each node that holds any: Dimemas' N TASKS_PER_NODE, a node's cores for
    FILL_NODES, or what an explicit or interleaved mapping of ``ranks`` ranks (default: all it
    maps) puts on each; c cores per rank needs that to be the same on every such node."""
    if not (machine.mapping or machine.interleaved):
        return machine.tasks_per_node or machine.cores_per_node
    counts = np.bincount(machine.node_of_tasks(ranks or len(machine.mapping) or machine.nodes))
    counts = counts[counts > 0]
    if (counts != counts[0]).any():
        raise MachineError(f"the machine's mapping puts {counts.min()} ranks on some nodes and {counts.max()} on "
                           "others; simulate gives each node c cores per rank of its, which needs as many ranks on "
                           "every node: use --ranks-per-node, or tareador replay for this mapping")
    return int(counts[0])


def mpi_study(ompss: DimTrace, authentic: DimTrace, cores: list[int | None], machine: Machine, policy: str,
              record: bool = False) -> MpiStudy:
    """Replay ompss.dim with each count of cores per rank and authentic.dim with one; MachineError
    when the machine has too few nodes for the ranks."""
    ranks = len(ompss.threads)
    per_node = ranks_per_node(machine, ranks)
    if math.ceil(ranks / per_node) > machine.nodes:
        raise MachineError(f"{ranks} ranks at {per_node} per node need {math.ceil(ranks / per_node)} nodes; the "
                           f"machine has {machine.nodes}: give it more nodes, or more ranks per node "
                           f"(--ranks-per-node {math.ceil(ranks / machine.nodes)}, or tasks_per_node in the machine "
                           "file)")
    nodes = np.array(machine.node_of_tasks(ranks))
    busiest = int(np.bincount(nodes, weights=ompss.threads).max())

    def on(cores_per_node: int) -> Machine:
        return replace(machine, cores_per_node=cores_per_node, tasks_per_node=per_node, policy=policy)

    configurations = []
    for c in cores:
        cores_per_node = busiest if c is None else c * per_node
        configurations.append(Configuration(c, cores_per_node, replay(ompss, on(cores_per_node), record)))
    return MpiStudy(ranks=ranks, ranks_per_node=per_node, policy=policy,
                    authentic=replay(authentic, on(per_node)), configurations=configurations)
