"""tareador models: fits derived by hand on synthetic sizes, and a real program whose task sizes
and instruction counts are known (instructions grow exactly linearly with the bytes read)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tareador.analyses.models import Fit, accessed_bytes, fit, models, outliers, robust_fit
from tareador.cli import main as cli
from tareador.taskgraph.model import Access, Fragment, TaskTrace
from tareador.tracing.run import trace
from tests.helpers import write_c


@pytest.mark.fast
def test_fit_recovers_a_power_law_with_an_offset():
    n = np.array([1000, 2000, 4000, 8000, 16000])
    f = fit(n, 3 * n ** 1.5 + 100)
    assert (f.a, f.b, f.c) == pytest.approx((3, 1.5, 100)) and f.error < 1e-12
    f = fit(n, 5 * n)
    assert (f.a, f.b, f.c) == pytest.approx((5, 1, 0), abs=1e-9)


@pytest.mark.fast
def test_one_size_is_the_median_and_a_far_instance_is_an_outlier():
    """Ten instances of 64 bytes take 50, one 150: the model is the median 50; the ratios are 1
    except 3, whose quartiles are 1 and 1: only the 150 is outside the fences (and 200 % off)."""
    n, d = np.full(10, 64), np.full(10, 50)
    d[3] = 150
    f = fit(n, d)
    assert (f.a, f.b, f.c) == (0, 0, 50)
    assert outliers(n, d, f).tolist() == [3]


@pytest.mark.fast
def test_an_outlier_does_not_bend_its_types_model():
    """d = 2n for 8 sizes, the 6th taking 3 times as long: fitted with it the model is off; the
    refit without it is d = 2n again, and it stays the one outlier."""
    n = np.arange(100, 900, 100)
    d = 2 * n
    d[5] *= 3
    model, far = robust_fit(n, d)
    assert (model.a, model.b, model.c) == pytest.approx((2, 1, 0), abs=1e-9) and far.tolist() == [5]
    assert outliers(np.array([1, 2, 3]), np.array([1, 1, 9]), Fit(0, 0, 1, 0)).tolist() == []  # too few


@pytest.mark.fast
def test_bytes_accessed_are_the_union_of_what_a_fragment_read_and_wrote():
    t = TaskTrace([Fragment(0, "main", 0, -1, 0, 1, 1), Fragment(1, "a", 1, 0, 1, 2, 1)], [], [])
    rows = [Access(1, "x", 0, 0, 100, 50, 150), Access(1, "y", 0, -1, -1, 0, 8), Access(1, "z", 0, 10, 20, -1, -1)]
    assert accessed_bytes(t, rows).tolist() == [0, 150 + 8 + 10]


@pytest.mark.fast
def test_instructions_per_ns_per_type_and_for_the_program():
    """a: 2 instances of 100 instructions, 10 ns each; b: one of 300 in 100 ns; main 0 in 0."""
    tasks = [Fragment(0, "main", 0, -1, 0, 0, 0), Fragment(1, "a", 1, 0, 0, 100, 100),
             Fragment(2, "a", 2, 0, 100, 200, 100), Fragment(3, "b", 3, 0, 200, 500, 300)]
    m = models(TaskTrace(tasks, [], []), [], np.array([0, 10, 10, 100]))
    assert m.instructions_per_ns == {"a": 10.0, "b": 3.0, "": 500 / 120}
    assert [(x.name, x.unit) for x in m.types] == [("b", "instructions"), ("b", "ns"), ("a", "instructions"),
                                                   ("a", "ns")]


SIZES = r"""
#include <stdlib.h>
#include "tareador.h"

static double out[16];

/* Reads n doubles `rounds` times: its instructions are exactly linear in n (and in rounds). */
__attribute__((noinline)) static void total(const double *x, long n, int rounds, double *result)
{
  double s = 0;
  for (int r = 0; r < rounds; r++)
    for (long i = 0; i < n; i++) s += x[i];
  *result = s;
}

int main(void)
{
  double *x = calloc(1 << 16, sizeof(double));
  tareador_ON();
  for (int k = 0; k < 8; k++) {
    tareador_start_task("total");
    total(x, 1000L << (k % 6), k == 5 ? 3 : 1, &out[k]);
    tareador_end_task("total");
  }
  tareador_OFF();
  free(x);
  return 0;
}
"""


def test_models_of_a_real_program(compile_c, tmp_path, capsys):
    """8 instances of total reading 1000 * 2^k doubles (k mod 6), the sixth three times over:
    the instructions are a * n + c exactly (b = 1, no error) and that instance is the outlier, 3
    times its model; with measured durations the types get their instructions per ns."""
    exe = compile_c(write_c(tmp_path, "sizes", SIZES), opt="-O2 -fno-inline")
    d = tmp_path / "sizes.tareador"
    t = trace([str(exe)], d, progress=False)
    heads = [x.id for x in t.fragments if x.name == "total"]
    assert cli.main(["models", str(d), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (m,) = doc["types"]
    assert (m["type"], m["durations"], m["instances"], m["b"]) == ("total", "instructions", 8, 1.0)
    assert m["error"] < 1e-6 and m["bytes"] == [8000 + 8, 32000 * 8 + 8]
    assert [(o["instance"], round(o["ratio"], 3)) for o in m["outliers"]] == [(heads[5], 3.0)]
    assert doc["instructions_per_ns"] == {}
    assert cli.main(["time", str(d), "--repeat", "1"]) == 0
    assert cli.main(["models", str(d)]) == 0
    out = capsys.readouterr().out
    assert "instructions per ns" in out and "written to" in out
    rows = (d / "models.csv").read_text().splitlines()
    assert rows[0] == "type,durations,instances,min_bytes,max_bytes,a,b,c,error,outliers,instructions_per_ns"
    assert [r.split(",")[:3] for r in rows[1:]] == [["total", "instructions", "8"], ["total", "ns", "8"]]
    assert (d / "models.png").read_bytes()[:4] == b"\x89PNG"
