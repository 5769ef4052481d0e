"""tareador: how much task parallelism would this taskification expose?

The package is a one-way pipeline, one subpackage per stage:
``tracing`` (run the program under Frida) -> ``taskgraph`` (task instances, dependencies,
the trace directory) -> ``formats`` (Dimemas, Paraver, Chrome files) -> ``synthesis`` (the
authentic and artificial traces of a run) -> ``simulation`` (the list scheduler and the Dimemas
engine on a machine) -> ``analyses`` (speedups, profiles, what-ifs) -> ``render`` (graphs and
plots) -> ``report`` (one HTML page of it all), with ``cli`` on top; ``errors`` holds what every
stage may raise.
"""

__version__ = "0.1.0"

from tareador.report import report  # noqa: E402  (public API: tareador.report(dir); binds over the subpackage)
from tareador.taskgraph.store import load  # noqa: E402  (public API: tareador.load(dir))


def hints(directory):
    """What each task type reads and writes, as depend clauses (``tareador hints DIR``)."""
    from tareador.analyses.hints import load_hints

    return load_hints(directory)


__all__ = ["load", "hints", "report", "__version__"]
