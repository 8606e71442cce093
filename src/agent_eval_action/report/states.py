"""One state per case and axis, as every report says it: the comment, the job summary, the
check run, the console and the drill-down page all take a case's state from here.

The Diff decides (compare/); this module only names what a reader is shown, so that no two
places of the reports can tell one case's axis two ways (a regression listed as flaky, a
confirmed regression counted among cases "within noise"). tests/test_report_coherence.py
checks it over every report, in a matrix of settings.
"""

from __future__ import annotations

from enum import StrEnum

from ..compare.model import NOISE_RULES, REGRESSIONS, CaseDiff, Change, Diff
from ..core import Axis

# the changes of cases that could not be compared, and of those that got better
NOT_COMPARABLE = (Change.ADDED, Change.REMOVED, Change.ERRORED, Change.INCOMPLETE)
IMPROVEMENTS = (Change.FIXED, Change.IMPROVED)


class State(StrEnum):
    """What the reports say of one axis of one case."""

    REGRESSED = "regressed"  # a new failure or a drop the gate blames on this change
    NOISE = "likely noise"  # a flip or drop that the noise seen explains: not blamed
    IMPROVED = "improved"  # fixed or improved
    FAILING = "failing"  # fails its thresholds (on both sides, or without a baseline)
    NOT_COMPARED = "not compared"  # added, removed, errored or incomplete
    UNCHANGED = "unchanged"


def axis_state(case: CaseDiff, axis: Axis) -> State:
    """The one state of `case` on `axis`: a regression wins over anything else the case's
    metrics say; then noise; then what the case's change says."""
    change = case.axes.get(axis)
    if change in REGRESSIONS:
        return State.REGRESSED
    if any(m.axis == axis and m.rule in NOISE_RULES for m in case.metrics):
        return State.NOISE
    if case.change in NOT_COMPARABLE:
        return State.NOT_COMPARED
    if change in IMPROVEMENTS:
        return State.IMPROVED
    if change == Change.STILL_FAILING:
        return State.FAILING
    return State.UNCHANGED


def regressed(case: CaseDiff) -> bool:
    """Blamed on either axis: listed with the regressions, and nowhere as flaky."""
    return case.change in REGRESSIONS or any(c in REGRESSIONS for c in case.axes.values())


def shown_flaky(case: CaseDiff) -> bool:
    """Listed (or tagged) as flaky: the Diff's `flaky`, but never for a case the report
    blames, whose regression is its one state ("confirmed" and "not blamed" cannot both
    hold). The Diff's own `flaky` and its counts are left as they are."""
    return case.flaky and not regressed(case)


def suite_test_shown(diff: Diff) -> bool:
    """Whether the reports show the suite-level test's rows: when it failed the gate, when
    suite rounds ran for it, or when cases are listed as flaky (the noise it weighs). When
    none holds, the cases it weighed are each shown in a state of their own (a regression
    confirmed by its re-runs, an improvement), and a row calling them noise together would
    contradict them."""
    tests = diff.suite_tests
    if not tests:
        return False
    if any(t.significant or t.rounds for t in tests):
        return True
    return any(shown_flaky(case) for case in diff.cases)
