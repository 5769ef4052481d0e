"""The examples of benchmarks/predict_vs_real.py: each traced program has exactly the task graph
its header derives. (Their OpenMP versions carry the pragmas tareador hints prints, and run right
on 1 and 2 threads: tests/test_hints.py::test_openmp_examples_use_the_generated_pragmas, on the
same traces.)"""

from __future__ import annotations

from tareador.taskgraph.store import load_trace


def task_edges(t) -> tuple[list[str], set[tuple[int, int]]]:
    """Task instances' names in creation order, and the RAW edges between them (1-based)."""
    tasks = [x for x in t.fragments if not x.is_main and x.starts_instance]
    number = {x.id: i for i, x in enumerate(tasks, start=1)}
    edges = {(number[d.src], number[d.dst]) for d in t.deps if d.kind == "RAW" and d.src in number
             and d.dst in number and d.src != d.dst}
    return [x.name for x in tasks], edges


def writers(created: list[tuple[str, list, list]]) -> tuple[list[str], set[tuple[int, int]]]:
    """Names and RAW edges of tasks (name, blocks read, blocks written) created in that order, each
    depending on the last task that wrote a block it reads or writes (a written block is read
    first by these kernels)."""
    last, edges = {}, set()
    for k, (_, reads, written) in enumerate(created, start=1):
        edges |= {(last[b], k) for b in reads + written if b in last}
        last.update({b: k for b in written})
    return [name for name, _, _ in created], edges


def test_chainside(traced_example):
    t = load_trace(traced_example("chainside", "4", "1000"))
    names, edges = task_edges(t)
    assert names == ["chain", "side"] * 4
    assert edges == {(1, 3), (3, 5), (5, 7)}
    chains = [x for x in t.fragments if x.name == "chain"]
    assert {d.object for d in t.deps if d.kind == "RAW" and d.dst in {c.id for c in chains[1:]}} == {"state"}


def sparselu_tasks(nb: int) -> list[tuple[str, list, list]]:
    """BOTS' pattern and the loop nest of sparselu.c: (name, parts read, parts written), a part
    being a block's first row ("top") or the others ("rest"): lu0 and fwd never write a block's
    first row (their loops start below it), and fwd reads only the strictly lower triangle of the
    diagonal block, all in its other rows."""
    present = {(i, j) for i in range(nb) for j in range(nb)
               if not ((i < j and i % 3) or (i > j and j % 3) or i % 2 or j % 2) or abs(i - j) <= 1}

    def whole(block):
        return [(block, "top"), (block, "rest")]

    created = []
    for k in range(nb):
        created.append(("lu0", whole((k, k)), [((k, k), "rest")]))
        created += [("fwd", [((k, k), "rest")] + whole((k, j)), [((k, j), "rest")])
                    for j in range(k + 1, nb) if (k, j) in present]
        created += [("bdiv", whole((k, k)), whole((i, k))) for i in range(k + 1, nb) if (i, k) in present]
        for i in range(k + 1, nb):
            for j in range(k + 1, nb):
                if (i, k) in present and (k, j) in present:
                    present.add((i, j))
                    created.append(("bmod", whole((i, k)) + whole((k, j)), whole((i, j))))
    return created


def test_sparselu_with_fill_in(traced_example):
    """6 x 6 blocks: lu0, fwd, bdiv, bmod in BOTS' order with the fill-in main allocates; every
    part of a block a task reads or updates comes from the last task that wrote it; the zeros of
    each fill-in block (a block absent from the pattern) from main, to the first bmod of it."""
    t = load_trace(traced_example("sparselu", "6", "8"))
    names, edges = task_edges(t)
    created = sparselu_tasks(6)
    assert (names, edges) == writers(created)
    main = {x.id for x in t.fragments if x.is_main}
    bmods = [x.id for x in t.fragments if x.starts_instance and x.name == "bmod"]
    from_main = [d for d in t.deps if d.kind == "RAW" and d.src in main]
    # Every task loads its blocks' pointers from the table main fills in: that table is the
    # object main passes to the other kernels too; what reaches only bmods are the zeros.
    table = {d.object for d in from_main if d.dst not in bmods and d.dst not in main}
    zeros = {bmods.index(d.dst) for d in from_main if d.dst in bmods and d.object not in table
             and d.object.startswith("heap:")}
    original = {b for _, _, written in created[:1] for b in written} | {
        (i, j) for i in range(6) for j in range(6)
        if not ((i < j and i % 3) or (i > j and j % 3) or i % 2 or j % 2) or abs(i - j) <= 1}
    first_bmod, seen = set(), set()
    for k, (_, _, written) in enumerate(c for c in created if c[0] == "bmod"):
        block = written[0][0]
        if block not in original and block not in seen:
            first_bmod.add(k)
        seen.add(block)
    assert zeros == first_bmod and zeros


def heat_blocks_tasks(nb: int, iterations: int) -> list[tuple[str, list, list]]:
    """(name, blocks read, blocks written) per task; a block is (grid, b), the grids swapping."""
    created = []
    for t in range(iterations):
        old, new = t % 2, 1 - t % 2
        for b in range(nb * nb):
            bi, bj = divmod(b, nb)
            around = {b, b - nb if bi else b, b + nb if bi < nb - 1 else b, b - 1 if bj else b,
                      b + 1 if bj < nb - 1 else b}
            created.append(("jacobi_block", [(old, x) for x in sorted(around)], [(new, b)]))
        created += [("residual_block", [(old, b), (new, b)], [("residual", b)]) for b in range(nb * nb)]
    return created


def test_heat_blocks_names_its_blocks(traced_example):
    """4 x 4 blocks of 4 x 4 cells, 3 iterations: each jacobi_block reads its block and its
    neighbours' of the previous iteration, each residual_block its block of both grids. (A
    jacobi_block writes every cell of its block: no read of the block it overwrites, unlike the
    writers() rule, hence the written blocks' earlier writers are left out.)"""
    t = load_trace(traced_example("heat_blocks", "16", "4", "3"))
    names, edges = task_edges(t)
    created = heat_blocks_tasks(4, 3)
    last, expected = {}, set()
    for k, (_, reads, written) in enumerate(created, start=1):
        expected |= {(last[b], k) for b in reads if b in last}
        last.update({b: k for b in written})
    assert names == [name for name, _, _ in created]
    assert edges == expected


def test_integrate_divide_and_conquer(traced_example):
    """LEVELS 2: split(1) creates split(2) and split(3), each two leaves; each split's third
    fragment reads 8 bytes from each child (its leaf's fragment or its split's third); main
    reads the root's."""
    t = load_trace(traced_example("integrate", "2", "100"))
    splits = [x for x in t.fragments if x.name == "split"]
    assert [x.name for x in t.fragments if x.starts_instance and not x.is_main] == ["split", "split", "leaf", "leaf",
                                                                                 "split", "leaf", "leaf"]
    assert len(splits) == 9  # 3 instances of 3 fragments
    last = {}
    for x in t.fragments:
        last[x.instance] = x.id
    into = {}
    for d in t.deps:
        if d.kind == "RAW" and d.src != d.dst:
            into.setdefault(d.dst, set()).add((d.src, d.bytes))
    for s in {x.instance for x in splits}:
        children = [x.instance for x in t.fragments if x.starts_instance and x.parent >= 0
                    and t.fragments[[y.id for y in t.fragments].index(x.parent)].instance == s]
        assert len(children) == 2
        assert into[last[s]] >= {(last[c], 8) for c in children}
