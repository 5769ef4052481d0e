"""The replay's C event loop: pausing for progress, queued transfers, building it on first use."""

from __future__ import annotations

import numpy as np
import pytest

from tareador import native
from tareador.formats.dimemas import read_dim, write_dim
from tareador.simulation import dimemas_engine as engine
from tareador.simulation.machine import Machine
from tareador.synthesis.ompss import write_dim_traces
from tests.helpers import fork_join


@pytest.mark.fast
def test_pausing_for_progress_changes_nothing(tmp_path, monkeypatch):
    write_dim_traces(fork_join(width=9, work=1000).dag, tmp_path, 1e9)
    trace = read_dim(tmp_path / "ompss.dim")
    machine = Machine(cores_per_node=2, policy="rr", quantum=3e-7)
    whole = engine.replay(trace, machine, record=True)
    monkeypatch.setattr(engine, "PROGRESS_EVERY", 1)
    reports = []
    paused = engine.replay(trace, machine, record=True, progress=reports.append)
    assert len(reports) > 1 and sum(reports) == len(whole.thread_end)
    assert np.array_equal(paused.thread_end, whole.thread_end)
    for part in ("states", "comms"):
        before, after = getattr(whole.paraver, part), getattr(paused.paraver, part)
        assert all(np.array_equal(before[k], after[k]) for k in before)


@pytest.mark.fast
def test_transfers_queue_for_the_link_in_order(tmp_path):
    # Three ranks send 1 MB at once to a fourth through its single in link at 1 MB/s.
    blocks = [f"2:{t}:0:3:1048576:1:0:0\n" for t in range(3)] + \
             ["".join(f"3:3:0:{t}:1048576:1:0:0\n" for t in range(3))]
    trace = read_dim(write_dim(tmp_path / "fan.dim", "fan", [1] * 4, blocks))
    r = engine.replay(trace, Machine(nodes=4, inter_bandwidth=1.0, in_links=1), record=True)
    assert r.makespan == 3.0
    assert r.paraver.comms["psend"].tolist() == [0, 1_000_000_000, 2_000_000_000]
    assert r.paraver.comms["precv"].tolist() == [1_000_000_000, 2_000_000_000, 3_000_000_000]


def test_native_sources_build_once_per_content(tmp_path, monkeypatch):
    monkeypatch.setenv("TAREADOR_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "one.c"
    src.write_text("int one(void) { return 1; }\n")
    log = tmp_path / "compiles.log"

    def commands(out, tmp, flags=("-O2",)):
        return [[native.compiler(), *flags, "-fPIC", "-shared", str(src), "-o", str(out)],
                ["sh", "-c", f"echo compiled >> {log}"]]

    first = native.build("libone.so", [src], commands)
    assert first.exists() and first.is_relative_to(tmp_path / "cache")
    assert native.build("libone.so", [src], commands) == first and log.read_text().count("compiled") == 1
    other = native.build("libone.so", [src], lambda out, tmp: commands(out, tmp, ("-O0",)))
    assert other != first and log.read_text().count("compiled") == 2  # other flags, another build
    src.write_text("int one(void) { return }\n")
    with pytest.raises(native.ToolchainError, match="building libone.so failed"):
        native.build("libone.so", [src], commands)
