"""Per-rank work of an MPI run in parallel: a process pool on one machine, or every process of
an MPI launch across nodes (``mpiexec -n 8 python -m tareador postprocess DIR``, with mpi4py).

The work is a ``starmap(function, argument tuples)`` returning the results in order, so the
caller's code is the same whichever runs it and the files it writes are byte for byte those of
a serial run. Under an MPI launch only process 0 runs the caller's code: the others serve its
maps (process k takes items k, k + size, ...) and write nothing. Without mpi4py (or when the
mpi4py found is built for another MPI than the launcher's, so that every process is alone in
its own MPI_COMM_WORLD), process 0 does all the work with a process pool, says so, and the others
exit at once.
"""

from __future__ import annotations

import os
import signal
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager

Starmap = Callable[[Callable, Sequence[tuple]], list]
# Where each launcher tells a process its number in MPI_COMM_WORLD: Open MPI's mpiexec; MPICH's
# (Hydra) with its default PMI_FD; Hydra with `-pmi-port`. And how many it started.
RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMI_ID")
SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE")  # Open MPI's mpiexec; MPICH's Hydra, Slurm's PMI
# A process pool pays off only for much per-rank work: a worker's result travels back pickled,
# and unpickling a rank's tables costs the parent about as much as reading them (0.55 s against
# 0.65 s for a rank of 1.6 MB), so only the rest (its critical path, its MPI/OmpSs threads) runs
# in parallel, against the pool's start (each worker imports tareador and numpy). Measured on 4
# ranks of the Jacobi (docs/costs.md, post-processing in parallel): 0.5 MB of rank files 2.7-5.3 s serial, 5.1-7.6 s
# with 2 workers; 1.7 MB 9.7-10.3 s against 10.3 s; 6.7 MB 7.5-8.7 s against 13.9 s.
POOL_MIN_BYTES = 64 << 20


def default_jobs(ranks: int, size: int) -> int:
    """Processes for the per-rank work of a run of ``ranks`` ranks whose files hold ``size``
    bytes: this one alone, unless the work is large enough for a pool to pay off."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(ranks, cpus) if ranks > 1 and size >= POOL_MIN_BYTES and cpus > 1 else 1


def launch_rank(environ: Mapping[str, str] | None = None) -> int | None:
    """The rank a launcher gave this process, None outside a launcher. Read from the environment
    because a tracer must not call MPI_Init itself: it would take the traced rank's place."""
    environ = os.environ if environ is None else environ
    for name in RANK_VARIABLES:
        if environ.get(name, "").isdigit():
            return int(environ[name])
    return None


def launch_size() -> int:
    """How many processes the MPI launcher that started this one started, 1 outside a launcher."""
    for name in SIZE_VARIABLES:
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 1


@contextmanager
def rank_pool(jobs: int | None = None, work: tuple[int, int] | None = None) -> Iterator[Starmap | None]:
    """The starmap this process runs per-rank work with, or None for a process of an MPI launch
    that only served process 0 (it has nothing more to do). ``jobs``: processes of the pool
    (default: default_jobs' choice for work = (ranks, bytes of their files), else the CPUs; 1 =
    serially, in this process)."""
    size = launch_size()
    if size > 1:
        comm = _world(size)
        if comm is not None:
            if comm.Get_rank():
                _serve(comm)
                yield None
                return
            try:
                yield lambda function, items: _mpi_starmap(comm, function, items)
            finally:
                comm.bcast(None, root=0)
            return
        if launch_rank():
            yield None
            return
    if jobs is None and work is not None:
        jobs = default_jobs(*work)
    with _process_pool(jobs) as starmap:
        yield starmap


@contextmanager
def _process_pool(jobs: int | None) -> Iterator[Starmap]:
    jobs = jobs if jobs is not None else os.cpu_count() or 1
    executor = None

    def starmap(function: Callable, items: Sequence[tuple]) -> list:
        nonlocal executor
        if jobs <= 1 or len(items) <= 1:
            return [function(*item) for item in items]
        if executor is None:
            executor = ProcessPoolExecutor(jobs, initializer=_leave_stopping_to_parent)
        return list(executor.map(function, *zip(*items)))

    try:
        yield starmap
    finally:
        if executor is not None:
            executor.shutdown(cancel_futures=True)


def _leave_stopping_to_parent() -> None:
    """A worker ignores Ctrl-C and SIGTERM (sent to the whole process group): one raising them
    while writing its result hangs the parent's shutdown, which waits for the worker's item and
    then ends the pool."""
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)


def _world(size: int):
    """MPI_COMM_WORLD through mpi4py when it spans the launch; else None, and process 0 warns."""
    try:
        with warnings.catch_warnings():  # its own notice of a launcher of another MPI: said below in one line
            warnings.simplefilter("ignore", RuntimeWarning)
            from mpi4py import MPI
    except Exception as e:  # ImportError, or its MPI library failing to load: a RuntimeError
        why = f"mpi4py cannot be used ({str(e).splitlines()[0] if str(e) else type(e).__name__})"
    else:
        if MPI.COMM_WORLD.Get_size() == size:
            return MPI.COMM_WORLD
        why = (f"mpi4py's MPI ({MPI.Get_library_version().split(',')[0].strip()}) is not the launcher's: each "
               "process is alone in its MPI_COMM_WORLD")
    if not launch_rank():
        print(f"tareador: launched as {size} MPI processes, but {why}; process 0 does all the work (install mpi4py "
              "for the launcher's MPI: make deps)", file=sys.stderr)
    return None


def _mpi_starmap(comm, function: Callable, items: Sequence[tuple]) -> list:
    size = comm.Get_size()
    comm.bcast(function, root=0)
    shares = comm.gather(_share(function, comm.scatter([items[k::size] for k in range(size)], root=0)), root=0)
    for ok, value in shares:
        if not ok:
            raise value
    results = [None] * len(items)
    for k, (_, values) in enumerate(shares):
        results[k::size] = values
    return results


def _serve(comm) -> None:
    while (function := comm.bcast(None, root=0)) is not None:
        comm.gather(_share(function, comm.scatter(None, root=0)), root=0)


def _share(function: Callable, items: Sequence[tuple]) -> tuple[bool, object]:
    """(True, results) or (False, the exception), which process 0 raises as its own."""
    try:
        return True, [function(*item) for item in items]
    except Exception as e:
        return False, e
