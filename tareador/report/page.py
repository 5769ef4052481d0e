"""The page: sections of HTML with Bokeh figures between them, everything inline.

Bokeh's ``file_html`` writes the page with INLINE resources: BokehJS (only the bundles the
figures need) and the figures' data go into the file itself, so it opens from file:// without a
network and can be mailed. The page's own style and script (page.css, page.js: pan and zoom of
the task graph, its hover panel, copy buttons, the contents bar) are read from this package and
inlined the same way.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

from bokeh.embed import file_html
from bokeh.resources import INLINE

from tareador.report.html import text
from tareador.taskgraph.model import TaskTrace
from tareador.taskgraph.mpi import MpiRun
from tareador.version import __version__

TEMPLATE = """
{% from macros import embed %}
{% block preamble %}<meta name="viewport" content="width=device-width, initial-scale=1">{% endblock %}
{% block postamble %}<style>{{ page_css | safe }}</style>{% endblock %}
{% block contents %}
{{ header | safe }}
{% for kind, value in parts %}{% if kind == "html" %}{{ value | safe }}{% else %}{{ embed(roots[value]) }}{% endif %}
{% endfor %}
{{ data | safe }}
<script>{{ page_js | safe }}</script>
{% endblock %}
"""


@dataclass
class Section:
    """One part of the page: ``id`` is its anchor (and what tests look for), ``parts`` its content in
    order, each ("html", markup) or ("figure", key into ``figures``)."""

    id: str
    title: str
    parts: list[tuple[str, str]] = field(default_factory=list)
    figures: dict[str, object] = field(default_factory=dict)

    def html(self, markup: str) -> Section:
        self.parts.append(("html", markup))
        return self

    def figure(self, key: str, model) -> Section:
        """Embed ``model``; its Bokeh name becomes ``id-key``, unique in the page."""
        model.name = f"{self.id}-{key}"
        self.figures[key] = model
        self.parts.append(("figure", model.name))
        return self


def directory_of(read: TaskTrace | MpiRun) -> Path:
    """The directory a section reads more files from: the trace's or run's own."""
    if read.path is None:
        raise ValueError("a report is of a trace or run read from its directory")
    return Path(read.path)


def json_script(element_id: str, data) -> str:
    """Data for page.js as a JSON script element; '<' escaped so no name can close the element."""
    payload = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")
    return f'<script type="application/json" id="{element_id}">{payload}</script>'


def render_page(title: str, subtitle: str, sections: list[Section], data: dict[str, object]) -> str:
    """The whole page as one string; ``data`` becomes JSON script elements page.js reads by id."""
    parts: list[tuple[str, str]] = []
    for s in sections:
        parts.append(("html", f'<section id="{s.id}"><h2>{text(s.title)}</h2>'))
        parts.extend(s.parts)
        parts.append(("html", "</section>"))
    contents = "".join(f'<a href="#{s.id}">{text(s.title)}</a>' for s in sections)
    stamp = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    header = (f'<header><h1>{text(title)}</h1><p class="subtitle">{text(subtitle)}</p>'
              f'<p class="generated">written {text(stamp)} by tareador {text(__version__)}</p>'
              f'<nav>{contents}</nav></header>')
    models = [m for s in sections for m in s.figures.values()]
    assets = files("tareador.report")
    variables = {"parts": parts, "header": header, "page_css": assets.joinpath("page.css").read_text("utf-8"),
                 "page_js": assets.joinpath("page.js").read_text("utf-8"),
                 "data": "".join(json_script(k, v) for k, v in data.items())}
    if not models:  # file_html needs a figure; a page of text only is the same template without BokehJS
        from bokeh.core.templates import FILE, MACROS, get_env

        return get_env().from_string("{% extends base %}" + TEMPLATE).render(
            title=title, base=FILE, macros=MACROS, docs=[], plot_script="", **variables)
    return file_html(models, resources=INLINE, title=title, template=TEMPLATE, template_variables=variables)
