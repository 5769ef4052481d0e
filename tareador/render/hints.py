"""tareador hints as text: one table per task type, then the pragmas to paste, then warnings.

Sections are written in elements of the parameter's type when the byte range allows it
(``A[k][k][0:256]``), in bytes otherwise (``((char *) p)[4:8]``), a whole object not passed by its
name, ``&x`` covered whole as ``x``; numbers the user names with
``--size NAME=VALUE`` are written as NAME, or as a product of two names (``TS*TS``).
"""

from __future__ import annotations

import re

from tareador.analyses.hints import IN, INOUT, OUT, Clause, Hints, TypeHints

_POSTFIX = re.compile(r"^[A-Za-z_]\w*(\s*\[[^\[\]]*(\[[^\[\]]*\])*[^\[\]]*\])*$")


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


def section(c: Clause, sizes: dict[str, int], separator: str = ":") -> str:
    """The clause's list item: base[first:length] (OmpSs-2: base[first;length])."""
    lo, hi = c.span
    if c.position < 0 and (lo, hi) == (0, c.size):
        return c.target
    if c.target.startswith("&") and c.element > 1 and (lo, hi) == (0, c.element):
        return c.target[1:].strip()
    operand = c.target if c.position < 0 or _POSTFIX.match(c.target) else f"({c.target})"
    if c.element > 1:
        base, first, length = operand, lo // c.element, (hi - lo) // c.element
    else:
        pointer = operand if c.position >= 0 else f"&{operand}"
        base, first, length = f"((char *) {pointer})", lo, hi - lo
    return f"{base}[{symbolic(first, sizes)}{separator}{symbolic(length, sizes)}]"


def pragmas(th: TypeHints, sizes: dict[str, int]) -> tuple[str, str]:
    """(OpenMP, OmpSs-2) pragma lines for a task type."""
    omp, oss = [], []
    for mode in (IN, OUT, INOUT):
        items = [c for c in th.clauses if c.mode == mode]
        if items:
            omp.append(f"depend({mode}: {', '.join(section(c, sizes) for c in items)})")
            oss.append(f"{mode}({', '.join(section(c, sizes, ';') for c in items)})")
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
                         "object": c.example, "mode": c.mode, "read": list(c.read) if c.read else None,
                         "written": list(c.written) if c.written else None, "element": c.element,
                         "instances": c.instances, "section": section(c, sizes)} for c in th.clauses],
            "read_only": th.read_only, "captured": th.captured,
            "openmp": pragmas(th, sizes)[0], "ompss2": pragmas(th, sizes)[1],
        } for th in h.types],
        "warnings": h.warnings, "tinf": h.tinf, "tinf_without_renaming": h.tinf_without_renaming,
        "tinf_pragmas": h.tinf_pragmas,
    }
