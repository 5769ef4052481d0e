"""Simulating the real traces of the bundled examples: the facts any schedule must respect.

The examples are traced under Frida, then simulated with ``tareador simulate`` and replayed
from their ``ompss.dim`` with ``tareador replay``, as a user would.
"""

from __future__ import annotations

import json

import pytest

from tareador.cli.main import main
from tareador.tracing.run import trace
from tests.helpers import EXAMPLES

CORES = [1, 2, 3, 4, 8, 16]


def run_cli(capsys, *argv) -> dict:
    assert main([str(a) for a in argv]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def traced(compile_c, tmp_path_factory):
    out = tmp_path_factory.mktemp("examples")
    return {
        "cholesky": trace([str(compile_c(EXAMPLES / "cholesky" / "cholesky.c")), "5", "8"], out / "cholesky",
                          progress=False),
        "heat": trace([str(compile_c(EXAMPLES / "heat" / "heat.c")), "32", "8", "3"], out / "heat", progress=False),
    }


@pytest.mark.parametrize("example", ["cholesky", "heat"])
@pytest.mark.parametrize("policy", ["cp", "fifo"])
def test_speedups_are_consistent(traced, capsys, example, policy):
    t = traced[example]
    doc = run_cli(capsys, "simulate", t.path, "--cores", ",".join(map(str, CORES)) + ",inf", "--policy", policy,
                  "--overhead", "0", "--json")
    rate = doc["instructions_per_second"]
    assert doc["t1"] * rate == pytest.approx(t.t1) and doc["tinf"] * rate == pytest.approx(t.tinf)
    rows = doc["results"]
    assert [r["cores"] for r in rows] == CORES + ["inf"]
    assert rows[0]["time"] * rate == pytest.approx(t.t1) and rows[0]["speedup"] == pytest.approx(1.0)
    assert rows[-1]["time"] * rate == pytest.approx(t.tinf)
    for r in rows[:-1]:
        assert r["speedup"] <= r["cores"] + 1e-9 and r["speedup"] <= t.parallelism + 1e-9
        assert 0 < r["efficiency"] <= 1 + 1e-9
    if policy == "cp":
        speedups = [r["speedup"] for r in rows]
        assert speedups == sorted(speedups), "critical-path-first gets no slower with more cores here"
    assert rows[-1]["speedup"] == pytest.approx(t.parallelism)


@pytest.mark.parametrize("example", ["cholesky", "heat"])
def test_replaying_the_ompss_trace_gives_the_simulated_times(traced, capsys, tmp_path, example):
    """ompss.dim on an unbounded machine takes the critical path; authentic.dim takes T1. On 4
    cores both simulators are greedy schedulers that differ only in how they break ties between
    ready tasks of equal priority (creation order vs. the order they became ready, as Dimemas),
    so both lie within Graham's bounds."""
    t = traced[example]
    out = tmp_path / "out"
    assert main(["simulate", t.path, "--cores", "4", "--overhead", "0", "--dim", "-o", str(out)]) == 0
    capsys.readouterr()
    simulated = run_cli(capsys, "simulate", t.path, "--cores", "4", "--overhead", "0", "--json")["results"][0]
    wide, four = tmp_path / "wide.toml", tmp_path / "four.toml"
    wide.write_text(f"[cpu]\ncores_per_node = {len(t.fragments)}\n[scheduler]\npolicy = \"cp\"\n")
    four.write_text("[cpu]\ncores_per_node = 4\n[scheduler]\npolicy = \"cp\"\n")
    assert run_cli(capsys, "replay", out / "ompss.dim", "--machine", wide, "--json")["makespan"] == \
        pytest.approx(t.tinf / 1e9, rel=1e-9)
    assert run_cli(capsys, "replay", out / "authentic.dim", "--machine", four, "--json")["makespan"] == \
        pytest.approx(t.t1 / 1e9, rel=1e-9)
    replayed = run_cli(capsys, "replay", out / "ompss.dim", "--machine", four, "--json")["makespan"]
    for time in (replayed, simulated["time"]):
        assert max(t.tinf, t.t1 / 4) / 1e9 <= time * (1 + 1e-9) and time <= (t.t1 / 4 + t.tinf) / 1e9 * (1 + 1e-9)
