"""The gate: from the case diffs and suite tests to pass or fail, with the reasons.

`--fail-on` takes a comma list of:
- `regression` (default): new failures and real drops on either axis, noisy cases
  that got worse together, metrics that could not be computed, errored cases, and
  added cases that do not pass;
- `trajectory` / `response`: the same, on one axis only (errored cases still fail);
- `threshold`: any case that does not pass, as ADK judges it;
- `never`: report only.
A case over an efficiency budget (`--budget`) fails every policy but `never`.
Without a baseline every policy but `never` falls back to `threshold`.

Removed cases (compare/matching.py: not renamed, not left out by the selection) that passed
on the baseline fail `regression`, and `trajectory` / `response` when the case was scored
on that axis; `-removed` in the list (`regression,-removed`) opts out. A baseline with no
case in common with the current run is "not comparable": it fails `regression`,
`trajectory` and `response`. `threshold` judges only the current cases, so neither
applies to it. The verdict's notes say both at the top whatever the policy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ..core import AXES
from ..errors import InputError
from ..results import Results, Status
from .model import REGRESSIONS, Axis, CaseDiff, Change, GateReason, Policy, SuiteTest, Verdict

POLICIES = ("regression", "trajectory", "response", "threshold", "never")
NOT_REMOVED = "-removed"  # a modifier: removed cases do not fail the policies it joins
COMPARING = ("regression", "trajectory", "response")


def parse_fail_on(text: str) -> list[str]:
    tokens = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in tokens if t not in (*POLICIES, NOT_REMOVED)]
    if not tokens or unknown:
        raise InputError(
            f"--fail-on: unknown policy {', '.join(unknown) or repr(text)}; use "
            f"{', '.join(POLICIES)} (and {NOT_REMOVED} after a policy)"
        )
    if "never" in tokens and len(tokens) > 1:
        raise InputError("--fail-on: `never` cannot be combined with other policies")
    if all(t == NOT_REMOVED for t in tokens):
        raise InputError(
            f"--fail-on: `{NOT_REMOVED}` only opts a policy out of failing on removed cases; "
            f"name the policy too, e.g. regression,{NOT_REMOVED}"
        )
    # the modifier last: a list as the action passes it on (`--fail-on regression,-removed`)
    # never starts with a dash
    policies = [t for t in dict.fromkeys(tokens) if t != NOT_REMOVED]
    return policies + ([NOT_REMOVED] if NOT_REMOVED in tokens else [])


def parse_min_delta(text: str) -> tuple[Axis | None, float]:
    """One `[AXIS=]X` item of `--min-delta` (ValueError with the reason when it is not)."""
    axis, _, value = text.rpartition("=")
    if axis and axis not in AXES:
        raise ValueError(f"unknown axis {axis!r}; use trajectory=X or response=X")
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a number") from None
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"must be within [0, 1], got {number}")
    return (axis or None), number


def _plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"


def _axis_reasons(
    axis: Axis, cases: Sequence[CaseDiff], tests: Sequence[SuiteTest]
) -> list[GateReason]:
    reasons = []
    regressed = [c for c in cases if c.axes.get(axis) in REGRESSIONS]
    if regressed:
        text = _plural(len(regressed), f"{axis} regression")
        reasons.append(GateReason(code="regressions", axis=axis, cases=len(regressed), text=text))
    for test in tests:
        if test.axis == axis and test.significant:
            text = (
                f"noisy cases got worse together on the {axis} axis "
                f"(mean change {test.mean_delta:+.3f} over {test.cases} case{'s' if test.cases != 1 else ''}, p = {test.p_value:.4f})"
            )
            reasons.append(GateReason(code="suite_drop", axis=axis, cases=test.cases, text=text))
    incomplete = [c for c in cases if c.axes.get(axis) == Change.INCOMPLETE]
    if incomplete:
        text = _plural(
            len(incomplete),
            f"case with {axis} metrics that could not be computed",
            f"cases with {axis} metrics that could not be computed",
        )
        reasons.append(GateReason(code="incomplete", axis=axis, cases=len(incomplete), text=text))
    return reasons


def _removed_reason(cases: Sequence[CaseDiff], tokens: set[str]) -> GateReason | None:
    """Removed cases that passed on the baseline, as the comparing policies count them."""
    axes = {"trajectory", "response"} if "regression" in tokens else tokens & set(AXES)
    lost = [
        c
        for c in cases
        if c.change == Change.REMOVED
        and c.baseline_status == Status.PASSED
        and any(m.axis in axes for m in c.metrics)
    ]
    if not lost:
        return None
    names = [t for t in COMPARING if t in tokens]
    text = (
        _plural(
            len(lost),
            "case that passed on the baseline was",
            "cases that passed on the baseline were",
        )
        + f" removed (fail-on {','.join(names)}; {NOT_REMOVED} opts out)"
    )
    return GateReason(code="removed_passed", cases=len(lost), text=text)


def decide(
    current: Results,
    cases: Sequence[CaseDiff],
    tests: Sequence[SuiteTest],
    policy: Policy,
    *,
    has_baseline: bool,
    accepted: bool = False,
    comparable: bool = True,
) -> Verdict:
    counts = Counter(c.change.value for c in cases)
    counts["flaky"] = sum(c.flaky for c in cases)
    counts["renamed"] = sum(c.renamed_from is not None for c in cases)
    reasons: list[GateReason] = []
    evaluated = [c for c in current.cases if c.status != Status.ERRORED]
    if not evaluated:
        text = "no case was evaluated" if not current.cases else "every case errored"
        reasons.append(GateReason(code="none_evaluated", cases=len(current.cases), text=text))
    tokens = set(policy.fail_on)
    if not has_baseline and "never" not in tokens:
        tokens = {"threshold"}
    count_removed = NOT_REMOVED not in tokens
    tokens.discard(NOT_REMOVED)
    if not comparable and tokens & set(COMPARING):
        text = (
            "not comparable: the baseline and this run have no case in common "
            f"(fail-on {','.join(t for t in COMPARING if t in tokens)})"
        )
        reasons.append(GateReason(code="not_comparable", text=text))
    if "threshold" in tokens:
        failing = [c for c in current.cases if c.status != Status.PASSED]
        if failing:
            text = _plural(
                len(failing),
                "case does not pass its thresholds",
                "cases do not pass their thresholds",
            )
            reasons.append(GateReason(code="thresholds", cases=len(failing), text=text))
    over_budget = [c for c in current.cases if c.over_budget]
    if over_budget:  # a budget set is a limit whatever the policy (`never` only reports it)
        text = (
            _plural(
                len(over_budget),
                "case is over its efficiency budget",
                "cases are over their efficiency budget",
            )
            + f" ({', '.join(sorted({n for c in over_budget for n in c.over_budget}))})"
        )
        reasons.append(GateReason(code="over_budget", cases=len(over_budget), text=text))
    axes: list[Axis] = [
        a for a in ("trajectory", "response") if "regression" in tokens or a in tokens
    ]
    for axis in axes:
        reasons.extend(_axis_reasons(axis, cases, tests))
    if axes:
        errored = [
            c for c in cases if c.change == Change.ERRORED and c.current_status == Status.ERRORED
        ]
        if errored:
            text = _plural(len(errored), "case errored", "cases errored")
            reasons.append(GateReason(code="errored", cases=len(errored), text=text))
        new_red = [
            c for c in cases if c.change == Change.ADDED and c.current_status != Status.PASSED
        ]
        if new_red:
            text = _plural(len(new_red), "added case does not pass", "added cases do not pass")
            reasons.append(GateReason(code="added_failing", cases=len(new_red), text=text))
        removed = _removed_reason(cases, tokens) if count_removed and comparable else None
        if removed:
            reasons.append(removed)
    passed = not reasons or "never" in tokens or accepted
    decided_by = [
        t
        for t in (*POLICIES, NOT_REMOVED)
        if t in tokens or (t == NOT_REMOVED and not count_removed)
    ]
    return Verdict(
        passed=passed,
        reasons=[r.text for r in reasons],
        why=reasons,
        counts=dict(counts),
        trajectory_regressions=sum(c.axes.get("trajectory") in REGRESSIONS for c in cases),
        response_regressions=sum(c.axes.get("response") in REGRESSIONS for c in cases),
        accepted=accepted and bool(reasons),
        decided_by=decided_by,
    )
