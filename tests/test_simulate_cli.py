"""``tareador simulate`` and ``tareador replay`` end to end on a saved trace directory."""

from __future__ import annotations

import json

import pytest

from tareador.simulation.machine_files import BUNDLED
from tareador.taskgraph.store import save
from tests.helpers import THREE_THREADS, chain_and_side, fork_join, make, program

pytestmark = pytest.mark.fast  # no program compiled, traced or launched (make test-fast)


@pytest.fixture
def trace_dir(tmp_path):
    return save(fork_join(width=4, work=1000), tmp_path / "fj.tareador")


def test_simulate_json(tareador, trace_dir):
    status, out, _ = tareador("simulate", trace_dir, "--cores", "1,2,3,inf", "--json")
    assert status == 0
    doc = json.loads(out)
    assert doc["t1"] == 4e-6 and doc["tinf"] == 1e-6 and doc["parallelism"] == 4.0
    assert [r["cores"] for r in doc["results"]] == [1, 2, 3, "inf"]
    assert [r["time"] for r in doc["results"]] == [4e-6, 2e-6, 2e-6, 1e-6]
    assert [r["speedup"] for r in doc["results"]] == [1.0, 2.0, 2.0, 4.0]
    assert doc["results"][2]["efficiency"] == pytest.approx(2 / 3)
    assert [u["busy"] for u in doc["utilisation"] if u["cores"] == 2] == [1.0, 1.0]
    assert (doc["results"][1]["busy_min"], doc["results"][1]["busy_max"]) == (1.0, 1.0)


def test_simulate_overhead_machine_and_policy(tareador, trace_dir, tmp_path):
    machine = tmp_path / "m.toml"
    machine.write_text("[cpu]\ninstructions_per_second = 1000\ntask_overhead = 500\n")
    status, out, _ = tareador("simulate", trace_dir, "--cores", "4", "--machine", machine, "--json", "--policy", "fifo")
    assert status == 0
    assert json.loads(out)["results"][0]["time"] == 1.5
    status, out, _ = tareador("simulate", trace_dir, "--cores", "4", "--machine", machine, "--json",
                              "--overhead", "0")
    assert json.loads(out)["results"][0]["time"] == 1.0


def test_simulate_outputs(tareador, trace_dir, tmp_path):
    out_dir = tmp_path / "out"
    status, out, _ = tareador("simulate", trace_dir, "--cores", "2,inf", "--prv", "--chrome", "--plot", "--dim",
                              "-o", out_dir)
    assert status == 0
    assert "parallelism       4.00" in out and "speedup" in out
    for name in ("simulation-2.prv", "simulation-2.pcf", "simulation-2.row", "simulation-inf.prv",
                 "simulation-2.json", "speedup.png", "profile.png", "gantt.png", "ompss.dim", "authentic.dim"):
        assert (out_dir / name).stat().st_size > 0, name
        assert f" {name}" in out
    assert (out_dir / "speedup.png").read_bytes()[:4] == b"\x89PNG"

    machine = tmp_path / "m.toml"
    machine.write_text("[cpu]\ncores_per_node = 2\n[scheduler]\npolicy = \"cp\"\n")
    status, out, _ = tareador("replay", out_dir / "ompss.dim", "--machine", machine, "--json", "--prv",
                              tmp_path / "r.prv")
    assert status == 0
    doc = json.loads(out)
    assert doc["makespan"] == pytest.approx(2e-6)
    assert len(doc["tasks"]) == 1 and len(doc["tasks"][0]["threads"]) == 6
    assert (tmp_path / "r.pcf").exists()


def test_csv_outputs(tareador, trace_dir, tmp_path):
    status, out, _ = tareador("simulate", trace_dir, "--cores", "1,2,inf", "--csv", "-o", tmp_path)
    assert status == 0 and "speedup.csv profile.csv" in out
    assert (tmp_path / "speedup.csv").read_text().splitlines() == [
        "cores,time,speedup,efficiency,cores_used,busy_min,busy_max", "1,4e-06,1.0,1.0,1,1.0,1.0",
        "2,2e-06,2.0,1.0,2,1.0,1.0", "inf,1e-06,4.0,,4,1.0,1.0"]  # every core busy throughout
    # Unbounded: the 4 leaves of 1000 instructions run together, between empty main fragments.
    assert (tmp_path / "profile.csv").read_text().splitlines() == ["time,running", "0.0,4", "1e-06,0"]


def test_replay_table(tareador, tmp_path):
    from tareador.formats.dimemas import write_dim

    path = write_dim(tmp_path / "t.dim", "t", [3], THREE_THREADS)
    machine = tmp_path / "m.toml"
    machine.write_text("[cpu]\ncores_per_node = 2\n")
    status, out, _ = tareador("replay", path, "--machine", machine)
    assert status == 0 and "makespan 3.000000000 s (1 Dimemas task, 3 threads)" in out


