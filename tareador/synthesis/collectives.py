"""Collective operations written as the point-to-point messages of a named algorithm.

The bundled replay engine has no Dimemas global operations (record 10), so an MPI run's
authentic.dim spells each collective out as the messages a common MPI implementation sends
(MPICH's choices for small messages): binomial trees for Bcast and Reduce, recursive doubling for
Allreduce, Scan, Reduce_scatter and Barrier, linear Gather/Scatter, a ring for Allgather, pairwise
exchange for Alltoall. Every member's steps are listed in the order it takes them; an exchange
with a partner is an immediate send followed by a blocking receive, as MPI_Sendrecv.

Message sizes come from each member's ``bytes`` in mpi.csv (what it sends, as count x type
size of its send buffer): the root's for Bcast and Reduce, each sender's own otherwise. What
goes to every member (Scatter, Alltoall) is recorded as the total, as are the v-variants' varying
blocks: their messages are the total split evenly.
"""

from __future__ import annotations

from collections.abc import Callable

from tareador.taskgraph.mpi_calls import BY_NAME, COLLECTIVES

SEND, ISEND, RECV = "send", "isend", "recv"
Step = tuple[str, int, int]  # (SEND | ISEND | RECV, partner's index in the communicator, bytes)


def _binomial_bcast(p: int, root: int, size: int) -> list[list[Step]]:
    """Relative rank v gets the data from v minus its lowest set bit, then passes it to
    v + 2^j for each lower power of two."""
    steps: list[list[Step]] = [[] for _ in range(p)]
    for v in range(p):
        me = (v + root) % p
        mask = 1
        while mask < p and not v & mask:
            mask <<= 1
        if mask < p:
            steps[me].append((RECV, (v - mask + root) % p, size))
        mask >>= 1
        while mask:
            if v + mask < p:
                steps[me].append((SEND, (v + mask + root) % p, size))
            mask >>= 1
    return steps


def _binomial_reduce(p: int, root: int, size: int) -> list[list[Step]]:
    """The broadcast tree backwards: each gets from its children, nearest first, then sends up."""
    down = _binomial_bcast(p, root, size)
    return [[(RECV if op == SEND else SEND, peer, n) for op, peer, n in reversed(steps)] for steps in down]


def _recursive_doubling(p: int, sizes: list[int]) -> list[list[Step]]:
    """Exchange with the partner whose rank differs in bit j, for each j, among the largest power
    of two of the ranks; the first 2 x (p - that power) ranks fold in pairs before and unfold after."""
    pof2 = 1 << (p.bit_length() - 1)
    rem = p - pof2
    steps: list[list[Step]] = [[] for _ in range(p)]
    for i in range(p):
        if i < 2 * rem:
            steps[i].append((SEND, i + 1, sizes[i]) if i % 2 == 0 else (RECV, i - 1, sizes[i - 1]))
            if i % 2 == 0:
                continue
            new = i // 2
        else:
            new = i - rem
        mask = 1
        while mask < pof2:
            other = new ^ mask
            partner = other * 2 + 1 if other < rem else other + rem
            steps[i] += [(ISEND, partner, sizes[i]), (RECV, partner, sizes[partner])]
            mask <<= 1
        if i < 2 * rem:
            steps[i].append((SEND, i - 1, sizes[i]))
    for i in range(0, 2 * rem, 2):
        steps[i].append((RECV, i + 1, sizes[i + 1]))
    return steps


def _linear_gather(p: int, root: int, sizes: list[int]) -> list[list[Step]]:
    steps: list[list[Step]] = [[(SEND, root, sizes[i])] if i != root else [] for i in range(p)]
    steps[root] = [(RECV, i, sizes[i]) for i in range(p) if i != root]
    return steps


def _linear_scatter(p: int, root: int, size: int) -> list[list[Step]]:
    steps: list[list[Step]] = [[(RECV, root, size)] if i != root else [] for i in range(p)]
    steps[root] = [(SEND, i, size) for i in range(p) if i != root]
    return steps


def _ring_allgather(p: int, sizes: list[int]) -> list[list[Step]]:
    """At step s each rank passes on to its right the block that started s ranks to its left."""
    return [[step for s in range(p - 1) for step in ((ISEND, (i + 1) % p, sizes[(i - s) % p]),
                                                     (RECV, (i - 1) % p, sizes[(i - s - 1) % p]))]
            for i in range(p)]


def _pairwise_alltoall(p: int, sizes: list[int]) -> list[list[Step]]:
    """At step s each rank sends its block for the rank s to its right and gets the one from s to its left."""
    return [[step for s in range(1, p) for step in ((ISEND, (i + s) % p, sizes[i]),
                                                    (RECV, (i - s) % p, sizes[(i - s) % p]))]
            for i in range(p)]


# operation -> steps(members, root index, bytes of each member), of the algorithm mpi_calls.FUNCTIONS names
_STEPS: dict[str, Callable[[int, int, list[int]], list[list[Step]]]] = {
    "MPI_Bcast": lambda p, r, b: _binomial_bcast(p, r, b[r]),
    "MPI_Reduce": lambda p, r, b: _binomial_reduce(p, r, b[r]),
    "MPI_Allreduce": lambda p, r, b: _recursive_doubling(p, b),
    "MPI_Scan": lambda p, r, b: _recursive_doubling(p, b),
    "MPI_Exscan": lambda p, r, b: _recursive_doubling(p, b),
    "MPI_Reduce_scatter": lambda p, r, b: _recursive_doubling(p, b),
    "MPI_Reduce_scatter_block": lambda p, r, b: _recursive_doubling(p, b),
    "MPI_Barrier": lambda p, r, b: _recursive_doubling(p, [0] * p),
    "MPI_Gather": _linear_gather,
    "MPI_Gatherv": _linear_gather,
    "MPI_Scatter": lambda p, r, b: _linear_scatter(p, r, b[r] // p),
    "MPI_Scatterv": lambda p, r, b: _linear_scatter(p, r, b[r] // p),
    "MPI_Allgather": lambda p, r, b: _ring_allgather(p, b),
    "MPI_Allgatherv": lambda p, r, b: _ring_allgather(p, b),
    "MPI_Alltoall": lambda p, r, b: _pairwise_alltoall(p, [n // p for n in b]),
    "MPI_Alltoallv": lambda p, r, b: _pairwise_alltoall(p, [n // p for n in b]),
}
# operation -> (algorithm's name, steps): every collective of the table (a KeyError here names one without steps)
ALGORITHMS = {name: (BY_NAME[name].algorithm, _STEPS[name]) for name in sorted(COLLECTIVES)}


def steps(operation: str, root: int, sizes: list[int]) -> list[list[Step]]:
    """Each member's messages for one collective; ``root`` is an index into the members."""
    return ALGORITHMS[operation][1](len(sizes), root, sizes)
