"""Helpers the test modules share: hand-made traces, rank directories and Dimemas texts,
and where the examples are. Fixtures are in conftest.py."""

from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path

import pytest

from tareador.analyses.postprocess import postprocess
from tareador.cli.main import main
from tareador.formats.dimemas import DEPENDENCY_COMM, read_dim, write_dim
from tareador.taskgraph.model import Communicator, DataObject, Dependency, Fragment, MpiCall, TaskTrace
from tareador.taskgraph.store import save, write_table

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def write_c(tmp_path: Path, name: str, code: str) -> Path:
    path = tmp_path / f"{name}.c"
    path.write_text(code)
    return path


MPI_EXAMPLES = ["jacobi", "wavefront", "ring", "cg"]


def require(mpi):
    if not mpi.installed():
        pytest.skip(f"{mpi.name} is not installed ({mpi.mpicc} or {mpi.mpiexec} not on PATH); `make deps` installs it")


def make(rows: list[tuple[str, int, int]], raw: list[tuple[int, int]], war: list[tuple[int, int]] = ()) -> TaskTrace:
    """rows: (name, parent id, instructions) in creation order; ids are row numbers; parent -1 rows
    are main's fragments, every other row a whole task instance."""
    tasks, clock = [], 0
    for i, (name, parent, n) in enumerate(rows):
        tasks.append(Fragment(i, name, 0 if parent < 0 else i, parent, clock, clock + n, n))
        clock += n
    deps = [Dependency(s, d, "RAW", "x", 8) for s, d in raw] + [Dependency(s, d, "WAR", "x", 8) for s, d in war]
    return TaskTrace(tasks, deps, [DataObject(0, "x", "heap", 4096, 64, "t.c:1")], {"instances": len(rows)})


def fork_join(width: int = 4, work: int = 10) -> TaskTrace:
    rows = [("main", -1, 0)] + [("leaf", 0, work)] * width + [("main", -1, 0)]
    return make(rows, [(i, width + 1) for i in range(1, width + 1)])


def program(*body: tuple) -> TaskTrace:
    """The trace of main creating tasks in order: body items are (name, instructions, reads) with
    reads the body indices of earlier tasks whose output it reads; main's fragment before each
    creation and after the last is 0 instructions, as tasks.csv cuts them. Row ids: main's
    fragments are even, task k is row 2k + 1."""
    rows, raw = [], []
    for k, (name, work, reads) in enumerate(body):
        rows += [("main", -1, 0), (name, 2 * k, work)]
        raw += [(2 * r + 1, 2 * k + 1) for r in reads]
    return make(rows + [("main", -1, 0)], raw)


def chain_and_side(k: int) -> TaskTrace:
    """Per iteration a task chain (2) reading the previous chain, then an independent side (1)."""
    return program(*[item for i in range(k) for item in (("chain", 2, [2 * (i - 1)] if i else []), ("side", 1, []))])


TWO_RANKS = ["1:0:0:1.0\n2:0:0:1:1048576:1:0:0\n1:0:0:0.5\n", "1:1:0:0.0\n3:1:0:0:1048576:1:0:0\n1:1:0:1.0\n"]
THREE_THREADS = ["1:0:0:1.0\n2:0:0:0:1:1:8002:0:2\n2:0:0:0:2:1:8002:0:2\n1:0:0:1.0\n",
                 "1:0:1:0.0\n3:0:1:0:0:1:8002:0:0\n1:0:1:1.0\n", "1:0:2:0.0\n3:0:2:0:0:1:8002:0:0\n1:0:2:1.0\n"]


def dim(tmp_path, threads, blocks, name="t"):
    return read_dim(write_dim(tmp_path / f"{name}.dim", name, threads, blocks))


def cfg(nodes: int, cpus: int, bandwidth: float, latency: float, sched: str = "") -> str:
    return ("#DIMEMAS_CONFIGURATION\n"
            '"wide area network information" {"", 1, 0, 4, 0.0, 0.0, 1};;\n'
            f'"environment information" {{"", 0, "", {nodes}, {bandwidth}, 0, 1}};;\n'
            f'"multi node information" {{0, {nodes}, "", {cpus}, 1.0, 0.0, 0.0, 0, 1, 1, {latency}, 1, 1, 0.0}};;\n'
            '"predefined mapping information" {"1 TASKS_PER_NODE"};;\n'
            f'"configuration files" {{{sched}, "", "", ""}};;\n'
            '"file system parameters" {0.0, 0.0, 8.0, 0, 1.0};;\n')


