"""Each simulator declares its policies once (simulation/policies.py): the commands take the same
--policy values, and refuse one a simulator does not have with one message naming what each has."""

from __future__ import annotations

import json
import re

from tareador.simulation.policies import DIMEMAS, LIST_SCHEDULER
from tareador.taskgraph.store import save
from tests.helpers import ROOT, call, fork_join, make_run

LIST_HAS = "the list scheduler (simulate, whatif, explore and report of one trace)"
DIMEMAS_HAS = "the Dimemas model (simulate and report of an MPI run, replay)"
NOT_IN_LIST = (f"tareador: --policy rr: {LIST_HAS} has no such policy, only cp, fifo, bf; {DIMEMAS_HAS} has "
               "fifo, cp, rr\n")
NOT_IN_DIMEMAS = (f"tareador: --policy bf: {DIMEMAS_HAS} has no such policy, only fifo, cp, rr; {LIST_HAS} has "
                  "cp, fifo, bf\n")


def test_the_engines_numbering_is_its_c_enum():
    source = (ROOT / "tareador" / "simulation" / "engine_loop.c").read_text()
    names = re.search(r"enum policy \{([^}]*)\}", source).group(1)
    assert tuple(n.strip().lower() for n in names.split(",")) == DIMEMAS.names == ("fifo", "cp", "rr")
    assert [DIMEMAS.code(n) for n in ("fifo", "cp", "rr")] == [0, 1, 2]
    assert LIST_SCHEDULER.names == ("cp", "fifo", "bf")


def one_message_run(root):
    """Rank 0 sends 8 bytes to rank 1 at its 5th instruction; each rank is one thread (main)."""
    make_run(root, [[call("MPI_Send", 1, 0, 8, 5)], [call("MPI_Recv", 0, 0, 8, 5)]])
    return root


def test_a_trace_refuses_a_policy_only_mpi_runs_have(tmp_path, tareador):
    d = save(fork_join(), tmp_path / "t")
    for command in ("simulate", "whatif", "report"):
        assert tareador(command, d, "--policy", "rr") == (2, "", NOT_IN_LIST), command
    assert tareador("simulate", d, "--policy", "bf", "--cores", "1", "--json")[0] == 0


def test_an_mpi_run_refuses_a_policy_only_traces_have(tmp_path, tareador):
    run = one_message_run(tmp_path / "run")
    for command in ("simulate", "report"):
        assert tareador(command, run, "--policy", "bf") == (2, "", NOT_IN_DIMEMAS), command


def test_round_robin_of_an_mpi_run_needs_a_quantum(tmp_path, tareador):
    """Each rank is one thread on its own cores: no thread ever waits for a CPU, so round robin
    (with a quantum longer than any burst) gives what FIFO gives."""
    run = one_message_run(tmp_path / "run")
    assert tareador("simulate", run, "--policy", "rr") == (
        2, "", "tareador: --policy rr slices bursts by the machine's quantum, and the machine has none: give "
               "--machine a file whose [scheduler] sets quantum (seconds)\n")
    machine = tmp_path / "m.toml"
    machine.write_text("[cpu]\nnodes = 2\ncores_per_node = 4\n[scheduler]\nquantum = 1.0\n")
    status, out, _ = tareador("simulate", run, "--policy", "rr", "--machine", machine, "--cores", "1,2", "--json")
    rr = json.loads(out)
    fifo = json.loads(tareador("simulate", run, "--policy", "fifo", "--machine", machine, "--cores", "1,2",
                               "--json")[1])
    assert status == 0 and (rr["policy"], fifo["policy"]) == ("rr", "fifo")
    assert rr["results"] == fifo["results"] and len(rr["results"]) == 2
