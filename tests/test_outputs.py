"""What tareador writes: never half-written, never through a planted symlink, never stale, and
every task name shown literally whatever characters it holds (real binaries, real Graphviz)."""

from __future__ import annotations

import csv
import itertools
import json
import os
import re
import resource
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from tareador import load
from tareador.cli.main import main
from tareador.files import printable
from tareador.formats.paraver import TASK_EVENT, pcf_value_labels
from tareador.tracing.run import trace
from tests.helpers import EXAMPLES, ROOT, write_c

CHAIN = r"""
#include <stdlib.h>
#include "tareador.h"
int main(void) {
  static const char *names[] = {%s};
  int n = sizeof names / sizeof *names;
  int *v = calloc(n + 1, sizeof *v);
  tareador_ON();
  for (int i = 0; i < n; i++) {
    tareador_start_task(names[i]);
    v[i + 1] = v[i] + i;
    tareador_end_task(names[i]);
  }
  tareador_OFF();
  return v[n] != n * (n - 1) / 2;
}
"""

HOSTILE = ["fill<double>", "R&D", 'a"b\\Nc', "line\nbreak", "réduction $\\N$ \x1b[31m",
           '<A HREF="javascript:alert(1)">x</A></TD><TD HREF="javascript:alert(2)">y']
SVG_TEXT = "{http://www.w3.org/2000/svg}text"


