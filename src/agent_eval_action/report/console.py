"""The console table: one row per case and metric, why each failing case fails (its first
divergent turn: report/why.py), then a one-line summary."""

from __future__ import annotations

from collections import Counter

from tabulate import tabulate

from ..results import InformationalResult, MetricResult, Results, Status
from .efficiency import console_lines
from .labels import number
from .why import results_why

_MARK = {
    Status.PASSED: "pass",
    Status.FAILED: "FAIL",
    Status.ERRORED: "ERROR",
    Status.NOT_EVALUATED: "not evaluated",
}


def _score(value: float | None) -> str:
    return "-" if value is None else number(value)


def table(results: Results, *, why: bool = True, html: str | None = None) -> str:
    """`why`: with the failing cases' turns (not when a comparison follows that shows
    them); `html`: the drill-down report written, named there."""
    rows = []
    for case in results.cases:
        name = case.key.name
        if not case.metrics and not case.informational:
            rows.append([name, "-", "-", "-", "-", _MARK[case.status]])
        listed: list[tuple[str, str, MetricResult | InformationalResult]] = [
            *((n, m.axis, m) for n, m in case.metrics.items()),
            *((n, "info", m) for n, m in case.informational.items()),
        ]
        for metric_name, axis, metric in listed:
            runs = ""
            if len(metric.runs) > 1:
                runs = " (" + ", ".join(_score(s) for s in metric.runs) + ")"
            rows.append(
                [
                    name,
                    metric_name,
                    axis,
                    _score(metric.score) + runs,
                    _score(metric.threshold),
                    _MARK[metric.status],
                ]
            )
            name = ""
    # scores as every report prints them (report/labels.py: 3 decimals), not re-read as numbers
    text = tabulate(
        rows,
        headers=["case", "metric", "axis", "score", "threshold", "status"],
        disable_numparse=True,
        colalign=("left", "left", "left", "right", "right", "left"),
    )
    notes = [f"{c.key.name}: {c.note}" for c in results.cases if c.note]
    if notes:
        text += "\n\n" + "\n".join(notes)
    if efficiency := console_lines(results):
        text += "\n\n" + "\n".join(efficiency)
    if why and (explained := results_why(results, html=html)):
        text += "\n\n" + "\n".join(explained)
    lines = [summary_line(results), judge_line(results), simulator_line(results)]
    return f"{text}\n\n" + "\n".join(line for line in lines if line)


def simulator_line(results: Results) -> str | None:
    """The user simulator's work on scenario cases: calls and tokens (its cost is in the
    judge line's, which covers every Gemini call)."""
    usage = results.usage
    if not usage.simulator_calls:
        return None
    return (
        f"user simulator: {usage.simulator_calls} call{'s' if usage.simulator_calls != 1 else ''}; "
        f"tokens {usage.simulator_prompt_tokens:,} in, {usage.simulator_output_tokens:,} out, "
        f"{usage.simulator_thinking_tokens:,} thinking"
    )


def judge_line(results: Results) -> str | None:
    """The LLM judge's work: calls made, verdicts reused, tokens, cost."""
    usage = results.usage
    if not usage.judge_calls and not usage.judge_reused and not usage.simulator_calls:
        return None
    cost = (
        "n/a (no price for the judge model)" if usage.cost_usd is None else f"${usage.cost_usd:.4f}"
    )
    sources = Counter(
        verdict.source
        for case in results.cases
        for metric in case.metrics.values()
        if metric.judge is not None
        for verdict in metric.judge.verdicts
        if verdict.source != "call" and verdict.error is None
        for _ in verdict.samples
    )
    where = ", ".join(f"{n} from {_SOURCE[s]}" for s, n in sorted(sources.items()))
    refused = f", {usage.judge_refused} refused (judge-max-calls)" if usage.judge_refused else ""
    return (
        f"judge: {usage.judge_calls} call{'s' if usage.judge_calls != 1 else ''}, "
        f"{usage.judge_reused} reused{f' ({where})' if where else ''}{refused}; "
        f"tokens {usage.judge_prompt_tokens:,} in, "
        f"{usage.judge_output_tokens:,} out, {usage.judge_thinking_tokens:,} thinking; cost {cost}"
    )


def summary_line(results: Results) -> str:
    counts = Counter(case.status for case in results.cases)
    parts = [f"{counts[s]} {label}" for s, label in _SUMMARY if counts[s]]
    cases = len(results.cases)
    text = f"{cases} case{'s' if cases != 1 else ''}: " + (", ".join(parts) or "none run")
    if results.partial:
        text += " (PARTIAL: the run was cancelled)"
    return text


_SUMMARY = [
    (Status.PASSED, "passed"),
    (Status.FAILED, "failed"),
    (Status.ERRORED, "errored"),
    (Status.NOT_EVALUATED, "not evaluated"),
]

_SOURCE = {"baseline": "the baseline", "cache": "the cache", "repeat": "this run"}
