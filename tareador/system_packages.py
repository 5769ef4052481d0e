"""What tareador needs from the system that pip cannot install, named as each distribution names it.

A pip user has no ``make deps``: when a C compiler (to build the tracer's native parts and the
user's program), Graphviz (to draw the task graph) or an MPI launcher is missing, the message must
say which package brings it on the machines users have.
"""

from __future__ import annotations

PACKAGES = {  # what -> (Debian/Ubuntu, Fedora/RHEL, conda-forge)
    "a C compiler": ("gcc libc6-dev", "gcc glibc-devel", "c-compiler"),
    "Graphviz": ("graphviz", "graphviz", "graphviz"),
    "MPICH": ("mpich libmpich-dev", "mpich-devel", "mpich"),
    "Open MPI": ("openmpi-bin libopenmpi-dev", "openmpi-devel", "openmpi"),
}


def how_to_install(what: str) -> str:
    debian, fedora, conda = PACKAGES[what]
    return (f"install {what}: apt-get install {debian} (Debian, Ubuntu), dnf install {fedora} (Fedora), or conda "
            f"install -c conda-forge {conda}; in a checkout of tareador, make deps installs everything")
