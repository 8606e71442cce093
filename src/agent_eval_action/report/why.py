"""Why cases fail, on a console: per regressed or failing case its first divergent turn.

The block is the PR comment's (report/divergence.py `divergence_text`), with the tool
calls one per line and their differing arguments marked; a regressed case's is against its
baseline run, a failing one's against its eval file (compare/divergence.py). At most
`CASES` cases, regressions first, every line at most `WIDTH` columns, each user message and
answer cut to `TEXT_CHARS`; the rest are counted, and found in the drill-down report.
"""

from __future__ import annotations

from ..compare.model import REGRESSIONS, CaseDiff, Diff, MetricDiff
from ..results import Results, Status
from .divergence import divergence_text
from .labels import case_class, number, plural
from .states import regressed

WIDTH = 100  # columns of every line
CASES = 10  # cases explained; the rest are counted
TEXT_CHARS = 300  # of a user message or an answer
INDENT = "    "  # a case's lines, under its number
TITLE = "why: the first divergent turn of each regressed or failing case"


def explained(diff: Diff) -> list[CaseDiff]:
    """The cases a console explains, in its order: the regressions, then the cases that
    fail; only those with a turn to show."""
    shown = [c for c in diff.cases if c.divergence is not None]
    first = [c for c in shown if regressed(c)]
    rest = [c for c in shown if not regressed(c) and c.current_status == Status.FAILED]
    return first + rest


def _metric(case: CaseDiff, metric: MetricDiff) -> str:
    current = "-" if metric.current_score is None else number(metric.current_score)
    if regressed(case):
        before = "-" if metric.baseline_score is None else number(metric.baseline_score)
        return f"{metric.metric}: {before} -> {current}"
    threshold = "-" if metric.threshold is None else number(metric.threshold)
    return f"{metric.metric}: {current} < {threshold}"


def _metrics(case: CaseDiff) -> list[MetricDiff]:
    if regressed(case):
        return [m for m in case.metrics if m.change in REGRESSIONS]
    return [m for m in case.metrics if m.current_status == Status.FAILED]


def _fit(line: str) -> str:
    return line if len(line) <= WIDTH else line[: WIDTH - 1] + "…"


def _place(case: CaseDiff) -> str:
    """`at FILE:LINE`, a long path cut at its start: the file's name and line are kept."""
    place = f"{case.file}:{case.line}"
    room = WIDTH - len(INDENT) - len("at ")
    return INDENT + "at " + (place if len(place) <= room else "…" + place[-(room - 1) :])


def case_lines(index: int, case: CaseDiff) -> list[str]:
    """One case: its name and class, its place, its failed or regressed metrics, its turn."""
    assert case.divergence is not None
    lines = [_fit(f"{index}. {case.key.name} · {case_class(case)}")]
    lines.append(_place(case))
    lines += [_fit(INDENT + _metric(case, m)) for m in _metrics(case)]
    block = divergence_text(case.divergence, TEXT_CHARS, marks=True)
    return lines + [_fit(INDENT + line) for line in block.splitlines()]


def why_lines(diff: Diff, *, html: str | None = None, cases: int = CASES) -> list[str]:
    """The section, or no lines when no case regressed or fails with a turn to show;
    `html`: the drill-down report written (every case is there)."""
    shown = explained(diff)
    if not shown:
        return []
    lines = [TITLE]
    for index, case in enumerate(shown[:cases], start=1):
        lines += ["", *case_lines(index, case)]
    left = len(shown) - cases
    if left > 0:
        where = f"see {html}" if html else "the drill-down report (--html FILE) shows every case"
        lines += ["", f"… {plural(left, 'more case')}, {where}"]
    elif html:
        lines += ["", f"drill-down report: {html}"]
    return lines


def results_why(results: Results, *, html: str | None = None) -> list[str]:
    """The section for Results alone (no baseline): each failing case against its eval
    file, as the comparison without a baseline finds its turn."""
    if not any(case.status == Status.FAILED for case in results.cases):
        return []
    from ..compare import compare

    return why_lines(compare(results, None), html=html)
