"""Production and consumption patterns (tareador patterns) of examples/patterns, whose header
derives the figures each mode must give, traced with `tareador mpirun` under both real MPIs; the
statistics on hand-made patterns; and what is refused."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from tareador.analyses.patterns import figures, statistics
from tareador.formats.dimemas import read_dim
from tareador.simulation.dimemas_engine import replay
from tareador.simulation.machine_files import BUNDLED, load_machine
from tareador.taskgraph.patterns import TransferPattern
from tareador.tracing import toolchain
from tareador.tracing.mpi_launch import MPICH, MPIS, OPEN_MPI
from tests.helpers import EXAMPLES, require

# N = 256 doubles, W = 200 iterations per unit, 3 messages
ARGS = ["256", "200", "3"]
# 4 nodes, one rank each: every message crosses the 100 MB/s, 10 us network
CLUSTER = BUNDLED / "cluster.toml"


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """traced(mpi, producer, consumer, transfer='send') -> the run directory of examples/patterns
    in those modes."""
    out = tmp_path_factory.mktemp("patterns")
    done = {}

    def trace(mpi, producer, consumer, transfer="send"):
        require(mpi)
        key = (mpi.name, producer, consumer, transfer)
        if key not in done:
            subprocess.run(["make", "-s", "-C", str(EXAMPLES), f"MPI={mpi.name}", f"BIN={out}",
                            f"TAREADOR_CFLAGS={toolchain.cflags()}", f"TAREADOR_LIBS={toolchain.libs()}", "patterns"],
                           check=True)
            run_dir = out / "-".join(key)
            r = tareador("mpirun", "-np", "2", "-o", run_dir, "--", out / mpi.name / "patterns", *ARGS, producer,
                         consumer, transfer)
            assert r.returncode == 0, r.stderr
            assert "check=ok" in r.stdout
            done[key] = run_dir
        return done[key]

    return trace


def tareador(*args):
    return subprocess.run([sys.executable, "-m", "tareador", *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def rows(run_dir):
    with open(run_dir / "patterns.csv", newline="") as f:
        return list(csv.DictReader(f))


def near(value, expected, points=3.0):
    return abs(float(value) - expected) <= points


@pytest.mark.parametrize("mpi", MPIS.values(), ids=MPIS.keys())
def test_linear_producer_and_consumer(traced, mpi):
    """Header of examples/patterns: linear production gives 25 / 50 / 100 % for 1, 2, 4 chunks
    complete; linear consumption 0 / 25 / 50 % passed with nothing, the best chunk, the best two."""
    table = rows(traced(mpi, "linear", "linear"))
    assert [(r["message"], r["src"], r["dst"], r["tag"], r["bytes"]) for r in table] == \
        [(str(k), "0", "1", str(k), "2048") for k in range(3)]
    for r in table:
        assert near(r["prod_1elem"], 0) and near(r["prod_quarter"], 25) and near(r["prod_half"], 50)
        assert near(r["prod_whole"], 100)
        assert near(r["cons_nothing"], 0) and near(r["cons_quarter"], 25) and near(r["cons_half"], 50)
        # an interval is N units of W iterations: more than N * W instructions
        assert int(r["production_interval"]) > 256 * 200 and int(r["consumption_interval"]) > 256 * 200


@pytest.mark.parametrize("mpi", MPIS.values(), ids=MPIS.keys())
def test_copy_before_send_and_late_consumer(traced, mpi):
    """A producer that copies into the buffer just before the send: every figure >= 95 %; a
    consumer that first works 2N/3 units on its own: nothing = 40 %, then linear over the other
    60 %: quarter = 40 + 60/4 = 55 %, half = 40 + 60/2 = 70 %."""
    for r in rows(traced(mpi, "copy", "late")):
        assert all(float(r[f]) >= 95 for f in ("prod_1elem", "prod_quarter", "prod_half", "prod_whole"))
        assert near(r["cons_nothing"], 40) and near(r["cons_quarter"], 55) and near(r["cons_half"], 70)


def test_patterns_command_tables_json_files_and_plots(traced):
    run_dir = traced(MPICH, "linear", "linear")
    r = tareador("patterns", run_dir, "--json", "--chunks", "8")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["chunks"] == 8 and out["messages"] == 3
    assert [c["name"] for c in out["classes"]] == ["0->1", "all"]
    mean = out["classes"][-1]["mean"]
    # 8 chunks: quarter = 2 chunks complete (25 %), half = 4 (50 %), as with 4 chunks
    assert near(mean["prod_quarter"], 25) and near(mean["prod_half"], 50) and near(mean["cons_half"], 50)
    assert out["plots"] == [str(run_dir / "patterns-0-1.png")]
    assert (run_dir / "patterns-0-1.png").read_bytes()[:4] == b"\x89PNG"
    with np.load(run_dir / "patterns.npz") as f:
        assert f["message"].tolist() == [0, 1, 2]
        assert f["production_offsets"].tolist() == [0, 256, 512, 768]
        # linear production: element i final at (i + 1) / N of the interval
        assert np.allclose(f["production"][:256], (np.arange(256) + 1) / 256, atol=0.01)
    text = tareador("patterns", run_dir, "--no-plots")
    assert text.returncode == 0
    assert "0->1" in text.stdout and "distribution over all messages" in text.stdout


def test_patterns_refuses_what_it_cannot_use(tmp_path, traced):
    run_dir = traced(OPEN_MPI, "linear", "linear")
    for args, says in ((["--chunks", "0"], "--chunks 0"), ([], None)):
        target = run_dir if args else tmp_path
        r = tareador("patterns", target, *args)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
        assert (says or "not the directory of an MPI run") in r.stderr


def test_patterns_refuses_a_truncated_rank_file_in_one_line(tmp_path, traced):
    """A rank's patterns.npz cut short (a full disk, a copy stopped midway) is not a zip any more:
    numpy's BadZipFile, not an OSError, used to escape as a traceback."""
    run_dir = tmp_path / "run"
    shutil.copytree(traced(OPEN_MPI, "linear", "linear"), run_dir)
    rank_file = run_dir / "rank-1" / "patterns.npz"
    rank_file.write_bytes(rank_file.read_bytes()[:500])
    for command in (["patterns"], ["overlap", "--machine", CLUSTER, "--bandwidth", "10"]):
        r = tareador(command[0], run_dir, *command[1:])
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
        assert f"{rank_file} is not a patterns file" in r.stderr


