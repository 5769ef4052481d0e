"""The MPIs tareador builds and runs programs with, and how a process learns its rank.

`make deps` installs both Debian MPIs, MPICH and Open MPI, the two ABIs users' clusters have.
They coexist: the unsuffixed `mpicc`/`mpiexec` are whichever the Debian alternatives chose, so
each MPI is always called by its suffixed name (README, MPI).
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
    mpicc: str
    mpiexec: str
    # Added to the launcher's environment, which every rank inherits: what a one-machine run
    # needs, as root, with more ranks than cores.
    environment: Mapping[str, str] = field(default_factory=dict)

    def installed(self) -> bool:
        return shutil.which(self.mpicc) is not None and shutil.which(self.mpiexec) is not None

    def command(self, ranks: int, argv: Sequence[str]) -> list[str]:
        return [self.mpiexec, "-n", str(ranks), *argv]

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        return {**(os.environ if base is None else base), **self.environment}


# Oversubscribes without being asked, has no root check, and talks to its ranks over an
# inherited socket (PMI_FD): it needs nothing.
MPICH = MPI("mpich", "mpicc.mpich", "mpiexec.mpich")

OPEN_MPI = MPI("openmpi", "mpicc.openmpi", "mpiexec.openmpi", MappingProxyType({
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
}))

MPIS = {mpi.name: mpi for mpi in (MPICH, OPEN_MPI)}

# Where each launcher tells a rank its number in MPI_COMM_WORLD: Open MPI's mpiexec; MPICH's
# (Hydra) with its default PMI_FD; Hydra with `-pmi-port`.
RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMI_ID")


def rank(environ: Mapping[str, str] | None = None) -> int | None:
    """The rank a launcher gave this process, None outside a launcher. Read from the environment
    because a tracer must not call MPI_Init itself: it would take the traced rank's place."""
    environ = os.environ if environ is None else environ
    for name in RANK_VARIABLES:
        if environ.get(name, "").isdigit():
            return int(environ[name])
    return None
