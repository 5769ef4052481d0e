"""Communication patterns and overlap of an MPI run on the page, when the run has them: the
thesis' Table 5.1 as patterns.csv holds it (``tareador postprocess``, or ``tareador patterns
--chunks C``), each transfer class's elements as scatter plots (Fig. 5.11), and the overlap sweep
of ``tareador overlap`` (overlap.csv, Fig. 5.14)."""

from __future__ import annotations

import csv

import numpy as np

from tareador.analyses.patterns import FIGURES, MessageFigures, statistics
from tareador.errors import TraceDirError
from tareador.report import figures
from tareador.report.html import note, table
from tareador.report.page import Section, directory_of
from tareador.taskgraph.mpi import MpiRun, rank_dirs
from tareador.taskgraph.patterns import load_rank_patterns, transfer_patterns
from tareador.taskgraph.store import read_table

SCATTER_LIMIT = 200_000  # elements per class drawn; beyond, an even sample


def patterns_section(section: Section, run: MpiRun) -> None:
    d = directory_of(run)
    if not (d / "patterns.csv").is_file():
        section.html(note(f"No patterns: {d / 'patterns.csv'} is missing (a run traced without them, or not "
                          f"post-processed: tareador postprocess {d}).", "missing"))
        return
    stats = statistics(read_table(d / "patterns.csv", MessageFigures, f"run 'tareador postprocess {d}' again"))
    if not stats:
        section.html(note("The run has no point-to-point message with data: no patterns.", "missing"))
        return
    section.html(note("Production: % of the interval from the previous send of the buffer to this send at which "
                      "the first element, a quarter, half and all of the message's chunks were final. Consumption: "
                      "% of the interval after the receive that passes before the data is needed, receiving nothing, "
                      "a quarter, half of the chunks. Means per transfer class (sender->receiver), as patterns.csv "
                      "holds them (tareador patterns --chunks C rewrites it)."))
    section.html(table(["class", "messages", *FIGURES], [[s.name, s.messages, *(f"{s.mean[f]:.1f}" for f in FIGURES)]
                                                          for s in stats], numeric_from=1))
    everything = stats[-1]
    section.html("<h3>Quartiles over all messages</h3>" + table(
        ["figure", "25th percentile", "median", "75th percentile"],
        [[f, *(f"{q:.1f}" for q in everything.quartiles[f])] for f in FIGURES]))
    try:
        ranks = [load_rank_patterns(r) for r in rank_dirs(d).values()]
    except TraceDirError as e:
        section.html(note(f"No scatter plots: {e}", "missing"))
        return
    classes: dict[str, list] = {}
    for t in transfer_patterns(run.messages, ranks):
        classes.setdefault(f"{t.src}->{t.dst}", []).append(t)
    panels = [(name, _scatter(name, group)) for name, group in classes.items()]
    if panels:
        section.html("<h3>Every element</h3>" + note("x: the element's index in its message; y: when it became final "
                                                      "(left) or was first read (right), in % of the interval."))
        section.figure("scatter", figures.tabs(panels))


def _scatter(name: str, transfers: list):
    def side(attr: str) -> tuple[np.ndarray, np.ndarray]:
        y = np.concatenate([100.0 * getattr(t, attr) for t in transfers])
        x = np.concatenate([np.arange(len(getattr(t, attr))) for t in transfers]).astype(float)
        keep = np.isfinite(y)
        x, y = x[keep], y[keep]
        if len(x) > SCATTER_LIMIT:
            pick = np.linspace(0, len(x) - 1, SCATTER_LIMIT).astype(np.int64)
            x, y = x[pick], y[pick]
        return x, y

    return figures.scatter_pair((f"{name}: production, last write ({len(transfers)} messages)", *side("production")),
                                (f"{name}: consumption, first read", *side("consumption")),
                                "element of the message", "% of the interval")


def overlap_section(section: Section, run: MpiRun) -> None:
    path = directory_of(run) / "overlap.csv"
    if not path.is_file():
        section.html(note(f"Not computed: run 'tareador overlap {run.path} --machine FILE --bandwidth LIST' to see "
                          "what chunked, overlapped messages would gain.", "missing"))
        return
    try:
        with path.open(newline="", encoding="utf-8") as f:
            rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]
        bandwidth = [r["bandwidth_mb_s"] for r in rows]
        speedups = {"overlap-real": [r["speedup_real"] for r in rows],
                    "overlap-ideal": [r["speedup_ideal"] for r in rows]}
        times = [[f"{r['bandwidth_mb_s']:g}", *(f"{r[k]:.6g}" for k in ("authentic_s", "real_s", "ideal_s")),
                  f"{r['speedup_real']:.3f}", f"{r['speedup_ideal']:.3f}"] for r in rows]
    except (KeyError, ValueError, TypeError) as e:
        section.html(note(f"{path} cannot be read ({e}); run 'tareador overlap' again.", "missing"))
        return
    section.html(note("Speedup of the run with every message sent in chunks as its data becomes final and waited "
                      "for where it is first read (overlap-real: the code's own patterns; overlap-ideal: linear "
                      "patterns) over the authentic run at the same inter-node bandwidth, as tareador overlap "
                      "computed it (overlap.csv)."))
    section.figure("speedup", figures.curves(bandwidth, speedups, "bandwidth (MB/s)", "speedup over the authentic run",
                                             "overlapped runs against the bandwidth", log_x=True))
    section.html(table(["bandwidth (MB/s)", "authentic (s)", "overlap-real (s)", "overlap-ideal (s)", "real speedup",
                        "ideal speedup"], times, numeric_from=0))
