"""The comparison on the console: the verdict, what it does not show by itself, what changed
per case, the suite tests, and why each regressed or failing case does (report/why.py).

The same words as the markdown report (report/labels.py): the headline's counts, the case
classes, the notes said at the top, scores with 3 decimals.
"""

from __future__ import annotations

from tabulate import tabulate

from ..compare.model import CaseDiff, Change, Diff, MetricDiff
from ..results import Results
from .efficiency import diff_lines
from .labels import (
    case_class,
    case_notes,
    decided_by,
    fell_back,
    headline_parts,
    notes_at_top,
    notes_below,
    number,
    plural,
    unsaid_reasons,
)
from .states import shown_flaky, suite_test_shown
from .why import why_lines

_QUIET = {Change.UNCHANGED}


def _score(value: float | None) -> str:
    return "-" if value is None else number(value)


def _metric_line(metric: MetricDiff) -> str:
    text = f"{metric.metric}: {_score(metric.baseline_score)} -> {_score(metric.current_score)}"
    if metric.delta is not None and abs(metric.delta) > 1e-9:
        text += f" ({metric.delta:+.3f})"
    return text


def _policy(diff: Diff) -> str:
    asked = fell_back(diff)
    fallback = f": without a baseline, {asked} falls back to it" if asked else ""
    return f"fail-on {decided_by(diff)}{fallback}"


def verdict_line(diff: Diff, current: Results | None = None) -> str:
    """PASS or FAIL, the policy that decided, and what the verdict rests on."""
    verdict = diff.verdict
    mark = "PASS" if verdict.passed else "FAIL"
    text = f"{mark} ({_policy(diff)}): " + " · ".join(headline_parts(diff, current))
    return text + (" (accepted)" if verdict.accepted else "")


def gate_line(diff: Diff, current: Results | None = None) -> str | None:
    """The gate's reasons that the headline does not already say, or None."""
    verdict = diff.verdict
    counted = not verdict.passed or verdict.accepted or "never" in diff.policy.fail_on
    if not counted:
        return None
    rest = unsaid_reasons(diff)
    if not rest:
        return None
    failed = "failed on" if not verdict.passed else "would have failed on"
    also = "also " if len(rest) < len(verdict.reasons) else ""
    return f"  {also}{failed}: " + "; ".join(rest)


def _label(case: CaseDiff) -> str:
    return case_class(case) + (" · flaky" if shown_flaky(case) else "")


def table(diff: Diff, current: Results | None = None, *, html: str | None = None) -> str:
    """`html`: the drill-down report written, named under the cases explained."""
    lines = [verdict_line(diff, current)]
    if gate := gate_line(diff, current):
        lines.append(gate)
    top = notes_at_top(diff)
    if top:
        lines += ["", *top]
    if diff.not_run:
        lines += ["", "not run (selection), not counted as removed:"]
        lines += [f"  {c.key.name} ({c.file}:{c.line})" for c in diff.not_run]
    rows = []
    for case in diff.cases:
        if case.change in _QUIET and not (case.likely_noise or case.confirmation):
            continue  # an unchanged case, unless noise or its re-runs explain a change
        changed = [m for m in case.metrics if m.change not in _QUIET or m.reason]
        cell = [_metric_line(m) for m in changed or case.metrics] + case_notes(case, current)
        rows.append([case.key.name, _label(case), "\n".join(cell)])
    if rows:
        lines += ["", tabulate(rows, headers=["case", "change", "metrics (baseline -> current)"])]
    for test in diff.suite_tests if suite_test_shown(diff) else ():
        lines.append(
            f"\nsuite-level test, {test.axis}: mean change {test.mean_delta:+.3f} over "
            f"{plural(test.cases, 'case')} ({test.worse} worse, {test.better} better), "
            f"p = {test.p_value:.4f} "
            + (
                ""
                if test.first_p_value is None
                else f"(one run each: {test.first_p_value:.4f}; then with "
                f"{plural(test.rounds, 'suite round')}) "
            )
            + f"({'a broad drop, beyond noise' if test.significant else 'no broad drop'} at "
            f"alpha = {test.alpha:g})"
        )
    if efficiency := diff_lines(diff):
        lines += ["", *efficiency]
    comparability = notes_below(diff)
    if comparability:
        lines += ["", "comparability:", *(f"  {n}" for n in comparability)]
    if explained := why_lines(diff, html=html):
        lines += ["", *explained]
    return "\n".join(lines)
