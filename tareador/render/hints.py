"""tareador hints as text: one table per task type, then the pragmas to paste, then warnings.

Sections are written in elements of the parameter's type when the byte range allows it
(``A[k][k][0:256]``), in bytes otherwise (``((char *) p)[4:8]``), a whole object not passed by its
name, ``&x[i]`` covered as one element as ``x[i]``; numbers the user names with
``--size NAME=VALUE`` are written as NAME, or as a product of two names (``TS*TS``).
"""

from __future__ import annotations

import re

from tareador.analyses.hint_clauses import array_base, expressible
from tareador.analyses.hints import IN, INOUT, OUT, Clause, Hints, TypeHints

_POSTFIX = re.compile(r"^[A-Za-z_]\w*(\([^()]*\))?(\s*\[[^\[\]]*(\[[^\[\]]*\])*[^\[\]]*\])*$")


def symbolic(n: int, sizes: dict[str, int]) -> str:
    """n as one of the named sizes or a product of two of them, else the number."""
    for name, value in sizes.items():
        if n == value:
            return name
    for a, va in sizes.items():
        for b, vb in sizes.items():
            if va * vb == n:
                return f"{a}*{b}"
    return str(n)


def _start(index: str, first: int, sizes: dict[str, int]) -> str:
    """index + first, as C."""
    if index.isdigit():
        index, first = "", int(index) + first
    if not index:
        return symbolic(first, sizes) if first >= 0 else str(first)
    return index if first == 0 else f"{index} {'+' if first > 0 else '-'} {symbolic(abs(first), sizes)}"


def section(c: Clause, sizes: dict[str, int], separator: str = ":") -> str:
    """The clause's list item: base[first:length] (OmpSs-2: base[first;length]), the base an
    identifier with subscripts (``&x[i]`` and ``x + i`` are written ``x[i:length]``, ``&x`` covered
    whole ``x``); where no section can say it (a macro's result, an item starting before the
    pointer without an index to subtract from), and for every item of the regions such an item
    names, the region's first element (``TILE(i, k)[0]``)."""
    lo, hi = c.span
    if c.position < 0 and (lo, hi) == (0, c.size):
        return c.target
    if c.element > 1:
        first, length = lo // c.element, (hi - lo) // c.element
        split = array_base(c.target)
        if split and split[1] is None and (lo, hi) == (0, c.element):
            return split[0]
        if split and split[1] is not None and expressible(c):
            start = _start(split[1], first, sizes)
            if c.first_element or (split[1] and length == 1):
                return f"{split[0]}[{start}]"
            return f"{split[0]}[{start}{separator}{symbolic(length, sizes)}]"
        operand = c.target if _POSTFIX.match(c.target) else f"({c.target})"
        return f"{operand}[{_start('', first, sizes)}]"
    operand = c.target if c.position < 0 or _POSTFIX.match(c.target) else f"({c.target})"
    base, first, length = f"((char *) {operand if c.position >= 0 else '&' + operand})", lo, hi - lo
    if first < 0:
        base, first = f"({base} - {-first})", 0
    return f"{base}[{first}{separator}{length}]"


def pragmas(th: TypeHints, sizes: dict[str, int]) -> tuple[str, str]:
    """(OpenMP, OmpSs-2) pragma lines for a task type. The OpenMP one shares the creator's locals
    its items are part of: an OpenMP task copies the locals of the function that creates it
    (OmpSs-2 shares what a dependence names)."""
    omp, oss = [], []
    for mode in (IN, OUT, INOUT):
        items = [c for c in th.clauses if c.mode == mode]
        if items:
            omp.append(f"depend({mode}: {', '.join(section(c, sizes) for c in items)})")
            oss.append(f"{mode}({', '.join(section(c, sizes, ';') for c in items)})")
    shared = sorted({c.shared for c in th.clauses if c.shared})
    if shared:
        omp.append(f"shared({', '.join(shared)})")
    return " ".join(["#pragma omp task", *omp]), " ".join(["#pragma oss task", *oss])


def _bytes(r: tuple[int, int] | None) -> str:
    return f"[{r[0]}, {r[1]})" if r else "-"


def _grouped(names: list[str]) -> str:
    """Objects by name, the heap blocks of one allocation site counted once (site xN)."""
    counts: dict[str, int] = {}
    for n in names:
        base = n.rsplit("#", 1)[0] if n.startswith("heap:") else n
        counts[base] = counts.get(base, 0) + 1
    return ", ".join(f"{b} x{k}" if k > 1 else b for b, k in counts.items())


def format_hints(h: Hints, sizes: dict[str, int]) -> str:
    out = []
    for th in h.types:
        body = f" (body: {th.function})" if th.function else " (no call right after the marker: objects by name)"
        out.append(f"task type {th.name}: {th.instances} instance(s){body}")
        rows = [("object", "passed as", "mode", "read first (bytes)", "written (bytes)", "instances")]
        for c in th.clauses:
            rows.append((c.target, c.parameter or ("-" if c.position < 0 else f"arg {c.position + 1}"), c.mode,
                         _bytes(c.read), _bytes(c.written), str(c.instances)))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        out += ["  " + "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
        if th.read_only:
            out.append(f"  read only in the region (no clause): {_grouped(th.read_only)}")
        if th.captured:
            out.append(f"  creator's locals read to compute the arguments (firstprivate, no clause): "
                       f"{', '.join(th.captured)}")
        if th.set_before:
            out.append(f"  written only by the code that creates the tasks, before creating them (no clause): "
                       f"{_grouped(th.set_before)}")
        if th.own_locals:
            out.append(f"  creator's locals only this task touches (declare them inside the task: no clause): "
                       f"{', '.join(th.own_locals)}")
        omp, oss = pragmas(th, sizes)
        out += [f"  {omp}", f"  {oss}", ""]
    out.append(f"with these pragmas (OpenMP: dependences by list item, no renaming): T∞ {h.tinf_pragmas} "
               f"instructions; as traced: {h.tinf}")
    if h.warnings:
        out += ["warnings:"] + [f"  - {w}" for w in h.warnings]
    else:
        out.append("warnings: none")
    return "\n".join(out)


def hints_json(h: Hints, sizes: dict[str, int]) -> dict:
    return {
        "types": [{
            "name": th.name, "function": th.function, "instances": th.instances,
            "clauses": [{"target": c.target, "parameter": c.parameter, "position": c.position, "kind": c.kind,
                         "object": c.example, "mode": c.mode, "span": list(c.span),
                         "read": list(c.read) if c.read else None,
                         "written": list(c.written) if c.written else None, "element": c.element,
                         "instances": c.instances, "section": section(c, sizes)} for c in th.clauses],
            "read_only": th.read_only, "captured": th.captured, "set_before": th.set_before,
            "own_locals": th.own_locals,
            "openmp": pragmas(th, sizes)[0], "ompss2": pragmas(th, sizes)[1],
        } for th in h.types],
        "warnings": h.warnings, "tinf": h.tinf, "tinf_without_renaming": h.tinf_without_renaming,
        "tinf_pragmas": h.tinf_pragmas,
        "unenforced": [{"src": d.src, "dst": d.dst, "kind": d.kind, "object": d.object, "bytes": d.bytes}
                       for d in h.unenforced],
    }
