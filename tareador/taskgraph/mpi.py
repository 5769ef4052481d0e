"""An MPI run: every rank's task graph, the MPI calls each rank made and the messages between them.

``tareador trace --mpi`` writes one rank into ``DIR/rank-N/`` (its task graph as for any trace,
plus ``mpi.csv``, one row per MPI call, and ``comms.csv``, its communicators); ``tareador
postprocess DIR`` matches the calls of all ranks and writes the run's own files at the top:
``mpi.csv`` (every rank's rows), ``messages.csv`` (one row per matched message) and
``summary.json``. The files are the contract between those steps (docs/reference/files.md, run directory), so they
are validated on the way in and every problem is named by file and line.

Communicator numbers in mpi.csv belong to the rank that wrote it (0 = MPI_COMM_WORLD,
1 = MPI_COMM_SELF, then in the order the rank created them); the same communicator may have
different numbers on two of its ranks. MPI_Sendrecv and MPI_Sendrecv_replace are two rows, the
send part first, then the receive part (each has its own peer, tag and size).
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from tareador.errors import TraceDirError
from tareador.files import write_text
from tareador.taskgraph.matching import Matching, Message, match, sides
from tareador.taskgraph.model import Communicator, MpiCall, TaskTrace
from tareador.taskgraph.mpi_calls import (
    BOOKKEEPING,
    COMPLETIONS,
    OTHER,
    RECEIVE,
    SEND,
    SENDRECVS,
    first_one_sided,
    moves_no_data,
)
from tareador.taskgraph.store import load_trace, read_summary, read_table, remove_owned, write_table

RANK_DIR = re.compile(r"rank-(\d+)")

MISSING = "wrote no trace"  # the ending of a rank without a directory


@dataclass
class MpiRun:
    """A whole MPI run, what ``tareador.load(DIR)`` returns for a run's directory.

    ``ranks[r]`` is rank r's task graph, ``comms[r]`` its communicators; ``calls`` are every
    rank's MPI calls sorted by (rank, seq); ``messages`` the matched point-to-point messages.
    """

    ranks: list[TaskTrace]
    calls: list[MpiCall]
    comms: list[list[Communicator]]
    summary: dict = field(default_factory=dict)
    path: str | None = None

    def calls_of(self, rank: int) -> list[MpiCall]:
        return self.calls_by_rank[rank]

    @cached_property
    def calls_by_rank(self) -> list[list[MpiCall]]:
        by_rank: list[list[MpiCall]] = [[] for _ in self.ranks]
        for c in self.calls:
            by_rank[c.rank].append(c)
        return by_rank

    @cached_property
    def matching(self) -> Matching:
        """Messages, collectives and what matched nothing (tareador.taskgraph.matching)."""
        return match(self.calls_by_rank, self.comms)

    @property
    def messages(self) -> list[Message]:
        return self.matching.messages

    def __repr__(self) -> str:
        where = f" {self.path}" if self.path else ""
        return (f"<MpiRun{where}: {len(self.ranks)} ranks, {sum(r.instances for r in self.ranks)} task instances, "
                f"{len(self.calls)} MPI calls>")


def blocked_in(calls: Sequence[MpiCall], trace: TaskTrace, waiting: set[int]) -> MpiCall | None:
    """The call a rank whose trace ended early was inside: its last, when it waited for what
    never came (``waiting``: seqs of its receives, waits and collectives nothing matched) or
    when no instruction ran after it (the counter stands still inside MPI calls); not a call
    that returns at once."""
    if not calls or calls[-1].nonblocking:
        return None
    last = calls[-1]
    end = max((t.end for t in trace.fragments), default=0)
    return last if last.seq in waiting or last.completed < 0 or last.posted >= end else None


def _waiting(run: MpiRun) -> list[set[int]]:
    """Per rank, the seqs of the calls that waited for something no other rank did."""
    m = run.matching
    waiting: list[set[int]] = [set() for _ in run.ranks]
    for c in m.unmatched_receives:
        waiting[c.rank].add(c.seq)
    for problem in m.unmatched_collectives:
        for member, seq in zip(problem["members"], problem["seqs"]):
            if seq is not None:
                waiting[member].add(seq)
    for r, calls in enumerate(run.calls_by_rank):
        # A Wait or Test still under way lists no request yet: any after an Irecv nothing matched.
        first = min((c.seq for c in calls if c.seq in waiting[r] and c.nonblocking), default=len(calls))
        waiting[r] |= {c.seq for c in calls[first:] if c.operation in COMPLETIONS}
    return waiting


# ----------------------------------------------------------------------------------- ranks

def rank_dirs(directory: Path) -> dict[int, Path]:
    """rank-N/ subdirectories by rank."""
    found = {}
    for d in directory.glob("rank-*"):
        m = RANK_DIR.fullmatch(d.name)
        if m and d.is_dir():
            found[int(m.group(1))] = d
    return dict(sorted(found.items()))


def clear_run(directory: Path) -> None:
    """What an earlier run wrote into a directory: its files, and its ranks' (a new run may have
    fewer ranks, and a rank left over would join it); other files stay."""
    for d in rank_dirs(directory).values():
        remove_owned(d)
        if not any(d.iterdir()):
            d.rmdir()
    if directory.is_dir():
        remove_owned(directory)


@dataclass
class RankTables:
    trace: TaskTrace
    calls: list[MpiCall]
    comms: list[Communicator]


def read_rank(d: Path, rank: int, size: int) -> RankTables:
    """One rank's directory, validated: what matching and the Dimemas writer rely on."""
    trace = load_trace(d)
    remedy = f"trace the run again (tareador mpirun -o {d.parent} ...)"
    warnings = trace.summary.get("warnings", [])
    if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
        raise TraceDirError(f"{d / 'summary.json'}: warnings {warnings!r} are not a list of texts; {remedy}")
    comms = read_table(d / "comms.csv", Communicator, remedy)
    _check_comms(d / "comms.csv", comms, rank, size)
    calls = read_table(d / "mpi.csv", MpiCall, remedy)
    _check_calls(d / "mpi.csv", calls, rank, size, trace, {c.comm for c in comms})
    # A cached property, computed where the rank is read: ranks are read in parallel (tareador.workers).
    trace.tinf  # noqa: B018
    return RankTables(trace, calls, comms)


