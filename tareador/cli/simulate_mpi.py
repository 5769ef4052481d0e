"""``tareador simulate RUN_DIR`` of an MPI run: time, speedup and efficiency per count of cores
per rank, the run's ompss.dim replayed on the machine's network (analyses/mpi_speedup.py)."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

from tareador.analyses.mpi_speedup import mpi_study, ranks_per_node
from tareador.cli.mapping import with_ranks_per_node
from tareador.cli.options import core_list, load_machine_arg
from tareador.errors import UserError
from tareador.formats.dimemas import read_dim
from tareador.formats.paraver import write_paraver
from tareador.render.plots import plot_mpi_speedup
from tareador.render.results import format_mpi_study
from tareador.simulation.policies import DIMEMAS
from tareador.taskgraph.mpi import load_run


def run(args) -> int:
    d = Path(args.trace_dir)
    for option, given in (("--overhead", args.overhead is not None), ("--chrome", args.chrome), ("--dim", args.dim),
                          ("--creation", args.creation is not None),
                          ("--creation-cost", args.creation_cost is not None),
                          ("--start-cost", args.start_cost is not None)):
        if given:
            raise UserError(f"{option} does not apply to an MPI run ({d} replays its ompss.dim with the Dimemas "
                            "model); leave it out, or give one rank's directory (DIR/rank-N)")
    measured = args.durations == "measured"
    ompss_dim, authentic_dim = (f"{name}-measured.dim" if measured else f"{name}.dim"
                                for name in ("ompss", "authentic"))
    missing = [name for name in (ompss_dim, authentic_dim) if not (d / name).is_file()]
    if missing:
        remedy = f"tareador time {d}" if measured else f"tareador postprocess {d}"
        raise UserError(f"{d} has no {' or '.join(missing)}: run '{remedy}' first")
    load_run(d)  # the ranks' files against the run's: a rank traced again since makes them stale
    machine = with_ranks_per_node(load_machine_arg(args.machine), args.ranks_per_node)
    policy = DIMEMAS.choose(machine.policy, args.policy, machine.quantum)
    cores = core_list(args.cores) if args.cores is not None else default_cores_per_rank(machine, args.machine)
    out = Path(args.output or d)
    out.mkdir(parents=True, exist_ok=True)
    ompss, authentic = read_dim(d / ompss_dim), read_dim(d / authentic_dim)
    if ompss.threads and len(ompss.threads) != len(authentic.threads):
        raise UserError(f"{d}: {ompss_dim} has {len(ompss.threads)} ranks, {authentic_dim} "
                        f"{len(authentic.threads)}: run 'tareador postprocess {d}' again")
    if args.machine is None:  # the ideal network, one rank per node unless --ranks-per-node says
        machine = replace(machine, nodes=-(-len(ompss.threads) // (machine.tasks_per_node or 1)))
    study = mpi_study(ompss, authentic, cores, machine, policy, record=args.prv)
    if args.machine is not None:
        warn_more_cpus(args.machine, machine.cores_per_node, study.ranks_per_node)
    written = []
    if args.prv:
        written += [p for c in study.configurations
                    for p in write_paraver(c.result.recorded, out / f"simulation-{c.label}.prv")]
    if args.csv:
        written.append(study.write_csv(out / "speedup.csv"))
    if args.plot:
        written.append(plot_mpi_speedup(study, out / "speedup.png"))
    if args.json:
        print(json.dumps(study.as_json()))
        return 0
    print(format_mpi_study(study, ompss_dim))
    if written:
        print(f"written to {out}/: {' '.join(p.name for p in written)}")
    return 0


def warn_more_cpus(machine_file: str, cpus: int, per_node: int) -> None:
    """simulate gives every rank its own cores: with more ranks on a node than the machine file
    gives it CPUs, even the authentic reference runs on CPUs the machine does not have."""
    if per_node > cpus:
        print(f"tareador: warning: {machine_file} has {cpus} CPU{'s' if cpus > 1 else ''} per node, and {per_node} "
              f"ranks on each: simulate gives every rank its own cores, so each node gets {per_node} CPUs for the "
              f"authentic run and c x {per_node} for c cores per rank ('tareador replay' shares a node's CPUs "
              "between its ranks instead)", file=sys.stderr)


def default_cores_per_rank(machine, given: str | None) -> list[int | None]:
    """1, 2, 4, 8 and inf; with a machine file, the powers of two up to a node's cores per rank."""
    if not given:
        return [1, 2, 4, 8, None]

    most = max(machine.cores_per_node // ranks_per_node(machine), 1)
    return sorted({1 << k for k in range(most.bit_length())} | {most}) + [None]


