"""What the drill-down report (report.html) shows, as typed values: every case with every
run and turn, its scores, the judge's answers, and its history on main.

Strings from agents, tools, eval files, judges and Results files stay raw here; the HTML
template escapes every one of them (report/html.py: autoescape). Links are only made by
report/links.py, from values shaped as GitHub's own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from ..compare.divergence import call_text
from ..compare.model import REGRESSIONS, CaseDiff, Diff, MetricDiff, TurnDiff
from ..compare.record import MainRecord, Past, PastCase
from ..core import AXES, CaseKey
from ..results import (
    CaseResult,
    Content,
    FunctionCall,
    FunctionResponse,
    InvocationRecord,
    JudgeVerdict,
    Results,
    RunRecord,
    Source,
    Status,
)
from . import escape
from .labels import CHANGE_LABEL, case_class, decided_by, headline, number, run_purpose
from .links import commit_url, run_url, short_sha
from .model import Options
from .states import regressed, shown_flaky
from .view import why

TEXT_CHARS = 20_000  # of one text (an answer, a judge's reply): the rest is in results.json

# The filters (report.html's buttons) and the classes a case carries for them.
KINDS = ("regressed", "failing", "flaky")
FILTERS = (*KINDS, *(f"axis-{axis}" for axis in AXES))


@dataclass(frozen=True)
class Judged:
    """One judge request of a turn: its score and the judge's own words."""

    metric: str
    request: str
    score: float | None
    source: str  # call, baseline, cache, repeat
    error: str | None
    replies: tuple[str, ...]


@dataclass(frozen=True)
class Turn:
    number: int  # 1-based
    user: str
    expected_calls: tuple[str, ...]
    actual_calls: tuple[str, ...] | None  # None: the run ended before this turn
    expected_answer: str | None
    actual_answer: str | None
    tool_responses: tuple[str, ...]
    scores: tuple[tuple[str, float | None], ...]  # (metric, score) of this turn
    judged: tuple[Judged, ...]

    @property
    def calls_differ(self) -> bool:
        return self.actual_calls is not None and self.actual_calls != self.expected_calls

    @property
    def answer_differs(self) -> bool:
        return (
            self.actual_calls is not None
            and self.expected_answer is not None
            and (self.actual_answer or "").strip() != self.expected_answer.strip()
        )


@dataclass(frozen=True)
class Run:
    number: int
    error: str | None
    duration_s: float
    purpose: str | None  # why it ran, when not as one of the suite's own runs
    scores: tuple[tuple[str, float | None], ...]  # (metric, this run's case score)
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class MetricRow:
    metric: str
    axis: str
    threshold: str
    baseline: str
    current: str
    delta: str
    change: str
    baseline_runs: str
    current_runs: str
    reason: str


@dataclass(frozen=True)
class HistoryPoint:
    commit: str | None  # a short commit hash (hex only)
    url: str | None  # the commit's page
    role: str  # "baseline", "this run" or empty (an older baseline)
    when: str
    status: str  # a dash when the case was not in those Results
    scores: tuple[str, ...]  # per History.metrics


@dataclass(frozen=True)
class History:
    metrics: tuple[str, ...]
    points: tuple[HistoryPoint, ...]


@dataclass(frozen=True)
class Case:
    anchor: str  # the element id
    name: str  # "eval set / eval id"
    where: str  # file:line
    label: str  # how it changed, e.g. "new failure · lucky answer"
    status: str  # now
    baseline_status: str
    classes: tuple[str, ...]  # of FILTERS
    why: str
    metrics: tuple[MetricRow, ...]
    divergence: TurnDiff | None
    runs: tuple[Run, ...]
    history: History


@dataclass(frozen=True)
class Side:
    """One side of the comparison: its commit (a link when it looks like GitHub's) and run."""

    sha: str | None
    commit_url: str | None
    run_url: str | None
    when: str


@dataclass(frozen=True)
class Page:
    headline: str
    gate: str
    baseline: Side | None
    current: Side
    notes: tuple[str, ...]
    counts: dict[str, int]  # per filter
    cases: tuple[Case, ...]
    tool_version: str
    adk_version: str


