"""An MPI run's own files from its ranks' (``tareador postprocess``, and ``tareador mpirun`` at
its end): mpi.csv, messages.csv, summary.json, patterns.csv/npz, authentic.dim and ompss.dim, and
their measured twins. Here rather than in synthesis/ because it writes the run's message
patterns too, an analysis; a library function so that a notebook or a batch script postprocesses
a run without the command line."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tareador.analyses.patterns import write_run_patterns
from tareador.files import together
from tareador.formats.paraver import task_type_values
from tareador.synthesis.mpi_authentic import by_rank, call_records, communicators, write_mpi_authentic
from tareador.synthesis.mpi_ompss import rank_threads, write_mpi_ompss
from tareador.taskgraph.durations import aligned, load_durations, measured_calls, measured_trace
from tareador.taskgraph.mpi import build_run, rank_dirs
from tareador.taskgraph.store import remove_owned
from tareador.workers import rank_pool


def postprocess(directory: str | Path, ending: str | None = None, collectives: str = "dimemas", starmap=None):
    """The run's files, then its Dimemas traces, authentic.dim and ompss.dim, with collectives
    written as ``collectives`` (synthesis/mpi_authentic.py), and when every rank was timed (tareador
    time) the same on the measured clock, authentic-measured.dim and ompss-measured.dim; returns
    the MpiRun. ``starmap`` runs the per-rank work (tareador.workers.rank_pool; default: a process
    pool). They are written all together or, on any error, none, and what an earlier postprocess
    wrote is removed."""
    if starmap is None:
        with rank_pool(work=run_work(directory)) as starmap:
            return postprocess(directory, ending, collectives, starmap)

    d = Path(directory)
    try:
        with together():
            return _write_run(d, ending, collectives, starmap)
    except BaseException:
        remove_owned(d)  # what an earlier postprocess wrote no longer matches the ranks
        raise


def run_work(directory: str | Path) -> tuple[int, int]:
    """(ranks, bytes of their files) of a run directory: what decides whether a pool pays off."""
    dirs = rank_dirs(Path(directory))
    return len(dirs), sum(f.stat().st_size for d in dirs.values() for f in d.iterdir() if f.is_file())


def _write_run(d: Path, ending: str | None, collectives: str, starmap):
    result = build_run(d, ending, starmap)
    write_run_patterns(d, result.messages, starmap=starmap)
    write_run_traces(d, result, collectives, starmap)
    if all((d / f"rank-{r}" / "durations.csv").exists() for r in range(len(result.ranks))):
        write_run_traces(d, result, collectives, starmap, measured=True)
    return result


def write_run_traces(d: Path, run, collectives: str, starmap, measured: bool = False) -> list[Path]:
    """authentic.dim and ompss.dim of an MpiRun; ``measured``: authentic-measured.dim and
    ompss-measured.dim, every rank's fragments and calls on its measured clock (DurationsError
    when a rank has no usable durations.csv)."""
    ranks, calls = run.ranks, run.calls_by_rank
    if measured:
        ranks, calls = measured_ranks(d, ranks, calls)
    suffix = "-measured" if measured else ""
    records = by_rank(call_records(calls, run.matching, collectives), len(ranks))
    written = write_mpi_authentic(d / f"authentic{suffix}.dim", ranks, calls, run.matching, collectives=collectives,
                                  records=records)
    names = [t.name for trace in ranks for t in trace.fragments]
    values = task_type_values(names)
    blocks = starmap(rank_threads, [(r, trace, rank_calls, records[r], values)
                                    for r, (trace, rank_calls) in enumerate(zip(ranks, calls))])
    return written + write_mpi_ompss(d / f"ompss{suffix}.dim", names, blocks, communicators(run.matching, collectives))


def measured_ranks(d: Path, ranks: list, calls: list) -> tuple[list, list]:
    """Every rank's trace and calls on its measured clock (taskgraph/durations.py)."""
    out_ranks, out_calls = [], []
    for r, (trace, rank_calls) in enumerate(zip(ranks, calls)):
        where = d / f"rank-{r}"
        ids = np.fromiter((t.id for t in trace.fragments), np.int64, len(trace.fragments))
        ns = aligned(load_durations(where), ids, where)
        out_ranks.append(measured_trace(trace, ns))
        out_calls.append(measured_calls(trace, ns, rank_calls))
    return out_ranks, out_calls
