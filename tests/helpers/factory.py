"""Build Results by hand for comparison tests: one turn per run, behaviour named per run."""

from __future__ import annotations

from datetime import UTC, datetime

from agent_eval_action.results import (
    Actual,
    CaseResult,
    Content,
    EvalSetEntry,
    Expected,
    FunctionCall,
    InvocationRecord,
    MetricResult,
    Results,
    RunConfig,
    RunRecord,
    Source,
    Status,
    Timing,
)

AXIS = {"tool_trajectory_avg_score": "trajectory", "response_match_score": "response"}
THRESHOLD = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
NOW = datetime(2026, 11, 30, tzinfo=UTC)


def metric(name: str, runs: list[float | None], threshold: float | None = None) -> MetricResult:
    threshold = THRESHOLD.get(name, 0.5) if threshold is None else threshold
    known = [r for r in runs if r is not None]
    score = sum(known) / len(known) if known and len(known) == len(runs) else None
    status = (
        Status.NOT_EVALUATED
        if score is None
        else Status.PASSED
        if score >= threshold
        else Status.FAILED
    )
    return MetricResult(
        axis=AXIS.get(name, "response"),
        score=score,
        threshold=threshold,
        status=status,
        runs=tuple(runs),
        invocations=tuple((r,) for r in runs),
    )


def case(
    eval_id: str,
    scores: dict[str, list[float | None]],
    behaviour: list[str] | None = None,
    *,
    eval_set_id: str = "s",
    errored_runs: tuple[int, ...] = (),
    line: int = 1,
    case_sha256: str | None = None,  # default: one of its own (a copy's is the same)
) -> CaseResult:
    runs = max(len(v) for v in scores.values())
    behaviour = behaviour or ["same"] * runs
    metrics = {name: metric(name, values) for name, values in scores.items()}
    records = [
        RunRecord(
            run=i + 1,
            error="crashed" if i + 1 in errored_runs else None,
            invocations=[
                InvocationRecord(
                    user_content=Content.from_text("question", "user"),
                    expected=Expected(
                        final_response=Content.from_text("answer", "model"),
                        tool_uses=[FunctionCall(name="lookup", args={"id": 1})],
                    ),
                    actual=Actual(
                        final_response=Content.from_text(f"answer {behaviour[i]}", "model"),
                        tool_uses=[FunctionCall(name="lookup", args={"id": behaviour[i]})],
                    ),
                )
            ],
        )
        for i in range(runs)
    ]
    statuses = {m.status for m in metrics.values()}
    status = (
        Status.ERRORED
        if errored_runs
        else Status.FAILED
        if Status.FAILED in statuses
        else Status.NOT_EVALUATED
        if Status.NOT_EVALUATED in statuses
        else Status.PASSED
    )
    return CaseResult(
        eval_set_id=eval_set_id,
        eval_id=eval_id,
        file=f"evals/{eval_set_id}.evalset.json",
        line=line,
        case_sha256=case_sha256 or f"sha-{eval_set_id}-{eval_id}",
        status=status,
        metrics=metrics,
        runs=records,
    )


def results(*cases: CaseResult, num_runs: int | None = None, sha: str = "abc") -> Results:
    eval_sets = sorted({c.eval_set_id for c in cases})
    return Results(
        tool_version="0.1.0",
        source=Source(sha=sha),
        run_config=RunConfig(
            runner="command",
            target="agent",
            num_runs=num_runs or max((len(c.runs) for c in cases), default=1),
        ),
        eval_sets=[
            EvalSetEntry(
                eval_set_id=s,
                file=f"evals/{s}.evalset.json",
                file_sha256="f",
                form="evalset",
                config="ADK defaults",
                criteria={"tool_trajectory_avg_score": {"threshold": 1.0}},
            )
            for s in eval_sets
        ],
        cases=list(cases),
        timing=Timing(started_at=NOW, finished_at=NOW, duration_s=0.0),
    )
