"""Dimemas traces: round trip, header and trailer offsets, corrupt files named with their line."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tareador.errors import DimError
from tareador.formats import dimemas
from tareador.formats.dimemas import read_dim, write_dim
from tareador.formats.paraver import task_type_values
from tareador.synthesis import ompss
from tareador.synthesis.ompss import write_dim_traces
from tests.helpers import make

pytestmark = pytest.mark.fast  # no program compiled, traced or launched (make test-fast)

BLOCKS = ["1:0:0:1.5\n20:0:0:7003:2\n2:0:0:1:1048576:1:0:0\n2:0:0:1:0:8:9:0:3\n1:0:0:2.5e-3\n",
          "1:1:0:0.0\n3:1:0:0:1048576:1:0:0\n3:1:0:0:0:8:9:0:1\n3:1:0:0:0:8:9:0:2\n1:1:0:12345678901.000000001\n"]


def test_round_trip_all_record_kinds(tmp_path):
    t = read_dim(write_dim(tmp_path / "x.dim", "x", [1, 1], BLOCKS))
    assert t.name == "x" and t.threads == [1, 1]
    assert t.op.tolist() == [1, 20, 2, 2, 1, 1, 3, 3, 3, 1]
    assert t.gthread.tolist() == [0] * 5 + [1] * 5 and t.thread_start.tolist() == [0, 5, 10]
    assert t.secs[[0, 4, 5, 9]].tolist() == [1.5, 2.5e-3, 0.0, 12345678901.000000001]
    assert t.a.tolist()[:4] == [0, 7003, 1, 1] and t.b.tolist()[:4] == [0, 2, -1, 0]
    assert t.size[2] == 1048576 and t.size[3] == 8 and t.tag[3] == 9 and t.comm[3] == 0 and t.mode[3] == 3
    assert t.mode[6:9].tolist() == [0, 1, 2] and t.b[7] == 0


def test_header_and_trailer_offsets(tmp_path):
    trace = make([("main", -1, 5), ("a", 0, 10), ("b", 0, 20), ("main", -1, 1)], [(1, 3), (2, 3)])
    write_dim_traces(trace.dag, tmp_path, 1e9)
    data = (tmp_path / "ompss.dim").read_bytes()
    header = re.match(rb'#DIMEMAS:"ompss":1,(\d{15}):1\(4\),0\n', data)
    assert header
    trailer = int(header.group(1))
    assert data[trailer:].startswith(b"s:0:") and data.endswith(b"\n")
    offsets = [int(x) for x in data[trailer:].decode().strip().split(":")[2:]]
    assert [data[o:].split(b":")[2] for o in offsets] == [b"0", b"1", b"2", b"3"]
    assert all(data[o - 1:o] == b"\n" for o in offsets)
    t = read_dim(tmp_path / "ompss.dim")
    assert np.isclose(t.secs.sum(), 36e-9)
    auth = read_dim(tmp_path / "authentic.dim")
    assert auth.threads == [1] and np.isclose(auth.secs.sum(), 36e-9)


def corrupt(tmp_path, edit) -> str:
    path = write_dim(tmp_path / "c.dim", "c", [1, 1], BLOCKS)
    path.write_bytes(edit(path.read_bytes()))
    with pytest.raises(DimError) as e:
        read_dim(path)
    message = str(e.value)
    assert "\n" not in message and message.startswith(str(path))
    return message


@pytest.mark.parametrize("edit,expected", [
    (lambda d: d[:len(d) // 2], "truncated: the header puts the s: trailer at byte"),
    (lambda d: d.replace(b"1:0:0:1.5", b"1:0:0:x.5"), r"c.dim:2: the CPU burst duration is not a number"),
    (lambda d: d.replace(b"20:0:0:7003:2", b"20:0:0:7003:z"), r"c.dim:3: a field is not an integer"),
    (lambda d: d.replace(b"20:0:0:7003:2", b"20:0:0:700302"), r"c.dim:3: a record of kind 20 has 5 fields, this one 4"),
    (lambda d: d.replace(b"20:0:0:7003:2", b"10:0:0:7003:2"),
     r"c.dim:3: a record of kind 10 has 9 or 10 fields, this one 5"),
    (lambda d: d.replace(b"20:0:0:7003:2", b"77:0:0:7003:2"), r"c.dim:3: not a record"),
    (lambda d: d.replace(b"1:1:0:0.0", b"1:5:0:0.0"), r"c.dim:7: task or thread id beyond"),
    (lambda d: d.replace(b"3:1:0:0:0:8:9:0:1", b"3:1:0:0:7:8:9:0:1"), r"c.dim:9: partner thread outside"),
    (lambda d: d.replace(b"#DIMEMAS", b"#DIMEMOS"), r"c.dim:1: not a Dimemas trace header"),
    (lambda d: d.replace(b"s:1:", b"s:1:1"), "the s: trailer puts task 1 thread 0 at byte"),
    (lambda d: d.replace(b":2(", b":3("), "the header declares 3 tasks"),
])
def test_corrupt_files_name_file_and_line(tmp_path, edit, expected):
    assert re.search(expected, corrupt(tmp_path, edit))


def test_missing_file(tmp_path):
    with pytest.raises(DimError, match="cannot read"):
        read_dim(tmp_path / "none.dim")


@pytest.mark.parametrize("record,expected", [
    ("2:0:0:1:8:4294967301:0:0", "tag 4294967301 is outside -2147483648..2147483647"),
    ("2:0:0:1:8:5:4294967296:0", "communicator 4294967296 is outside -2147483648..2147483647"),
    ("2:0:0:4294967297:8:5:0:0", "partner task 4294967297 is outside 0..1"),
    ("2:0:0:1:0:8:5:0:257", "send sync / receive type 257 is outside 0..3"),
    ("20:0:0:4294974299:1", "event type 4294974299 is outside -2147483648..2147483647"),
])
def test_fields_beyond_32_bits_are_refused_not_wrapped(tmp_path, record, expected):
    """Wrapped to 32 bits, the tag would be 5 and match the receive's tag 5 (likewise comm 0,
    partner task 1, sync mode 1, event type 7003)."""
    path = write_dim(tmp_path / "w.dim", "w", [1, 1], [f"1:0:0:0.0\n{record}\n", "1:1:0:0.0\n3:1:0:0:8:5:0:0\n"])
    with pytest.raises(DimError) as e:
        read_dim(path)
    assert str(e.value).startswith(f"{path}:3: {expected}: ")


def numpy_path(monkeypatch) -> None:
    """Every chunk through the numpy parser, as for a line dim_records.c does not take."""
    monkeypatch.setattr(dimemas._UsualRecords, "parse", lambda self, data, start, stop, row: -1)


USUAL = ["1:0:0:1.5\n1:0:0:7\n1:0:0:5.\n1:0:0:.25\n1:0:0:0.000000001\n20:0:0:7003:-2\n0:0:0\n"
         "2:0:0:1:1048576:1:0:0\n2:0:0:1:0:8:-9:3:3\n2:0:0:1:0:8:9:2147483647:1\n"
         "10:0:0:11:1:0:0:8:8\n10:0:0:3:1:1:0:0:16:2\n",
         "1:1:0:0.0\n3:1:0:0:1048576:1:0:0\n3:1:0:0:0:8:-9:0:1\n3:1:0:0:0:8:-9:0:2\n3:1:0:0:0:8:9:2147483647:0\n"
         "10:1:0:11:1:0:0:8:8\n10:1:0:3:1:0:0:16:0:2\n20:1:0:-2147483648:9999999999999999\n"]


@pytest.mark.parametrize("unusual", [None, "1:0:0:2.5e-3\n", "1:0:0:12345678901.000000001\n",
                                     "1:0:0:1234567890123456789\n"])
def test_the_c_parser_reads_what_the_numpy_path_reads(tmp_path, monkeypatch, unusual):
    """Every record kind in every form, through dim_records.c; a line it does not take (an
    exponent, more than 15 digits, a value past 16 digits) sends its chunk to the numpy path,
    and the columns are the same either way."""
    blocks = [USUAL[0] + (unusual or ""), USUAL[1]]
    path = write_dim(tmp_path / "u.dim", "u", [1, 1], blocks, {1: (0, 1)})
    fast = read_dim(path)
    numpy_path(monkeypatch)
    slow = read_dim(path)
    for column in dimemas.COLUMNS:
        assert np.array_equal(getattr(fast, column), getattr(slow, column)), column
    assert fast.thread_start.tolist() == slow.thread_start.tolist() == [0, 12 + bool(unusual), 20 + bool(unusual)]
    assert fast.b[7] == -1 and fast.tag[8] == -9 and fast.comm[9] == 2**31 - 1 and fast.mode[10] == 1


def test_out_of_range_values_are_refused_with_the_c_parser_on(tmp_path):
    """A partner thread beyond its task and a negative size: the C parser leaves the chunk to
    the numpy path, which names the line."""
    for record, expected in (("3:1:0:0:1:8:9:0:0\n", "partner thread outside its task"),
                             ("3:1:0:0:-8:9:0:0\n", "negative message size")):
        path = write_dim(tmp_path / "r.dim", "r", [1, 1], ["1:0:0:1\n", record])
        with pytest.raises(DimError, match=f"r.dim:3: {expected}"):
            read_dim(path)


def test_bulk_ompss_dim_is_the_template_text(tmp_path):
    """ompss.dim made in bulk equals the thread blocks ``task_thread`` and ``dependency_records``
    (shared with the MPI/OmpSs traces) give, byte for byte."""
    rng = np.random.default_rng(3)
    n = 40
    src = rng.integers(0, n - 1, 90)
    dst = src + rng.integers(1, 5, 90)
    keep = dst < n
    pairs = np.unique(src[keep] * n + dst[keep])
    src, dst = pairs // n, pairs % n
    names = [rng.choice(["a", "b", "main"]) for _ in range(n)]
    work = rng.integers(0, 10**7, n)
    priority = rng.integers(0, 50, n).tolist()
    ompss.write_ompss(tmp_path / "bulk.dim", names, work, src, dst, priority, 2.4e9)
    values = task_type_values(names)
    receive, send = ompss.dependency_records(0, 0)
    blocks = [ompss.task_thread(0, i, priority[i], values[names[i]],
                                "".join(receive.format(i, p) for p in src[dst == i].tolist()),
                                f"1:0:{i}:{work[i] / 2.4e9:.9f}\n",
                                "".join(send.format(i, s) for s in dst[src == i].tolist())) for i in range(n)]
    assert (tmp_path / "bulk.dim").read_bytes() == write_dim(tmp_path / "text.dim", "ompss", [n], blocks).read_bytes()
