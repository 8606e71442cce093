"""The drill-down report: one self-contained HTML page (report.html) with every case, run
and turn (report/drilldown.py), rendered by templates/html/ with autoescape on.

Self-contained: the style and the filter script are inline, and a Content-Security-Policy
allows nothing but them (by hash): no request leaves the page, and a script that got past
the escaping would not run. Everything the agent, its tools, the eval files, the judge or
a Results file wrote is HTML-escaped, its invisible characters shown (escape.plain).
Without JavaScript every case is shown and opens (<details>); the script only adds the
filters.
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from ..compare.model import Diff
from ..compare.record import MainRecord
from ..core import AXES
from ..files import write_whole
from ..results import Results
from . import drilldown, escape
from .labels import score
from .model import Options

FILE_NAME = "report.html"
TEMPLATES = "templates/html"


def _finalize(value: Any) -> Any:
    """Text is printed with its invisible characters shown; autoescape then escapes it."""
    if isinstance(value, Markup):
        return value
    if isinstance(value, bool) or value is None:
        raise TypeError(f"a template printed {value!r}")
    if isinstance(value, int | float):
        return str(value)
    text = str(value)
    if text.isascii() and text.isprintable():  # most of a page: nothing to show (fast path)
        return text
    return escape.plain(text)


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("agent_eval_action.report", TEMPLATES),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        finalize=_finalize,
        auto_reload=False,  # compiled once: a template file changed later is not read again
    )
    env.filters["score"] = lambda value: str(score(value))
    return env


def preload() -> None:
    """Compile every template of the page now (report/render.py's preload calls this)."""
    env = _environment()
    for name in env.list_templates(extensions=["j2"]):
        env.get_template(name)


def _hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def render(
    diff: Diff,
    current: Results,
    options: Options | None = None,
    *,
    baseline: Results | None = None,
    history: MainRecord | None = None,
) -> str:
    """The page: every case of the Diff, the current Results' runs and turns, and each
    case in `history` (main's record of its older baselines) and on the `baseline`."""
    env = _environment()
    style = env.get_template("style.css.j2").render()
    script = env.get_template("filter.js.j2").render()
    csp = (
        f"default-src 'none'; style-src {_hash(style)}; script-src {_hash(script)}; "
        "img-src 'none'; base-uri 'none'; form-action 'none'"
    )
    view = drilldown.page(diff, current, options or Options(), baseline, history)
    return env.get_template("report.html.j2").render(
        page=view,
        kinds=drilldown.KINDS,
        axes=AXES,
        csp=csp,
        style=Markup(style),
        script=Markup(script),
    )


def write(path: Path, text: str) -> None:
    """Write atomically: a reader (an upload step) never sees half a page."""
    write_whole(path, text)
