"""The text tables the commands print for each result (simulate, whatif, explore, models, an
MPI run's sweep): kept apart from the command line so that a notebook prints what the terminal
shows (``print(format_study(tareador.simulate(d), "cp"))``) and the CLI stays argument handling."""

from __future__ import annotations

import math

from tareador.analyses.whatif import ratio
from tareador.files import printable
from tareador.render.plots import model_formula
from tareador.render.summary import LABEL, format_seconds, human, machine_name
from tareador.render.summary import format_seconds as seconds


def runtime_line(policy: str, creation: str, start: int, create: int, unit: str, rate: float) -> str:
    """The scheduling and the runtime's costs a result was simulated with, in one line."""
    durations = "measured durations (ns)" if unit == "ns" else f"{rate:.4g} instructions per second"
    return (f"policy {policy}, {creation} creation, per task {start} {unit} to start and {create} {unit} to "
            f"create; {durations}")


def format_study(result, policy: str) -> str:
    lines = [f"{'T1 (sequential)':<{LABEL}}{seconds(result.t1)}",
             f"{'T-inf (crit.path)':<{LABEL}}{seconds(result.tinf)}",
             f"{'parallelism':<{LABEL}}{result.parallelism:.2f}",
             runtime_line(policy, result.creation, result.overhead, result.creation_cost, result.unit, result.rate),
             f"{'cores':>6} {'time':>12} {'speedup':>8} {'efficiency':>10}  utilisation per core"]
    for row in result.table():
        bounded = row["cores"] != math.inf
        eff = f"{row['efficiency']:.3f}" if bounded else ""
        util = f"{row['busy_min']:.2f}..{row['busy_max']:.2f}" if bounded else f"{row['cores_used']} cores busy at most"
        cores = row["cores"] if bounded else "inf"
        lines.append(f"{cores:>6} {seconds(row['time']):>12} {row['speedup']:>8.2f} {eff:>10}  {util}")
    return "\n".join(lines)


def format_mpi_study(study, trace: str = "ompss.dim") -> str:
    lines = [f"{'ranks':<{LABEL}}{study.ranks}, {study.ranks_per_node} per node",
             f"{'authentic MPI run':<{LABEL}}{seconds(study.authentic.makespan)} (1 core per rank)",
             f"MPI/OmpSs ({trace}) on the machine's network, policy {study.policy}",
             f"{'cores/rank':>10} {'time':>12} {'speedup':>8} {'efficiency':>10}"]
    for row in study.table():
        eff = "" if math.isnan(row["efficiency"]) else f"{row['efficiency']:.3f}"
        cores = "inf" if row["cores_per_rank"] == math.inf else row["cores_per_rank"]
        lines.append(f"{cores:>10} {seconds(row['time']):>12} {row['speedup']:>8.2f} {eff:>10}")
    return "\n".join(lines)


def format_whatif(result) -> str:
    lines = [f"{'T1 (sequential)':<{LABEL}}{seconds(result.t1 / result.rate)}",
             f"{'T-inf (crit.path)':<{LABEL}}{seconds(result.tinf / result.rate)}",
             runtime_line(result.policy, result.creation, result.overhead, result.creation_cost, result.unit,
                          result.rate),
             "benefit: overall speedup over the unaccelerated run on the same cores; "
             "speedup: over T1, the unaccelerated sequential run"]
    width = max([len(printable(t.name)) for t in result.types] + [9])
    heads = "".join(f"{'x' + _number(k) + ' benefit':>15} {'speedup':>8}" for k in result.factors)
    for c, base in zip(result.cores, result.baseline):
        lines += ["", f"{machine_name(c)}: {seconds(base / result.rate)} unaccelerated, "
                      f"speedup {_number(ratio(result.t1, base), '.2f')}",
                  f"{'task type':<{width}} {'work':>7} {'c.path':>7}{heads}"]
        for t in result.ranking(c):
            cells = [f"{_percent(result.benefit(t.name, k, c)):>15} "
                     f"{_number(ratio(result.t1, result.time(t.name, k, c)), '.2f'):>8}" for k in result.factors]
            lines.append(f"{printable(t.name):<{width}} {100 * result.work_share(t):>6.1f}% "
                         f"{100 * result.critical_share(t):>6.1f}%{''.join(cells)}")
    return "\n".join(lines)


def _number(x: float, spec: str = "g") -> str:
    return "inf" if x == math.inf else format(x, spec)


def _percent(benefit: float) -> str:
    """The thesis' way of saying it: 1.245 times faster is +24.5 %."""
    return "inf" if benefit == math.inf else f"{100 * (benefit - 1):+.1f}%"