@pytest.mark.fast
def test_an_interrupted_save_keeps_the_previous_patterns_file(tmp_path, monkeypatch):
    """Ctrl-C while patterns.npz is written (np.savez writing its second array) used to leave a
    zip of the first arrays only, which loads as a run without its consumption."""
    from tareador.taskgraph import patterns

    path = tmp_path / "patterns.npz"
    patterns.save_run_patterns(path, [])
    before = path.read_bytes()
    write_array = np.lib.format.write_array
    written = []

    def interrupted(*args, **kwargs):
        if written:
            raise KeyboardInterrupt
        written.append(write_array(*args, **kwargs))

    monkeypatch.setattr(np.lib.format, "write_array", interrupted)
    with pytest.raises(KeyboardInterrupt):
        patterns.save_run_patterns(path, [pattern([0.0, 1.0], [0.0, 1.0])])
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["patterns.npz"]


def pattern(production, consumption):
    return TransferPattern(0, 0, 1, 0, 8 * len(production), 0, 100, 0, 100, np.array(production, dtype=float),
                           np.array(consumption, dtype=float))


@pytest.mark.fast
def test_figures_by_hand():
    """8 elements in 4 chunks of 2. Production: chunks complete at max(.1,.9)=.9, max(.2,.3)=.3,
    .5, .7 -> sorted .3 .5 .7 .9: quarter 30, half 50, whole 90; 1 elem = .1. Consumption: chunks
    first needed at .6, .2 (the other element never read), 1 (never read), .4 -> sorted .2 .4 .6 1:
    nothing 20, quarter (2nd) 40, half (3rd) 60."""
    f = figures(pattern([.1, .9, .2, .3, .5, .4, .7, .6], [.6, .8, .2, np.nan, np.nan, np.nan, .4, .9]))
    assert (f.prod_1elem, f.prod_quarter, f.prod_half, f.prod_whole) == (10, 30, 50, 90)
    assert (f.cons_nothing, f.cons_quarter, f.cons_half) == (20, 40, 60)
    # one chunk: quarter and half need the whole message; nothing else to receive -> 100 % passed
    f1 = figures(pattern([.1, .9], [.3, .5]), chunks=1)
    assert (f1.prod_quarter, f1.prod_half, f1.prod_whole, f1.cons_nothing, f1.cons_quarter) == (90, 90, 90, 30, 100)
    # one element: one chunk whatever C; receiving a quarter of it is receiving it all
    one = figures(pattern([.3], [.2]))
    assert (one.prod_1elem, one.prod_quarter, one.prod_half, one.prod_whole) == (30, 30, 30, 30)
    assert (one.cons_nothing, one.cons_quarter, one.cons_half) == (20, 100, 100)
    both = statistics([f, f1])
    assert [s.name for s in both] == ["0->1", "all"] and both[-1].mean["prod_whole"] == 90