def page(
    diff: Diff,
    current: Results,
    options: Options,
    baseline: Results | None = None,
    history: MainRecord | None = None,
) -> Page:
    """The report's view: every case of the Diff, those that need a look first."""
    by_key = {c.key: c for c in current.cases}
    older = sorted(history.past if history else (), key=lambda p: p.created_at)
    known = [_Known(past, "") for past in older]
    known += [_Known(Past.of(baseline), "baseline")] if baseline is not None else []
    ordered = sorted(diff.cases, key=_rank)
    cases = tuple(
        _case(i, c, by_key.get(c.key), known, current, options)
        for i, c in enumerate(ordered, start=1)
    )
    verdict = diff.verdict
    gate = ("passed" if verdict.passed else "failed") + f" (fail-on {decided_by(diff)})"
    if verdict.reasons:
        gate += ": " + "; ".join(verdict.reasons)
    return Page(
        headline=headline(diff, current),
        gate=gate,
        baseline=None if baseline is None else _side(baseline, options),
        current=_side(current, options),
        notes=(*diff.verdict.notes, *diff.notes),
        counts={f: sum(f in c.classes for c in cases) for f in FILTERS},
        cases=cases,
        tool_version=current.tool_version,
        adk_version=current.adk_version or "not recorded",
    )


def _side(results: Results, options: Options) -> Side:
    return Side(
        short_sha(results.source.sha),
        commit_url(results.source, options),
        run_url(results.source, options),
        _when(results.created_at),
    )


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _rank(case: CaseDiff) -> int:
    """Regressions first, then failing or errored cases, flaky ones, the rest."""
    if regressed(case):
        return 0
    if case.current_status in (Status.FAILED, Status.ERRORED):
        return 1
    return 2 if shown_flaky(case) else 3


def _classes(case: CaseDiff) -> tuple[str, ...]:
    classes = []
    if regressed(case):
        classes.append("regressed")
    if case.current_status in (Status.FAILED, Status.ERRORED):
        classes.append("failing")
    if shown_flaky(case):
        classes.append("flaky")
    for axis in AXES:
        failing = any(m.axis == axis and m.current_status == Status.FAILED for m in case.metrics)
        if case.axes.get(axis) in REGRESSIONS or failing:
            classes.append(f"axis-{axis}")
    return tuple(classes)


def _score(value: float | None) -> str:
    return "\u2013" if value is None else number(value)


def _scores(values: Sequence[float | None]) -> str:
    return " ".join(_score(v) for v in values)


def _status(status: Status | None) -> str:
    return "\u2013" if status is None else status.value.replace("_", " ")


def _metric(m: MetricDiff) -> MetricRow:
    delta = "" if m.delta is None else ("+" if m.delta > 0 else "") + number(m.delta)
    return MetricRow(
        metric=m.metric,
        axis=m.axis,
        threshold=_score(m.threshold),
        baseline=_score(m.baseline_score),
        current=_score(m.current_score),
        delta=delta,
        change=CHANGE_LABEL[m.change] + (" (noisy)" if m.noisy else ""),
        baseline_runs=_scores(m.baseline_runs),
        current_runs=_scores(m.current_runs),
        reason=m.reason,
    )


def _case(
    index: int,
    case: CaseDiff,
    result: CaseResult | None,
    known: Sequence[_Known],
    current: Results,
    options: Options,
) -> Case:
    return Case(
        anchor=f"case-{index}",
        name=case.key.name,
        where=f"{case.file}:{case.line}",
        label=case_class(case),
        status=_status(case.current_status),
        baseline_status=_status(case.baseline_status),
        classes=_classes(case),
        why=why(case, current),
        metrics=tuple(map(_metric, case.metrics)),
        divergence=None if case.divergence is None else _cut(case.divergence),
        runs=() if result is None else _runs(result),
        history=_history(case, result, known, current, options),
    )


def _cut(turn: TurnDiff) -> TurnDiff:
    """The first divergent turn with each of its texts at most TEXT_CHARS long."""
    texts = ("user_text", "expected_answer", "baseline_answer", "current_answer")
    calls = ("expected_calls", "baseline_calls", "current_calls")
    cut: dict[str, object] = {
        n: escape.truncate(getattr(turn, n), TEXT_CHARS) for n in texts if getattr(turn, n)
    }
    for name in calls:
        if getattr(turn, name) is not None:
            cut[name] = [escape.truncate(c, TEXT_CHARS) for c in getattr(turn, name)]
    return turn.replace(**cut)


