"""Hints on the page: per task type the depend clauses and the OpenMP / OmpSs-2 pragmas of
``tareador hints`` (analyses/hints.py, render/hints.py), each pragma with a copy button, and the
warnings first, where they stand out."""

from __future__ import annotations

from pathlib import Path

from tareador.analyses.hints import load_hints
from tareador.errors import TraceDirError
from tareador.render.hints import pragmas
from tareador.report.html import note, table, text, warnings_list
from tareador.report.page import Section


def _range(r: tuple[int, int] | None) -> str:
    return f"[{r[0]:,}, {r[1]:,})" if r else "-"


def _pragma(element_id: str, line: str) -> str:
    return (f'<div><pre class="pragma" id="{element_id}">{text(line)}</pre>'
            f'<button class="copy" data-target="{element_id}">copy</button></div>')


def hints_section(section: Section, directory: str | Path, sizes: dict[str, int]) -> None:
    try:
        h = load_hints(directory)
    except TraceDirError as e:
        section.html(note(f"No hints: {e}", "missing"))
        return
    section.html(warnings_list(h.warnings))
    section.html(note(f"With these pragmas (OpenMP: dependences by list item, no renaming) T-inf is "
                      f"{h.tinf_pragmas:,} instructions; as traced {h.tinf:,}."))
    for i, th in enumerate(h.types):
        body = f"body: {th.function}" if th.function else "no call right after the marker: objects by name"
        rows = [[c.target, c.parameter or ("-" if c.position < 0 else f"arg {c.position + 1}"), c.mode,
                 _range(c.read), _range(c.written), c.instances] for c in th.clauses]
        parts = [f"<h3>{text(th.name)}</h3>", note(f"{th.instances:,} instance(s), {body}")]
        if rows:
            parts.append(table(["object", "passed as", "mode", "read first (bytes)", "written (bytes)", "instances"],
                               rows, numeric_from=5))
        if th.read_only:
            parts.append(note(f"read only in the region (no clause): {', '.join(th.read_only)}"))
        if th.captured:
            parts.append(note("creator's locals read to compute the arguments (firstprivate, no clause): "
                              f"{', '.join(th.captured)}"))
        omp, oss = pragmas(th, sizes)
        parts += [_pragma(f"pragma-omp-{i}", omp), _pragma(f"pragma-oss-{i}", oss)]
        section.html("".join(parts))