def format_exploration(result, program: str | None, libraries: dict[str, str] | None = None) -> str:
    """The steps as a table and the best; program: the command line of a recording, None for
    another trace; libraries: the candidates that are functions of shared libraries, and theirs."""
    library_note = _library_note(libraries or {}, set(result.candidates))

    breaks = [f"{s.broken} ({s.cost_of(s.broken).dominant})" if s.broken else "-" for s in result.steps]
    width = max([28, *map(len, breaks)])
    lines = [f"{len(result.candidates)} candidate task types called in the analysed region{library_note}; "
             f"target {machine_name(result.cores)}, policy {result.policy}, "
             "weights (length, dependencies, concurrency) = "
             f"{', '.join(f'{w:g}' for w in result.weights)}",
             f"{'step':>4} {'types':>5} {'instances':>9} {'T1':>10} {'T-inf':>10} {'parallelism':>11} "
             f"{'speedup':>7}  {'breaks (dominant cost)':<{width}} decomposition"]
    for s, broken in zip(result.steps, breaks, strict=True):
        tasks = ",".join(s.tasks) if s.tasks else "(sequential code)"
        lines.append(f"{s.index:>4} {len(s.tasks):>5} {s.instances:>9} {human(s.t1):>10} {human(s.tinf):>10} "
                     f"{s.parallelism:>11.2f} {s.speedup:>7.2f}  {broken:<{width}} {tasks}")
    lines += [""] + _best_lines(result)
    best = result.best
    if best.tasks and program is not None:
        lines.append(f"  tareador trace --task-function {','.join(best.tasks)} -- {program}")
    elif best.tasks:
        lines.append(f"  its tasks: {', '.join(best.tasks)}")
    return "\n".join(lines)


def _library_note(libraries: dict[str, str], called: set[str]) -> str:
    """' (2 of them functions of libblas.so.3, liblapacke.so.3)' for the candidates called."""
    used = {name: library for name, library in libraries.items() if name in called}
    if not used:
        return ""
    return f" ({len(used)} of them functions of {', '.join(sorted(set(used.values())))})"


def _best_lines(result) -> list[str]:
    """The best decomposition, the types dropped from its step, and a faster step it tied with."""
    best = result.best
    percent = f"{100 * result.tolerance:g} %"
    step = f"step {best.index}" + (f" without {', '.join(best.dropped)}" if best.dropped else "")
    lines = [f"best: {step}, speedup {best.speedup:.2f} on {machine_name(result.cores)} "
             f"({format_seconds(best.time)}), {best.instances} task instances"]
    if best.dropped:
        lines.append(f"  ({', '.join(best.dropped)}: as tasks they change the speedup by less than {percent})")
    fastest = max(result.steps, key=lambda s: (s.speedup, -s.index))
    if fastest.speedup > best.speedup and not (best.dropped and fastest.index == best.index):
        gain = 100 * (fastest.speedup / best.speedup - 1)
        lines.append(f"  (step {fastest.index} is {gain:.2g} % faster with {fastest.instances} task instances: "
                     f"speedups within {percent} are ties, which go to fewer instances; --tolerance)")
    return lines


def format_models(result) -> str:
    lines = ["duration = a * n^b + c, n = bytes an instance accesses; error: root mean square of the relative "
             "residuals; outliers: far from their type's model (Tukey's fences, and over 10 % off)"]
    program = result.instructions_per_ns.get("")
    for m in result.types:
        if m.unit == "instructions":
            lines += ["", f"{printable(m.name)}: {len(m.instances)} instance(s), {int(m.bytes.min())} .. "
                          f"{int(m.bytes.max())} bytes"]
        far = ", ".join(f"#{int(m.instances[k])} ({m.ratio(k):.2f}x, {int(m.bytes[k])} bytes)" for k in m.outliers[:5])
        more = f" and {len(m.outliers) - 5} more" if len(m.outliers) > 5 else ""
        lines.append(f"  {m.unit:<13} {model_formula(m):<40} error {100 * m.fit.error:5.1f} %   outliers: "
                     f"{len(m.outliers)}{': ' + far + more if far else ''}")
        if m.unit == "ns" and m.name in result.instructions_per_ns and program:
            ratio = result.instructions_per_ns[m.name]
            lines.append(f"  instructions per ns: {ratio:.3g} ({ratio / program:.2f}x the program's {program:.3g})")
    if not program:
        lines += ["", "instructions only: run 'tareador time DIR' for measured durations and the instructions : ns "
                      "ratio per type"]
    return "\n".join(lines)
