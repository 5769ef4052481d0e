"""ompss.dim of real MPI runs (`tareador mpirun` of the examples under MPICH and Open MPI), its
replay against a longest path computed here from the rank directories alone, `tareador
simulate RUN_DIR`, and post-processing under `mpiexec` (mpi4py) giving the serial files."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from collections import defaultdict

import networkx as nx
import numpy as np
import pytest

from tareador.formats.dimemas import read_dim
from tareador.simulation.dimemas_engine import replay
from tareador.simulation.machine import Machine
from tareador.taskgraph.durations import measured_calls, measured_trace
from tareador.taskgraph.model import Fragment, MpiCall
from tareador.taskgraph.store import load_trace, read_table, write_table
from tareador.tracing.mpi_launch import MPICH, MPIS, OPEN_MPI
from tests.helpers import RUN_FILES, mpi_records

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]
# Small sizes (the examples' headers derive their messages): 2 iterations of a 16 x 16 Jacobi
# in 4 x 4 blocks; a wavefront of 4 blocks of 8 columns.
ARGUMENTS = {"jacobi": ["16", "4", "2"], "wavefront": ["4", "32", "8"]}
COMPLETIONS = ("MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Test", "MPI_Testall", "MPI_Testany",
               "MPI_Testsome")


def tareador(*args, timeout=120, **kw):
    return subprocess.run([sys.executable, "-m", "tareador", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, **kw)


def table(path):
    with open(path, newline="") as f:
        return [{k: int(v) if v.lstrip("-").isdigit() else v for k, v in row.items()} for row in csv.DictReader(f)]


def longest_path(run_dir, ranks: int) -> int:
    """The MPI/OmpSs model as a graph, from tasks.csv, deps.csv, mpi.csv and messages.csv.

    Each fragment is cut at the MPI calls it made that are messages (a matched send or receive,
    an Irecv, and the Wait or Test that completed a matched Irecv) into pieces weighted by their
    instructions (the counter between the cuts), with a node of weight 0 per call between them.
    Edges: the pieces of a fragment in order; from a fragment's last piece to another's first
    for each RAW dependency, for consecutive fragments of one instance (main's fragments are
    one instance), and from the fragment that created a task instance to its first fragment;
    between consecutive message calls of a rank made by different fragments, one of them a task
    (not main), from the earlier (the call if main's, else its fragment's last piece) to the
    later (the call if main's, else its fragment's first piece); and for each message from its
    send call to the call that completed its receive. On an ideal network with as many cores
    as threads nothing else waits, so ompss.dim replays to the longest path, in instructions
    (nanoseconds at the traces' 10^9 instructions per second)."""
    g = nx.DiGraph()
    weight = {}
    messages = table(run_dir / "messages.csv")
    for r in range(ranks):
        d = run_dir / f"rank-{r}"
        tasks = {t["id"]: t for t in table(d / "tasks.csv")}
        calls = table(d / "mpi.csv")
        mine = {m["send_seq"] for m in messages if m["src"] == r} | {m["recv_seq"] for m in messages if m["dst"] == r}
        requests = {c["request"]: c["seq"] for c in calls if c["seq"] in mine and c["call"] == "MPI_Irecv"}
        completes = {}  # seq of an Irecv -> seq of the completion that completed it
        for c in calls:
            if c["call"] in COMPLETIONS:
                for q in str(c["request"]).split(";"):
                    if q in map(str, requests):
                        completes[requests[int(q)]] = c["seq"]
        cuts = sorted(mine | set(completes.values()))
        by_seq = {c["seq"]: c for c in calls}
        assert all(by_seq[s]["task"] >= 0 for s in cuts)  # no message outside tareador_ON/OFF in the examples
        first, last = {}, {}
        for f, t in tasks.items():
            own = [s for s in cuts if by_seq[s]["task"] == f]
            marks = [t["start"]] + [by_seq[s]["posted"] for s in own] + [t["end"]]
            pieces = [("piece", r, f, k) for k in range(len(marks) - 1)]
            for k, p in enumerate(pieces):
                weight[p] = marks[k + 1] - marks[k]
            chain = [pieces[0]]
            for s, p in zip(own, pieces[1:]):
                weight["call", r, s] = 0
                chain += [("call", r, s), p]
            nx.add_path(g, chain)
            first[f], last[f] = pieces[0], pieces[-1]
        instances = defaultdict(list)
        for f, t in sorted(tasks.items()):
            instances[t["instance"]].append(f)
            if t["instance"] == f and t["parent"] >= 0:
                g.add_edge(last[t["parent"]], first[f])
        for fs in instances.values():
            g.add_edges_from((last[a], first[b]) for a, b in zip(fs, fs[1:]))
        g.add_edges_from((last[d["src"]], first[d["dst"]]) for d in table(d / "deps.csv")
                         if d["kind"] == "RAW" and d["src"] != d["dst"])
        for a, b in zip(cuts, cuts[1:]):
            fa, fb = by_seq[a]["task"], by_seq[b]["task"]
            if fa != fb and (tasks[fa]["parent"] >= 0 or tasks[fb]["parent"] >= 0):
                g.add_edge(("call", r, a) if tasks[fa]["parent"] < 0 else last[fa],
                           ("call", r, b) if tasks[fb]["parent"] < 0 else first[fb])
        for m in messages:
            if m["dst"] == r:
                receive = m["recv_seq"]
                g.add_edge(("call", m["src"], m["send_seq"]), ("call", r, completes.get(receive, receive)))
    longest = {}
    for v in nx.topological_sort(g):
        longest[v] = weight[v] + max((longest[u] for u in g.predecessors(v)), default=0)
    return max(longest.values())


@pytest.fixture(scope="module")
def runs(mpi_examples, tmp_path_factory):
    """runs(mpi, name, ranks) -> the directory of `tareador mpirun` of that example."""
    done = {}

    def run(mpi, name, ranks=2, arguments=None):
        key = (mpi.name, name, ranks)
        if key not in done:
            out = tmp_path_factory.mktemp(f"{name}-{mpi.name}") / "run"
            r = tareador("mpirun", "-np", ranks, "-o", out, "--", mpi_examples(mpi) / name,
                         *(ARGUMENTS[name] if arguments is None else arguments))
            assert r.returncode == 0, r.stderr
            done[key] = out
        return done[key]

    return run


@pytest.mark.parametrize("name", ARGUMENTS)
@pytest.mark.parametrize("mpi", MPIS.values(), ids=MPIS.keys())
def test_ompss_replays_to_the_longest_path(runs, mpi, name):
    run = runs(mpi, name)
    ompss = read_dim(run / "ompss.dim")
    ideal = Machine(nodes=2, cores_per_node=max(ompss.threads))
    bound = longest_path(run, 2)
    assert round(replay(ompss, ideal).makespan * 1e9) == bound
    one_core = replay(ompss, Machine(nodes=2, cores_per_node=1, policy="cp")).makespan
    assert round(one_core * 1e9) >= bound
    assert mpi_records(run / "ompss.dim") == mpi_records(run / "authentic.dim")
    r = tareador("simulate", run, "--cores", "1,2,inf", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["results"]
    assert [x["cores_per_rank"] for x in rows] == [1, 2, "inf"]
    assert rows[0]["time"] == pytest.approx(one_core, abs=1e-12)
    assert rows[2]["time"] == pytest.approx(bound * 1e-9, abs=1e-12)
    assert rows[2]["speedup"] >= rows[0]["speedup"]


def test_jacobi_four_ranks_speeds_up_on_the_cluster(runs):
    """The default Jacobi (96 x 96 in 8 x 8 blocks: 36 tasks per rank and iteration) on 4 ranks,
    one per node of the bundled cluster.toml: with unbounded cores per rank the MPI/OmpSs
    run beats the authentic MPI run."""
    run = runs(MPICH, "jacobi", 4, [])
    r = tareador("simulate", run, "--machine", "cluster", "--cores", "1,inf",
                 "--json")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert (result["ranks"], result["ranks_per_node"]) == (4, 1)
    assert result["results"][-1]["cores_per_rank"] == "inf" and result["results"][-1]["speedup"] > 1


def test_postprocess_under_mpiexec_gives_the_serial_files(runs, tmp_path):
    """`mpiexec.openmpi -n 2 python -m tareador postprocess DIR` (mpi4py: process 1 does ranks 1, 3,
    ...; process 0 writes) and under MPICH's launcher, whose processes mpi4py (built for Open
    MPI) cannot join: process 0 does the work alone and says so; both write the serial files."""
    pytest.importorskip("mpi4py")
    run = runs(MPICH, "jacobi")
    serial = tmp_path / "serial"
    shutil.copytree(run, serial)
    assert tareador("postprocess", serial, "--jobs", "1").returncode == 0
    for mpi in (OPEN_MPI, MPICH):
        copy = tmp_path / mpi.name
        shutil.copytree(run, copy)
        for name in RUN_FILES + ("patterns.csv",):
            (copy / name).unlink()
        r = subprocess.run(mpi.command(2, [sys.executable, "-m", "tareador", "postprocess", str(copy)]),
                           capture_output=True, text=True, timeout=120, env=mpi.env())
        assert r.returncode == 0, r.stderr
        assert r.stdout.count("run directory:") == 1  # process 0's summary, only
        warned = "process 0 does all the work" in r.stderr
        assert warned == (mpi is MPICH), r.stderr
        for name in RUN_FILES + ("patterns.csv",):
            assert (copy / name).read_bytes() == (serial / name).read_bytes(), (mpi.name, name)


@pytest.mark.parametrize("mpi", MPIS.values(), ids=MPIS.keys())
def test_an_mpi_run_timed_per_rank_replays_to_its_measured_longest_path(runs, mpi, tmp_path):
    """tareador time of a run: every rank timed under its MPI's launcher, rank-N/durations.csv, and
    ompss-measured.dim, which replays to the longest path of the run's graph on the measured clock
    (the rank directories with their fragments and calls moved onto it, taskgraph/durations.py)."""
    run = tmp_path / "run"
    shutil.copytree(runs(mpi, "wavefront"), run)
    r = tareador("time", run, "--repeat", "1", timeout=300)
    assert r.returncode == 0, r.stderr
    measured = tmp_path / "measured"  # the rank directories with the measured clock, for longest_path
    shutil.copytree(run, measured)
    for rank in range(2):
        d = run / f"rank-{rank}"
        trace = load_trace(d)
        rows = [line.split(",") for line in (d / "durations.csv").read_text().splitlines()[1:]]
        assert [int(x[0]) for x in rows] == [t.id for t in trace.fragments]
        ns = np.array([int(x[1]) for x in rows])
        assert json.loads((d / "timing.json").read_text())["rank"] == rank
        write_table(measured / f"rank-{rank}" / "tasks.csv", Fragment, measured_trace(trace, ns).fragments)
        calls = read_table(d / "mpi.csv", MpiCall)
        write_table(measured / f"rank-{rank}" / "mpi.csv", MpiCall, measured_calls(trace, ns, calls))
    bound = longest_path(measured, 2)
    ompss = read_dim(run / "ompss-measured.dim")
    assert round(replay(ompss, Machine(nodes=2, cores_per_node=max(ompss.threads))).makespan * 1e9) == bound
    r = tareador("simulate", run, "--cores", "inf", "--durations", "measured", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["results"][0]["time"] == pytest.approx(bound * 1e-9, abs=1e-12)
    r = tareador("simulate", runs(mpi, "wavefront"), "--durations", "measured")
    assert r.returncode == 2 and "has no ompss-measured.dim or authentic-measured.dim: run 'tareador time" in r.stderr
