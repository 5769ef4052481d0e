"""The events that say which MPI call a rank is in, numbered as Extrae numbers them.

Paraver users read MPI time through Extrae's event types (50000001 point-to-point, 50000002
collectives, 50000003 the rest) whose value names the function while a rank is in it and is 0
once it left; the standard Paraver configurations (MPI call, MPI time per rank) filter on those
types. Using Extrae's numbers (src/merger/paraver/MPI_EventEncoding.h and mpi_prv_events.c in
bsc-performance-tools/extrae) lets them open our timelines unchanged.
"""

from __future__ import annotations

from tareador.taskgraph.mpi_calls import COLLECTIVE_EVENTS, FUNCTIONS, OTHER_EVENTS, P2P_EVENTS, STARTED

TYPE_LABELS = {P2P_EVENTS: "MPI Point-to-point", COLLECTIVE_EVENTS: "MPI Collective Comm", OTHER_EVENTS: "MPI Other"}

# Function -> (event type, value) for every call the agent records by name (mpi_calls.FUNCTIONS);
# the rows of a started persistent request ("MPI_Startall:MPI_Recv_init") are their start call's.
CALLS = {f.name: f.paraver for f in FUNCTIONS}
CALLS.update({name: CALLS[name.split(":")[0]] for name in STARTED})


def event_labels(types) -> dict[int, tuple[str, dict[int, str]]]:
    """Paraver labels of the MPI event types among ``types``: each type's functions by value."""
    labels = {}
    for etype in sorted(set(types) & set(TYPE_LABELS)):
        values = {value: name for name, (t, value) in CALLS.items() if t == etype and name != "MPI_Init_thread"
                  and ":" not in name}
        labels[etype] = (TYPE_LABELS[etype], {0: "Outside MPI", **values})
    return labels
