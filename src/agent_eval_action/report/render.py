"""Render sections with their templates, and the report around them (templates/report.md.j2).

Each section's template gets its view (`view`), the budget's meter (`budget`) and the
✂️ note (`note`: what this render leaves out). Whatever a template prints is escaped as
a table cell unless it is already `Md` (report/escape.py), so a forgotten filter errs on
the safe side.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import cache, partial
from typing import Any

import jinja2

from . import escape
from .budget import Cut, Detail, Listing, Meter, Note, size
from .cuts import counted
from .escape import Md
from .labels import CHANGE_LABEL, case_class, delta_bar, plural, score
from .model import Report
from .sections import Section


def _finalize(value: Any) -> str:
    """Everything a template prints is escaped as a table cell unless it is already Md."""
    if isinstance(value, Md):
        return value
    if isinstance(value, bool) or value is None:
        raise TypeError(f"a template printed {value!r}")
    if isinstance(value, int | float):
        return str(value)
    return escape.cell(value)


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("agent_eval_action.report", "templates"),
        autoescape=False,  # markdown, not HTML: report/escape.py does it, by context
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        finalize=_finalize,
        auto_reload=False,  # compiled once: a template file changed later is not read again
    )
    env.filters.update(
        text=escape.text,
        cell=escape.cell,
        html=escape.html,
        code=escape.code,
        code_block=escape.code_block,
        score=score,
        bar=delta_bar,
        plural=plural,
        count=lambda n: Md(f"{n:,}"),
        change=lambda c: CHANGE_LABEL[c],
        case_class=case_class,
        counted=counted,
        md=Md,  # for strings built in the template from escaped parts only
    )
    return env


def preload() -> None:
    """Compile every template now. The action calls this before any of the PR's code runs,
    so nothing that code could write to a template file later is ever rendered."""
    from . import html

    env = _environment()
    for name in env.list_templates(extensions=["j2"]):
        if not name.startswith("html/"):  # the drill-down page's, autoescaped: its own
            env.get_template(name)
    html.preload()


def page(
    report: Report,
    detail: Detail,
    sections: Sequence[Section],
    meter: Meter,
    *,
    marker: str | None,
    hint: str,
) -> str:
    """The report as a page: these sections at this Detail, each measured by `meter`."""
    views = [(section, section.view(report, detail)) for section in sections]
    note = Note(_omitted(view for _, view in views), detail.minimal, hint)
    texts = [
        meter.section(
            section.cuts,
            partial(_section, section, view, meter, note),
            partial(_empty, report, detail, section, note),
        )
        for section, view in views
    ]
    template = _environment().get_template("report.md.j2")
    return template.render(marker=None if marker is None else Md(marker), sections=texts)


def standalone(template: str, **context: object) -> str:
    """A template that is no section of the report (templates/all_clear.md.j2), with the
    same escaping: whatever it prints that is not Md is escaped as a table cell."""
    return _environment().get_template(template).render(**context)


def _section(section: Section, view: object, meter: Meter, note: Note) -> Md:
    template = _environment().get_template(section.template)
    return Md(template.render(view=view, budget=meter, note=note))


def _empty(
    report: Report, detail: Detail, section: Section, note: Note
) -> tuple[int, Mapping[Cut, int]]:
    """The section's bytes, and what it leaves out, when it shows none of its items."""
    for cut in section.cuts:
        detail = detail if cut.chars else detail.at(cut, 0)
    view, meter = section.view(report, detail), Meter()
    text = meter.section(section.cuts, partial(_section, section, view, meter, note), _nothing)
    return size(text), _omitted([view])


def _nothing() -> tuple[int, Mapping[Cut, int]]:
    return 0, {}


def _omitted(views: Iterable[Any]) -> Counter[Cut]:
    """How many items each cut leaves out: the Listings of the views."""
    omitted: Counter[Cut] = Counter()
    for view in views:
        for field in dataclasses.fields(view):
            listing = getattr(view, field.name)
            if isinstance(listing, Listing):
                omitted[listing.cut] += listing.left
    return omitted
