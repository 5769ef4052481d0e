"""What tareador makes of the MPI calls it does not model (docs/guide/mpi.md: calls not modelled).

The tracer records every MPI call; the ones it models carry their messages and buffers. Of the
others, most move no data between buffers (MPI_Wtime, MPI_Type_commit, MPI_Comm_group, probes):
their place in time is all there is to them, and leaving them out changes nothing. The rest do
move data (non-blocking and neighbourhood collectives, MPI_Pack, file I/O, ...): a run that made
them lacks messages and dependencies, which the summary counts per call and warns about. One-sided
communication is refused: its transfers complete at a later synchronisation of another rank,
and a run without them would be a different program.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tareador.taskgraph.model import MpiCall

# Calls that move no data between buffers, without the MPI-4 large-count suffix (_c).
NO_DATA = re.compile(
    r"MPI_(Wtime|Wtick|Abort|Initialized|Finalized|Query_thread|Is_thread_main|Get_(count|elements(_x)?|"
    r"processor_name|version|library_version|address)|Address|Type_\w+|Comm_\w+|Group_\w+|Intercomm_\w+|Cart\w*|"
    r"Graph\w*|Dist_graph\w*|Dims_create|Topo_test|Errhandler_\w+|Error_\w+|Add_error_\w+|\w+_errhandler|"
    r"\w+_(get|set|delete)_attr|\w+_(create|free)_keyval|Attr_\w+|Keyval_\w+|Op_\w+|Info_\w+|Probe|Iprobe|Mprobe|"
    r"Improbe|Cancel|Test_cancelled|Request_(free|get_status)|Status_\w+|Buffer_(attach|detach)|Pack_size|"
    r"Pack_external_size|Alloc_mem|Free_mem|Pcontrol|Session_\w+|Win_\w+|"
    r"(Send|Bsend|Ssend|Rsend|Recv)_init|Start|Startall)")
# One-sided communication: the calls that move data between windows.
ONE_SIDED = re.compile(r"MPI_R?(Put|Get|Accumulate|Get_accumulate)|MPI_Fetch_and_op|MPI_Compare_and_swap")


def moves_no_data(call: str) -> bool:
    return NO_DATA.fullmatch(call.removesuffix("_c")) is not None


def one_sided(call: str) -> bool:
    return ONE_SIDED.fullmatch(call.removesuffix("_c")) is not None


def first_one_sided(calls: Iterable[MpiCall]) -> MpiCall | None:
    """The first call of a one-sided transfer, by rank and order; None if none."""
    return next((c for c in calls if one_sided(c.call)), None)