def call(name, peer=-1, tag=-1, size=0, at=0, completed=None, request="", comm=0, task=0):
    """A row of mpi.csv but its rank and seq; blocking calls complete where they are posted."""
    return dict(call=name, peer=peer, tag=tag, comm=comm, bytes=size, object="", posted=at,
                completed=at if completed is None else completed, request=request, task=task)


def rank_dir(root, rank, size, calls, tasks=None, comms=None, summary=None, deps=None):
    """rank-N/ as the tracer writes it; by default one main fragment covering the calls; ``deps``:
    RAW dependencies (src, dst) through one heap object."""
    end = max([c["posted"] for c in calls] + [c["completed"] for c in calls] + [0])
    tasks = tasks or [Fragment(0, "main", 0, -1, 0, end, end)]
    d = root / f"rank-{rank}"
    deps = [Dependency(src, dst, "RAW", "heap:x.c:1#0", 8) for src, dst in deps or []]
    save(TaskTrace(tasks, deps, [], {"rank": rank, "size": size, "mpi": "mpich", "partial": False,
                                   "ending": "exited with status 0", "warnings": [], **(summary or {})}), d)
    write_table(d / "mpi.csv", MpiCall, [MpiCall(rank, i, **c) for i, c in enumerate(calls)])
    write_table(d / "comms.csv", Communicator, comms or [Communicator(0, size, ";".join(map(str, range(size)))),
                                                  Communicator(1, 1, str(rank))])


def make_run(root, ranks, collectives="dimemas", **per_rank):
    for r, calls in enumerate(ranks):
        rank_dir(root, r, len(ranks), calls, **{k: v[r] for k, v in per_rank.items()})
    return postprocess(root, collectives=collectives)


def run_cli(*args):
    return main(["trace", "--no-progress", *map(str, args)])


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert err and err[-1].startswith("tareador: ")
    return err[-1]


def strip_task_markers(tmp_path, name):
    """cholesky.c without its tareador_start_task/end_task lines (ON/OFF stay, so the
    initialisation is outside the analysed region as in the marked version)."""
    source = (EXAMPLES / "cholesky" / "cholesky.c").read_text()
    kept = [line for line in source.splitlines() if not re.match(r"\s*tareador_(start|end)_task\(", line)]
    return write_c(tmp_path, name, "\n".join(kept) + "\n")


def instance_tree(t) -> list[tuple[str, str]]:
    """(name, name of the parent instance) of every task instance, in creation order."""
    by_id = {x.id: x for x in t.fragments}
    return [(x.name, "main" if by_id[x.parent].is_main else by_id[x.parent].name)
            for x in t.fragments if x.starts_instance and not x.is_main]


def instance_edges(t) -> set[tuple[str, str, str, int]]:
    """RAW edges between task instances, each instance named name#k (k-th of its name)."""
    seen: Counter = Counter()
    label = {}
    for x in t.fragments:
        if x.starts_instance and not x.is_main:
            seen[x.name] += 1
            label[x.id] = f"{x.name}#{seen[x.name]}"
    instance = {x.id: x.instance for x in t.fragments}
    return {(label[instance[d.src]], label[instance[d.dst]], d.object, d.bytes) for d in t.deps
            if d.kind == "RAW" and instance[d.src] in label and instance[d.dst] in label}


RUN_FILES = ("mpi.csv", "messages.csv", "summary.json", "authentic.dim", "authentic.pcf", "ompss.dim", "ompss.pcf")


def mpi_records(path):
    """The MPI records (sends and receives not between threads of one task, and global
    operations) as (op, task, the fields after the thread), each as often as it occurs."""
    out = Counter()
    for line in path.read_text().splitlines()[1:]:
        f = line.split(":")
        if (f[0] in "23" and len(f) == 8) or f[0] == "10":
            out[f[0], f[1], *f[3:]] += 1
        elif f[0] in "23" and len(f) == 9:
            assert f[1] == f[3] and f[7] == str(DEPENDENCY_COMM), line  # a dependency, never an MPI message
    return out


def random_trace(rng: random.Random, n: int) -> TaskTrace:
    """Main fragments creating tasks, nested tasks, random RAW edges forward in creation order."""
    rows = []
    last_main = -1
    for i in range(n):
        r = rng.random()
        if i == 0 or r < 0.15:
            rows.append(("main", -1, rng.randint(0, 20)))
            last_main = i
        elif r < 0.3:
            rows.append(("nested", rng.randrange(i), rng.randint(0, 50)))
        else:
            rows.append(("task", last_main, rng.randint(0, 50)))
    raw = [tuple(sorted(rng.sample(range(n), 2))) for _ in range(2 * n)]
    return make(rows, raw)
