"""`tareador report`: the page of a real trace and of a real MPI run, opened from file:// in real
headless Chromium with the network off: no console error, every section there, the numbers those of
summary.json, a graph node's hover panel listing its dependencies; and the bad inputs (a partial
trace, a graph too big to lay out, an output that cannot be written) as one line or as a note on
the page.

The program: two tasks fill the globals a and b (64 doubles, 512 bytes each), a third adds them
into c, then ``extra`` independent tasks each bump one counter of 16 (``ticks``; their name holds
markup and TeX, which every part of the page must show as text). So the add task
depends on exactly the two fills, through a and b, 512 bytes each; with a second argument the
add task calls exit(3), which ends the trace partial, inside add.
"""

from __future__ import annotations

import html
import json
import os
import resource
import shutil
import subprocess
import sys

import numpy as np
import pytest
from selenium.webdriver.support.ui import WebDriverWait

import tareador
from tareador.report.bars import Bars, _busy_time, aggregate
from tareador.tracing.mpi_launch import MPICH
from tests import browser
from tests.helpers import ROOT, write_c

PROGRAM = r"""
#include <stdlib.h>
#include <tareador.h>
#define N 64
#define TICK "tick <i>$$t^2$$</i>"
double a[N], b[N], c[N];
int ticks[16];
void fill(double *x, double v) { for (int i = 0; i < N; i++) x[i] = v + i; }
void add(const double *x, const double *y, double *z) { for (int i = 0; i < N; i++) z[i] = x[i] + y[i]; }
int main(int argc, char **argv) {
    int extra = argc > 1 ? atoi(argv[1]) : 0;
    tareador_ON();
    tareador_start_task("fill"); fill(a, 1); tareador_end_task("fill");
    tareador_start_task("fill"); fill(b, 2); tareador_end_task("fill");
    tareador_start_task("add");
    if (argc > 2) exit(3);
    add(a, b, c);
    tareador_end_task("add");
    for (int k = 0; k < extra; k++) { tareador_start_task(TICK); ticks[k % 16]++; tareador_end_task(TICK); }
    tareador_OFF();
    return c[3] != 9.0;
}
"""
TRACE_SECTIONS = ["summary", "graph", "timeline", "curves", "whatif", "hints", "objects"]
RUN_SECTIONS = ["summary", "timeline", "sweep", "patterns", "overlap"]


def tareador_cli(*args, limit: int | None = None) -> subprocess.CompletedProcess:
    """The command as a user runs it; ``limit`` caps file sizes (RLIMIT_FSIZE), as a full disk would."""
    def cap():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "tareador", *map(str, args)], capture_output=True, text=True,
                          timeout=600, env=env, preexec_fn=cap if limit else None)


@pytest.fixture(scope="module")
def program(compile_c, tmp_path_factory):
    return compile_c(write_c(tmp_path_factory.mktemp("report-src"), "sums", PROGRAM))


@pytest.fixture(scope="module")
def traced(program, tmp_path_factory):
    """The trace of the program with 6 ticks, its report written by the command, and what it printed."""
    d = tmp_path_factory.mktemp("report") / "sums.tareador"
    run = tareador_cli("trace", "-o", d, "--", program, "6")
    assert run.returncode == 0, run.stderr
    made = tareador_cli("report", d)
    assert made.returncode == 0, made.stderr
    return d, d / "report.html", made.stdout


@pytest.fixture(scope="module")
def driver():
    chromium = browser.chromium()
    yield chromium
    browser.quit_browser(chromium)


@pytest.fixture(scope="module")
def loaded(traced, driver, tmp_path_factory):
    """The trace's page open in Chromium; its console messages; a screenshot of it."""
    d, page, _ = traced
    log = browser.open_page(driver, page)
    shot = tmp_path_factory.mktemp("screenshots") / "report.png"
    driver.save_screenshot(str(shot))
    return driver, log, shot


def test_the_page_is_one_file_that_needs_nothing_else(traced, loaded):
    _, page, printed = traced
    driver = loaded[0]
    assert f"report: {page} (" in printed
    assert driver.execute_script("return document.querySelectorAll('script[src], link, img, iframe').length") == 0
    # Everything the browser fetched while opening and drawing the page: nothing (BokehJS would
    # fetch MathJax for a name between $$ drawn as TeX: the tick task is named so).
    assert driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)") == []


def test_the_page_opens_offline_without_a_console_error(loaded):
    driver, log, shot = loaded
    assert browser.errors(log) == []
    assert driver.execute_script("return document.querySelectorAll('[data-root-id]').length") == 5  # the charts
    for section in TRACE_SECTIONS:
        assert driver.find_element("id", section).is_displayed(), section
    assert shot.stat().st_size > 50_000


