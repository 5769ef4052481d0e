"""The analytic Cholesky DAG (tests/cholesky_dag.py) against graphs derived by hand."""

from __future__ import annotations

from collections import Counter

import pytest
from cholesky_dag import cholesky_tasks, expected_cholesky_raw_edges

pytestmark = pytest.mark.fast  # no program compiled, traced or launched (make test-fast)


def test_nt1_is_a_single_potrf():
    assert [name for name, _, _ in cholesky_tasks(1)] == ["potrf"]
    assert expected_cholesky_raw_edges(1) == set()


def test_nt2():
    # 1 potrf A00 -> 2 trsm A01 -> 3 syrk A11 -> 4 potrf A11: a chain.
    assert [name for name, _, _ in cholesky_tasks(2)] == ["potrf", "trsm", "syrk", "potrf"]
    assert expected_cholesky_raw_edges(2) == {
        (1, 2, "potrf", "trsm"),
        (2, 3, "trsm", "syrk"),
        (3, 4, "syrk", "potrf"),
    }


def test_nt3():
    # k=0: 1 potrf A00; 2 trsm A01; 3 trsm A02; 4 syrk A01->A11; 5 gemm A02,A01->A12; 6 syrk A02->A22
    # k=1: 7 potrf A11; 8 trsm A11->A12; 9 syrk A12->A22
    # k=2: 10 potrf A22
    tasks = cholesky_tasks(3)
    assert [name for name, _, _ in tasks] == [
        "potrf", "trsm", "trsm", "syrk", "gemm", "syrk", "potrf", "trsm", "syrk", "potrf"]
    assert Counter(name for name, _, _ in tasks) == {"potrf": 3, "trsm": 3, "syrk": 3, "gemm": 1}
    assert expected_cholesky_raw_edges(3) == {
        (1, 2, "potrf", "trsm"),   # A00
        (1, 3, "potrf", "trsm"),   # A00
        (2, 4, "trsm", "syrk"),    # A01
        (2, 5, "trsm", "gemm"),    # A01
        (3, 5, "trsm", "gemm"),    # A02
        (3, 6, "trsm", "syrk"),    # A02
        (4, 7, "syrk", "potrf"),   # A11
        (7, 8, "potrf", "trsm"),   # A11
        (5, 8, "gemm", "trsm"),    # A12, updated in place by trsm
        (8, 9, "trsm", "syrk"),    # A12
        (6, 9, "syrk", "syrk"),    # A22, updated in place by the second syrk
        (9, 10, "syrk", "potrf"),  # A22
    }


def test_instance_counts_follow_the_loop_nest():
    # nt potrf and nt(nt-1)/2 each of trsm and syrk; one gemm per (k, j < i) triple.
    for nt in range(1, 8):
        counts = Counter(name for name, _, _ in cholesky_tasks(nt))
        assert counts["potrf"] == nt
        assert counts["trsm"] == counts["syrk"] == nt * (nt - 1) // 2
        assert counts["gemm"] == nt * (nt - 1) * (nt - 2) // 6
