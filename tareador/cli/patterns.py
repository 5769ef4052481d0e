"""``tareador patterns DIR``: when the messages of an MPI run are produced and consumed."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from tareador.analyses.patterns import MessageFigures, check_chunks, figures, statistics
from tareador.errors import UserError
from tareador.render.plots import plot_patterns
from tareador.render.summary import format_pattern_statistics
from tareador.taskgraph.mpi import load_run, rank_dirs
from tareador.taskgraph.patterns import RANK_FILE, load_rank_patterns, save_run_patterns, transfer_patterns
from tareador.taskgraph.store import is_run, write_table


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "patterns", help="production and consumption patterns of an MPI run's messages (overlap potential)",
        description="For every point-to-point message of a run traced with 'tareador mpirun': when, in its "
                    "production interval, its elements became final on the sender, and when, in its consumption "
                    "interval, they were first read on the receiver (thesis Table 5.1). Prints the averages per "
                    "transfer class (rank pair) and overall with their quartiles, rewrites DIR/patterns.csv and "
                    "DIR/patterns.npz, and draws one scatter plot per class (DIR/patterns-SRC-DST.png).",
        epilog="example:\n  tareador patterns run.tareador --chunks 8",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", metavar="DIR", help="the run directory of 'tareador mpirun'")
    add_chunks_option(p)
    p.add_argument("--json", action="store_true", help="print the statistics as one JSON object")
    p.add_argument("--no-plots", action="store_true", help="do not draw the scatter plots")
    p.set_defaults(func=run)


def add_chunks_option(p) -> None:
    p.add_argument("--chunks", type=int, default=4, metavar="C",
                   help="chunks a message is split into (default 4: quarter = 1 chunk, half = 2)")


def write_run_patterns(directory: str | Path, messages, chunks: int = 4, starmap=None):
    """patterns.csv and patterns.npz of a run from its ranks' patterns.npz, each rank's read by
    ``starmap`` (tareador.workers.rank_pool's; default: here, one after the other); returns
    (ranks' RankPatterns, transfers, figures), or None when the run was traced without patterns."""
    d = Path(directory)
    dirs = rank_dirs(d)
    if not dirs or not all((r / RANK_FILE).exists() for r in dirs.values()):
        return None
    items = [(r,) for r in dirs.values()]
    loaded = dict(zip(dirs, starmap(load_rank_patterns, items) if starmap else [load_rank_patterns(*i) for i in items],
                      strict=True))
    ranks = [loaded.get(r) for r in range(max(dirs) + 1)]  # a rank that wrote no trace: None
    transfers = transfer_patterns(messages, ranks)
    rows = [figures(t, chunks) for t in transfers]
    write_table(d / "patterns.csv", MessageFigures, rows)
    save_run_patterns(d / "patterns.npz", transfers)
    return ranks, transfers, rows


def run_patterns(directory: str | Path, chunks: int, collectives_do: bool = False):
    """(MpiRun, ranks' RankPatterns, transfers, figures) of a run directory, patterns.csv/npz
    rewritten with ``chunks``; what cannot be used is a UserError. A run without point-to-point
    messages is one too, unless ``collectives_do`` and it has collectives."""
    d = Path(directory)
    check_chunks(chunks)
    if not is_run(d):
        raise UserError(f"{d} is not the directory of an MPI run (no rank-N/ in it): trace the program with "
                        "'tareador mpirun -np N -o DIR -- ./program'")
    mpi_run = load_run(d)
    written = write_run_patterns(d, mpi_run.messages, chunks)
    if written is None:
        raise UserError(f"{d} holds no patterns (traced before they were recorded): trace it again with "
                        "'tareador mpirun'")
    if not written[1] and not (collectives_do and mpi_run.matching.collectives):
        raise UserError(f"{d}: the run has no point-to-point message with data" +
                        ("" if not collectives_do else " and no collective") + ": nothing to show")
    return mpi_run, *written


def run(args) -> int:
    d = Path(args.run_dir)
    _, _, transfers, rows = run_patterns(d, args.chunks)
    stats = statistics(rows)
    plots = []
    if not args.no_plots:
        by_class: dict[tuple[int, int], list] = {}
        for t in transfers:
            by_class.setdefault((t.src, t.dst), []).append(t)
        plots = [str(plot_patterns(f"{s}->{r}", group, d / f"patterns-{s}-{r}.png"))
                 for (s, r), group in sorted(by_class.items())]
    if args.json:
        print(json.dumps({"chunks": args.chunks, "messages": len(rows),
                          "classes": [asdict(s) for s in stats], "plots": plots}, indent=2))
    else:
        print(format_pattern_statistics(stats, args.chunks))
        print(f"wrote {d / 'patterns.csv'}, {d / 'patterns.npz'}" + (f" and {len(plots)} plot(s)" if plots else ""))
    return 0
