"""``tareador replay trace.dim``: simulate a Dimemas trace on a machine, as Dimemas would, or
sweep the machine's network (``--bandwidth``/``--latency``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import overload

from tareador.analyses.network_sweep import sweep
from tareador.cli.mapping import add_ranks_per_node, with_ranks_per_node
from tareador.cli.options import add_chrome_limit, chrome_limit, load_machine_arg, progress_bar, report_split, size_text
from tareador.errors import UserError
from tareador.formats.chrome import write_replay_chrome
from tareador.formats.dimemas import read_dim
from tareador.formats.paraver import write_paraver
from tareador.render.plots import plot_network_sweep
from tareador.render.summary import plural
from tareador.simulation.dimemas_engine import replay

JSON_RUN = 1 << 16  # thread ends formatted at a time


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "replay", help="replay a Dimemas trace (.dim) on a machine",
        description="Simulate a Dimemas trace (MPI ranks and/or threads, e.g. the ompss.dim of "
                    "'tareador simulate --dim') on a machine given as TOML or as a Dimemas .cfg. "
                    "With --bandwidth and/or --latency, replay once per value of the inter-node "
                    "network and write a table, a CSV and a PNG.",
        epilog="example:\n  tareador replay jacobi.tareador/authentic.dim --machine cluster "
               "--bandwidth 10,100,1000",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", metavar="TRACE.dim", help="the Dimemas trace to replay")
    p.add_argument("--machine", required=True, metavar="FILE", help="machine TOML or Dimemas .cfg")
    add_ranks_per_node(p)
    p.add_argument("--json", action="store_true", help="print makespan and end times (a sweep: its rows) as JSON")
    p.add_argument("--prv", metavar="OUT.prv", help="also write a Paraver trace of the replay")
    p.add_argument("--bandwidth", metavar="LIST", help="inter-node bandwidths to sweep, MB/s, e.g. 10,100,1000")
    p.add_argument("--latency", metavar="LIST", help="inter-node latencies to sweep, seconds, e.g. 1e-6,1e-5")
    p.add_argument("-o", "--output", metavar="DIR",
                   help="where a sweep writes TRACE-sweep.csv and .png (default: beside the trace)")
    p.add_argument("--chrome", metavar="OUT.json", help="also write a Chrome/Perfetto JSON of the replay: a track "
                                                       "per rank and thread, an arrow per message")
    add_chrome_limit(p)
    p.set_defaults(func=run)


def run(args) -> int:
    bandwidths, latencies = value_list(args.bandwidth, "--bandwidth"), value_list(args.latency, "--latency")
    sweeping = bandwidths is not None or latencies is not None
    if sweeping and (args.prv or args.chrome):
        raise UserError(f"{'--prv' if args.prv else '--chrome'} writes one replay, a sweep makes many; drop it or "
                        "the sweep")
    max_bytes = chrome_limit(args)
    machine = with_ranks_per_node(load_machine_arg(args.machine), args.ranks_per_node)
    trace = read_dim(args.trace)
    if sweeping:
        return _sweep(args, trace, machine, bandwidths, latencies)
    result, written = _replay(args, trace, machine, progress_bar(len(trace.thread_start) - 1, "replaying"), max_bytes)
    if args.json:
        _print_json(result)
    else:
        _print_replay(result, written)
    return 0


@overload
def value_list(text: str, option: str) -> list[float]: ...
@overload
def value_list(text: None, option: str) -> None: ...
def value_list(text: str | None, option: str) -> list[float] | None:
    """A comma list of positive numbers (a log axis shows them), parsed here so that a bad one is one line."""

    if text is None:
        return None
    out = []
    for part in text.split(","):
        try:
            value = float(part)
        except ValueError:
            value = float("nan")
        if not 0 < value < float("inf"):
            raise UserError(f"{option}: {part.strip()!r} is not a positive number; give a comma list such as "
                            f"{'10,100,1000' if option == '--bandwidth' else '1e-6,1e-5,1e-4'}")
        out.append(value)
    return out


def _replay(args, trace, machine, progress, max_bytes: int):
    """The replay, and the files written of it."""
    result = replay(trace, machine, record=bool(args.prv or args.chrome), progress=progress)
    written = []
    if args.prv:
        written += write_paraver(result.recorded, args.prv)[:1]
    if args.chrome:
        chrome = write_replay_chrome(args.chrome, Path(args.trace).name, result.recorded, max_bytes)
        report_split(chrome, max_bytes)
        written += chrome.paths
    return result, written


def _print_json(result) -> None:
    """What ``json.dumps`` writes of {"makespan", "tasks": [{"task", "end", "threads"}]}, written
    a bounded run of thread ends at a time: a list of millions of Python floats and its whole
    text would raise the replay's peak memory."""
    out = sys.stdout
    out.write(f'{{"makespan": {json.dumps(result.makespan)}, "tasks": [')
    for t, ends in enumerate(result.thread_end_by_task):
        out.write(f'{", " if t else ""}{{"task": {t}, "end": {json.dumps(float(ends.max()))}, "threads": [')
        for at in range(0, len(ends), JSON_RUN):
            out.write((", " if at else "") + json.dumps(ends[at:at + JSON_RUN].tolist())[1:-1])
        out.write("]}")
    out.write("]}\n")


def _print_replay(result, written) -> None:
    print(f"makespan {result.makespan:.9f} s ({plural(len(result.threads), 'Dimemas task')}, "
          f"{plural(sum(result.threads), 'thread')})")
    if len(result.threads) <= 64:
        for t, end in enumerate(result.task_end):
            print(f"Dimemas task {t:>4} ends at {end:.9f} s")
    for path in written:
        print(f"wrote {path} ({size_text(path.stat().st_size)})")


def _sweep(args, trace, machine, bandwidths, latencies) -> int:
    runs = len(bandwidths or [0]) * len(latencies or [0])
    result = sweep(trace, machine, bandwidths, latencies, progress_bar(runs, "replaying"))
    if result.inter_node_messages == 0:
        print(f"tareador: warning: no message of {args.trace} crosses nodes on this machine, so the inter-node "
              "network swept changes nothing; map ranks apart with --ranks-per-node", file=sys.stderr)
    trace_path = Path(args.trace)
    out = Path(args.output) if args.output else trace_path.parent
    out.mkdir(parents=True, exist_ok=True)
    csv_path = result.write_csv(out / f"{trace_path.stem}-sweep.csv")
    title = f"{trace_path.name} on {Path(args.machine).name}"
    png = plot_network_sweep(result, title, out / f"{trace_path.stem}-sweep.png")
    if args.json:
        print(json.dumps([vars(pt) for pt in result.points]))
        return 0
    print(f"{'bandwidth MB/s':>15} {'latency s':>10} {'time s':>15} {'speedup':>8}")
    for pt in result.points:
        print(f"{pt.bandwidth:>15g} {pt.latency:>10g} {pt.time:>15.9f} {pt.speedup:>8.3f}")
    print(f"wrote {csv_path} and {png}")
    return 0
