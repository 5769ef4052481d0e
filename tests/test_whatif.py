"""``tareador whatif``: which task type is worth optimising; hand-derived times, then a real binary."""

from __future__ import annotations

import csv
import json
import math

import pytest

from tareador.analyses.whatif import whatif
from tareador.simulation.machine import Machine
from tareador.taskgraph.model import PROGRAM
from tareador.taskgraph.store import save
from tareador.tracing.run import trace
from tests.helpers import make, write_c


def long_and_short():
    """main (4) creates long (60) and four short (10), then main (6) reads all five: T1 110,
    T-inf 70 through main, long, main. Only long and main's code are on the critical path."""
    return make([("main", -1, 4), ("long", 0, 60)] + [("short", 0, 10)] * 4 + [("main", -1, 6)],
                [(i, 6) for i in range(1, 6)])


@pytest.fixture
def trace_dir(tmp_path):
    return save(long_and_short(), tmp_path / "ls.tareador")


@pytest.mark.fast
def test_times_by_hand():
    w = whatif(long_and_short().dag, [2, math.inf], [1, 2, None], "cp", Machine(instructions_per_second=1))
    assert (w.t1, w.tinf) == (110, 70)
    assert [(t.name, t.instances, t.work, t.critical) for t in w.types] == [
        ("long", 1, 60, 60), ("short", 4, 40, 0), (PROGRAM, 2, 10, 10)]
    assert w.baseline == [110, 70, 70]
    # 1 core: T1 minus the work saved. 2 cores: long on one, the shorts on the other (4..44), so
    # long halved (4..34) still ends the run with main: 50; long gone, the shorts share both: 4+20+6.
    # Unbounded: main, the longest of long or a short, main.
    assert w.accelerated.tolist() == [[[80, 50, 40], [50, 30, 20]],  # long x2, long x inf
                                      [[90, 70, 70], [70, 70, 70]],  # short
                                      [[105, 65, 65], [100, 60, 60]]]  # PROGRAM
    assert w.benefit("long", 2, 2) == 70 / 50
    # The thesis' point in miniature: the short tasks hold 4x main's work and win on one core, but
    # off the critical path they give nothing where cores abound, and main's 10 instructions do.
    assert [t.name for t in w.ranking(1)] == ["long", "short", PROGRAM]
    assert [t.name for t in w.ranking(None)] == ["long", PROGRAM, "short"]


@pytest.mark.fast
def test_one_critical_path_of_two_equal_ones():
    """Two branches of equal length: the earliest-created holds the critical path, yet
    accelerating it gains nothing because the other is as long; the simulation says so."""
    t = make([("main", -1, 0), ("a", 0, 10), ("b", 0, 10), ("main", -1, 0)], [(1, 3), (2, 3)])
    w = whatif(t.dag, [2], [None])
    assert {x.name: x.critical for x in w.types} == {"a": 10, "b": 0, PROGRAM: 0}
    assert w.benefit("a", 2, None) == w.benefit("b", 2, None) == 1.0


@pytest.mark.fast
def test_a_factor_below_one_slows_and_fractions_round_to_whole_instructions():
    w = whatif(long_and_short().dag, [0.5, 3], [1])
    assert w.time("short", 0.5, 1) == 150
    assert w.time("short", 3, 1) == 110 - 4 * 10 + 4 * 3  # 10/3 is 3 instructions


@pytest.mark.fast
def test_json_csv_and_plots(tareador, trace_dir, tmp_path):
    machine = tmp_path / "m.toml"
    machine.write_text("[cpu]\ninstructions_per_second = 10\n")
    status, out, _ = tareador("whatif", trace_dir, "--factors", "2,inf", "--cores", "1,inf", "--machine", machine,
                              "--json")
    assert status == 0
    doc = json.loads(out)
    assert (doc["t1"], doc["tinf"], doc["factors"]) == (11.0, 7.0, [2, "inf"])
    assert doc["types"][1] == {"type": "short", "instances": 4, "instructions": 40, "work_share": 40 / 110,
                               "critical_path_instructions": 0, "critical_path_share": 0.0}
    assert doc["unaccelerated"] == [{"cores": 1, "time": 11.0, "speedup": 1.0},
                                    {"cores": "inf", "time": 7.0, "speedup": 110 / 70}]
    unbounded = [r for r in doc["results"] if r["cores"] == "inf"]
    assert [(r["rank"], r["type"], r["factor"], r["time"]) for r in unbounded] == [
        (1, "long", 2, 4.0), (1, "long", "inf", 2.0), (2, PROGRAM, 2, 6.5), (2, PROGRAM, "inf", 6.0),
        (3, "short", 2, 7.0), (3, "short", "inf", 7.0)]
    assert unbounded[1]["benefit"] == 3.5 and unbounded[1]["speedup"] == 5.5

    status, out, _ = tareador("whatif", trace_dir, "--factors", "2", "--cores", "2,inf", "--type", "short",
                              "--type", PROGRAM, "--csv", "--plot", "-o", tmp_path / "out")
    assert status == 0 and "whatif-2.png whatif-inf.png whatif.csv" in out
    assert (tmp_path / "out" / "whatif-2.png").read_bytes()[:4] == b"\x89PNG"
    with (tmp_path / "out" / "whatif.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["cores"], r["rank"], r["type"], r["factor"], r["time"], r["benefit"]) for r in rows] == [
        ("2", "1", PROGRAM, "2", "6.5e-08", str(70 / 65)), ("2", "2", "short", "2", "7e-08", "1.0"),
        ("inf", "1", PROGRAM, "2", "6.5e-08", str(70 / 65)), ("inf", "2", "short", "2", "7e-08", "1.0")]


