"""Trace directory round trip, corrupt files, and the T1/T-inf metrics on hand-made graphs."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from tareador import load, text_columns
from tareador.errors import TraceDirError
from tareador.taskgraph.model import DataObject, Dependency, Fragment, TaskTrace
from tareador.taskgraph.store import load_dag, save

pytestmark = pytest.mark.fast  # no program compiled, traced or launched (make test-fast)


def fork_join() -> TaskTrace:
    # main(2) creates a(10) and b(30); main fragment 3 (1 instr) reads both.
    tasks = [Fragment(0, "main", 0, -1, 0, 2, 2), Fragment(1, "a", 1, 0, 2, 12, 10),
             Fragment(2, "main", 0, -1, 12, 12, 0), Fragment(3, "b", 3, 2, 12, 42, 30),
             Fragment(4, "main", 0, -1, 42, 43, 1)]
    deps = [Dependency(1, 4, "RAW", "x", 8), Dependency(3, 4, "RAW", "y", 8), Dependency(1, 3, "WAR", "x", 4)]
    return TaskTrace(tasks, deps, [], {"instances": 2})


def test_metrics_by_hand():
    t = fork_join()
    assert t.t1 == 43
    assert t.tinf == 2 + 0 + 30 + 1  # main, main, b, main: WAR does not constrain
    assert t.parallelism == pytest.approx(43 / 33)
    assert set(t.graph.edges) == {(0, 1), (0, 2), (2, 3), (2, 4), (1, 4), (3, 4), (1, 3)}


def test_round_trip(tmp_path):
    t = fork_join()
    save(t, tmp_path / "d")
    back = load(tmp_path / "d")
    assert back.fragments == t.fragments and back.deps == t.deps and back.summary == t.summary


def test_names_csv_must_quote_round_trip(tmp_path):
    """A marker's name may hold what CSV quotes: a comma, a quote, a line break."""
    t = fork_join()
    odd = 'b, "the second"\nline'
    t.fragments[3] = replace(t.fragments[3], name=odd)
    t.deps[1] = replace(t.deps[1], object="y, z")
    save(t, tmp_path / "d")
    back = load(tmp_path / "d")
    assert back.fragments == t.fragments and back.deps == t.deps
    assert load_dag(tmp_path / "d").names == ["main", "a", "main", odd, "main"]


def test_names_of_every_length_round_trip(tmp_path):
    """Task types up to 15 bytes are compared as two words, longer ones one by one: each length
    across that border, UTF-8 beyond ASCII, and the last field of the file."""
    names = ["", "a", "abc", "potrf_7", "potrf_78", "potrf_789", "fifteen_bytes_x", "sixteen_bytes_xy",
             "a name well beyond sixteen bytes", "naïve", "π" * 7, "π" * 8, "abc"]
    tasks = [Fragment(0, "main", 0, -1, 0, 1, 1)] + [Fragment(i, name, i, 0, i, i + 1, 1)
                                                     for i, name in enumerate(names, start=1)]
    objects = [DataObject(0, "x", "heap", 4096, 8, "t.c:1"), DataObject(1, "y", "heap", 8192, 8, "é")]
    save(TaskTrace(tasks, [Dependency(1, 2, "WAW", "x", 8)], objects, {}), tmp_path / "d")
    assert load_dag(tmp_path / "d").names == ["main"] + names
    back = load(tmp_path / "d")
    assert [t.name for t in back.fragments] == ["main"] + names and back.objects == objects
    assert [d.kind for d in back.deps] == ["WAW"]


def test_the_last_row_counts_like_any_other(tmp_path):
    """A text near the end of the file is read one by one: the last dependency's RAW is still
    the RAW of the rows before it (it used to become a second, unknown kind and its edge vanish)."""
    t = fork_join()
    t.deps = [t.deps[2], t.deps[1], t.deps[0]]  # WAR 1 -> 3, RAW 3 -> 4, RAW 1 -> 4 last
    save(t, tmp_path / "d")
    dag = load_dag(tmp_path / "d")
    assert sorted(zip(dag.dep_src.tolist(), dag.dep_dst.tolist())) == [(1, 4), (3, 4)]
    assert (tmp_path / "d" / "deps.csv").read_bytes().endswith(b"1,4,RAW,x,8\r\n")


