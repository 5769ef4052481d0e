"""What a pip user gets: the sdist is a checkout whose tests collect, the wheel carries the C
sources the tracer compiles and the machine files `--machine NAME` finds; the bundled machines
are found by name, an unknown name is one line listing them."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile

import pytest

from tareador import __version__
from tareador.errors import MachineError
from tareador.simulation.machine_files import bundled_machines, load_machine
from tests.helpers import ROOT


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """The sdist and the wheel built from it, as `python -m build` makes them for PyPI."""
    pytest.importorskip("build")
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "-o", str(out), str(ROOT)], check=True, capture_output=True)
    return out / f"tareador-{__version__}.tar.gz", out / f"tareador-{__version__}-py3-none-any.whl"


def collected(directory) -> str:
    """pytest's last line, "N tests collected in ...", without its time; "errors" if any."""
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                       cwd=directory, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    return r.stdout.strip().splitlines()[-1].split(" in ")[0]


def test_the_sdists_tests_collect_as_the_checkouts(dist, tmp_path):
    sdist, _ = dist
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path, filter="data")
    unpacked = tmp_path / f"tareador-{__version__}"
    assert (unpacked / "LICENSE").exists() and (unpacked / "examples" / "Makefile").exists()
    line = collected(unpacked)
    assert "error" not in line and line == collected(ROOT)


def test_the_wheel_carries_the_sources_and_machines(dist):
    _, wheel = dist
    names = set(zipfile.ZipFile(wheel).namelist())
    for machine in bundled_machines():
        assert any(n in names for n in (f"tareador/machines/{machine}.toml", f"tareador/machines/{machine}.cfg"))
    assert "tareador/machines/scheduler_ss_mpi_cp.cfg" in names  # what smp_cp.cfg names
    for source in ("annotations/tareador.h", "tracer_agents/agent.js", "tracer_agents/shadow.c"):
        assert f"tareador/_sources/{source}" in names
    for source in ("simulation/engine_loop.c", "formats/text_rows.c", "formats/dim_records.c", "taskgraph/levels.c"):
        assert f"tareador/{source}" in names
    metadata = zipfile.ZipFile(wheel).read(f"tareador-{__version__}.dist-info/METADATA").decode()
    assert "License-Expression: BSD-3-Clause" in metadata and "Requires-Python: >=3.11" in metadata


@pytest.mark.fast
def test_bundled_machines_by_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing named laptop here: the bundled one
    assert {"laptop", "cluster", "smp_cp", "two_ranks"} <= set(bundled_machines())
    assert "scheduler_ss_mpi_cp" not in bundled_machines()  # a scheduler file, not a machine
    assert load_machine("laptop").cores_per_node == 8
    assert load_machine("smp_cp").policy == "cp"  # its scheduler file, read beside it
    (tmp_path / "mine.toml").write_text("[cpu]\ncores_per_node = 3\n")
    assert load_machine("mine.toml").cores_per_node == 3  # a path is a path
    with pytest.raises(MachineError, match=r"^no machine file laptpo and no bundled machine of that name; "
                                           r"bundled: cluster, laptop, "):
        load_machine("laptpo")
