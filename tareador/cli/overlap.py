"""``tareador overlap DIR``: replay an MPI run with its messages chunked and overlapped."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tareador.analyses.overlap import TRACES, overlap_sweep
from tareador.analyses.patterns import run_patterns
from tareador.cli.options import load_machine_arg
from tareador.cli.patterns import add_chunks_option
from tareador.cli.replay import value_list
from tareador.formats.dimemas import read_dim
from tareador.render.plots import plot_overlap
from tareador.synthesis.mpi_authentic import write_mpi_authentic
from tareador.synthesis.overlap import KINDS, write_overlap_trace


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "overlap", help="speedup of chunked, overlapped messages over the run as traced, against the bandwidth",
        description="Write DIR/overlap-real.dim (each message sent in C chunks as its data becomes final and "
                    "waited for where it is first read) and DIR/overlap-ideal.dim (the same chunks with ideal "
                    "linear patterns), replay them and the authentic trace on the machine at every bandwidth of "
                    "the list, and print the speedup of each over the authentic run (also DIR/overlap.csv and "
                    "DIR/overlap.png), and how far the bandwidth can drop with overlap while the run stays as fast "
                    "as the authentic one at the machine's own bandwidth.",
        epilog="example:\n  tareador overlap run.tareador --machine cluster "
               "--bandwidth 1,10,100,1000",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", metavar="DIR", help="the run directory of 'tareador mpirun'")
    p.add_argument("--machine", required=True, metavar="FILE", help="machine TOML or Dimemas .cfg")
    p.add_argument("--bandwidth", required=True, metavar="LIST", help="inter-node bandwidths in MB/s, e.g. 1,10,100")
    add_chunks_option(p)
    p.add_argument("--json", action="store_true", help="print the sweep as one JSON object")
    p.set_defaults(func=run)


def run(args) -> int:
    d = Path(args.run_dir)
    bandwidths = sorted(value_list(args.bandwidth, "--bandwidth"))
    machine = load_machine_arg(args.machine)
    mpi_run, ranks, transfers, _ = run_patterns(d, args.chunks, collectives_do=True)
    paths = {"authentic": d / "authentic.dim"}
    if mpi_run.matching.collectives:  # compared with the same point-to-point collectives as the overlapped traces
        paths["authentic"] = write_mpi_authentic(d / "authentic-p2p.dim", mpi_run.ranks, mpi_run.calls_by_rank,
                                                 mpi_run.matching, collectives="p2p")[0]
    for kind in KINDS:
        paths[kind] = write_overlap_trace(d / f"overlap-{kind}.dim", mpi_run, ranks, transfers, args.chunks, kind)
    traces = {name: read_dim(paths[name]) for name in TRACES}
    study = overlap_sweep(traces, machine, bandwidths)
    csv_path = study.write_csv(d / "overlap.csv")
    png = plot_overlap(study, f"{d.name}: {args.chunks} chunks, {Path(args.machine).name}",
                       d / "overlap.png")
    if args.json:
        print(json.dumps({"chunks": args.chunks, "messages": len(transfers),
                          "collectives": len(mpi_run.matching.collectives),
                          "reference_bandwidth": study.reference_bandwidth, "reference_time": study.reference_time,
                          "tolerable_bandwidth_reduction": study.tolerable, "slowdown": study.slowdown,
                          "points": [{"bandwidth": p.bandwidth, "times": p.times, "speedup_real": p.speedup("real"),
                                      "speedup_ideal": p.speedup("ideal")} for p in study.points]}, indent=2))
        return 0
    print(f"{len(transfers)} messages and {len(mpi_run.matching.collectives)} collectives in {args.chunks} chunks; "
          "speedup over the authentic run at each bandwidth")
    print(f"{'MB/s':>10} {'authentic s':>13} {'real s':>13} {'ideal s':>13} {'real':>7} {'ideal':>7}")
    for p in study.points:
        print(f"{p.bandwidth:>10g} " + " ".join(f"{p.times[n]:>13.6f}" for n in TRACES) +
              f" {p.speedup('real'):>7.3f} {p.speedup('ideal'):>7.3f}")
    print(f"tolerable bandwidth reduction at {study.reference_bandwidth:g} MB/s (authentic "
          f"{study.reference_time:.6f} s): real {_tolerable(study, 'real')}, ideal {_tolerable(study, 'ideal')}")
    slower = [f"{study.slowdown[kind]:.3g}x ({kind})" for kind in ("real", "ideal") if study.tolerable[kind] is None]
    if slower:
        print(f"overlap does not pay: at {study.reference_bandwidth:g} MB/s the overlapped run is "
              f"{' and '.join(slower)} slower than the authentic one, because each message is sent as {args.chunks} "
              "chunks and each chunk pays the latency and startup of a message, which costs more than overlapping "
              "computation with communication saves; try fewer chunks (--chunks), or a machine of lower latency")
    print(f"wrote {paths['real']}, {paths['ideal']}, {csv_path}, {png}")
    return 0


def _tolerable(study, kind: str) -> str:
    factor = study.tolerable[kind]
    return f"x{factor:.3g}" if factor is not None else "none (overlap does not pay)"