# ---- overlapped traces and tareador overlap ----

def replays(run_dir, machine):
    """Makespans of the authentic and both overlapped traces of a run (written by tareador overlap)."""
    return {name: replay(read_dim(run_dir / f"{name}.dim"), machine).makespan
            for name in ("authentic", "overlap-real", "overlap-ideal")}


def overlapped(run_dir, *args):
    r = tareador("overlap", run_dir, "--machine", CLUSTER, "--bandwidth", "1,4,100", "--json", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_overlapped_traces_chunk_every_message(traced):
    """3 messages of 2048 bytes in 4 chunks: rank 0 sends 12 chunks of 512 bytes (immediate), rank
    1 posts 4 irecvs per message and waits for each chunk once; no other communication."""
    run_dir = traced(MPICH, "linear", "linear")
    overlapped(run_dir)
    for kind in ("real", "ideal"):
        trace = read_dim(run_dir / f"overlap-{kind}.dim")
        lines = (run_dir / f"overlap-{kind}.dim").read_text().splitlines()
        sends = [line.split(":") for line in lines if line.startswith("2:")]
        receives = [line.split(":") for line in lines if line.startswith("3:")]
        assert len(sends) == 12 and all(s[1] == "0" and s[3] == "1" and s[4] == "512" and s[7] == "2" for s in sends)
        assert sorted(r[7] for r in receives) == ["1"] * 12 + ["2"] * 12
        assert sorted(int(s[5]) for s in sends) == list(range(12))
        assert len(trace.threads) == 2


def test_unbounded_network_copy_producer_gains_nothing(traced):
    """Zero latency, unbounded bandwidth, copy producer and linear consumer: every chunk is ready
    only at the original send (>= 99.9 % of the interval) and the consumer needs chunk 0 at once,
    so it waits where the authentic receive waited: real = authentic within 1 %; ideal sends its
    chunks spread over the production and is never slower."""
    run_dir = traced(MPICH, "copy", "linear")
    overlapped(run_dir)
    free = replace(load_machine(CLUSTER), inter_bandwidth=0.0, inter_latency=0.0)
    t = replays(run_dir, free)
    assert abs(t["overlap-real"] - t["authentic"]) <= 0.01 * t["authentic"]
    assert t["overlap-ideal"] <= t["authentic"] * 1.001


def test_unbounded_network_linear_pipeline_gains_three_quarters_of_a_phase(traced):
    """Zero latency, unbounded bandwidth, linear producer and consumer, phases of T instructions
    on both (N units of W iterations): the authentic consumer starts message 0 at T and ends at
    T + 3T; chunked, it starts on chunk 0 at T/4 and every later chunk is ready when needed, so it
    ends at T/4 + 3T: 0.75 T earlier (within 2 % of the run)."""
    run_dir = traced(MPICH, "linear", "linear")
    overlapped(run_dir)
    free = replace(load_machine(CLUSTER), inter_bandwidth=0.0, inter_latency=0.0)
    t = replays(run_dir, free)
    phase = float(rows(run_dir)[0]["production_interval"]) / free.rate
    for kind in ("overlap-real", "overlap-ideal"):
        assert abs(t[kind] - (t["authentic"] - 0.75 * phase)) <= 0.02 * t["authentic"]


def test_transfer_as_long_as_computation_overlap_gains_and_ideal_is_never_behind(traced):
    """At 4 MB/s a 2048-byte message takes 2048 / (4 * 2^20) = 0.49 ms, about a phase (256 units
    of ~2000 instructions at 1e9/s = 0.52 ms): the chunked runs are faster than the authentic one;
    and the ideal patterns are never slower than the real ones at any bandwidth (1e-3: the linear
    producer's real patterns are ideal to within a block of instructions)."""
    for modes in (("linear", "linear"), ("copy", "late")):
        out = overlapped(traced(MPICH, *modes))
        at4 = next(p for p in out["points"] if p["bandwidth"] == 4)
        assert at4["speedup_real"] > 1.05 and at4["speedup_ideal"] > 1.05
        assert all(p["speedup_ideal"] >= p["speedup_real"] - 1e-3 for p in out["points"])
    # copy/late: the real chunks leave only at the send, the ideal ones during the production
    assert at4["speedup_ideal"] > at4["speedup_real"] + 0.05


def test_overlap_command_table_files_and_tolerable_reduction(traced):
    run_dir = traced(OPEN_MPI, "linear", "linear")
    r = tareador("overlap", run_dir, "--machine", CLUSTER, "--bandwidth", "100,1,4,25")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [line.split()[0] for line in lines[2:6]] == ["1", "4", "25", "100"]
    with open(run_dir / "overlap.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert [float(row["bandwidth_mb_s"]) for row in table] == [1, 4, 25, 100]
    assert (run_dir / "overlap.png").read_bytes()[:4] == b"\x89PNG"
    out = overlapped(run_dir)
    # cluster.toml's 100 MB/s is the reference; the lowest swept bandwidth at which an overlapped
    # run is no slower than the authentic one there gives the factor
    reference = out["reference_time"]
    keeping = [p["bandwidth"] for p in out["points"] if p["times"]["real"] <= reference * (1 + 1e-9)]
    assert out["tolerable_bandwidth_reduction"]["real"] == 100 / min(keeping) > 1


def test_overlap_that_does_not_pay_says_so(traced, tmp_path):
    """With a 1 ms latency every one of the 16 chunks of a message costs more than the overlap
    saves: the overlapped runs are slower even at the machine's own bandwidth, so there is no
    tolerable reduction (it said x1), and the output says why."""
    machine = tmp_path / "slow.toml"
    machine.write_text(CLUSTER.read_text().replace("inter_latency = 1e-5", "inter_latency = 1e-3"))
    run_dir = traced(OPEN_MPI, "linear", "linear")
    r = tareador("overlap", run_dir, "--machine", machine, "--bandwidth", "1,100", "--chunks", "16", "--json")
    out = json.loads(r.stdout)
    assert out["tolerable_bandwidth_reduction"] == {"real": None, "ideal": None}
    at100 = next(p for p in out["points"] if p["bandwidth"] == 100)
    assert out["slowdown"]["real"] == pytest.approx(at100["times"]["real"] / out["reference_time"])
    assert out["slowdown"]["real"] > 1
    assert all(p["speedup_real"] < 1 and p["speedup_ideal"] < 1 for p in out["points"])
    r = tareador("overlap", run_dir, "--machine", machine, "--bandwidth", "1,100", "--chunks", "16")
    assert "real none (overlap does not pay), ideal none (overlap does not pay)" in r.stdout
    assert "each message is sent as 16 chunks and each chunk pays the latency" in r.stdout


def test_overlap_refuses_bad_input_in_one_line(tmp_path, traced, compile_c):
    run_dir = traced(MPICH, "linear", "linear")
    sequential = tmp_path / "seq.tareador"
    exe = compile_c(EXAMPLES / "heat" / "heat.c")
    assert tareador("trace", "--no-progress", "-o", sequential, "--", exe).returncode == 0
    cases = [((run_dir, "--bandwidth", "0"), "'0' is not a positive number"),
             ((run_dir, "--bandwidth", "10,-1"), "'-1' is not a positive number"),
             ((run_dir, "--bandwidth", "fast"), "'fast' is not a positive number"),
             ((run_dir, "--bandwidth", "10", "--chunks", "0"), "--chunks 0"),
             ((sequential, "--bandwidth", "10"), "not the directory of an MPI run")]
    for args, says in cases:
        r = tareador("overlap", *args[:1], "--machine", CLUSTER, *args[1:])
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and says in r.stderr, r.stderr


def test_one_element_messages_and_collectives(tmp_path):
    """examples/cg on 2 ranks (8 unknowns each, blocks of 4, 3 iterations; its header): 6 halo
    messages of one double and 7 MPI_Allreduce. One element is one chunk: every production
    figure of a message is its element's, receiving a quarter of it is receiving it all (100 %).
    The run has collectives, so the overlapped traces are compared with authentic-p2p.dim, the
    collectives written as the same recursive doubling (p = 2: each member sends once and
    receives once per Allreduce, 2 x 7 = 14 sends); with one chunk per message both traces hold
    6 + 14 = 20 sends."""
    require(MPICH)
    subprocess.run(["make", "-s", "-C", str(EXAMPLES), "MPI=mpich", f"BIN={tmp_path}",
                    f"TAREADOR_CFLAGS={toolchain.cflags()}", f"TAREADOR_LIBS={toolchain.libs()}", "cg"], check=True)
    run_dir = tmp_path / "cg.tareador"
    r = tareador("mpirun", "-np", "2", "-o", run_dir, "--", tmp_path / "mpich" / "cg", "8", "4", "3")
    assert r.returncode == 0, r.stderr
    table = rows(run_dir)
    assert len(table) == 6 and all(row["bytes"] == "8" for row in table)
    for row in table:
        assert row["prod_1elem"] == row["prod_quarter"] == row["prod_half"] == row["prod_whole"]
        assert float(row["cons_quarter"]) == float(row["cons_half"]) == 100
    overlapped(run_dir)
    for name in ("authentic-p2p", "overlap-real", "overlap-ideal"):
        text = (run_dir / f"{name}.dim").read_text()
        assert sum(line.startswith("2:") for line in text.splitlines()) == 20, name


def test_late_consumer_real_is_ahead_of_ideal(traced):
    """Zero latency, unbounded bandwidth, linear producer (phase T), late consumer (phase C =
    5T/3: 2N/3 units of its own, then N units reading). Authentic: the consumer gets message 0 at
    T, then runs its 3 phases: T + 3C. Real: it works on its own first and needs chunk k at
    2T/3 + kT/4 of its phase, after the producer made it at (k + 1)T/4, so it never waits: 3C,
    T earlier. Ideal assumes linear consumption: chunk 0 is waited for at once, made at T/4:
    T/4 + 3C, 3T/4 earlier. So the ideal trace is behind the real one here (within 2 %)."""
    run_dir = traced(MPICH, "linear", "late")
    overlapped(run_dir)
    free = replace(load_machine(CLUSTER), inter_bandwidth=0.0, inter_latency=0.0)
    t = replays(run_dir, free)
    phase = float(rows(run_dir)[0]["production_interval"]) / free.rate
    assert abs(t["overlap-real"] - (t["authentic"] - phase)) <= 0.02 * t["authentic"]
    assert abs(t["overlap-ideal"] - (t["authentic"] - 0.75 * phase)) <= 0.02 * t["authentic"]
    assert t["overlap-real"] < t["overlap-ideal"]


def test_a_collective_is_overlapped_as_its_messages(traced):
    """The same producer and consumer with MPI_Bcast instead of Send/Recv: on 2 ranks the binomial
    tree is the one message 0 -> 1, carrying the root's whole buffer before any receive and filling
    the leaf's whole buffer after its last (no) send, so it is chunked as the point-to-point message
    was: at every bandwidth the three traces replay to the times of the Send/Recv run (within 0.5 %:
    the two programs differ by a few instructions), compared with authentic-p2p.dim."""
    sent, broadcast = (overlapped(traced(MPICH, "linear", "linear", transfer)) for transfer in ("send", "bcast"))
    assert (sent["messages"], sent["collectives"], broadcast["messages"], broadcast["collectives"]) == (3, 0, 0, 3)
    for a, b in zip(sent["points"], broadcast["points"]):
        assert all(abs(a["times"][k] - b["times"][k]) <= 0.005 * a["times"][k] for k in a["times"])
    assert (traced(MPICH, "linear", "linear", "bcast") / "authentic-p2p.dim").exists()


@pytest.mark.parametrize("name, args", [("jacobi", ["16", "4", "2"]), ("ring", ["64"])])
def test_every_kind_of_point_to_point_message_has_its_patterns(tmp_path, name, args):
    """Jacobi's MPI_Isend/MPI_Irecv/MPI_Waitall (the receive written at the Waitall) and ring's
    MPI_Sendrecv (its send and receive parts), under Open MPI: every message of messages.csv has
    its row in patterns.csv, the same ids, ranks, tags and bytes, and both its intervals."""
    require(OPEN_MPI)
    subprocess.run(["make", "-s", "-C", str(EXAMPLES), "MPI=openmpi", f"BIN={tmp_path}",
                    f"TAREADOR_CFLAGS={toolchain.cflags()}", f"TAREADOR_LIBS={toolchain.libs()}", name], check=True)
    run_dir = tmp_path / f"{name}.tareador"
    r = tareador("mpirun", "-np", "2", "-o", run_dir, "--", tmp_path / "openmpi" / name, *args)
    assert r.returncode == 0, r.stderr
    with open(run_dir / "messages.csv", newline="") as f:
        messages = [(m["id"], m["src"], m["dst"], m["tag"], m["bytes"]) for m in csv.DictReader(f)]
    table = rows(run_dir)
    assert messages and [(p["message"], p["src"], p["dst"], p["tag"], p["bytes"]) for p in table] == messages
    assert all(int(p["production_interval"]) > 0 and int(p["consumption_interval"]) > 0 for p in table)
