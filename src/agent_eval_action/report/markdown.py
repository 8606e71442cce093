"""The comparison as GitHub markdown: the PR comment, the job summary, the check run's text.

Pure: a Diff and the current Results in, a string out, within GitHub's size limits. The
report is a list of sections (report/sections.py), each a view (report/view.py) rendered
by its own template (report/templates/, report/render.py); report/budget.py fits it into
the limit by showing less, in at most two renders. Every string that came from an agent,
a tool, an eval file or a Results file reaches the page through report/escape.py.
"""

from __future__ import annotations

import re

from ..compare.model import Diff
from ..results import Results
from . import render, sections
from .budget import Detail, fit
from .labels import case_class, delta_bar, headline, score
from .model import DEFAULT_CHECK_NAME, DEFAULT_SERVER_URL, Options, Report

__all__ = [
    "CHECK_LIMIT",
    "COMMENT_LIMIT",
    "DEFAULT_CHECK_NAME",
    "DEFAULT_SERVER_URL",
    "SUMMARY_LIMIT",
    "Options",
    "case_class",
    "check_parts",
    "check_parts_of",
    "comment",
    "comment_of",
    "delta_bar",
    "headline",
    "marker",
    "score",
    "summary",
    "summary_of",
]

COMMENT_LIMIT = 65_536  # bytes of an issue comment body, marker included
SUMMARY_LIMIT = 1_048_576  # $GITHUB_STEP_SUMMARY per step
CHECK_LIMIT = 65_535  # check run output.summary and output.text

_COMMENT = Detail(collapse_rest=True, text_chars=1_000)
_IN_SUMMARY = "the full report is in the job summary"


def marker(check_name: str = DEFAULT_CHECK_NAME) -> str:
    """The hidden line the action finds its sticky comment by."""
    return f"<!-- agent-eval-action:{_marker_safe(check_name)} -->"


def _marker_safe(name: str) -> str:
    # a check name may not end the comment early or spread over lines
    return re.sub(r"[^A-Za-z0-9 ._/:()+-]", "-", name).strip() or DEFAULT_CHECK_NAME


def _fitted(
    report: Report,
    start: Detail,
    limit: int,
    *,
    with_marker: bool,
    hint: str,
    parts: tuple[sections.Part, ...] = ("head", "body"),
) -> str:
    shown = sections.of(parts)
    tag = marker(report.options.check_name) if with_marker else None
    return fit(
        lambda detail, meter: render.page(report, detail, shown, meter, marker=tag, hint=hint),
        limit,
        start,
        sections.steps(shown),
    )


def comment(
    diff: Diff, current: Results, options: Options | None = None, *, limit: int = COMMENT_LIMIT
) -> str:
    """The PR comment: regressions first, the rest collapsed, within `limit` bytes."""
    return comment_of(Report.of(diff, current, options or Options()), limit=limit)


def summary(
    diff: Diff, current: Results, options: Options | None = None, *, limit: int = SUMMARY_LIMIT
) -> str:
    """The job summary: the full report, within `limit` bytes (cut likewise)."""
    return summary_of(Report.of(diff, current, options or Options()), limit=limit)


def check_parts(
    diff: Diff, current: Results, options: Options | None = None, *, limit: int = CHECK_LIMIT
) -> tuple[str, str]:
    """A check run's output summary (verdict, provenance, tables) and text (the cases)."""
    return check_parts_of(Report.of(diff, current, options or Options()), limit=limit)


# The same from one Report: the action renders all three from one (its lists are a pass
# over every case).


def comment_of(report: Report, *, limit: int = COMMENT_LIMIT) -> str:
    return _fitted(report, _COMMENT, limit, with_marker=True, hint=_IN_SUMMARY)


def summary_of(report: Report, *, limit: int = SUMMARY_LIMIT) -> str:
    return _fitted(
        report,
        Detail(collapse_rest=False, text_chars=4_000),
        limit,
        with_marker=False,
        hint="the full comparison is in diff.json (`--format json`)",
    )


def check_parts_of(report: Report, *, limit: int = CHECK_LIMIT) -> tuple[str, str]:
    head = _fitted(report, Detail(), limit, with_marker=False, hint=_IN_SUMMARY, parts=("head",))
    body = _fitted(report, _COMMENT, limit, with_marker=False, hint=_IN_SUMMARY, parts=("body",))
    return head, body
