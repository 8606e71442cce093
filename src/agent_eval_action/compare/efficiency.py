"""ADK's efficiency metrics between a baseline and the current Results (pure): the suite's
figures, and the cases whose per-case totals moved a lot or exceeded a budget.

These metrics are informational: nothing here changes a case's verdict. A budget exceeded
fails the gate by itself (compare/policy.py); a large change is only said.
"""

from __future__ import annotations

import statistics

from ..core import CaseKey
from ..metrics.efficiency import EFFICIENCY, NOTABLE_FACTOR
from ..results import CaseResult, Results
from .model import CaseEfficiency, EfficiencyChange, EfficiencyDiff, EfficiencyFigure


def notable(metric: str, baseline: float | None, current: float | None) -> bool:
    """Whether a per-case total moved a lot: by NOTABLE_FACTOR and by the metric's floor."""
    if baseline is None or current is None:
        return False
    floor = next(m.notable for m in EFFICIENCY if m.name == metric)
    if abs(current - baseline) < floor:
        return False
    return current >= baseline * NOTABLE_FACTOR or baseline >= current * NOTABLE_FACTOR


def _total(case: CaseResult | None, metric: str) -> float | None:
    result = case.efficiency.get(metric) if case is not None else None
    return result.total if result is not None else None


def _answered(case: CaseResult, metric: str) -> bool:
    result = case.efficiency.get(metric)
    return result is not None and result.answered


def efficiency_diff(current: Results, baseline: Results | None) -> EfficiencyDiff | None:
    """The efficiency figures and notes; None when the current Results recorded none."""
    if not any(case.efficiency for case in current.cases):
        return None
    before: dict[CaseKey, CaseResult] = (
        {case.key: case for case in baseline.cases} if baseline is not None else {}
    )
    suite = []
    for metric in EFFICIENCY:
        pairs = [
            (_total(before.get(case.key), metric.name), _total(case, metric.name))
            for case in current.cases
        ]
        if baseline is not None:
            pairs = [(b, c) for b, c in pairs if b is not None and c is not None]
        else:
            pairs = [(None, c) for _, c in pairs if c is not None]
        if not pairs:
            continue
        suite.append(
            EfficiencyFigure(
                metric=metric.name,
                current=statistics.fmean(c for _, c in pairs if c is not None),
                baseline=statistics.fmean(b for b, _ in pairs if b is not None)
                if baseline is not None
                else None,
                cases=len(pairs),
            )
        )
    cases = []
    for case in current.cases:
        changed, over = [], []
        for name, result in case.efficiency.items():
            earlier = before.get(case.key)
            if result.answered or (earlier is not None and _answered(earlier, name)):
                continue  # a time without the tools' own: neither judged nor compared
            old = _total(earlier, name)
            change = EfficiencyChange(
                metric=name, baseline=old, current=result.total, budget=result.budget
            )
            if result.over_budget:
                over.append(change)
            elif notable(name, old, result.total):
                changed.append(change)
        if changed or over:
            cases.append(
                CaseEfficiency(
                    eval_set_id=case.eval_set_id,
                    eval_id=case.eval_id,
                    file=case.file,
                    line=case.line,
                    changed=changed,
                    over_budget=over,
                )
            )
    return EfficiencyDiff(suite=suite, cases=cases)