def _call(call: FunctionCall) -> str:
    return escape.truncate(call_text(call), TEXT_CHARS)


def _text(content: Content | None) -> str | None:
    return None if content is None else escape.truncate(content.text(), TEXT_CHARS)


def _response(response: FunctionResponse) -> str:
    body = json.dumps(response.response, sort_keys=True, ensure_ascii=False)
    return escape.truncate(f"{response.name or '?'} \u2192 {body}", TEXT_CHARS)


def _runs(result: CaseResult) -> tuple[Run, ...]:
    return tuple(_run(result, i, run) for i, run in enumerate(result.runs))


def _run(result: CaseResult, index: int, run: RunRecord) -> Run:
    metrics = result.metrics.items()
    scores = tuple((name, m.runs[index] if index < len(m.runs) else None) for name, m in metrics)
    turns = tuple(_turn(result, index, run.run, t, inv) for t, inv in enumerate(run.turns()))
    return Run(run.run, run.error, run.duration_s, run_purpose(run), scores, turns)


def _turn(result: CaseResult, index: int, run: int, turn: int, inv: InvocationRecord) -> Turn:
    scores = []
    judged: list[Judged] = []
    for name, m in result.metrics.items():
        per_turn = m.invocations[index] if index < len(m.invocations) else []
        if turn < len(per_turn):
            scores.append((name, per_turn[turn]))
        if m.judge is not None:
            judged += [_judged(name, v) for v in m.judge.verdicts if (v.run, v.turn) == (run, turn)]
    actual = inv.actual
    return Turn(
        number=turn + 1,
        user=_text(inv.user_content) or "",
        expected_calls=tuple(map(_call, inv.expected.tool_uses)),
        actual_calls=None if actual is None else tuple(map(_call, actual.tool_uses)),
        expected_answer=_text(inv.expected.final_response),
        actual_answer=None if actual is None else _text(actual.final_response),
        tool_responses=() if actual is None else tuple(map(_response, actual.tool_responses)),
        scores=tuple(scores),
        judged=tuple(judged),
    )


def _judged(metric: str, verdict: JudgeVerdict) -> Judged:
    replies = tuple(
        escape.truncate(s.text, TEXT_CHARS) if s.text is not None else "(no text)"
        for s in verdict.samples
    )
    return Judged(metric, verdict.request, verdict.score, verdict.source, verdict.error, replies)


@dataclass(frozen=True)
class _Known:
    """One of main's Results (an older baseline, or the baseline), folded."""

    past: Past
    role: str  # "baseline", or empty for an older one

    def find(self, keys: set[CaseKey]) -> PastCase | None:
        return next((found for k in keys if (found := self.past.case(k)) is not None), None)


def _history(
    case: CaseDiff,
    result: CaseResult | None,
    known: Sequence[_Known],
    current: Results,
    options: Options,
) -> History:
    """The case in main's older baselines (oldest first), the baseline and this run; under
    its old name too when it was renamed."""
    keys = {case.key}
    if case.renamed_from is not None:
        keys.add(case.renamed_from.key)
    found = [(k.past.source, k.past.created_at, k.role, k.find(keys)) for k in known]
    metrics = tuple(
        dict.fromkeys(
            [*(m.metric for m in case.metrics), *(n for *_, c in found if c for n in c.scores)]
        )
    )
    points = [_point(src, when, role, c, metrics, options) for src, when, role, c in found]
    now = None if result is None else PastCase.of(result)
    points.append(_point(current.source, current.created_at, "this run", now, metrics, options))
    return History(metrics, tuple(points))


def _point(
    source: Source,
    created_at: datetime,
    role: str,
    case: PastCase | None,
    metrics: Sequence[str],
    options: Options,
) -> HistoryPoint:
    return HistoryPoint(
        commit=short_sha(source.sha),
        url=commit_url(source, options),
        role=role,
        when=_when(created_at),
        status="\u2013" if case is None else _status(case.status),
        scores=tuple(
            _score(case.scores[m]) if case is not None and m in case.scores else "\u2013"
            for m in metrics
        ),
    )
