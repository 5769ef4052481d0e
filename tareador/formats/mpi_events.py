"""The events that say which MPI call a rank is in, numbered as Extrae numbers them.

Paraver users read MPI time through Extrae's event types (50000001 point-to-point, 50000002
collectives, 50000003 the rest) whose value names the function while a rank is in it and is 0
once it left; the standard Paraver configurations (MPI call, MPI time per rank) filter on those
types. Using Extrae's numbers (src/merger/paraver/MPI_EventEncoding.h and mpi_prv_events.c in
bsc-performance-tools/extrae) lets them open our timelines unchanged.
"""

from __future__ import annotations

from tareador.taskgraph.model import STARTED_RECEIVES, STARTED_SENDS

POINT_TO_POINT, COLLECTIVE, OTHER = 50000001, 50000002, 50000003
TYPE_LABELS = {POINT_TO_POINT: "MPI Point-to-point", COLLECTIVE: "MPI Collective Comm", OTHER: "MPI Other"}

# Function -> (event type, value) for every call the agent records by name.
CALLS = {
    "MPI_Send": (POINT_TO_POINT, 1), "MPI_Recv": (POINT_TO_POINT, 2), "MPI_Isend": (POINT_TO_POINT, 3),
    "MPI_Irecv": (POINT_TO_POINT, 4), "MPI_Wait": (POINT_TO_POINT, 5), "MPI_Waitall": (POINT_TO_POINT, 6),
    "MPI_Bsend": (POINT_TO_POINT, 33), "MPI_Ssend": (POINT_TO_POINT, 34), "MPI_Rsend": (POINT_TO_POINT, 35),
    "MPI_Ibsend": (POINT_TO_POINT, 36), "MPI_Issend": (POINT_TO_POINT, 37), "MPI_Irsend": (POINT_TO_POINT, 38),
    "MPI_Sendrecv": (POINT_TO_POINT, 41), "MPI_Sendrecv_replace": (POINT_TO_POINT, 42),
    "MPI_Waitany": (POINT_TO_POINT, 59), "MPI_Waitsome": (POINT_TO_POINT, 60), "MPI_Probe": (POINT_TO_POINT, 61),
    "MPI_Iprobe": (POINT_TO_POINT, 62), "MPI_Mprobe": (POINT_TO_POINT, 190), "MPI_Improbe": (POINT_TO_POINT, 191),
    "MPI_Mrecv": (POINT_TO_POINT, 192), "MPI_Imrecv": (POINT_TO_POINT, 193),
    "MPI_Bcast": (COLLECTIVE, 7), "MPI_Barrier": (COLLECTIVE, 8), "MPI_Reduce": (COLLECTIVE, 9),
    "MPI_Allreduce": (COLLECTIVE, 10), "MPI_Alltoall": (COLLECTIVE, 11), "MPI_Alltoallv": (COLLECTIVE, 12),
    "MPI_Gather": (COLLECTIVE, 13), "MPI_Gatherv": (COLLECTIVE, 14), "MPI_Scatter": (COLLECTIVE, 15),
    "MPI_Scatterv": (COLLECTIVE, 16), "MPI_Allgather": (COLLECTIVE, 17), "MPI_Allgatherv": (COLLECTIVE, 18),
    "MPI_Scan": (COLLECTIVE, 30), "MPI_Reduce_scatter": (COLLECTIVE, 80),
    "MPI_Reduce_scatter_block": (COLLECTIVE, 168), "MPI_Exscan": (COLLECTIVE, 214),
    "MPI_Comm_rank": (OTHER, 19), "MPI_Comm_size": (OTHER, 20), "MPI_Comm_create": (OTHER, 21),
    "MPI_Comm_dup": (OTHER, 22), "MPI_Comm_split": (OTHER, 23), "MPI_Comm_free": (OTHER, 25),
    "MPI_Init": (OTHER, 31), "MPI_Init_thread": (OTHER, 31), "MPI_Finalize": (OTHER, 32), "MPI_Test": (OTHER, 39),
    "MPI_Request_free": (OTHER, 115), "MPI_Testall": (OTHER, 125), "MPI_Testany": (OTHER, 126),
    "MPI_Testsome": (OTHER, 128), "MPI_Comm_split_type": (OTHER, 194),
    "MPI_Bsend_init": (OTHER, 112), "MPI_Recv_init": (OTHER, 116), "MPI_Send_init": (OTHER, 117),
    "MPI_Rsend_init": (OTHER, 121), "MPI_Ssend_init": (OTHER, 122), "MPI_Start": (OTHER, 123),
    "MPI_Startall": (OTHER, 124),
}
# The rows of a started persistent request ("MPI_Startall:MPI_Recv_init") are their start call's.
CALLS.update({name: CALLS[name.split(":")[0]] for name in STARTED_SENDS | STARTED_RECEIVES})


def event_labels(types) -> dict[int, tuple[str, dict[int, str]]]:
    """Paraver labels of the MPI event types among ``types``: each type's functions by value."""
    labels = {}
    for etype in sorted(set(types) & set(TYPE_LABELS)):
        values = {value: name for name, (t, value) in CALLS.items() if t == etype and name != "MPI_Init_thread"
                  and ":" not in name}
        labels[etype] = (TYPE_LABELS[etype], {0: "Outside MPI", **values})
    return labels