def _check_comms(path: Path, comms: list[Communicator], rank: int, size: int) -> None:
    seen = set()
    for line, c in enumerate(comms, start=2):
        where = f"{path}:{line}: communicator {c.comm}"
        if c.comm in seen:
            raise TraceDirError(f"{where} appears twice; the file is corrupt")
        seen.add(c.comm)
        try:
            members = c.members
        except ValueError:
            raise TraceDirError(f"{where}: ranks {c.ranks!r} are not ';'-joined numbers; the file is corrupt") from None
        if len(members) != c.size or len(set(members)) != c.size or rank not in members:
            raise TraceDirError(f"{where} of size {c.size} lists ranks {c.ranks!r}, which must be {c.size} distinct "
                                f"ranks including {rank}; the file is corrupt")
        if any(not 0 <= m < size for m in members):
            raise TraceDirError(f"{where} names a rank outside the run's {size}; the file is corrupt")
        if c.comm == 0 and c.size != size:
            raise TraceDirError(f"{where} is MPI_COMM_WORLD of {c.size} ranks, but summary.json says the run has "
                                f"{size}; the files are corrupt")


def _check_calls(path: Path, calls: list[MpiCall], rank: int, size: int, trace: TaskTrace, comms: set[int]) -> None:
    fragments = {t.id: t for t in trace.fragments}
    requests: dict[int, int] = {}  # request number -> line of the call that started it
    done: set[int] = set()
    for line, (c, side) in enumerate(zip(calls, sides(calls)), start=2):
        where = f"{path}:{line}:"
        if c.rank != rank or c.seq != line - 2:
            raise TraceDirError(f"{where} row of rank {c.rank}, seq {c.seq} where rank {rank}, seq {line - 2} "
                                "belongs; the file is corrupt")
        if c.peer >= size or c.comm not in comms | {-1} or c.bytes < -1:
            raise TraceDirError(f"{where} {c.call}: peer {c.peer}, communicator {c.comm} or {c.bytes} bytes do not "
                                f"exist in a run of {size} ranks with communicators {sorted(comms)}; the file is "
                                "corrupt")
        if side in (SEND, RECEIVE) and c.comm == -1:
            raise TraceDirError(f"{where} {c.call} names no communicator; the file is corrupt")
        if c.task != -1 and c.task not in fragments:
            raise TraceDirError(f"{where} {c.call} was made by task {c.task}, which is not in tasks.csv")
        if line > 2 and c.posted < calls[line - 3].posted or c.completed != -1 and c.completed < c.posted:
            raise TraceDirError(f"{where} {c.call} posted at {c.posted}, completed at {c.completed}: the instruction "
                                "counter goes back; the file is corrupt")
        t = fragments.get(c.task)
        if t is not None and not t.start <= c.posted <= t.end:
            raise TraceDirError(f"{where} {c.call} posted at {c.posted}, outside task {t.id} ({t.start}..{t.end})")
        try:
            numbers = c.requests
        except ValueError:
            raise TraceDirError(f"{where} request {c.request!r} is not ';'-joined numbers; the file is "
                                "corrupt") from None
        if c.nonblocking:
            if len(numbers) != 1 or numbers[0] in requests:
                raise TraceDirError(f"{where} {c.call} must start one new request, not {c.request!r}")
            requests[numbers[0]] = line
        elif numbers and c.operation not in COMPLETIONS:
            raise TraceDirError(f"{where} {c.call} is neither non-blocking nor a Wait/Test but has requests "
                                f"{c.request!r}")
        for r in numbers if c.operation in COMPLETIONS else ():
            if r not in requests or r in done:
                raise TraceDirError(f"{where} {c.call} completes request {r}, which "
                                    + ("was completed before" if r in done else "no earlier call started"))
            done.add(r)
        if c.operation in SENDRECVS and side == SEND:
            after = calls[line - 1] if line - 1 < len(calls) else None
            if after is None or (after.operation, after.task, after.posted) != (c.operation, c.task, c.posted):
                raise TraceDirError(f"{where} {c.call} is its send part, and its receive part must follow it "
                                    "(same task and counter); the file is corrupt")


