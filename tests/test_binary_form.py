"""The trace directory's binary form (tables/): written when a real program is traced, loaded
instead of the CSVs to exactly what the CSVs give, and refused, in one line, where it is not
what the CSVs say."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np

from tareador.cli.main import main
from tareador.taskgraph import binary_form
from tareador.taskgraph.store import load_dag, load_trace, write_binary_form

DAG_ARRAYS = ("ids", "counter", "instance", "parent", "next_fragment", "weight", "src", "dst", "dep_src", "dep_dst",
              "dep_bytes")


def same_dag(a, b) -> bool:
    return a.names == b.names and all(np.array_equal(getattr(a, f), getattr(b, f)) for f in DAG_ARRAYS)


def csv_only(directory, to):
    """A copy of the trace directory without its binary form: what the CSVs alone give."""
    shutil.copytree(directory, to, ignore=shutil.ignore_patterns("tables"))
    return to


def warnings(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("tareador: warning:")]


def test_traced_binary_form_loads_what_the_csvs_say(traced_example, tmp_path, capsys):
    """Cholesky 3x3 blocks: the tracer writes tables/ beside the CSVs, sealed; loading through it
    gives the fragments, dependencies, objects, summary and graph that the CSVs alone give."""
    d = traced_example("cholesky", "3", "4")
    manifest = json.loads((d / "tables" / "manifest.json").read_text())
    tables = {"tasks.npy", "deps.npy", "objects.npy", "accesses.npy", "calls.npy", "names.json"}
    assert set(manifest["tables"]) == tables
    assert set(manifest["csv"]) == {"tasks.csv", "deps.csv", "objects.csv"}
    assert binary_form.read(d, objects=True) is not None
    plain = csv_only(d, tmp_path / "plain")
    binary, text = load_trace(d), load_trace(plain)
    assert binary.fragments == text.fragments and binary.deps == text.deps
    assert binary.objects == text.objects and binary.summary == text.summary
    # 10 task instances, and main's code before each creation and after the last: 11 fragments.
    assert len(binary.fragments) == 21
    assert same_dag(binary.dag, text.dag) and same_dag(load_dag(d), load_dag(plain))
    assert warnings(capsys) == []


def test_copied_directory_still_loads_its_tables(traced_example, tmp_path, capsys):
    """A copy (new modification times, same contents) is checked by hash and used, silently."""
    copy = tmp_path / "copy"
    shutil.copytree(traced_example("cholesky", "3", "4"), copy)
    os.utime(copy / "tasks.csv", ns=(1, 1))
    assert binary_form.read(copy, objects=False) is not None
    assert warnings(capsys) == []


def test_edited_csv_is_read_instead_of_stale_tables(traced_example, tmp_path, capsys):
    """Every fragment's instructions set to 7 in tasks.csv after tracing: the tables still hold
    the traced counts, so the loader says so in one line and reads the CSVs: T1 = 7 x 21
    fragments (10 task instances, 11 of main's code)."""
    d = tmp_path / "edited"
    shutil.copytree(traced_example("cholesky", "3", "4"), d)
    lines = (d / "tasks.csv").read_text().splitlines()
    header = lines[0].split(",")
    column = header.index("instructions")
    rows = [line.split(",") for line in lines[1:]]
    for row in rows:
        row[column] = "7"
    (d / "tasks.csv").write_text("\r\n".join([lines[0], *map(",".join, rows)]) + "\r\n")
    assert load_dag(d).t1 == 7 * len(rows) == 147
    assert warnings(capsys) == [f"tareador: warning: {d / 'tables'} was written from another tasks.csv than the "
                                "one there now (edited since?): reading the CSVs instead"]


def test_damaged_table_is_refused_in_one_line(traced_example, tmp_path, capsys):
    """One byte of deps.npy changed (its size kept): the hash recorded tells, simulate reads the
    CSVs, says why in one line, and its makespans are those of the intact trace."""
    intact = traced_example("cholesky", "3", "4")
    d = tmp_path / "damaged"
    shutil.copytree(intact, d)
    table = bytearray((d / "tables" / "deps.npy").read_bytes())
    table[-1] ^= 0xFF
    (d / "tables" / "deps.npy").write_bytes(bytes(table))
    assert main(["simulate", str(d), "--cores", "1,2,inf", "--json"]) == 0
    captured = capsys.readouterr()
    damaged = json.loads(captured.out)["results"]
    assert [line for line in captured.err.splitlines() if line.startswith("tareador: warning:")] == [
        f"tareador: warning: {d / 'tables'} holds a deps.npy that is not the one written (damaged?): reading the "
        "CSVs instead"]
    assert main(["simulate", str(intact), "--cores", "1,2,inf", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["results"] == damaged


def test_missing_manifest_and_older_directories(traced_example, tmp_path, capsys):
    """tables/ without its manifest cannot be trusted (one line); a directory without tables/
    (older, or written by a script) loads from its CSVs without a word, and write_binary_form
    gives it tables/ equal to the tracer's."""
    traced = traced_example("cholesky", "3", "4")
    unsealed = tmp_path / "unsealed"
    shutil.copytree(traced, unsealed)
    (unsealed / "tables" / "manifest.json").unlink()
    assert binary_form.read(unsealed, objects=False) is None
    assert warnings(capsys) == [f"tareador: warning: {unsealed / 'tables'} lacks manifest.json: reading the CSVs "
                                "instead"]
    older = csv_only(traced, tmp_path / "older")
    assert binary_form.read(older, objects=False) is None and warnings(capsys) == []
    write_binary_form(older)
    for name in ("tasks.npy", "deps.npy", "objects.npy"):
        assert (older / "tables" / name).read_bytes() == (traced / "tables" / name).read_bytes()
    assert same_dag(load_dag(older), load_dag(traced)) and warnings(capsys) == []
