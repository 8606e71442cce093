"""The report's efficiency section (ADK's informational efficiency metrics, from the Diff's
`efficiency`) and its scoring note (how response texts were read): views and wording.

One line for the suite (the mean per-case total of each metric, beside the baseline's over
the same cases), then one line per case whose totals moved a lot or exceeded a budget:
"tool calls 3 → 7", "tokens x2.4 (1.2k → 2.9k)" (with the multiplication sign), "tool calls 9, over its budget of 8".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..compare.model import CaseEfficiency, Diff, EfficiencyChange
from ..metrics.efficiency import BY_NAME
from .budget import Detail, Listing
from .cuts import OTHERS
from .model import Report

if TYPE_CHECKING:
    from ..results import Results

# Reported as a ratio rather than as two numbers: they are large (tokens) or noisy (time).
_AS_RATIO = ("token_usage_v1", "invocation_duration_v1")


def amount(metric: str, value: float | None) -> str:
    """A per-case total as the report writes it: 3, 2.5, 12.3k, 4.1 s; n/a when unknown."""
    if value is None:
        return "n/a"
    unit = BY_NAME[metric].unit if metric in BY_NAME else ""
    if metric == "token_usage_v1" and value >= 1000:
        return f"{value / 1000:,.1f}k"
    if unit:
        return f"{value:,.1f}{unit}"
    return f"{value:,.1f}".removesuffix(".0")


def _label(metric: str) -> str:
    return BY_NAME[metric].label if metric in BY_NAME else metric


def change_text(change: EfficiencyChange) -> str:
    """One notable change: "tool calls 3 → 7", or "tokens \u00d72.4 (1.2k → 2.9k)"."""
    label, metric = _label(change.metric), change.metric
    before, after = amount(metric, change.baseline), amount(metric, change.current)
    if metric in _AS_RATIO and change.baseline and change.current is not None:
        return f"{label} \u00d7{change.current / change.baseline:.1f} ({before} → {after})"
    return f"{label} {before} → {after}"


def over_budget_text(change: EfficiencyChange) -> str:
    """ "tool calls 9, over its budget of 8"."""
    metric = change.metric
    return (
        f"{_label(metric)} {amount(metric, change.current)}, over its budget of "
        f"{amount(metric, change.budget)}"
    )


@dataclass(frozen=True)
class EfficiencyRow:
    name: str
    over_budget: bool
    notes: str


@dataclass(frozen=True)
class Efficiency:
    line: str | None  # the suite's figures; None: no efficiency recorded
    compared: bool  # the figures sit beside the baseline's
    rows: Listing[EfficiencyRow]


def _row(case: CaseEfficiency) -> EfficiencyRow:
    notes = [over_budget_text(c) for c in case.over_budget] + [change_text(c) for c in case.changed]
    return EfficiencyRow(case.key.name, bool(case.over_budget), "; ".join(notes))


def efficiency(report: Report, detail: Detail) -> Efficiency:
    diff = report.diff.efficiency
    if diff is None or not diff.suite:
        return Efficiency(None, False, Listing.of(OTHERS, [], detail))
    compared = report.diff.baseline is not None
    parts = []
    for figure in diff.suite:
        text = f"{_label(figure.metric)} {amount(figure.metric, figure.current)}"
        if compared:
            text += f" (baseline {amount(figure.metric, figure.baseline)})"
        parts.append(text)
    over = [c for c in diff.cases if c.over_budget]
    rows = [_row(c) for c in (*over, *(c for c in diff.cases if not c.over_budget))]
    return Efficiency(" · ".join(parts), compared, Listing.of(OTHERS, rows, detail))


@dataclass(frozen=True)
class Scoring:
    stripped: bool  # --strip-thoughts: response_match_score read no thought parts


def scoring(report: Report, detail: Detail) -> Scoring:
    return Scoring(report.current.run_config.response_thoughts == "stripped")


def console_lines(results: Results) -> list[str]:
    """The console table's efficiency lines: the suite's mean per-case totals, and each
    case over a budget."""
    from statistics import fmean

    figures = []
    for name, metric in BY_NAME.items():
        totals = [
            case.efficiency[name].total
            for case in results.cases
            if name in case.efficiency and case.efficiency[name].total is not None
        ]
        if totals:
            figures.append(
                f"{metric.label} {amount(name, fmean(t for t in totals if t is not None))}"
            )
    lines = [f"efficiency (mean per case): {' · '.join(figures)}"] if figures else []
    for case in results.cases:
        for name in case.over_budget:
            result = case.efficiency[name]
            change = EfficiencyChange(
                metric=name, baseline=None, current=result.total, budget=result.budget
            )
            lines.append(f"over budget: {case.key.name}: {over_budget_text(change)}")
    return lines


def diff_lines(diff: Diff) -> list[str]:
    """The console comparison's efficiency lines: the suite's figures beside the baseline's,
    then each case over a budget or whose totals moved a lot."""
    view = diff.efficiency
    if view is None or not view.suite:
        return []
    figures = [
        f"{_label(f.metric)} {amount(f.metric, f.current)}"
        + (f" (baseline {amount(f.metric, f.baseline)})" if diff.baseline is not None else "")
        for f in view.suite
    ]
    lines = [f"efficiency (mean per case): {' · '.join(figures)}"]
    lines += [f"  {_row(case).name}: {_row(case).notes}" for case in view.cases]
    return lines
