"""What the agent did, run by run: whether runs behaved alike, the first divergent turn of a
regressed case (against the baseline), and of a failing one (against the eval file).

A scenario case's turns are written by the user simulator, so they differ from run to run
and nothing is expected of them (docs/statistics.md, "Simulated conversations"): two runs
behave alike when they made the same tool calls over the whole conversation (as a multiset:
order and turn do not matter) and got the same judged score on every metric; its first
divergent turn is the first where the user's message or the agent's calls or answer differ
from the baseline's run; a failing one's is the first turn a failed metric scored below its
threshold, else the last turn (where whole-conversation metrics judge)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..results import (
    Actual,
    CaseResult,
    Content,
    FunctionCall,
    InvocationRecord,
    RunRecord,
    Status,
)
from .model import MetricDiff, TurnDiff


def call_text(call: FunctionCall) -> str:
    """A tool call as one line: name({"arg": value}), keys sorted."""
    args = (
        json.dumps(call.args, sort_keys=True, ensure_ascii=False) if call.args is not None else ""
    )
    return f"{call.name}({args})"


def _answer(content: Content | None) -> str | None:
    return None if content is None else content.text()


def _behaviour(actual: Actual) -> tuple[list[str], str | None]:
    return [call_text(c) for c in actual.tool_uses], _answer(actual.final_response)


def behaviour_varies(case: CaseResult) -> bool:
    """Whether the finished runs of a case did different things, i.e. their behaviour
    fingerprints differ (nothing to do for a single run)."""
    finished = [run for run in case.runs if run.error is None]
    if len(finished) <= 1:
        return False
    first = finished[0].behaviour()
    return any(run.behaviour() != first for run in finished[1:])


def finished_runs(case: CaseResult) -> int:
    return sum(run.error is None for run in case.runs)


def _pick_run(
    runs: Sequence[RunRecord], scores: Sequence[float | None], worst: bool
) -> RunRecord | None:
    finished = [
        (s, r) for s, r in zip(scores, runs, strict=False) if r.error is None and s is not None
    ]
    if not finished:
        return next((r for r in runs if r.error is None), None)
    pick = min if worst else max
    return pick(finished, key=lambda pair: pair[0])[1]


def _departs(inv: InvocationRecord, axis: str) -> bool:
    """Whether a finished turn's actual behaviour differs from its expectation on this axis."""
    actual = inv.actual
    assert actual is not None  # only finished turns are compared
    if axis == "trajectory":
        return [call_text(c) for c in actual.tool_uses] != [
            call_text(c) for c in inv.expected.tool_uses
        ]
    return _answer(actual.final_response) != _answer(inv.expected.final_response)


def first_divergence(base: CaseResult, cur: CaseResult, metric: MetricDiff) -> TurnDiff | None:
    """The first turn where the current (worst) run departs from the baseline's (best) run,
    else from the expectation on the metric's axis."""
    cur_run = _pick_run(cur.runs, metric.current_runs, worst=True)
    if cur_run is None:
        return None
    base_run = _pick_run(base.runs, metric.baseline_runs, worst=False)
    before_turns = base_run.turns() if base_run else []
    finished = [(i, inv) for i, inv in enumerate(cur_run.turns()) if inv.actual is not None]

    def changed(index: int, inv: InvocationRecord) -> bool:
        before = before_turns[index].actual if index < len(before_turns) else None
        return (
            before is not None
            and inv.actual is not None
            and _behaviour(before) != _behaviour(inv.actual)
        )

    if cur.scenario:
        return _scenario_divergence(cur_run, finished, base_run)
    turn = next((i for i, inv in finished if changed(i, inv)), None)
    if turn is None:
        turn = next((i for i, inv in finished if _departs(inv, metric.axis)), 0)
    before = before_turns[turn].actual if turn < len(before_turns) else None
    return _turn_diff(cur_run, turn, before, base_run)


def _scenario_divergence(
    cur_run: RunRecord, finished: list[tuple[int, InvocationRecord]], base_run: RunRecord | None
) -> TurnDiff:
    """The first turn where the simulated user said something else than in the baseline's
    run, or the agent did; the last finished turn when none differs."""
    before_turns = base_run.turns() if base_run else []

    def differs(index: int, inv: InvocationRecord) -> bool:
        if index >= len(before_turns) or before_turns[index].actual is None:
            return True  # the baseline's conversation had ended (or broke off) here
        before = before_turns[index]
        assert before.actual is not None and inv.actual is not None
        return before.user_content.text() != inv.user_content.text() or _behaviour(
            before.actual
        ) != _behaviour(inv.actual)

    last = finished[-1][0] if finished else 0
    turn = next((i for i, inv in finished if differs(i, inv)), last)
    before = before_turns[turn] if turn < len(before_turns) else None
    diff = _turn_diff(cur_run, turn, before.actual if before else None, base_run)
    diff.simulated = True
    if before is not None and before.user_content.text() != diff.user_text:
        diff.baseline_user_text = before.user_content.text()
    return diff


def first_failure(case: CaseResult, metrics: Sequence[MetricDiff]) -> TurnDiff | None:
    """Why a case fails now, baseline or not: the first turn where the worst run of its
    first failed metric departs from the eval file's expectation on the axes of its failed
    metrics (the first finished turn when none does). None unless the case failed."""
    failed = [m for m in metrics if m.current_status == Status.FAILED]
    if case.status != Status.FAILED or not failed:
        return None
    run = _pick_run(case.runs, failed[0].current_runs, worst=True)
    if run is None or not run.turns():
        return None
    axes = list(dict.fromkeys(m.axis for m in failed))
    finished = [(i, inv) for i, inv in enumerate(run.turns()) if inv.actual is not None]
    if case.scenario:
        diff = _turn_diff(run, _scenario_failure(case, failed, run, finished), None, None)
        diff.simulated = True
        return diff
    departs = (i for i, inv in finished if any(_departs(inv, axis) for axis in axes))
    turn = next(departs, finished[0][0] if finished else 0)
    return _turn_diff(run, turn, None, None)


def _scenario_failure(
    case: CaseResult,
    failed: Sequence[MetricDiff],
    run: RunRecord,
    finished: list[tuple[int, InvocationRecord]],
) -> int:
    """The first turn a failed metric scored below its threshold in this run, else the last."""
    index = case.runs.index(run)
    for diff in failed:
        metric = case.metrics.get(diff.metric)
        if metric is None or index >= len(metric.invocations):
            continue
        for turn, score in enumerate(metric.invocations[index]):
            if score is not None and score < metric.threshold:
                return turn
    return finished[-1][0] if finished else 0


def _turn_diff(
    cur_run: RunRecord, turn: int, before: Actual | None, base_run: RunRecord | None
) -> TurnDiff:
    """One turn of the current run, against the baseline's (`before`) when there is one."""
    inv = cur_run.turns()[turn]
    return TurnDiff(
        turn=turn,
        user_text=inv.user_content.text(),
        expected_calls=[call_text(c) for c in inv.expected.tool_uses],
        baseline_calls=None if before is None else [call_text(c) for c in before.tool_uses],
        current_calls=[] if inv.actual is None else [call_text(c) for c in inv.actual.tool_uses],
        expected_answer=_answer(inv.expected.final_response),
        baseline_answer=None if before is None else _answer(before.final_response),
        current_answer=None if inv.actual is None else _answer(inv.actual.final_response),
        baseline_run=None if base_run is None else base_run.run,
        current_run=cur_run.run,
    )
