"""The all-clear comment (report/templates/all_clear.md.j2): one line that replaces this
check's sticky comment when a quiet `comment` setting finds nothing to post (report/quiet.py).

It names the check, what stayed quiet ("no changes" under `on-change`, "no regressions"
under `on-regression`), the baseline's commit, the current commit and the run whose job
summary and check run hold the full report; links only as report/links.py makes them.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import render
from .budget import Detail
from .escape import Md
from .markdown import marker
from .model import Report
from .quiet import CommentWhen
from .view import head

ALL_CLEAR_TEMPLATE = "all_clear.md.j2"

# What each quiet setting stays quiet about, as the line says it.
QUIET_ON = {CommentWhen.ON_CHANGE: "no changes", CommentWhen.ON_REGRESSION: "no regressions"}


@dataclass(frozen=True)
class AllClear:
    check_name: str
    quiet_on: str
    baseline: Md  # the baseline's commit, linked, with its branch and relation; or empty
    current: Md  # the current commit, or "this run"
    run: Md  # the run, linked, or empty


def all_clear(report: Report, when: CommentWhen) -> str:
    """The comment body (its marker first, as every sticky comment's) for `when`, one of
    the quiet settings."""
    shown = head(report, Detail())
    view = AllClear(
        check_name=shown.check_name,
        quiet_on=QUIET_ON[when],
        baseline=shown.baseline.what if shown.baseline is not None else Md(""),
        current=shown.current,
        run=shown.run,
    )
    return render.standalone(
        ALL_CLEAR_TEMPLATE, marker=Md(marker(report.options.check_name)), view=view
    )