@pytest.mark.parametrize("argv,message", [
    (["simulate", "{dir}/none"], "is not a trace directory"),
    (["simulate", "{trace}", "--overhead", "-3"], "--overhead must be >= 0"),
    (["simulate", "{trace}", "--machine", "{dir}/bad.toml"], "unknown section [gpu]"),
    (["replay", "{dir}/bad.dim", "--machine", "{dir}/ok.toml"], "bad.dim:1: not a Dimemas trace header"),
    (["replay", "{dir}/none.dim", "--machine", "{dir}/ok.toml"], "cannot read"),
    (["simulate", "{trace}", "--machine", "{dir}/latin1.toml"], "latin1.toml:2: byte 0xe9 is not UTF-8"),
    (["simulate", "{trace}", "--machine", "{dir}/latin1.cfg"], "latin1.cfg:2: byte 0xe9 is not UTF-8"),
    (["simulate", "{trace}", "--machine", "{dir}/half.cfg"],
     "half.cfg:4: field 4 of 'multi node information' must be a whole number, not 16.5"),
])
def test_bad_input_is_one_line(tareador, trace_dir, tmp_path, argv, message):
    (tmp_path / "bad.toml").write_text("[gpu]\n")
    (tmp_path / "ok.toml").write_text("")
    (tmp_path / "bad.dim").write_text("hello\n")
    (tmp_path / "latin1.toml").write_bytes(b"[cpu]\n# caf\xe9\ncores_per_node = 2\n")
    cfg = (BUNDLED / "smp_cp.cfg").read_bytes()
    assert cfg.splitlines()[3].startswith(b'"multi node information" {0, 1, "", 16,')
    (tmp_path / "latin1.cfg").write_bytes(cfg.replace(b"\n", b"\n/* caf\xe9 */\n", 1))
    (tmp_path / "half.cfg").write_bytes(cfg.replace(b'"", 16,', b'"", 16.5,'))
    status, _, err = tareador(*(a.format(dir=tmp_path, trace=trace_dir) for a in argv))
    assert status == 2
    assert err.startswith("tareador: ") and message in err and err.count("\n") == 1


def test_unwritable_outputs_are_one_line(tareador, trace_dir, tmp_path):
    (tmp_path / "file").write_text("")
    status, _, err = tareador("simulate", trace_dir, "--cores", "2", "--prv", "-o", tmp_path / "file" / "out")
    assert status == 2 and err.startswith("tareador: ") and "Not a directory" in err and err.count("\n") == 1
    (tmp_path / "ok.toml").write_text("")
    status, _, _ = tareador("simulate", trace_dir, "--dim", "-o", tmp_path / "d")
    status, _, err = tareador("replay", tmp_path / "d" / "ompss.dim", "--machine", tmp_path / "ok.toml", "--prv",
                              tmp_path / "none" / "r.prv")
    assert status == 2 and "No such file or directory" in err and err.count("\n") == 1


def test_bad_core_list_is_one_line(tareador, trace_dir):
    status, _, err = tareador("simulate", trace_dir, "--cores", "0,2")
    assert status == 2 and err == "tareador: --cores: '0' is not a core count; give positive integers or inf, " \
        "e.g. 1,4,inf\n"


def test_empty_trace(tareador, tmp_path):
    save(make([], []), tmp_path / "empty")
    status, _, err = tareador("simulate", tmp_path / "empty")
    assert status == 2 and "no task instances" in err


def test_machine_file_sets_the_sweep_and_the_policy(tareador, trace_dir, tmp_path):
    machine = tmp_path / "m.toml"
    machine.write_text("[cpu]\nnodes = 2\ncores_per_node = 3\n[scheduler]\npolicy = \"fifo\"\n")
    status, out, _ = tareador("simulate", trace_dir, "--machine", machine, "--json")
    assert status == 0
    assert [r["cores"] for r in json.loads(out)["results"]] == [1, 2, 4, 6, "inf"]
    status, out, _ = tareador("simulate", trace_dir, "--machine", machine, "--cores", "2")
    assert "policy fifo" in out
    status, out, _ = tareador("simulate", trace_dir, "--cores", "2")
    assert "policy cp" in out
    machine.write_text("")  # names no policy: simulate's own default, not the replay's FIFO
    status, out, _ = tareador("simulate", trace_dir, "--machine", machine, "--cores", "2")
    assert "policy cp" in out


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_chrome_bound_must_be_a_positive_size(tareador, trace_dir, value):
    status, _, err = tareador("simulate", trace_dir, "--chrome", "--chrome-max-mb", value)
    assert status == 2 and err == f"tareador: --chrome-max-mb must be a positive size in MB, not {float(value):g}\n"


