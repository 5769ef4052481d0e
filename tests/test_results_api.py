"""The notebook API (api.simulate/whatif/explore/replay) and results as tidy tables, on a
traced program: the same numbers as the command line, one schema per result, short reprs."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

import tareador as api
from tareador.analyses.table import Table
from tareador.errors import TareadorError, UserError
from tareador.tracing.run import trace
from tests.helpers import write_c

# Two independent tasks of equal work, then one reading both: T1 = 3w + main, T∞ = 2w + main.
PROGRAM = r"""
#include <tareador.h>
double a[4096], b[4096], c[4096];
static void fill(double *x, double v) { for (int i = 0; i < 4096; i++) x[i] = v * i; }
int main(void) {
    tareador_ON();
    tareador_start_task("fill"); fill(a, 1); tareador_end_task("fill");
    tareador_start_task("fill"); fill(b, 2); tareador_end_task("fill");
    tareador_start_task("add");
    for (int i = 0; i < 4096; i++) c[i] = a[i] + b[i];
    tareador_end_task("add");
    tareador_OFF();
    return 0;
}
"""


@pytest.fixture(scope="module")
def traced(tmp_path_factory, compile_c):
    d = tmp_path_factory.mktemp("api")
    out = d / "api.tareador"
    trace([str(compile_c(write_c(d, "api", PROGRAM)))], out, progress=False)
    return out


def test_simulate_is_the_command_lines_numbers(traced, tareador):
    laptop = api.simulate(traced, cores=[1, 2, None], machine="laptop")
    status, out, _ = tareador("simulate", traced, "--cores", "1,2,inf", "--machine", "laptop", "--json")
    assert status == 0 and json.loads(out)["results"] == laptop.table().records()
    result = api.simulate(traced, cores=[1, 2, None])  # no runtime costs: 1 core takes T1
    frame = result.to_pandas()
    assert list(frame.columns) == ["cores", "time", "speedup", "efficiency", "cores_used", "busy_min", "busy_max"]
    assert frame["cores"].tolist() == [1.0, 2.0, math.inf] and frame["cores_used"].dtype == "int64"
    assert math.isnan(frame["efficiency"].iloc[2]) and frame["efficiency"].iloc[0] == 1.0
    # the fills run together on 2 cores: the speedup is T1 over T1 minus one fill
    trace = api.load(traced)
    fill = max(f.instructions for f in trace.fragments if f.name == "fill")
    assert frame["speedup"].iloc[1] == pytest.approx(trace.t1 / (trace.t1 - fill))
    assert repr(result).startswith("<Study T1 ") and len(repr(result)) < 200


def test_whatif_and_its_table(traced):
    w = api.whatif(traced, factors=[2, math.inf], cores=[2])
    assert w.accelerated.shape == (3, 2, 1)  # fill, add, main's own code
    frame = w.to_pandas()
    assert len(frame) == 3 * 2 and set(frame["type"]) == {"fill", "add", "main (program)"}
    assert frame["factor"].tolist().count(math.inf) == 3
    add = frame[(frame["type"] == "add") & (frame["factor"] == math.inf)]["time"].iloc[0]
    assert add == w.time("add", math.inf, 2) / w.rate


def test_replay_of_the_ompss_trace(traced, tareador, tmp_path):
    status, _, _ = tareador("simulate", traced, "--cores", "2", "--dim", "-o", tmp_path)
    assert status == 0
    result = api.replay(tmp_path / "authentic.dim")
    trace = api.load(traced)
    assert result.makespan == pytest.approx(trace.t1 / api.Machine().rate)
    assert repr(result).startswith("<ReplayResult makespan")


def test_reprs_fit_a_screen(traced):
    trace = api.load(traced)
    assert repr(trace) == (f"<TaskTrace {traced}: 3 task instances of 2 types, {len(trace.fragments)} fragments, "
                           f"{len(trace.deps)} dependencies, {len(trace.objects)} objects>")
    assert repr(trace.dag).startswith(f"<Dag {len(trace.fragments)} fragments")


@pytest.mark.fast
def test_a_table_keeps_its_schema():
    t = Table.of("t", (("cores", "count"), ("x", "float"), ("name", "str")), [(1, 0.5, "a"), (math.inf, math.nan, "b")])
    assert t.records() == [{"cores": 1, "x": 0.5, "name": "a"}, {"cores": "inf", "x": None, "name": "b"}]
    with pytest.raises(TypeError, match="column cores is count, not 'inf'"):
        Table.of("t", (("cores", "count"),), [("inf",)])
    with pytest.raises(TypeError, match="column x is float, not None"):
        Table.of("t", (("x", "float"),), [(None,)])
    with pytest.raises(ValueError):
        Table.of("t", (("x", "float"),), [(1.0, 2.0)])  # a row longer than the schema


@pytest.mark.fast
def test_csv_round_trips_through_pandas(tmp_path):
    t = Table.of("t", (("cores", "count"), ("x", "float"), ("n", "int")), [(2, 1 / 3, 7), (math.inf, math.nan, 0)])
    frame = pd.read_csv(t.write_csv(tmp_path / "t.csv"))
    assert frame["cores"].tolist() == [2.0, math.inf] and frame["x"].iloc[0] == 1 / 3
    assert math.isnan(frame["x"].iloc[1]) and frame["n"].tolist() == [7, 0]
    assert (tmp_path / "t.csv").read_text().splitlines() == ["cores,x,n", f"2,{1 / 3!r},7", "inf,,0"]


def test_bad_arguments_are_one_clear_error(traced):
    """A core count the scheduler cannot run used to loop forever; a misspelt durations kind
    simulated the measured ones."""
    for cores in (0, -1, 2.5):
        with pytest.raises(ValueError, match=f"cores must be a whole number >= 1, or None for unbounded, not {cores}"):
            api.simulate(traced, cores=[cores])
    with pytest.raises(UserError, match="durations must be one of instructions, measured, not 'measure'"):
        api.simulate(traced, durations="measure")
    with pytest.raises(TareadorError, match="no machine file nosuch and no bundled machine of that name"):
        api.whatif(traced, machine="nosuch")