# ----------------------------------------------------------------------------------- the run

def read_ranks(directory: Path, starmap=None) -> list[RankTables]:
    """Every rank of a run, in rank order; a rank that wrote nothing is an empty, partial trace.
    ``starmap`` reads the ranks (tareador.workers.rank_pool; default: one after the other).

    A run's size is what its ranks say (their summaries' "size"); a rank directory numbered
    beyond it, or from a run of another size, is left from another run and refused.
    """
    dirs = rank_dirs(directory)
    if not dirs:
        raise TraceDirError(f"{directory} has no rank-N/ directories: trace a run with "
                            f"'tareador mpirun -np N -o {directory} -- ./prog'")
    sizes = {}
    for r, d in dirs.items():
        size = read_summary(d / "summary.json", "trace the run again").get("size") or len(dirs)
        if type(size) is not int or size < 1:
            raise TraceDirError(f"{d / 'summary.json'}: size {size!r} is not a number of ranks; trace the run again")
        sizes[r] = size
    size = max(sizes.values())
    stale = [r for r, s in sizes.items() if s != size or r >= size]
    if stale:
        r = stale[0]
        told = f"is rank {r} of a run of {size} ranks" if sizes[r] == size else \
            f"is from a run of {sizes[r]} ranks, the others from one of {size}"
        raise TraceDirError(f"{dirs[r]} {told}: remove it or trace the run again into an empty directory")
    starmap = starmap or (lambda function, items: [function(*item) for item in items])
    # Every directory is read before any placeholder is made: a corrupt size is refused first.
    read = dict(zip(dirs, starmap(read_rank, [(d, r, size) for r, d in dirs.items()])))
    return [read[r] if r in read else
            RankTables(TaskTrace([], [], [], {"rank": r, "size": size, "partial": True, "ending": MISSING}), [], [])
            for r in range(size)]


def build_run(directory: str | Path, ending: str | None = None, starmap=None) -> MpiRun:
    """Match the calls of a run's ranks and write the run's own files (tareador postprocess).

    ``ending``: how the launch ended when tareador stopped it (a timeout, Ctrl-C), which makes
    the run partial; ``starmap``: what reads the ranks (``read_ranks``).
    """
    d = Path(directory)
    run = _run(d, read_ranks(d, starmap), {})
    transfer = first_one_sided(run.calls)
    if transfer is not None:
        raise TraceDirError(f"rank {transfer.rank} called {transfer.call} (one-sided communication, mpi.csv seq "
                            f"{transfer.seq}): tareador does not model the data one-sided calls move, so the run's "
                            "dependencies and times would be wrong; nothing was written")
    run.summary = _summary(run, ending)
    write_table(d / "mpi.csv", MpiCall, run.calls)
    write_table(d / "messages.csv", Message, run.messages)
    write_text(d / "summary.json", json.dumps(run.summary, indent=2) + "\n")
    return run


