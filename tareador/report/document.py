"""A built report: the page, its figures for a notebook, and what the command line says about it."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

from tareador.files import write_text


@dataclass
class Report:
    """``tareador.report(DIR)``. ``html`` is the whole self-contained page; ``figures`` its Bokeh
    charts by section and name (``bokeh.io.show(r.figures["curves-scaling"])`` after
    ``bokeh.io.output_notebook()``); a notebook displays the report itself as the page, inline."""

    title: str
    html: str
    figures: dict[str, object]
    notes: list[str] = field(default_factory=list)  # what was assumed or left out, one line each

    def save(self, path: str | Path) -> Path:
        """Write the page (atomically: an unwritable path leaves nothing half-written)."""
        return write_text(path, self.html)

    def _repr_html_(self) -> str:
        # The page in an iframe of its own, so its script and style do not mix with the notebook's.
        return (f'<iframe srcdoc="{html.escape(self.html, quote=True)}" style="width: 100%; height: 900px; '
                f'border: 1px solid #ccc;" title="{html.escape(self.title)}"></iframe>')
