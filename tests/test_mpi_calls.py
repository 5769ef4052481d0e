"""The MPI call vocabulary is one table (taskgraph/mpi_calls.FUNCTIONS): the agent's C and
JavaScript agree with it, and every output's numbering of a function follows from it. A function
added to the agent and not to the table (or the other way round) fails here."""

from __future__ import annotations

import re

from tareador.formats import mpi_events
from tareador.formats.dimemas import GLOBAL_OPS
from tareador.synthesis import collectives
from tareador.taskgraph import mpi_calls
from tareador.taskgraph.mpi_calls import (
    BLOCKING,
    COLLECTIVE,
    COMPLETION,
    FUNCTIONS,
    IMMEDIATE,
    OTHER,
    PERSISTENT,
    RECEIVE,
    SEND,
    SENDRECV,
    START,
)
from tests.helpers import ROOT

MPI_C = (ROOT / "tracer_agents" / "mpi.c").read_text()
AGENT_JS = (ROOT / "tracer_agents" / "agent.js").read_text()

# What each of mpi.c's shapes (its enum of how a call is modelled) is, as the table says it.
SHAPES = {
    "SEND": (SEND, BLOCKING), "ISEND": (SEND, IMMEDIATE), "SEND_INIT": (SEND, PERSISTENT),
    "RECV": (RECEIVE, BLOCKING), "MRECV": (RECEIVE, BLOCKING), "IRECV": (RECEIVE, IMMEDIATE),
    "IMRECV": (RECEIVE, IMMEDIATE), "RECV_INIT": (RECEIVE, PERSISTENT),
    "SENDRECV": (SENDRECV, BLOCKING), "SENDRECV_REPLACE": (SENDRECV, BLOCKING),
    "START": (START, ""), "STARTALL": (START, ""),
    **{s: (COMPLETION, "") for s in ("WAIT", "TEST", "WAITALL", "TESTALL", "WAITANY", "TESTANY", "WAITSOME",
                                     "TESTSOME")},
    **{s: (COLLECTIVE, "") for s in ("BARRIER", "BCAST", "REDUCE", "ALLREDUCE", "GATHER", "GATHERV", "SCATTER",
                                     "SCATTERV", "ALLGATHER", "ALLGATHERV", "ALLTOALL", "ALLTOALLV", "REDUCE_SCATTER",
                                     "REDUCE_SCATTER_BLOCK")},
    **{s: (OTHER, "") for s in ("INIT", "FINALIZE", "COMM_USE", "COMM_NEW", "COMM_FREE", "MPROBE", "IMPROBE", "IPROBE",
                                "REQUEST_FREE")},
}


def mpi_c_models() -> dict[str, tuple[str, int]]:
    """mpi.c's MODELS: name -> (shape, at)."""
    body = MPI_C[MPI_C.index("static const Model MODELS[]"):]
    body = body[:body.index("};")]
    return {name: (shape, int(at)) for name, shape, at in re.findall(r'\{\s*"(MPI_\w+)",\s*(\w+),\s*(\d+)\s*\}', body)}


def js_list(text: str) -> list[str]:
    return re.findall(r"'(MPI_\w+)'", text)


def test_mpi_c_models_exactly_the_functions_the_table_says():
    models = mpi_c_models()
    assert len(models) == MPI_C[MPI_C.index("static const Model MODELS[]"):].split("};")[0].count('"MPI_')
    assert set(models) == {f.name for f in FUNCTIONS if f.modelled}
    assert set(SHAPES) == {shape for shape, _ in models.values()}
    for name, (shape, _) in models.items():
        f = mpi_calls.BY_NAME[name]
        assert (f.kind, f.mode) == SHAPES[shape], name


