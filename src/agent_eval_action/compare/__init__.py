"""Baseline comparison: per case and metric diff, noise-aware verdicts, the gate, shard merge."""

from __future__ import annotations

from collections.abc import Sequence

from ..results import CaseResult, Results
from .engine import compare
from .loading import load_baseline, load_results
from .model import Diff
from .policy import parse_fail_on

__all__ = [
    "Diff",
    "compare",
    "compare_files",
    "flaky_in_history",
    "gate_options",
    "load_baseline",
    "load_results",
]


def flaky_in_history(history: Sequence[Results]) -> set[tuple[str, str]]:
    """Cases that were noisy on main: their runs disagreed, or their status changed between baselines."""
    from .divergence import behaviour_varies

    statuses: dict[tuple[str, str], set[str]] = {}
    flaky = set()
    for results in history:
        for case in results.cases:
            key = (case.eval_set_id, case.eval_id)
            statuses.setdefault(key, set()).add(case.status.value)
            if behaviour_varies(case) or _scores_disagree(case):
                flaky.add(key)
    return flaky | {key for key, seen in statuses.items() if len(seen) > 1}


def _scores_disagree(case: CaseResult) -> bool:
    return any(len({s for s in m.runs if s is not None}) > 1 for m in case.metrics.values())


def gate_options(
    fail_on: str, min_delta: Sequence[tuple[str | None, float]]
) -> tuple[list[str], dict[str, float]]:
    """`--fail-on` and `--min-delta` values as compare() takes them (bad policy: InputError)."""
    deltas: dict[str, float] = {}
    for axis, value in min_delta:
        for name in (axis,) if axis else ("trajectory", "response"):
            deltas[name] = value
    return parse_fail_on(fail_on), deltas


def compare_files(
    current_path: str,
    baseline_path: str | None,
    *,
    fail_on: str = "regression",
    min_delta: Sequence[tuple[str | None, float]] = (),
    history: Sequence[str] = (),
) -> tuple[Diff, Results]:
    """Load, compare and decide, as `agent-eval-action compare` does: (the diff, the
    current Results it was made from, which the reports show too)."""
    policy, deltas = gate_options(fail_on, min_delta)
    current = load_results(current_path)
    baseline, reason = load_baseline(baseline_path)
    older = [b for b, _ in map(load_baseline, history) if b is not None]
    known_flaky = flaky_in_history([*older, *([baseline] if baseline else [])])
    diff = compare(
        current,
        baseline,
        fail_on=policy,
        min_delta=deltas,
        known_flaky=known_flaky,
        no_baseline_reason=reason,
    )
    return diff, current