def test_the_summary_shows_the_numbers_of_summary_json(traced, loaded):
    d, _, _ = traced
    driver = loaded[0]
    summary = json.loads((d / "summary.json").read_text())
    shown = {e.get_attribute("data-key"): e.text for e in driver.find_elements("css selector", "#summary dd[data-key]")}
    assert summary["instances"] == 3 + 6 and summary["task_types"] == 3
    for key in ("instances", "task_types", "main_fragments", "t1", "tinf"):
        assert int(shown[key].replace(",", "")) == summary[key], key
    assert shown["parallelism"] == f"{summary['parallelism']:.2f}"
    assert shown["ending"] == summary["ending"] == "exited with status 0"
    assert shown["command"] == f"{summary['program']} 6"


def test_hovering_a_graph_node_lists_its_dependencies(traced, loaded):
    from selenium.webdriver.common.action_chains import ActionChains

    d, _, _ = traced
    driver = loaded[0]
    tasks = [line.split(",") for line in (d / "tasks.csv").read_text().splitlines()[1:]]
    fills = [int(t[0]) for t in tasks if t[1] == "fill"]
    add = next(int(t[0]) for t in tasks if t[1] == "add")
    node = next(g for g in driver.find_elements("css selector", "#graph-view g.node")
                if g.find_element("tag name", "title").get_attribute("textContent") == str(add))
    ActionChains(driver).move_to_element(node.find_element("tag name", "ellipse")).perform()
    panel = driver.find_element("id", "graph-details").text
    assert f"add #{add}" in panel
    rows = [r.text for r in driver.find_elements("css selector", "#graph-details tr")]
    assert f"fill #{fills[0]} a 512 RAW" in rows and f"fill #{fills[1]} b 512 RAW" in rows
    assert "critical" in node.get_attribute("class")  # a fill, then add: the longest path


def test_the_pragmas_are_there_to_copy_and_the_warnings_stand_out(loaded):
    driver = loaded[0]
    # add reads a and b and writes c; the exit test between its marker and the call leaves no call
    # right after the marker, so the clauses name the globals themselves, and hints warns about each
    pragma = driver.find_element("id", "pragma-omp-0")
    assert pragma.text == "#pragma omp task depend(in: a, b) depend(out: c)"
    button = driver.find_element("css selector", "button[data-target='pragma-omp-0']")
    button.click()
    # the label says "copied" for 1.5 s, which a loaded machine can miss; the count stays
    WebDriverWait(driver, 30).until(lambda d: button.get_attribute("data-copies") == "1")
    warnings = driver.find_element("css selector", "#hints div.warning").text
    assert "add: global a is accessed (in) but not passed to the task" in warnings


def test_a_notebook_shows_the_same_page_and_figures(traced):
    from bokeh.embed import components

    d, _, _ = traced
    report = tareador.report(d, cores=[2], factors=[2])
    assert report._repr_html_().startswith("<iframe srcdoc=")
    assert "simulated for this report with the options given: 2 cores, policy cp" in report.html
    assert {"timeline-timelines", "curves-scaling", "whatif-ranking", "objects-timeline"} <= set(report.figures)
    script, divs = components(report.figures["curves-scaling"])
    assert "<script" in script and divs


def test_measured_durations_are_shown_and_simulated(traced, tmp_path):
    """Once 'tareador time' timed the trace, the panel shows each fragment's measured nanoseconds
    and --durations measured simulates them: the task types' table sums durations.csv."""
    d = tmp_path / "timed.tareador"
    shutil.copytree(traced[0], d)
    assert tareador_cli("time", d, "--repeat", "1").returncode == 0
    rows = [line.split(",") for line in (d / "durations.csv").read_text().splitlines()[1:]]
    ns = {int(r[0]): int(r[1]) for r in rows}
    adds = [int(line.split(",")[0]) for line in (d / "tasks.csv").read_text().splitlines()[1:] if ",add," in line]
    made = tareador_cli("report", d, "--durations", "measured", "--cores", "2", "--factors", "2")
    assert made.returncode == 0, made.stderr
    assert "measured durations (ns)" in made.stdout
    page = (d / "report.html").read_text()
    assert f'["measured","{ns[adds[0]]:,} ns (' in page
    assert f"<td>add</td><td class=\"num\">1</td><td class=\"num\">{ns[adds[0]]:,}</td>" in page


def test_a_partial_trace_is_shown_as_partial_with_its_ending(program, tmp_path):
    d = tmp_path / "partial.tareador"
    run = tareador_cli("trace", "-o", d, "--", program, "0", "exit")
    summary = json.loads((d / "summary.json").read_text())
    assert run.returncode == 3 and summary["partial"] is True
    made = tareador_cli("report", d, "-o", tmp_path / "partial.html")
    assert made.returncode == 0, made.stderr
    assert f"note: partial trace: the program {summary['ending']}" in made.stdout
    assert "note: The runs below were simulated for this report with the defaults: 1, 2, 4, 8, 16, inf cores, " \
           "policy cp" in made.stdout
    page = (tmp_path / "partial.html").read_text()
    assert f'<p class="partial">partial trace: the program {html.escape(summary["ending"])}' in page