def test_started_rows_are_named_in_the_tables_order():
    """agent.js names the rows an MPI_Start(all) makes by the request's kind, which mpi.c's SEND_INIT
    and RECV_INIT rows give as an index into agent.js's list; the table's persistent set-up calls
    are that list."""
    statement = AGENT_JS[AGENT_JS.index("const STARTED_ROWS"):].split(";")[0]
    starts, inits = (js_list(part) for part in statement.split("flatMap"))
    assert tuple(starts) == mpi_calls.STARTS == ("MPI_Start", "MPI_Startall")
    assert tuple(inits) == mpi_calls.PERSISTENT_INITS
    models = mpi_c_models()
    assert [models[name] for name in mpi_calls.PERSISTENT_INITS] == [
        ("SEND_INIT", 0), ("SEND_INIT", 1), ("SEND_INIT", 2), ("SEND_INIT", 3), ("RECV_INIT", 4)]
    assert set(mpi_calls.STARTED) == {f"{s}:{i}" for s in starts for i in inits}


def test_the_derived_sets():
    assert mpi_calls.IMMEDIATE_SENDS == {"MPI_Isend", "MPI_Ibsend", "MPI_Irsend", "MPI_Issend"} | {
        f"{s}:{i}" for s in ("MPI_Start", "MPI_Startall")
        for i in ("MPI_Send_init", "MPI_Bsend_init", "MPI_Ssend_init", "MPI_Rsend_init")}
    assert mpi_calls.IMMEDIATE_RECEIVES == {"MPI_Irecv", "MPI_Imrecv", "MPI_Start:MPI_Recv_init",
                                            "MPI_Startall:MPI_Recv_init"}
    assert mpi_calls.SYNCHRONOUS_SENDS == {"MPI_Ssend", "MPI_Issend", "MPI_Start:MPI_Ssend_init",
                                           "MPI_Startall:MPI_Ssend_init"}
    assert mpi_calls.ROOTED == {"MPI_Bcast", "MPI_Reduce", "MPI_Gather", "MPI_Gatherv", "MPI_Scatter", "MPI_Scatterv"}
    assert len(mpi_calls.COLLECTIVES) == 16 and mpi_calls.ROOTED < mpi_calls.COLLECTIVES
    assert mpi_calls.COMPLETIONS == {f"MPI_{w}{s}" for w in ("Wait", "Test") for s in ("", "all", "any", "some")}
    # Bookkeeping is whatever carries no message: no set-up call, start or probe is a send or receive.
    assert mpi_calls.BOOKKEEPING.isdisjoint(mpi_calls.NONBLOCKING | mpi_calls.COLLECTIVES | mpi_calls.COMPLETIONS)
    assert {"MPI_Probe", "MPI_Send_init", "MPI_Startall", "MPI_Comm_split"} <= mpi_calls.BOOKKEEPING


def test_every_output_numbers_the_functions_of_the_table():
    """Paraver: one value per function within its event type (MPI_Init_thread is MPI_Init's), and
    started rows are their start's. Dimemas: each collective's global operation is its own name,
    but MPI_Exscan's (Dimemas has none: written as MPI_Scan). collectives.py: an algorithm for each."""
    events = [f.paraver for f in FUNCTIONS if f.name != "MPI_Init_thread"]
    assert len(set(events)) == len(events)
    assert mpi_events.CALLS["MPI_Init_thread"] == mpi_events.CALLS["MPI_Init"] == (50000003, 31)
    assert mpi_events.CALLS["MPI_Startall:MPI_Recv_init"] == mpi_events.CALLS["MPI_Startall"] == (50000003, 124)
    assert set(mpi_events.CALLS) == set(mpi_calls.BY_NAME) | set(mpi_calls.STARTED)
    written_as = {f.name: GLOBAL_OPS[f.glop] for f in FUNCTIONS if f.kind == COLLECTIVE}
    assert {name: op for name, op in written_as.items() if name != op} == {"MPI_Exscan": "MPI_Scan"}
    assert all(f.glop == -1 for f in FUNCTIONS if f.kind != COLLECTIVE)
    assert set(collectives.ALGORITHMS) == mpi_calls.COLLECTIVES
    assert collectives.ALGORITHMS["MPI_Bcast"][0] == "binomial tree"
    assert collectives.ALGORITHMS["MPI_Alltoallv"][0] == "pairwise exchange"
