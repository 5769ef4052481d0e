"""The few HTML pieces the report writes itself: escaped text, tables, notes.

Every name from the traced program (task types, objects, arguments) reaches the page through
``text``: escaped for HTML and made printable, as every other output shows them.
"""

from __future__ import annotations

import html

from tareador.files import printable


def text(value) -> str:
    """Any value as HTML text: program names printable (control characters as escapes) and escaped."""
    return html.escape(printable(str(value)))


def table(header: list[str], rows: list[list], *, numeric_from: int = 1, css: str = "") -> str:
    """A table of escaped cells; columns from ``numeric_from`` on are right-aligned numbers. A cell
    given as ``(value, key)`` carries ``data-key`` (what the browser tests read back)."""
    head = "".join(f"<th>{text(h)}</th>" for h in header)
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            value, key = cell if isinstance(cell, tuple) else (cell, None)
            attrs = (' class="num"' if i >= numeric_from else "") + (f' data-key="{text(key)}"' if key else "")
            cells.append(f"<td{attrs}>{text(value)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    cls = f' class="{css}"' if css else ""
    return f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def note(message: str, kind: str = "note") -> str:
    """A paragraph set apart: ``note`` (what the reader should know), ``warning`` (stands out),
    ``missing`` (why a part of the page is not there)."""
    return f'<p class="{kind}">{text(message)}</p>'


def warnings_list(warnings: list[str]) -> str:
    if not warnings:
        return '<p class="ok">warnings: none</p>'
    items = "".join(f"<li>{text(w)}</li>" for w in warnings)
    return f'<div class="warning"><strong>warnings</strong><ul>{items}</ul></div>'


def definition_list(items: list[tuple[str, object, str | None]]) -> str:
    """label / value pairs; a key makes the value readable back by tests (``data-key``)."""
    rows = "".join(f"<dt>{text(label)}</dt><dd" + (f' data-key="{text(key)}"' if key else "") + f">{text(value)}</dd>"
                   for label, value, key in items)
    return f'<dl class="facts">{rows}</dl>'


def number(n: int) -> str:
    """A whole number with thousands separators, as the page shows exact counts."""
    return f"{n:,}"
