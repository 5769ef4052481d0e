"""The analytic task graph of examples/cholesky/cholesky.c, for checking traces against.

Derivation: the task instances are numbered 1, 2, ... in the order the program creates them,
which is the loop nest of cholesky.c (right-looking, as in the OmpSs cholesky):

    for k in 0..nt-1:
        potrf(A[k][k])
        for i in k+1..nt-1: trsm(A[k][k], A[k][i])
        for i in k+1..nt-1:
            for j in k+1..i-1: gemm(A[k][i], A[k][j], A[j][i])
            syrk(A[k][i], A[i][i])

and each kernel reads and writes the tiles documented in cholesky.c:

    potrf  RW A[k][k]
    trsm   R  A[k][k]           RW A[k][i]
    gemm   R  A[k][i], A[k][j]  RW A[j][i]
    syrk   R  A[k][i]           RW A[i][i]

Replaying that sequence while remembering the last writer of every tile gives the
read-after-write dependencies: an instance depends on the last writer of each tile it reads, a
written tile included (the kernels update their output in place, so they read it first). Tiles
are only written by tasks once tareador_ON() is reached (the initialisation precedes it), so a
tile's first reader depends on nothing.
"""

from __future__ import annotations

Tile = tuple[int, int]


def cholesky_tasks(nt: int) -> list[tuple[str, tuple[Tile, ...], tuple[Tile, ...]]]:
    """(name, tiles read only, tiles read and written) of every task instance, in creation order;
    tile (k, i) is A[k][i] of cholesky.c."""
    tasks = []
    for k in range(nt):
        tasks.append(("potrf", (), ((k, k),)))
        for i in range(k + 1, nt):
            tasks.append(("trsm", ((k, k),), ((k, i),)))
        for i in range(k + 1, nt):
            for j in range(k + 1, i):
                tasks.append(("gemm", ((k, i), (k, j)), ((j, i),)))
            tasks.append(("syrk", ((k, i),), ((i, i),)))
    return tasks


def expected_cholesky_raw_edges(nt: int) -> set[tuple[int, int, str, str]]:
    """RAW edges (src_index, dst_index, src_name, dst_name) between the task instances of
    `cholesky nt TS` (any TS), instances numbered from 1 in creation order."""
    tasks = cholesky_tasks(nt)
    edges = set()
    last_writer: dict[Tile, int] = {}
    for index, (name, reads, writes) in enumerate(tasks, start=1):
        for tile in reads + writes:
            if tile in last_writer:
                src = last_writer[tile]
                edges.add((src, index, tasks[src - 1][0], name))
        for tile in writes:
            last_writer[tile] = index
    return edges