@pytest.mark.fast
def test_table(tareador, trace_dir):
    status, out, _ = tareador("whatif", trace_dir, "--factors", "2,inf", "--cores", "1,inf")
    assert status == 0
    lines = out.splitlines()
    at = lines.index("inf cores: 70 ns unaccelerated, speedup 1.57")
    assert lines[at + 1].split() == ["task", "type", "work", "c.path", "x2", "benefit", "speedup", "xinf", "benefit",
                                     "speedup"]
    assert lines[at + 2].split() == ["long", "54.5%", "85.7%", "+75.0%", "2.75", "+250.0%", "5.50"]
    assert lines[at + 4].split() == ["short", "36.4%", "0.0%", "+0.0%", "1.57", "+0.0%", "1.57"]
    assert "1 core: 110 ns unaccelerated, speedup 1.00" in lines


@pytest.mark.parametrize("argv,message", [
    (["--type", "nope"], "unknown task type 'nope'; the trace has long, main (program), short"),
    (["--factors", "2,abc"], "--factors: 'abc' is not an acceleration factor"),
    (["--factors", "0"], "'0' is not an acceleration factor"),
    (["--factors", "-2"], "'-2' is not an acceleration factor"),
    (["--factors", "nan"], "'nan' is not an acceleration factor"),
    (["--factors", ""], "'' is not an acceleration factor"),
    (["--cores", "0,4"], "--cores: '0' is not a core count"),
    (["--cores", "100000000"], "--cores: 100000000 cores are more than the 1048576"),
    (["--overhead", "-1"], "--overhead must be >= 0"),
    (["--overhead", "3000000000"], "at most 2147483647 instructions"),
])
@pytest.mark.fast
def test_bad_input_is_one_line(tareador, trace_dir, argv, message):
    status, out, err = tareador("whatif", trace_dir, *argv)
    assert status == 2 and out == ""
    assert err.startswith("tareador: ") and message in err and err.count("\n") == 1


@pytest.mark.fast
def test_empty_and_missing_traces(tareador, tmp_path):
    save(make([], []), tmp_path / "empty")
    status, _, err = tareador("whatif", tmp_path / "empty")
    assert status == 2 and "has no task instances" in err and err.count("\n") == 1
    status, _, err = tareador("whatif", tmp_path / "none")
    assert status == 2 and "is not a trace directory" in err and err.count("\n") == 1


LONG_AND_SHORT_C = r"""
#include <stdio.h>
#include "tareador.h"
static long result[5];
static long work(long n) { long s = 0; for (long i = 0; i < n; i++) s += i ^ (s >> 3); return s; }
int main(void) {
  tareador_ON();
  tareador_start_task("long"); result[0] = work(100000); tareador_end_task("long");
  for (int k = 1; k < 5; k++) { tareador_start_task("short"); result[k] = work(10000); tareador_end_task("short"); }
  long total = result[0] + result[1] + result[2] + result[3] + result[4];
  tareador_OFF();
  printf("%ld\n", total);
  return 0;
}
"""


def test_real_binary(tareador, tmp_path, compile_c):
    """Traced under Frida: main creates long (10x a short's loop) and four shorts, then reads the
    five results. Every expected time comes from the traced instruction counts."""
    exe = compile_c(write_c(tmp_path, "long_short", LONG_AND_SHORT_C))
    t = trace([str(exe)], tmp_path / "t", progress=False)
    assert [x.name for x in t.fragments] == ["main", "long", "main", "short", "main", "short", "main", "short", "main",
                                         "short", "main"]
    w = {x.name: x.instructions for x in t.fragments}
    main_first, main_last = t.fragments[0].instructions, t.fragments[-1].instructions
    assert t.tinf == main_first + w["long"] + main_last
    status, out, _ = tareador("whatif", tmp_path / "t", "--factors", "2,inf", "--cores", "1,2,inf", "--json")
    assert status == 0
    doc = json.loads(out)
    times = {(r["cores"], r["type"], r["factor"]): round(r["time"] * 1e9) for r in doc["results"]}

    def work(name):
        return sum(x.instructions for x in t.fragments if (x.name, x.is_main) == (name, False))

    for name in ("long", "short"):
        assert times[1, name, 2] == t.t1 - work(name) + sum(round(x.instructions / 2) for x in t.fragments
                                                            if x.name == name)
        assert times[1, name, "inf"] == t.t1 - work(name)
    # Off the critical path, short gives nothing however fast; long halved still holds the path,
    # on two cores too (the other core runs the shorts and main's code between them meanwhile).
    assert doc["types"][1]["type"] == "short" and doc["types"][1]["critical_path_share"] == 0
    assert times["inf", "short", 2] == times["inf", "short", "inf"] == t.tinf
    halved = main_first + round(w["long"] / 2) + main_last
    assert times["inf", "long", 2] == times[2, "long", 2] == halved
    # Without long, the path runs through all of main's code and the last short.
    assert times["inf", "long", "inf"] == sum(x.instructions for x in t.fragments if x.is_main) + w["short"]
    ranks = {c: [r["type"] for r in doc["results"] if r["cores"] == c and r["factor"] == 2] for c in (1, "inf")}
    assert ranks == {1: ["long", "short", PROGRAM], "inf": ["long", PROGRAM, "short"]}
    assert sum(x["critical_path_instructions"] for x in doc["types"]) == t.tinf