def _summary(run: MpiRun, ending: str | None) -> dict:
    m = run.matching
    side = {(c.rank, c.seq): role for calls in run.calls_by_rank for c, role in zip(calls, sides(calls))}

    def described(c: MpiCall) -> dict:
        return {"rank": c.rank, "seq": c.seq, "call": c.call, "kind": side[c.rank, c.seq], "peer": c.peer,
                "tag": c.tag, "comm": c.comm, "bytes": c.bytes}

    per_rank, said, waiting = [], defaultdict(list), _waiting(run)
    for r, (trace, calls) in enumerate(zip(run.ranks, run.calls_by_rank)):
        s = trace.summary
        blocked = blocked_in(calls, trace, waiting[r]) if s.get("partial") else None
        per_rank.append({"rank": r, "t1": trace.t1, "tinf": trace.tinf, "parallelism": round(trace.parallelism, 4),
                         "instances": trace.instances, "mpi_calls": len(calls), "ending": s.get("ending"),
                         "exit_status": s.get("exit_status"), "partial": bool(s.get("partial")),
                         "blocked_in": described(blocked) if blocked else None})
        for w in s.get("warnings", []):
            said[w].append(r)
    warnings = [f"{_ranks_text(ranks)}: {w}" for w, ranks in said.items()]
    missing = [r for r, t in enumerate(run.ranks) if t.summary.get("ending") == MISSING]
    if missing:
        warnings.append(f"{_ranks_text(missing)} wrote no trace (its tracer did not start or was killed)")
    if not run.calls and not missing:
        warnings.append(f"no rank made an MPI call: the {len(run.ranks)} ranks are independent runs of the program")
    unmodelled = Counter(c.call for c in run.calls if side[c.rank, c.seq] == OTHER and c.operation not in BOOKKEEPING)
    dropped = {name: n for name, n in sorted(unmodelled.items()) if not moves_no_data(name)}
    if dropped:
        warnings.append("MPI calls whose data movement tareador does not model (their messages and buffer accesses "
                        "are missing: no dependencies through them, no communication time): "
                        + ", ".join(f"{name} x{n}" for name, n in dropped.items()))
    for what, items in (("send", m.unmatched_sends), ("receive", m.unmatched_receives),
                        ("collective call", m.unmatched_collectives)):
        if items:
            warnings.append(f"{len(items)} {what}{'s' * (len(items) > 1)} matched nothing (summary.json lists "
                            f"{'them' if len(items) > 1 else 'it'})")
    first = next((t.summary for t in run.ranks if t.summary.get("program")), {})
    return {
        "program": first.get("program"),
        "arguments": first.get("arguments", []),
        "ranks": len(run.ranks),
        "mpi": next((t.summary["mpi"] for t in run.ranks if t.summary.get("mpi")), None),
        "messages": len(run.messages),
        "bytes": sum(max(msg.bytes, 0) for msg in run.messages),
        "collectives": len(m.collectives),
        "ending": ending,
        "partial": ending is not None or any(p["partial"] for p in per_rank),
        "per_rank": per_rank,
        "unmatched_sends": [described(c) for c in m.unmatched_sends],
        "unmatched_receives": [described(c) for c in m.unmatched_receives],
        "unmatched_collectives": m.unmatched_collectives,
        "calls_not_modelled": dict(sorted(unmodelled.items())),
        "data_not_modelled": dropped,
        "warnings": warnings,
    }


def _ranks_text(ranks: list[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ", ".join(map(str, ranks))


def load_run(directory: str | Path) -> MpiRun:
    """A run's directory after ``tareador postprocess``: the ranks' files, and the run's own
    files checked against them (a rank traced again since leaves them stale)."""
    d = Path(directory)
    remedy = f"run 'tareador postprocess {d}'"
    run = _run(d, read_ranks(d), read_summary(d / "summary.json", remedy))
    for name, cls, rows in (("mpi.csv", MpiCall, run.calls), ("messages.csv", Message, run.messages)):
        written = read_table(d / name, cls, remedy)
        if written != rows:
            line = next((i for i, (a, b) in enumerate(zip(written, rows)) if a != b), min(len(written), len(rows)))
            raise TraceDirError(f"{d / name}:{line + 2}: differs from what the ranks' own files give (a rank "
                                f"traced again since?); {remedy}")
    return run


def _run(d: Path, ranks: list[RankTables], summary: dict) -> MpiRun:
    return MpiRun([r.trace for r in ranks], [c for r in ranks for c in r.calls], [r.comms for r in ranks], summary,
                  str(d))