def test_a_graph_too_big_to_lay_out_says_why(program, tmp_path):
    d = tmp_path / "many.tareador"
    assert tareador_cli("trace", "-o", d, "--", program, "2100").returncode == 0
    made = tareador_cli("report", d, "-o", tmp_path / "many.html", "--collapse", "never", "--factors", "2",
                        "--cores", "2")
    assert made.returncode == 0, made.stderr
    graph = (tmp_path / "many.html").read_text().split('<section id="graph">')[1].split("</section>")[0]
    assert "No drawing: Graphviz takes minutes to hours to lay out 2,103 nodes" in graph
    assert "<svg" not in graph


def test_an_output_that_cannot_be_written_is_one_line_and_leaves_nothing(traced, tmp_path):
    d, page, _ = traced
    made = tareador_cli("report", d, "-o", tmp_path / "no" / "such" / "dir.html")
    assert made.returncode == 2 and made.stderr.count("\n") == 1
    assert made.stderr.startswith(f"tareador: cannot write {tmp_path}/no/such/dir.html:")
    out = tmp_path / "full"
    out.mkdir()
    made = tareador_cli("report", d, "-o", out / "r.html", "--cores", "2", "--factors", "2", limit=100_000)  # 2 MB
    assert made.returncode == 2 and made.stderr == f"tareador: {out}/r.html: File too large; a file size limit " \
                                                   "(ulimit -f) stopped it; raise it and run again (no file was left " \
                                                   "half-written)\n"
    assert list(out.iterdir()) == []


@pytest.fixture(scope="module")
def mpi_run(mpi_examples, tmp_path_factory):
    """A 2-rank Jacobi under MPICH (16 x 16, 2 iterations: one row of 16 doubles each way per iteration,
    test_mpirun.py derives it), and its report."""
    d = tmp_path_factory.mktemp("mpi-report") / "jacobi.tareador"
    run = tareador_cli("mpirun", "-np", 2, "-o", d, "--", mpi_examples(MPICH) / "jacobi", 16, 4, 2)
    assert run.returncode == 0, run.stderr
    made = tareador_cli("report", d)
    assert made.returncode == 0, made.stderr
    return d, d / "report.html"


def test_an_mpi_run_page_shows_its_ranks_calls_and_messages(mpi_run, driver):
    d, page = mpi_run
    summary = json.loads((d / "summary.json").read_text())
    log = browser.open_page(driver, page)
    assert browser.errors(log) == []
    for section in RUN_SECTIONS:
        assert driver.find_element("id", section).is_displayed(), section
    shown = {e.get_attribute("data-key"): e.text for e in driver.find_elements("css selector", "#summary dd[data-key]")}
    assert (int(shown["ranks"]), int(shown["messages"])) == (summary["ranks"], summary["messages"]) == (2, 4)
    rows = [r.text.split() for r in driver.find_elements("css selector", "table.ranks tbody tr")]
    assert [int(r[1].replace(",", "")) for r in rows] == [r["t1"] for r in summary["per_rank"]]
    # the authentic run's timeline: an arrow per message
    arrows = driver.execute_script(
        "const doc = Bokeh.documents[0]; const tabs = doc.roots().find(r => r.name === 'timeline-timelines');"
        "const fig = tabs.tabs[0].child; const a = fig.center.find(m => m.type === 'Arrow' || "
        "(m.constructor && m.constructor.name === 'Arrow')); return a ? a.source.data.x0.length : -1;")
    assert arrows == summary["messages"]


@pytest.mark.fast
def test_a_timeline_beyond_its_bars_is_binned_exactly():
    """Row 0 runs a over [0, 3) then b over [3, 4); row 1 runs b over [0.5, 2.5). Within 4 bars they
    are kept; within 2, each row is one bin of width 4: row 0 mostly a and busy throughout, row 1 b
    and busy half of it."""
    bars = Bars(row=np.array([0, 0, 1]), start=np.array([0, 3, 0.5]), end=np.array([3, 4, 2.5]),
                kind=np.array([0, 1, 1]), kinds=["a", "b"], colours=["#000000", "#ffffff"], rows=["r0", "r1"])
    assert aggregate(bars, 4) is bars
    one = aggregate(bars, 2)
    assert (one.row.tolist(), one.kind.tolist(), one.start.tolist(), one.end.tolist()) == ([0, 1], [0, 1], [0, 0],
                                                                                           [4, 4])
    assert one.numbers["busy %"].tolist() == [100, 50]  # row 0 busy 4 of 4 (a 3, b 1), row 1 busy 2 of 4
    assert one.aggregated.startswith("3 bars are more than the 2 this timeline draws")
    # bins of width 1: each (row, kind)'s busy time per bin, an interval split over the bins it crosses
    busy = _busy_time(bars.row, bars.kind, bars.start, bars.end, 1.0, 2, 2, 4)
    assert busy.tolist() == [[[1, 1, 1, 0], [0, 0, 0, 1]], [[0, 0, 0, 0], [0.5, 1, 0.5, 0]]]