@pytest.mark.parametrize("seed", range(5))
def test_bulk_reader_reads_what_the_csv_module_reads(tmp_path, seed):
    """The two ways read_csv cuts text give the same columns: random names of 0..40 bytes (some
    repeated, some non-ASCII), the last row's among them."""
    rng = random.Random(seed)
    pool = ["".join(rng.choice("ab_é9") for _ in range(rng.randint(0, 40))) for _ in range(30)]
    rows = [(i, rng.choice(pool), rng.randint(-5, 10**12)) for i in range(rng.randint(1, 300))]
    path = tmp_path / "t.csv"
    path.write_bytes(("id,name,n\r\n" + "".join(f"{i},{name},{n}\r\n" for i, name, n in rows)).encode())
    bulk = text_columns.read_csv(path, ["id", "name", "n"], ["id", "n"], ["name"])
    one_by_one = text_columns._quoted_columns(path, path.read_bytes().decode(), ["id", "name", "n"], ["id", "n"],
                                              ["name"])
    assert bulk["name"].strings() == one_by_one["name"].strings() == [name for _, name, _ in rows]
    assert len(set(bulk["name"].values)) == len(bulk["name"].values)
    assert bulk["n"].tolist() == one_by_one["n"].tolist() == [n for _, _, n in rows]


def test_saved_traces_are_read_in_bulk(tmp_path, monkeypatch):
    """What save() writes (CRLF line ends, no quotes) takes the bulk path: on the tree before
    one loader, every trace went to the per-row reader because of the carriage returns."""
    save(fork_join(), tmp_path / "d")
    monkeypatch.setattr(text_columns, "_quoted_columns", None)  # calling it would fail
    assert load_dag(tmp_path / "d").n == 5
    assert load(tmp_path / "d").tinf == 33


def test_truncated_and_corrupt_files_are_named(tmp_path):
    save(fork_join(), tmp_path / "d")
    deps = tmp_path / "d" / "deps.csv"
    deps.write_text(deps.read_text()[:-6])
    with pytest.raises(TraceDirError, match=r"deps.csv:\d+: malformed row"):
        load(tmp_path / "d")
    (tmp_path / "d" / "tasks.csv").write_text("garbage\n")
    with pytest.raises(TraceDirError, match="tasks.csv: header"):
        load(tmp_path / "d")
    with pytest.raises(TraceDirError, match="not a trace directory"):
        load(tmp_path / "missing")


CORRUPTIONS = {
    # file, replace-this, with-this, what the message must name
    "missing id": ("deps.csv", "1,4,RAW", "1,9,RAW", r"deps.csv:2: dependency 1 -> 9 names a task that is not"),
    "cycle": ("deps.csv", "1,4,RAW", "4,0,RAW", r"deps.csv: dependency cycle"),
    "negative": ("tasks.csv", "1,a,1,0,2,12,10", "1,a,1,0,2,12,-10", r"tasks.csv:3: task 1 has negative"),
    "kind": ("deps.csv", "3,4,RAW", "3,4,RAX", r"deps.csv:3: unknown dependency kind 'RAX'"),
    "instance": ("tasks.csv", "3,b,3,2", "3,b,1,2", r"tasks.csv:5: task 3 names instance 1"),
    "array summary": ("summary.json", None, "[1, 2]", r"summary.json is not a JSON object"),
    "not utf-8": ("tasks.csv", "1,a,1", "1,\xff\xfe,1", r"tasks.csv:3: not UTF-8"),
    "repeated id": ("tasks.csv", "3,b,3,2", "1,b,3,2", r"tasks.csv:5: task 1 appears twice \(also line 3\)"),
    "parent": ("tasks.csv", "3,b,3,2", "3,b,3,9", r"tasks.csv:5: task 3 names parent 9, which is not in the file"),
    "bytes": ("deps.csv", "3,4,RAW,y,8", "3,4,RAW,y,-8", r"deps.csv:3: negative byte count -8"),
    "extra field": ("tasks.csv", "3,b,3,2,12,42,30", "3,b,3,2,12,42,30,7", r"tasks.csv:5: malformed row \["),
    "not a number": ("deps.csv", "3,4,RAW,y,8", "3,4,RAW,y,8x",
                     r"deps.csv:3: malformed row \['3', '4', 'RAW', 'y', '8x'\]"),
}


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_every_command_names_the_corrupt_line(tmp_path, capsys, case):
    """graph and simulate load through one validation: one line naming the file, never a traceback."""
    from tareador.cli.main import main

    name, old, new, message = CORRUPTIONS[case]
    d = save(fork_join(), tmp_path / "d")
    path = d / name
    text = path.read_text()
    assert old is None or old in text
    path.write_bytes((new if old is None else text.replace(old, new)).encode("latin-1"))
    for command in (["graph", str(d)], ["simulate", str(d), "--cores", "2"]):
        if case == "array summary" and command[0] == "simulate":
            continue  # simulate reads only the tables
        assert main(command) == 2, command
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("tareador: "), err
        assert __import__("re").search(message, err), err
