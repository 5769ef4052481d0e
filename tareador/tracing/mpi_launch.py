"""The MPIs tareador builds and runs programs with (a process learns its rank from
``workers.launch_rank``).

`make deps` installs both Debian MPIs, MPICH and Open MPI, the two ABIs users' clusters have.
They coexist: the unsuffixed `mpicc`/`mpiexec` are whichever the Debian alternatives chose, so
each MPI is always called by its suffixed name (docs/guide/mpi.md).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True)
class MPI:
    name: str
    title: str
    mpicc: str
    mpiexec: str
    # Added to the launcher's environment, which every rank inherits: what a one-machine run
    # needs, as root, with more ranks than cores.
    environment: Mapping[str, str] = field(default_factory=dict)
    # What keeps the launcher from killing the other ranks when one rank's process exits with a
    # non-zero status: under `tareador mpirun` that is a rank's tracer done with a partial
    # trace, and tareador ends the other ranks itself once they wrote theirs (tracing/mpirun.py).
    supervised_options: tuple[str, ...] = ()
    supervised_environment: Mapping[str, str] = field(default_factory=dict)

    def installed(self) -> bool:
        return shutil.which(self.mpicc) is not None and shutil.which(self.mpiexec) is not None

    def command(self, ranks: int, argv: Sequence[str], supervised: bool = False) -> list[str]:
        return [self.mpiexec, *(self.supervised_options if supervised else ()), "-n", str(ranks), *argv]

    def env(self, base: Mapping[str, str] | None = None, supervised: bool = False) -> dict[str, str]:
        return {**(os.environ if base is None else base), **self.environment,
                **({**self.supervised_environment, SUPERVISED: "1"} if supervised else {})}


# Set in every rank's environment by `tareador mpirun`: the rank's tracer is supervised
# (tracing/mpirun.py), which prints the run's summary instead of each rank's, and tells each
# tracer it stops why in the run directory's STOP_REASON file.
SUPERVISED = "TAREADOR_MPIRUN"
STOP_REASON = ".stop-reason"


def supervised(environ: Mapping[str, str] | None = None) -> bool:
    return (os.environ if environ is None else environ).get(SUPERVISED) == "1"


# Oversubscribes without being asked, has no root check, and talks to its ranks over an
# inherited socket (PMI_FD): it needs nothing. Supervised, it tells the other ranks of a failed
# one with SIGUSR1 instead of killing them (a rank's tracer ignores it).
MPICH = MPI("mpich", "MPICH", "mpicc.mpich", "mpiexec.mpich", supervised_options=("-disable-auto-cleanup",))

OPEN_MPI = MPI("openmpi", "Open MPI", "mpicc.openmpi", "mpiexec.openmpi", MappingProxyType({
    # Its launcher refuses to run as root unless both are set.
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    # More ranks than cores would be an error ("not enough slots") instead of time-sharing.
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
    # Its out-of-band and TCP channels otherwise try every interface, and a container's or a
    # VPN's need not route between two processes of this machine.
    "OMPI_MCA_oob_tcp_if_include": "lo",
    "OMPI_MCA_btl_tcp_if_include": "lo",
    # mpi4py's wheel loads the first libmpi.so* it finds, and the unsuffixed libmpi.so may be
    # MPICH's (alternatives), whose ABI variant the wheel cannot load from Debian's libmpich.
    "MPI4PY_LIBMPI": "libmpi.so.40",
}), supervised_environment=MappingProxyType({
    # Otherwise it kills the job when one rank's process exits with a non-zero status.
    "OMPI_MCA_orte_abort_on_non_zero_status": "0",
}))

MPIS = {mpi.name: mpi for mpi in (MPICH, OPEN_MPI)}


def linked_mpi(program: str) -> MPI | None:
    """The MPI a program was built with, by the library it links (Open MPI's is libmpi.so.40 and
    programs refer to its ompi_mpi_* handles; MPICH's libmpich.so.12, or libmpi.so.12 from its
    wheel); None for a program without MPI."""
    with open(program, "rb") as f:
        image = f.read()
    if b"libmpi.so.40" in image or b"ompi_mpi_comm_world" in image:
        return OPEN_MPI
    if b"libmpich.so" in image or b"libmpi.so.12" in image:
        return MPICH
    return None
