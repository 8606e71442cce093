"""Quiet comments: whether a comparison is worth a PR comment (the action's `comment` input).

The check run is the gate and is posted every time; only the sticky comment listens to
`comment` (docs/action.md, "Publishing"). What a comparison has to say is decided here
once, from the Diff, as a `News` level; the `comment` setting turns that into one
`CommentAction`: post the report, edit an existing comment to the all-clear line
(report/all_clear.py), or do nothing.

What counts (docs/reports.md, "Quiet comments"):

- **an alert**, which every setting but `never` posts: a case that regressed on an axis
  (whatever `fail-on` says); a case that could not be evaluated (errored on either side,
  or a metric not computed); a gate that failed, or would have (`fail-on: never`), for
  any reason (thresholds, budgets, the suite-level test, nothing evaluated); a suite-level
  drop; no baseline, or no case in common with it: nothing could be compared, which is
  never hidden behind an all-clear line;
- **a change**, which `on-change` posts too: a case fixed or improved, added, removed, or
  newly flaky (a flip or drop seen here that noise explains, or runs that disagree where
  the baseline's two or more runs agreed);
- nothing else: unchanged and still-failing cases (failing on both sides, the gate not
  failing on it), cases the selection did not run, and the notes at the top alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum, StrEnum

from ..compare.model import REGRESSIONS, CaseDiff, Change, Diff, MetricDiff
from ..compare.stats import EPSILON
from .states import IMPROVEMENTS


class CommentWhen(StrEnum):
    """The `comment` input: when the sticky comment is posted or updated."""

    ALWAYS = "always"
    ON_CHANGE = "on-change"
    ON_REGRESSION = "on-regression"
    NEVER = "never"


# The spellings before the four names, accepted for good (any case, as every input's
# true/false): `true` posts always, `false` never.
LEGACY_SPELLINGS = {"true": CommentWhen.ALWAYS, "false": CommentWhen.NEVER}


def parse_comment_when(text: str) -> CommentWhen:
    """One of the four names or true/false, in any case; ValueError naming them otherwise."""
    lowered = text.lower()
    if lowered in LEGACY_SPELLINGS:
        return LEGACY_SPELLINGS[lowered]
    try:
        return CommentWhen(lowered)
    except ValueError:
        names = ", ".join(when.value for when in CommentWhen)
        raise ValueError(f"must be one of {names} (or true, false), got {text!r}") from None


class News(IntEnum):
    """What a comparison has to tell a reader, least first."""

    QUIET = 0  # nothing moved that a reader needs to hear of
    CHANGE = 1  # improvements, added or removed cases, newly flaky cases
    ALERT = 2  # regressions, cases not evaluated, a failing gate, nothing compared


class CommentAction(StrEnum):
    """What the sticky comment gets."""

    POST = "post"  # the report: update the comment, or create it
    ALL_CLEAR = "all_clear"  # an existing comment becomes the all-clear line; none is created
    NOTHING = "nothing"  # no call about comments at all


# The least news each setting posts on (ALWAYS: even none; NEVER: absent, never posts).
_POSTS_FROM = {
    CommentWhen.ALWAYS: News.QUIET,
    CommentWhen.ON_CHANGE: News.CHANGE,
    CommentWhen.ON_REGRESSION: News.ALERT,
}

_NOT_EVALUATED = frozenset({Change.ERRORED, Change.INCOMPLETE})
_ALERTS = REGRESSIONS | _NOT_EVALUATED
_CHANGES = frozenset({*IMPROVEMENTS, Change.ADDED, Change.REMOVED})


def comment_action(news: News, when: CommentWhen) -> CommentAction:
    """Post when the news reaches what `when` posts on; else, for the quiet settings, say
    all clear in a comment posted before; `never` does nothing."""
    least = _POSTS_FROM.get(when)
    if least is None:
        return CommentAction.NOTHING
    if news >= least:
        return CommentAction.POST
    return CommentAction.ALL_CLEAR


def news_of(diff: Diff) -> News:
    """The most a reader must hear of in `diff` (the module's docstring lists what counts)."""
    if _alert(diff):
        return News.ALERT
    news = News.QUIET
    for case in diff.cases:
        changes = _changes(case)
        if changes & _ALERTS:
            return News.ALERT
        if changes & _CHANGES or newly_flaky(case):
            news = News.CHANGE
    return news


def _alert(diff: Diff) -> bool:
    """The suite's own alerts: nothing compared, a gate that failed or would have failed."""
    verdict = diff.verdict
    return (
        diff.baseline is None
        or not diff.comparable
        or not verdict.passed
        or bool(verdict.reasons)  # fail-on never and accepted PRs keep what it would fail on
        or any(test.significant for test in diff.suite_tests)
    )


def _changes(case: CaseDiff) -> set[Change]:
    """The case's change and its change on each axis (an axis may regress under a case
    change of another kind)."""
    return {case.change, *case.axes.values()}


def newly_flaky(case: CaseDiff) -> bool:
    """A flip or drop seen here that noise explains (listed as flaky, likely noise), or a
    metric whose runs disagree here while two or more runs on the baseline agreed."""
    return case.likely_noise or any(_newly_varies(metric) for metric in case.metrics)


def _newly_varies(metric: MetricDiff) -> bool:
    before = _known(metric.baseline_runs)
    return len(before) >= 2 and not _varies(before) and _varies(_known(metric.current_runs))


def _known(runs: Iterable[float | None]) -> list[float]:
    return [score for score in runs if score is not None]


def _varies(scores: list[float]) -> bool:
    return bool(scores) and max(scores) - min(scores) > EPSILON