def write_durations(directory, ns: list[int]) -> None:
    """durations.csv as tareador time writes it: the median of each fragment, in tasks.csv order."""
    rows = "".join(f"{i},{n},{n},{n}\n" for i, n in enumerate(ns))
    (directory / "durations.csv").write_text("id,ns,min_ns,max_ns\n" + rows)


def test_runtime_from_the_machine_file_and_the_command_line(tareador, tmp_path):
    """main creates 4 tasks of 10 instructions (1 ns each): 2 cores, fifo. With the machine's costs
    (creating 2 ns, starting 1 ns: test_list_scheduler derives the schedule) 30 ns; the command line
    sets them to 0: 20 ns; work-first on chain/side K = 2 under bf: 4 ns (derived there too)."""
    d = save(program(*[("w", 10, [])] * 4), tmp_path / "w.tareador")
    machine = tmp_path / "m.toml"
    machine.write_text('[runtime]\ncreation = "help-first"\ncreation_cost = 2e-9\nstart_cost = 1e-9\n')
    status, out, _ = tareador("simulate", d, "--cores", "2", "--policy", "fifo", "--machine", machine, "--json")
    doc = json.loads(out)
    assert status == 0 and doc["results"][0]["time"] == pytest.approx(30e-9)
    assert (doc["overhead"], doc["creation_cost"], doc["creation"]) == (1, 2, "help-first")
    status, out, _ = tareador("simulate", d, "--cores", "2", "--policy", "fifo", "--machine", machine, "--json",
                              "--creation-cost", "0", "--start-cost", "0")
    assert json.loads(out)["results"][0]["time"] == pytest.approx(20e-9)
    status, out, _ = tareador("simulate", d, "--cores", "2", "--machine", machine)
    assert "help-first creation, per task 1 instructions to start and 2 instructions to create" in out
    chain = save(chain_and_side(2), tmp_path / "c.tareador")
    for creation, time in (("work-first", 4e-9), ("help-first", 4e-9)):
        status, out, _ = tareador("simulate", chain, "--cores", "2", "--policy", "bf", "--creation", creation, "--json")
        assert json.loads(out)["results"][0]["time"] == pytest.approx(time)
    status, out, _ = tareador("simulate", save(chain_and_side(32), tmp_path / "k"), "--cores", "2", "--policy", "bf",
                              "--json")
    assert json.loads(out)["results"][0]["speedup"] == pytest.approx(96 / 79)


def test_bad_runtime_options_are_one_line(tareador, trace_dir, tmp_path):
    machine = tmp_path / "m.toml"
    machine.write_text('[runtime]\ncreation = "depth-first"\n')
    status, _, err = tareador("simulate", trace_dir, "--machine", machine)
    assert status == 2 and "creation 'depth-first' is not one of help-first, work-first" in err
    assert len(err.strip().splitlines()) == 1
    status, _, err = tareador("simulate", trace_dir, "--start-cost", "-1")
    assert status == 2 and "--start-cost must be seconds >= 0" in err
    status, _, err = tareador("simulate", trace_dir, "--creation-cost", "nan")
    assert status == 2 and "--creation-cost must be seconds >= 0" in err


def test_measured_durations_replace_instructions(tareador, tmp_path):
    """Instructions say a (300) is the heavy type and b (100) the light one; measured, a takes 100
    ns and b 300 ns. main creates a, then b: 2 cores, one each; 1 core: the sum. whatif on 1 core
    ranks b first when measured (making it infinitely fast saves 300 of 400 ns), a with
    instructions."""
    d = save(program(("a", 300, []), ("b", 100, [])), tmp_path / "ab.tareador")
    status, _, err = tareador("simulate", d, "--durations", "measured")
    assert status == 2 and f"{d} has no measured durations (durations.csv): run 'tareador time {d}' first" in err
    write_durations(d, [0, 100, 0, 300, 0])
    status, out, _ = tareador("simulate", d, "--cores", "1,2", "--durations", "measured", "--json")
    doc = json.loads(out)
    assert status == 0 and doc["durations"] == "ns" and doc["t1"] == pytest.approx(400e-9)
    assert [r["time"] for r in doc["results"]] == pytest.approx([400e-9, 300e-9])
    status, out, _ = tareador("simulate", d, "--cores", "2", "--durations", "measured")
    assert "measured durations (ns)" in out
    for durations, first in (("measured", "b"), ("instructions", "a")):
        status, out, _ = tareador("whatif", d, "--cores", "1", "--factors", "inf", "--durations", durations, "--json")
        assert [r["type"] for r in json.loads(out)["results"]][0] == first
    write_durations(d, [0, 100, 0, 300])
    status, _, err = tareador("simulate", d, "--durations", "measured")
    assert status == 2 and "does not list the fragments of tasks.csv" in err
