"""Performance models per task type: duration against the bytes an instance accesses.

What StarPU users get from its history and regression models, and StarVZ from its outlier
detection: per task type, its instances' durations (instructions, and nanoseconds when measured
by ``tareador time``) fitted as d = a * n^b + c, n the bytes the instance accessed (accesses.csv:
per fragment and object the union of the bytes it read first and those it wrote, summed over the
instance's fragments). The fit minimises the relative error (every instance weighs alike,
whatever its size): for each exponent b on a grid of 0.01 over [0, 3], a and c >= 0 by linear
least squares, the best b kept; then once more without the outliers of that first fit, so that
one far instance does not bend the model of the others. A type whose instances all touch the same bytes has no size
to fit: its model is their median (b = 0); one whose best exponent is 0 is a constant too. Its error is the root mean
square of the relative residuals.

An outlier is an instance far from its type's model: its duration over the model's outside
Tukey's fences (1.5 interquartile ranges beyond the quartiles of those ratios, over the type's
instances) and more than 10 % off: the load imbalance a user must see, or an instance that does
other work than its type's. The ratio instructions : ns per type, beside the program's, says
where instruction counts mislead (a division costs more than a multiply-add; memory-bound code
runs at the speed of memory).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from tareador.analyses.table import Table, Tabular
from tareador.taskgraph.model import Access, TaskTrace

EXPONENTS = np.round(np.arange(0, 301) / 100, 2)
FENCE = 1.5  # interquartile ranges beyond the quartiles (Tukey)
NOTICEABLE = 0.10  # an outlier is also this far from its model, relatively
MIN_INSTANCES = 4  # fewer have no quartiles to speak of


@dataclass(frozen=True)
class Fit:
    a: float
    b: float
    c: float
    error: float  # root mean square of (model - duration) / duration

    def __call__(self, n: np.ndarray) -> np.ndarray:
        return self.a * np.power(n.astype(float), self.b) + self.c

    @property
    def constant(self) -> bool:
        return self.a == 0


@dataclass(frozen=True)
class TypeModel:
    name: str
    unit: str  # "instructions" or "ns"
    instances: np.ndarray  # the instances' first fragment ids
    bytes: np.ndarray  # accessed by each instance
    duration: np.ndarray  # of each instance, all its fragments
    fit: Fit
    outliers: np.ndarray  # positions in ``instances``, farthest from the model first

    def ratio(self, k: int) -> float:
        """Instance k's duration over its model's."""
        model = float(self.fit(self.bytes[k:k + 1])[0])
        return float(self.duration[k]) / model if model else np.inf


@dataclass
class Models(Tabular):
    types: list[TypeModel]  # by type (largest total duration first), instructions before ns
    instructions_per_ns: dict[str, float]  # per type, and "" for the whole program; empty unless measured

    def of(self, name: str, unit: str) -> TypeModel:
        return next(m for m in self.types if m.name == name and m.unit == unit)

    def table(self) -> Table:
        """One row per type and unit; outliers as ';'-separated instance ids; instructions_per_ns
        NaN unless measured."""
        return Table.of("models", MODEL_COLUMNS, (
            (m.name, m.unit, len(m.instances), int(m.bytes.min()), int(m.bytes.max()), m.fit.a, m.fit.b, m.fit.c,
             m.fit.error, ";".join(str(int(m.instances[k])) for k in m.outliers),
             self.instructions_per_ns.get(m.name, math.nan)) for m in self.types))

    def as_json(self) -> dict:
        return {"types": [{"type": m.name, "durations": m.unit, "instances": len(m.instances),
                           "bytes": [int(m.bytes.min()), int(m.bytes.max())], "a": m.fit.a, "b": m.fit.b,
                           "c": m.fit.c, "error": m.fit.error,
                           "outliers": [{"instance": int(m.instances[k]), "bytes": int(m.bytes[k]),
                                         "duration": int(m.duration[k]), "ratio": m.ratio(k)} for k in m.outliers]}
                          for m in self.types],
                "instructions_per_ns": {name or "program": r for name, r in self.instructions_per_ns.items()}}

    def __repr__(self) -> str:
        return f"<Models {len(self.types)} fits: {', '.join(sorted({m.name for m in self.types}))}>"


MODEL_COLUMNS = (("type", "str"), ("durations", "str"), ("instances", "int"), ("min_bytes", "int"),
                 ("max_bytes", "int"), ("a", "float"), ("b", "float"), ("c", "float"), ("error", "float"),
                 ("outliers", "str"), ("instructions_per_ns", "float"))


def fit(n: np.ndarray, d: np.ndarray) -> Fit:
    """d = a * n^b + c with a, c >= 0, b in [0, 3], minimising the relative error."""
    n, d = n.astype(float), d.astype(float)
    use = d > 0
    if not use.any():
        return Fit(0.0, 0.0, 0.0, 0.0)
    n, d = n[use], d[use]
    if len(np.unique(n)) < 2:
        c = float(np.median(d))
        return Fit(0.0, 0.0, c, _error(np.full(len(d), c), d))
    best: Fit | None = None
    for b in EXPONENTS:
        a, c = _coefficients(np.power(n, b), d)
        model = a * np.power(n, b) + c
        error = _error(model, d)
        if best is None or error < best.error - 1e-12:
            best = Fit(a, float(b), c, error)
    assert best is not None  # EXPONENTS is not empty
    if best.b == 0:  # n^0: no size dependence, one constant
        return Fit(0.0, 0.0, best.a + best.c, best.error)
    return best


def _coefficients(x: np.ndarray, d: np.ndarray) -> tuple[float, float]:
    """a, c >= 0 minimising sum(((a x + c) / d - 1)^2): linear least squares, a term dropped
    when its coefficient would be negative."""
    w = 1 / d
    candidates = []
    for columns in ((x, np.ones_like(x)), (x,), (np.ones_like(x),)):
        matrix = np.stack([col * w for col in columns], axis=1)
        coef, *_ = np.linalg.lstsq(matrix, np.ones_like(d), rcond=None)
        if (coef >= 0).all():
            a, c = (coef[0], coef[1]) if len(columns) == 2 else (coef[0], 0.0) if columns[0] is x else (0.0, coef[0])
            candidates.append((_error(a * x + c, d), float(a), float(c)))
    _, a, c = min(candidates)
    return a, c


def _error(model: np.ndarray, d: np.ndarray) -> float:
    return float(np.sqrt(np.mean(((model - d) / d) ** 2))) if len(d) else 0.0


def outliers(n: np.ndarray, d: np.ndarray, model: Fit) -> np.ndarray:
    """Positions of the instances outside Tukey's fences of duration / model, and more than
    NOTICEABLE off; farthest first."""
    if len(d) < MIN_INSTANCES:
        return np.zeros(0, np.int64)
    expected = model(n)
    ratio = np.divide(d.astype(float), expected, out=np.full(len(d), np.inf), where=expected > 0)
    q1, q3 = np.percentile(ratio[np.isfinite(ratio)], [25, 75]) if np.isfinite(ratio).any() else (1.0, 1.0)
    spread = q3 - q1
    out = ((ratio < q1 - FENCE * spread) | (ratio > q3 + FENCE * spread)) & (np.abs(ratio - 1) > NOTICEABLE)
    far = np.flatnonzero(out)
    return far[np.argsort(-np.abs(np.log(np.maximum(ratio[far], 1e-300))), kind="stable")]


def robust_fit(n: np.ndarray, d: np.ndarray) -> tuple[Fit, np.ndarray]:
    """The fit without the outliers of a first fit over every instance, and the outliers of
    every instance against it: one far instance does not bend its type's model."""
    model = fit(n, d)
    far = outliers(n, d, model)
    if len(far):
        keep = np.ones(len(d), bool)
        keep[far] = False
        model = fit(n[keep], d[keep])
        far = outliers(n, d, model)
    return model, far


