"""Noise on main: which cases older baselines show to be flaky."""

from __future__ import annotations

from collections.abc import Sequence

from ..core import CaseKey
from ..results import CaseResult, Results
from .divergence import behaviour_varies


def flaky_in_history(history: Sequence[Results]) -> set[CaseKey]:
    """Cases that were noisy on main: their runs disagreed, or their status changed between baselines."""
    statuses: dict[CaseKey, set[str]] = {}
    flaky = set()
    for results in history:
        for case in results.cases:
            key = case.key
            statuses.setdefault(key, set()).add(case.status.value)
            if behaviour_varies(case) or _scores_disagree(case):
                flaky.add(key)
    return flaky | {key for key, seen in statuses.items() if len(seen) > 1}


def _scores_disagree(case: CaseResult) -> bool:
    return any(len({s for s in m.runs if s is not None}) > 1 for m in case.metrics.values())
