"""``tareador replay trace.dim``: simulate a Dimemas trace on a machine, as Dimemas would."""

from __future__ import annotations

import argparse
import json


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "replay", help="replay a Dimemas trace (.dim) on a machine",
        description="Simulate a Dimemas trace (MPI ranks and/or threads, e.g. the ompss.dim of "
                    "'tareador simulate --dim') on a machine given as TOML or as a Dimemas .cfg.",
        epilog="example:\n  tareador replay chol.tareador/ompss.dim --machine examples/machines/smp_cp.cfg "
               "--prv replay.prv",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", metavar="TRACE.dim", help="the Dimemas trace to replay")
    p.add_argument("--machine", required=True, metavar="FILE", help="machine TOML or Dimemas .cfg")
    p.add_argument("--json", action="store_true", help="print makespan and end times as one JSON object")
    p.add_argument("--prv", metavar="OUT.prv", help="also write a Paraver trace of the replay")
    p.set_defaults(func=run)


def run(args) -> int:
    from tareador.cli.main import UserError
    from tareador.cli.simulate import load_machine_arg, progress_bar
    from tareador.formats.dimemas import DimError, read_dim
    from tareador.formats.paraver import write_paraver
    from tareador.native import ToolchainError
    from tareador.render.summary import plural
    from tareador.replay.engine import replay
    from tareador.replay.machine import MachineError

    machine = load_machine_arg(args.machine)
    try:
        trace = read_dim(args.trace)
        result = replay(trace, machine, record=bool(args.prv), progress=progress_bar(len(trace.thread_start) - 1,
                                                                                      "replaying"))
    except (DimError, MachineError, ToolchainError) as e:
        raise UserError(str(e)) from None
    if args.prv:
        write_paraver(result.paraver, args.prv)
    if args.json:
        print(json.dumps({"makespan": result.makespan,
                          "tasks": [{"task": t, "end": float(ends.max()), "threads": ends.tolist()}
                                    for t, ends in enumerate(result.thread_end_by_task)]}))
    else:
        print(f"makespan {result.makespan:.9f} s ({plural(len(result.threads), 'Dimemas task')}, "
              f"{plural(sum(result.threads), 'thread')})")
        if len(result.threads) <= 64:
            for t, end in enumerate(result.task_end):
                print(f"Dimemas task {t:>4} ends at {end:.9f} s")
        if args.prv:
            print(f"wrote {args.prv}")
    return 0