def c_string(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\x1b", "\\x1b") + '"'


@pytest.fixture(scope="module")
def chain(compile_c, tmp_path_factory):
    """chain(names, stem) -> (program, trace directory): one task per name, in a chain of RAW
    dependencies through one heap block (named after the source file)."""
    count = itertools.count()

    def make(names: list[str], stem: str = ""):
        stem = stem or f"chain{next(count)}"  # compile_c names the program after the source
        src = write_c(tmp_path_factory.mktemp("src"), stem, CHAIN % ", ".join(map(c_string, names)))
        exe, out = str(compile_c(src)), tmp_path_factory.mktemp("trace") / "t"
        trace([exe], out, progress=False)
        return exe, out
    return make


def test_hostile_task_names_are_shown_literally_everywhere(chain, capsys, tmp_path):
    _, d = chain(HOSTILE)
    assert [t.name for t in load(d).fragments if not t.is_main] == HOSTILE  # CSV keeps them exactly
    shown = {printable(n) for n in HOSTILE}
    for layout in ("auto", "always"):
        assert main(["graph", str(d), "--collapse", layout, "-o", str(tmp_path / layout)]) == 0
        svg = ET.parse(tmp_path / layout / "graph.svg")  # well-formed, or this raises
        texts = {e.text for e in svg.iter(SVG_TEXT)}
        assert shown <= texts, shown - texts
        assert not [v for e in svg.iter() for v in e.attrib.values() if "javascript" in v]
    assert main(["simulate", str(d), "--cores", "2", "--prv", "--chrome", "--dim", "--plot", "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "line\\nbreak" in out and "\x1b" not in out
    for pcf in ("simulation-2.pcf", "ompss.pcf", "authentic.pcf"):
        assert set(pcf_value_labels(tmp_path / pcf, TASK_EVENT).values()) == shown | {"End", "main"}
    events = json.loads((tmp_path / "simulation-2.json").read_text())["traceEvents"]
    assert {e["name"] for e in events if e["ph"] == "X"} == set(HOSTILE) | {"main"}
    assert (tmp_path / "gantt.png").stat().st_size > 0
    assert main(["whatif", str(d), "--cores", "2", "--factors", "2", "--plot", "--csv", "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "line\\nbreak" in out and "\x1b" not in out
    with (tmp_path / "whatif.csv").open(newline="", encoding="utf-8") as f:
        assert {r["type"] for r in csv.DictReader(f)} == set(HOSTILE) | {"main (program)"}
    assert (tmp_path / "whatif-2.png").stat().st_size > 0


def test_object_names_in_edge_labels_are_escaped(chain, tmp_path):
    _, d = chain(["first", "second"], stem='odd"<&>\\N')
    assert main(["graph", str(d), "-o", str(tmp_path)]) == 0
    texts = {e.text for e in ET.parse(tmp_path / "graph.svg").iter(SVG_TEXT)}
    assert any(t.startswith('heap:odd"<&>\\N.c:') for t in texts), texts


def test_outputs_replace_symlinks_instead_of_writing_through_them(chain, tmp_path):
    exe, d = chain(["first", "second"])
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    planted = ["graph.dot", "graph.svg", "simulation-1.prv", "speedup.csv"]
    for name in planted:
        (d / name).symlink_to(victim)
    assert main(["graph", str(d)]) == 0
    assert main(["simulate", str(d), "--cores", "1", "--prv", "--csv"]) == 0
    (d / "deps.csv").unlink()
    (d / "deps.csv").symlink_to(victim)
    trace([exe], d, progress=False)
    assert victim.read_text() == "precious\n"
    assert not [name for name in planted + ["deps.csv"] if (d / name).is_symlink()]


def test_a_new_trace_removes_the_outputs_of_the_previous_one(chain):
    exe, d = chain(["first", "second"])
    assert main(["graph", str(d), "--png"]) == 0
    assert main(["simulate", str(d), "--cores", "1,inf", "--prv", "--chrome", "--csv", "--dim"]) == 0
    assert main(["whatif", str(d), "--cores", "1", "--factors", "2", "--plot", "--csv"]) == 0
    (d / "notes.txt").write_text("mine\n")
    trace([exe], d, progress=False)
    assert sorted(p.name for p in d.iterdir()) == ["accesses.csv", "calls.csv", "deps.csv", "notes.txt", "objects.csv",
                                                   "summary.json", "tables", "tasks.csv"]
    assert sorted(p.name for p in (d / "tables").iterdir()) == ["accesses.npy", "calls.npy", "deps.npy",
                                                                "manifest.json", "names.json",
                                                                "objects.npy", "tasks.npy"]


def limited(limit: int, *argv: str) -> subprocess.CompletedProcess:
    """Run Python with files capped at ``limit`` bytes: writes beyond fail as on a full disk."""
    def cap():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, *argv], preexec_fn=cap, env=env, capture_output=True, text=True)


def test_a_full_disk_names_the_file_and_leaves_no_truncated_file(chain, tmp_path):
    _, d = chain([f"t{i}" for i in range(40)])
    out = tmp_path / "out"
    run = limited(1000, "-m", "tareador", "simulate", str(d), "--cores", "1", "--prv", "-o", str(out))
    assert run.returncode == 2
    assert run.stderr.startswith(f"tareador: {out}/simulation-1.prv: File too large;") and run.stderr.count("\n") == 1
    assert list(out.iterdir()) == []
    # The trace directory's tables: one byte short, tasks.csv is not written at all.
    copy = "import sys; from tareador import load; from tareador.taskgraph.store import save; " \
           "save(load(sys.argv[1]), sys.argv[2])"
    run = limited((d / "tasks.csv").stat().st_size - 1, "-c", copy, str(d), str(tmp_path / "copy"))
    assert run.returncode == 1 and "File too large" in run.stderr
    assert list((tmp_path / "copy").iterdir()) == []


@pytest.mark.fast
def test_sigterm_midway_is_a_stop_like_ctrl_c(tmp_path, capsys, monkeypatch):
    """SIGTERM while a command writes a file: one line, exit 128+15, no temporary file left (its
    default action would kill Python before the cleanup ran)."""
    import signal

    from tareador.cli import simulate
    from tareador.files import output_file
    from tareador.taskgraph.store import save
    from tests.helpers import fork_join

    trace_dir = save(fork_join(), tmp_path / "t")

    def study_then_sigterm(*args, **kwargs):
        with output_file(trace_dir / "speedup.csv") as f:
            f.write("half a table")
            os.kill(os.getpid(), signal.SIGTERM)
            f.write("never written")
        raise AssertionError("SIGTERM did not stop the command")

    monkeypatch.setattr(simulate, "study", study_then_sigterm)
    assert main(["simulate", str(trace_dir), "--cores", "2"]) == 128 + signal.SIGTERM
    assert capsys.readouterr().err == "tareador: stopped by SIGTERM\n"
    assert not any(p.name.endswith(".tmp") or p.name == "speedup.csv" for p in trace_dir.iterdir())
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_chrome_json_beyond_the_bound_is_split_by_time(tareador, compile_c, tmp_path):
    """A traced Cholesky's 2-core timeline with --chrome-max-mb 0.004: parts of at most 4000
    bytes that each parse, hold each task instance's slice exactly once, in time order across
    parts, name the process and every core they use, and keep an arrow only with both ends;
    the arrows of every RAW dependency are either in a part or counted as left out. An unsplit
    run afterwards replaces the parts, and a split one the unsplit file."""
    exe = compile_c(EXAMPLES / "cholesky" / "cholesky.c")
    d = tmp_path / "chol.tareador"
    trace([str(exe), "4", "8"], d, progress=False)
    t = load(d)
    fragments = sorted(f.id for f in t.fragments)
    dependencies = {(x.src, x.dst) for x in t.deps if x.kind == "RAW" and x.src != x.dst}  # an arrow each
    status, out, err = tareador("simulate", d, "--cores", "2", "--chrome", "--chrome-max-mb", "0.004")
    assert status == 0
    parts = sorted(d.glob("simulation-2-part*.json"), key=lambda p: int(p.stem.rsplit("part", 1)[1]))
    assert len(parts) >= 2 and not (d / "simulation-2.json").exists()
    left_out = int(re.search(r"; (\d+) arrows between two parts are in neither", err).group(1))
    assert f"written by time as {len(parts)} parts" in err and "--chrome-max-mb 0.004" in err
    slices, arrows, last = [], 0, -1.0
    for part in parts:
        assert part.stat().st_size <= 4000
        events = json.loads(part.read_text())["traceEvents"]
        named = {e["tid"] for e in events if e["name"] == "thread_name"}
        assert [e["args"]["name"] for e in events if e["name"] == "process_name"] == ["2 cores, cp"]
        mine = [e for e in events if e["ph"] == "X"]
        assert {e["tid"] for e in events if e["ph"] != "M"} <= named
        assert min(e["ts"] for e in mine) >= last
        last = max(e["ts"] for e in mine)
        slices += [e["args"]["id"] for e in mine]
        ends = sorted((e["id"], e["ph"]) for e in events if e["ph"] in "sf")
        assert ends == [(k, ph) for k in sorted({k for k, _ in ends}) for ph in "fs"]
        arrows += len(ends) // 2
    assert sorted(slices) == fragments
    assert arrows + left_out == len(dependencies) > left_out > 0
    status, out, err = tareador("simulate", d, "--cores", "2", "--chrome")
    assert status == 0 and err == "" and not list(d.glob("simulation-2-part*.json"))
    size = (d / "simulation-2.json").stat().st_size
    assert f"Chrome/Perfetto: simulation-2.json ({size / 1e3:.1f} kB)" in out
    events = json.loads((d / "simulation-2.json").read_text())["traceEvents"]
    assert len(events) == 1 + 2 + len(fragments) + 2 * len(dependencies)
    assert tareador("simulate", d, "--cores", "2", "--chrome", "--chrome-max-mb", "0.004")[0] == 0
    assert not (d / "simulation-2.json").exists()
