"""Numbers and words as the reports print them: scores, Δ bars, case labels, the headline."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

from ..compare.model import CaseDiff, Change, Diff
from ..results import Status
from .escape import Md

CHANGE_LABEL = {
    Change.NEW_FAILURE: "new failure",
    Change.REGRESSED: "regressed",
    Change.FIXED: "fixed",
    Change.IMPROVED: "improved",
    Change.STILL_FAILING: "still failing",
    Change.UNCHANGED: "unchanged",
    Change.INCOMPLETE: "incomplete",
    Change.ERRORED: "errored",
    Change.ADDED: "added",
    Change.REMOVED: "removed",
}
PATTERN_LABEL = {"lucky_answer": "lucky answer", "fumbled_summary": "fumbled summary"}


def score(value: float | None) -> Md:
    return Md("\u2013" if value is None else f"{value:.3f}")


def delta_bar(delta: float | None) -> Md:
    """Δ as a signed number and a bar of up to four squares (one per 0.25, at least one)."""
    if delta is None:
        return Md("")
    if abs(delta) < 1e-9:
        return Md("±0")
    cells = max(1, min(4, round(abs(delta) * 4)))
    square = "🟥" if delta < 0 else "🟩"
    sign = "\u2212" if delta < 0 else "+"
    return Md(f"{sign}{abs(delta):.2f}\u00a0{square * cells}")


def change_label(case: CaseDiff) -> str:
    """How the case changed, in words that claim no past it does not have: a case that
    fails without a baseline to fail on too is "failing", not "still failing"."""
    if case.change == Change.STILL_FAILING and case.baseline_status != Status.FAILED:
        return "failing"
    return CHANGE_LABEL[case.change]


def case_class(case: CaseDiff) -> str:
    parts = [change_label(case)]
    if case.pattern is not None:
        parts.append(PATTERN_LABEL.get(case.pattern.value, "both axes"))
    if case.likely_noise:
        parts.append("likely noise")
    if confirmed(case):
        parts.append("confirmed")
    return " · ".join(parts)


def confirmed(case: CaseDiff) -> bool:
    """A regression that every confirmation re-run showed again (compare/confirm.py)."""
    done = getattr(case, "confirmation", None)  # absent from Diffs made before re-runs
    return bool(done is not None and done.runs and done.reproduced == done.runs)


def plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count:,} {one if count == 1 else (many or one + 's')}"


def headline(diff: Diff) -> str:
    """One line: the verdict and what it rests on, e.g. ❌ 2 trajectory regressions · 38 unchanged."""
    verdict, counts = diff.verdict, Counter(diff.verdict.counts)
    icon = "❌" if not verdict.passed else ("☑️" if verdict.accepted else "✅")
    parts = []
    if verdict.trajectory_regressions:
        parts.append(plural(verdict.trajectory_regressions, "trajectory regression"))
    if verdict.response_regressions:
        parts.append(plural(verdict.response_regressions, "response regression"))
    if diff.baseline is not None and not parts:
        parts.append("no regressions")
    if diff.baseline is None:
        passed = sum(c.current_status == Status.PASSED for c in diff.cases)
        parts = ["no baseline", f"{passed:,} of {plural(len(diff.cases), 'case')} passed"]
    else:
        improved = counts[Change.FIXED.value] + counts[Change.IMPROVED.value]
        for number, one, many in (
            (improved, "improvement", None),
            (counts[Change.STILL_FAILING.value], "still failing", "still failing"),
            (counts[Change.ADDED.value], "added", "added"),
            (counts[Change.REMOVED.value], "removed", "removed"),
            (counts[Change.ERRORED.value], "errored", "errored"),
            (counts[Change.INCOMPLETE.value], "incomplete", "incomplete"),
        ):
            if number:
                parts.append(plural(number, one, many))
        parts.append(f"{counts[Change.UNCHANGED.value]:,} unchanged")
    text = f"{icon} " + " · ".join(parts)
    return text + (" (accepted)" if verdict.accepted else "")


def age(delta: timedelta) -> str:
    """How long before the current run the baseline was recorded, in its largest unit."""
    seconds = delta.total_seconds()
    if seconds < 0:
        return "recorded after this run"
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if seconds >= size:
            return f"recorded {plural(int(seconds // size), unit)} before this run"
    return "recorded moments before this run"