def accessed_bytes(trace: TaskTrace, accesses: list[Access]) -> np.ndarray:
    """Bytes each fragment touched (tasks.csv order): per object the union of the hull it read
    first and the hull it wrote."""
    index = {t.id: k for k, t in enumerate(trace.fragments)}
    out = np.zeros(len(trace.fragments), np.int64)
    for a in accesses:
        read = max(a.read_hi - a.read_lo, 0) if a.read_lo >= 0 else 0
        written = max(a.write_hi - a.write_lo, 0) if a.write_lo >= 0 else 0
        both = max(0, min(a.read_hi, a.write_hi) - max(a.read_lo, a.write_lo)) if read and written else 0
        if a.task in index:
            out[index[a.task]] += read + written - both
    return out


def models(trace: TaskTrace, accesses: list[Access], ns: np.ndarray | None = None) -> Models:
    """The models of every task type's instances; ``ns``: the measured nanoseconds of each fragment
    (tasks.csv order), None when not measured."""
    size = accessed_bytes(trace, accesses)
    instructions = np.fromiter((t.instructions for t in trace.fragments), np.int64, len(trace.fragments))
    heads: dict[str, list[int]] = defaultdict(list)
    fragments: dict[int, list[int]] = defaultdict(list)
    for k, t in enumerate(trace.fragments):
        if t.is_main:
            continue
        fragments[t.instance].append(k)
        if t.starts_instance:
            heads[t.name].append(t.id)
    units = [("instructions", instructions)] + ([("ns", ns)] if ns is not None else [])
    found = []
    for name, ids in heads.items():
        parts = [fragments[i] for i in ids]
        n = np.array([size[p].sum() for p in parts], np.int64)
        for unit, values in units:
            d = np.array([values[p].sum() for p in parts], np.int64)
            found.append(TypeModel(name, unit, np.array(ids, np.int64), n, d, *robust_fit(n, d)))
    total = {m.name: m.duration.sum() for m in found if m.unit == units[-1][0]}
    found.sort(key=lambda m: (-total[m.name], m.name, m.unit != "instructions"))
    ratios = {}
    if ns is not None:
        work = {m.name: float(m.duration.sum()) for m in found if m.unit == "instructions"}
        ratios = {m.name: work[m.name] / float(m.duration.sum()) for m in found if m.unit == "ns" and m.duration.sum()}
        if ns.sum():
            ratios[""] = float(instructions.sum()) / float(ns.sum())
    return Models(found, ratios)
