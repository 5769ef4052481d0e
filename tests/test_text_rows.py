"""text_rows, the bulk writer of the Paraver, Chrome and Dimemas files: each field exactly as
Python formats it, whatever the value."""

from __future__ import annotations

import io
import random

import numpy as np

from tareador.formats.text_rows import CHUNK_ROWS, Rows, fixed, integer, real, text

EXTREMES = [0, 1, -1, 9, 10, 99, 100, 12345, -98765, 2**31, -2**31, 2**62 + 3, 2**63 - 1, -2**63 + 1, -2**63]


def test_integers_and_fixed_points_as_python_writes_them():
    v = np.array(EXTREMES, np.int64)
    assert Rows([[integer(v), "\n"]]).text() == "".join(f"{x}\n" for x in EXTREMES)
    for decimals in (1, 3, 9, 18):
        expected = "".join(f"{'-' if x < 0 else ''}{abs(x) // 10**decimals}.{abs(x) % 10**decimals:0{decimals}d};"
                           for x in EXTREMES)
        assert Rows([[fixed(v, decimals), ";"]]).text() == expected


def test_reals_as_python_formats_them():
    """%.*f of C and Python's format are both correctly rounded: the same text for any double."""
    rng = random.Random(1)
    values = [0.0, -0.0, 0.5, 1.5, 2.5, 1e-9, 5e-10, 1.0000000005, 123456789.123456789, 1e300, -7.25, float("inf")]
    values += [rng.uniform(0, 10) * 10 ** rng.randint(-12, 12) for _ in range(2000)]
    for decimals in (0, 3, 9):
        assert Rows([[real(np.array(values), decimals), "\n"]]).text() == \
            "".join(f"{x:.{decimals}f}\n" for x in values)


def test_layouts_sources_texts_and_chunks():
    """Records taken in any order from several layouts; texts by index (UTF-8); more records
    than one chunk, and where each ends."""
    n = 2 * CHUNK_ROWS + 5
    names = ["main", "réduction", 'a"b']
    kind = np.arange(n) % 3
    layout_of = (np.arange(n) % 2).astype(np.int8)
    source = np.arange(n)[::-1].copy()
    rows = Rows([["a:", integer(np.arange(n)), ",", text(kind, names), "\n"], ["b:", fixed(np.arange(n) * 7, 2), "\n"]],
                source, layout_of)
    expected = [f"a:{s},{names[s % 3]}\n" if k % 2 == 0 else f"b:{s * 7 // 100}.{s * 7 % 100:02d}\n"
                for k, s in enumerate(source.tolist())]
    f = io.BytesIO()
    ends = np.zeros(n, np.int64)
    assert rows.write(f, ends) == len("".join(expected).encode())
    assert f.getvalue().decode() == "".join(expected)
    assert ends.tolist() == np.cumsum([len(e.encode()) for e in expected]).tolist()
    assert rows.ends().tolist() == ends.tolist()
    picked = rows.take(np.array([3, 0]))
    assert picked.text() == expected[3] + expected[0]
    assert Rows([["x", integer(np.zeros(0, np.int64))]]).text() == ""
