"""End-to-end: the bundled examples traced have exactly their analytic task DAGs."""

from __future__ import annotations

import pytest

from tareador.tracing.run import trace
from tests.helpers import EXAMPLES


def analytic_cholesky(nt: int) -> tuple[list[str], set[tuple[int, int]]]:
    """Task names in creation order (1-based) and RAW edges from the last writer of every tile
    each kernel reads; the loop nest and read/write sets are those documented in cholesky.c."""
    names, edges, last_writer = [], set(), {}

    def task(name, reads, writes):
        names.append(name)
        me = len(names)
        for tile in reads + writes:  # a written tile is read first (RW)
            if tile in last_writer:
                edges.add((last_writer[tile], me))
        for tile in writes:
            last_writer[tile] = me

    for k in range(nt):
        task("potrf", [], [(k, k)])
        for i in range(k + 1, nt):
            task("trsm", [(k, k)], [(k, i)])
        for i in range(k + 1, nt):
            for j in range(k + 1, i):
                task("gemm", [(k, i), (k, j)], [(j, i)])
            task("syrk", [(k, i)], [(i, i)])
    return names, edges


@pytest.mark.fast
def test_analytic_model_by_hand():
    assert analytic_cholesky(2) == (["potrf", "trsm", "syrk", "potrf"], {(1, 2), (2, 3), (3, 4)})


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_traced_dag_is_the_analytic_one(compile_c, tmp_path, opt):
    nt, ts = 4, 8
    exe = compile_c(EXAMPLES / "cholesky" / "cholesky.c", opt=opt)
    t = trace([str(exe), str(nt), str(ts)], tmp_path / "t", progress=False)
    tasks = [x for x in t.fragments if not x.is_main]
    number = {x.id: i for i, x in enumerate(tasks, start=1)}
    names, edges = analytic_cholesky(nt)
    assert [x.name for x in tasks] == names
    through_tiles = {(number[d.src], number[d.dst]) for d in t.deps
                     if d.kind == "RAW" and d.src in number and d.dst in number and d.object.startswith("heap:")}
    assert through_tiles == edges
    others = {d.object for d in t.deps if d.kind == "RAW" and d.src in number and d.dst in number
              and not d.object.startswith("heap:")}
    # At -O0 nothing else links two tasks. At -O2 the kernels are inlined into main and really
    # pass spilled values through main's frame: those edges are named after the stack.
    assert others == set() if opt == "-O0" else others <= {"stack", "stack:main"}
    assert t.summary["instances"] == len(names) == 20
    assert t.parallelism > 1.5


def test_heat_stencil_dag(compile_c, tmp_path):
    """2 x 2 blocks, 3 iterations, the dependencies heat.c's header derives: a jacobi_block on
    itself and its 2 neighbours (not the diagonal one) of the previous iteration, through the
    grid written then; a residual_block on its own block's jacobi_block of this iteration and
    of the previous one (old and new grid); main on every residual_block of the iteration."""
    exe = compile_c(EXAMPLES / "heat" / "heat.c")
    t = trace([str(exe), "16", "8", "3"], tmp_path / "t", progress=False)
    blocks = [x for x in t.fragments if not x.is_main]
    assert [x.name for x in blocks] == (["jacobi_block"] * 4 + ["residual_block"] * 4) * 3
    number = {x.id: i for i, x in enumerate(blocks)}
    raw = {(number[d.src], number[d.dst]) for d in t.deps
           if d.kind == "RAW" and d.src in number and d.dst in number and d.object.startswith("heap:")}

    def jacobi(it, b):
        return 8 * it + b

    def residual(it, b):
        return 8 * it + 4 + b

    expected = set()
    for it in range(3):
        for b in range(4):
            bi, bj = divmod(b, 2)
            expected.add((jacobi(it, b), residual(it, b)))
            if it:
                expected.add((jacobi(it - 1, b), residual(it, b)))
                expected |= {(jacobi(it - 1, a), jacobi(it, b)) for a in range(4)
                             if abs(a // 2 - bi) + abs(a % 2 - bj) <= 1}
    assert raw == expected
    # main's fragment after each iteration sums residual[], which the 4 residual_blocks wrote.
    fragments = [x.id for x in t.fragments if x.is_main]
    into_main = {(number[d.src], d.dst) for d in t.deps
                 if d.kind == "RAW" and d.src in number and d.dst in fragments}
    assert {s for s, _ in into_main} == {residual(it, b) for it in range(3) for b in range(4)}


def test_static_library_gives_the_same_dag(compile_c, tmp_path):
    """Markers linked statically live inside the executable instead of libtareador.so."""
    dynamic = compile_c(EXAMPLES / "cholesky" / "cholesky.c")
    static = compile_c(EXAMPLES / "cholesky" / "cholesky.c", static=True)
    a = trace([str(dynamic), "3", "4"], tmp_path / "a", progress=False)
    b = trace([str(static), "3", "4"], tmp_path / "b", progress=False)
    raw = [{(d.src, d.dst, d.bytes) for d in t.deps if d.kind == "RAW" and d.object.startswith("heap:")}
           for t in (a, b)]
    assert raw[0] == raw[1] and len(raw[0]) == len(analytic_cholesky(3)[1])
    assert [x.name for x in a.fragments] == [x.name for x in b.fragments]
