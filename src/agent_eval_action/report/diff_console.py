"""The comparison on the console: the verdict, what changed per case, and the suite tests."""

from __future__ import annotations

from tabulate import tabulate

from ..compare.model import Change, Diff, MetricDiff
from ..results import Status
from .labels import change_label

_QUIET = {Change.UNCHANGED}


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _metric_line(metric: MetricDiff) -> str:
    text = f"{metric.metric}: {_score(metric.baseline_score)} -> {_score(metric.current_score)}"
    if metric.delta is not None and abs(metric.delta) > 1e-9:
        text += f" ({metric.delta:+.3f})"
    return text


def headline(diff: Diff) -> str:
    verdict = diff.verdict
    mark = "PASS" if verdict.passed else "FAIL"
    if diff.baseline is None:  # nothing was compared: say what the thresholds said
        passed = sum(case.current_status == Status.PASSED for case in diff.cases)
        text = f"{mark}: no baseline · {passed} of {len(diff.cases)} cases pass their thresholds"
        return text + (" (accepted)" if verdict.accepted else "")
    counts = verdict.counts
    parts = [
        f"{verdict.trajectory_regressions} trajectory regressions",
        f"{verdict.response_regressions} response regressions",
    ]
    for change in (
        Change.FIXED,
        Change.STILL_FAILING,
        Change.ADDED,
        Change.REMOVED,
        Change.ERRORED,
    ):
        if counts.get(change.value):
            parts.append(f"{counts[change.value]} {change.value.replace('_', ' ')}")
    parts.append(f"{counts.get(Change.UNCHANGED.value, 0)} unchanged")
    if counts.get("flaky"):
        parts.append(f"{counts['flaky']} flaky")
    text = f"{mark}: " + " · ".join(parts)
    if verdict.accepted:
        text += " (accepted)"
    return text


def table(diff: Diff) -> str:
    lines = [headline(diff)]
    if not diff.verdict.passed or diff.verdict.accepted or "never" in diff.policy.fail_on:
        lines += [f"  - {reason}" for reason in diff.verdict.reasons]
    if diff.notes:
        lines += ["", *diff.notes]
    rows = []
    for case in diff.cases:
        if case.change in _QUIET and not case.likely_noise:
            continue
        changed = [m for m in case.metrics if m.change not in _QUIET or m.reason]
        rows.append(
            [
                f"{case.eval_set_id} / {case.eval_id}",
                change_label(case),
                (case.pattern.value.replace("_", " ") if case.pattern else ""),
                "\n".join(_metric_line(m) for m in changed or case.metrics),
                "flaky" if case.flaky else "",
            ]
        )
    if rows:
        lines += [
            "",
            tabulate(
                rows, headers=["case", "change", "pattern", "metrics (baseline -> current)", ""]
            ),
        ]
    for test in diff.suite_tests:
        lines.append(
            f"\nnoisy cases, {test.axis}: mean change {test.mean_delta:+.3f} over {test.cases} cases "
            f"({test.worse} worse, {test.better} better), p = {test.p_value:.4f} "
            f"({'significant' if test.significant else 'not significant'} at {test.alpha:g})"
        )
    return "\n".join(lines)
