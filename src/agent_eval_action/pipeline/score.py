"""The score stage: finished case-runs in, Results out. `score()` asks the judge (I/O, in
pipeline/judge.py) when a judged metric is configured; the rest is pure.

ADK semantics: a metric's run score is the mean over turns; with several runs
the case score pools every turn of every run (AgentEvaluator); pass iff score
>= threshold. Unlike ADK, a metric that could not be computed never passes the
case: it is `not_evaluated`, and an errored run makes the case `errored`.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from .. import __version__
from ..core import CaseKey
from ..evalset.models import Content as EvalContent
from ..evalset.models import EvalCase, Invocation
from ..metrics import Criterion, Metric, RunScore
from ..results import (
    Actual,
    CaseResult,
    Content,
    EfficiencyResult,
    EvalSetEntry,
    Expected,
    FunctionCall,
    FunctionResponse,
    GatePolicy,
    InformationalResult,
    InvocationRecord,
    JudgeRecord,
    MetricResult,
    Results,
    RunConfig,
    RunRecord,
    Selection,
    Shard,
    Source,
    Status,
    Timing,
    ToolCounts,
    Usage,
    behaviour_fingerprint,
    case_score,
    purpose_fields,
    record_of,
    scenario_fingerprint,
    status_for,
)
from ..traces import CaseRuns, CaseRunTrace, CustomScore, SimulatorUsage, installed_adk
from .cancellable import Cancelled, run_cancellable
from .turns import expected_turns, finished

if TYPE_CHECKING:
    from ..metrics.judge import CaseJudgement, JudgeResults, JudgeSettings
    from .options import RunOptions
    from .plan import Plan
    from .suite import LoadedEvalSet


def case_sha256(case: EvalCase, *, with_id: bool = True) -> str:
    """Hash of what the case expects and how it starts, to spot changed expectations; with
    `with_id=False` without its eval_id too (`content_sha256`: the same case renamed)."""
    volatile_fields = {"creation_timestamp"} if with_id else {"creation_timestamp", "eval_id"}
    data = case.model_dump(mode="json", exclude=volatile_fields, exclude_none=True)
    for turn in data.get("conversation") or ():
        for volatile in (
            "invocation_id",
            "creation_timestamp",
            "duration",
            "model_duration",
            "tool_duration",
        ):
            turn.pop(volatile, None)
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def case_shell(eval_set: LoadedEvalSet, case: EvalCase) -> CaseResult:
    """A planned case as Results name it (where it is, its hashes), before any score."""
    return CaseResult(
        eval_set_id=eval_set.eval_set_id,
        eval_id=case.eval_id,
        file=eval_set.file,
        line=eval_set.case_lines.get(case.eval_id, 1),
        case_sha256=case_sha256(case),
        content_sha256=case_sha256(case, with_id=False),
        status=Status.NOT_EVALUATED,
        scenario=case.conversation_scenario is not None,
    )


def score_case(
    eval_set: LoadedEvalSet,
    case: EvalCase,
    metrics: Mapping[str, Metric],
    criteria: Mapping[str, Criterion],
    traces: Sequence[CaseRunTrace],
    judged: CaseJudgement | None = None,
    budgets: Mapping[str, float] | None = None,
) -> CaseResult:
    """`judged`: the judge stage's verdicts for this case (judged metrics score from them);
    `budgets`: the most each efficiency metric's per-case total may be (--budget)."""
    result = case_shell(eval_set, case)
    not_run = next((t.not_run for t in traces if t.not_run is not None), None)
    if not_run is not None:
        result.note = not_run
        for name, metric in metrics.items():
            _add_metric(result, name, metric, criteria[name], traces, {}, error=not_run)
        return result
    done = [t for t in traces if finished(case, t)]
    errored = [t for t in traces if not finished(case, t)]
    result.runs = [_run_record(expected_turns(case, trace), trace) for trace in traces]
    result.duration_s = sum(t.duration_s for t in traces)
    for trace in traces:
        for turn in trace.turns:
            if turn.usage:
                result.usage.add(Usage(**turn.usage.model_dump()))
        if trace.simulation is not None:
            result.usage.add(_simulator_usage(trace.simulation.usage))
    for name, metric in metrics.items():
        scores = {
            t.run: _judged_score(judged, name, t.run)
            if metric.judged and judged is not None
            else _custom_score(t, name)
            if metric.custom
            else _score_run(metric, criteria[name], expected_turns(case, t), t)
            for t in done
        }
        record = judged.record(name) if metric.judged and judged is not None else None
        _add_metric(result, name, metric, criteria[name], traces, scores, judge=record)
    if judged is not None:
        result.usage.add(judged.usage)
    if result.scenario:  # its behaviour: calls over the conversation and scores, not words
        for index, run in enumerate(result.runs):
            behaved = {n: m.runs[index] for n, m in result.metrics.items() if index < len(m.runs)}
            run.fingerprint = scenario_fingerprint(run.turns(), behaved)
    result.efficiency = efficiency(done, budgets or {})
    result.status = _case_status(result, errored)
    return result


def efficiency(
    complete: Sequence[CaseRunTrace], budgets: Mapping[str, float]
) -> dict[str, EfficiencyResult]:
    """ADK's efficiency metrics of a case over its finished runs, each against its budget."""
    from ..metrics.efficiency import EFFICIENCY, measure

    if not complete:
        return {}
    answered = any(
        t.tools is not None and t.tools.from_eval_file + t.tools.from_recording > 0
        for t in complete
    )
    measured = {}
    for metric in EFFICIENCY:
        m = measure(metric, [trace.turns for trace in complete])
        budget = budgets.get(metric.name)
        unjudged = metric.timed and answered
        measured[metric.name] = EfficiencyResult(
            score=m.score,
            total=m.total,
            runs=tuple(m.runs),
            invocations=tuple(map(tuple, m.invocations)),
            budget=budget,
            over_budget=not unjudged
            and budget is not None
            and m.total is not None
            and m.total > budget,
            answered=unjudged,
        )
    return measured


NOT_SCORED_BY_THE_AGENT_STAGE = "the agent stage recorded no score for this custom metric"


def _custom_score(trace: CaseRunTrace, metric: str) -> RunScore:
    """A custom metric's score as the agent stage recorded it on the trace."""
    recorded = trace.custom_scores.get(metric)
    if recorded is None:
        return RunScore(overall=None, error=NOT_SCORED_BY_THE_AGENT_STAGE)
    return RunScore(recorded.overall, list(recorded.invocations), recorded.error)


def score_custom(plan: Plan, trace: CaseRunTrace) -> CaseRunTrace:
    """The agent stage's part of scoring: the custom metrics (the project's own code) of a
    finished case-run, recorded on its trace. Run beside the agent, never where scores are
    judged (pipeline/run_cases.py)."""
    case = plan.cases.get(trace.key)
    if case is None or trace.error is not None:
        return trace
    eval_set, eval_case = case
    if not finished(eval_case, trace):
        return trace
    expected = expected_turns(eval_case, trace)
    criteria = plan.criteria[eval_set.eval_set_id]
    for name, metric in plan.metrics[eval_set.eval_set_id].items():
        if metric.custom:
            score = _score_run(metric, criteria[name], expected, trace)
            trace.custom_scores[name] = CustomScore(
                overall=score.overall, invocations=list(score.invocations), error=score.error
            )
    return trace


def _judged_score(judged: CaseJudgement, metric: str, run: int) -> RunScore:
    score = judged.run_score(metric, run)
    return score if score is not None else RunScore(None, error="the judge gave no verdict")


def _score_run(
    metric: Metric, criterion: Criterion, expected: Sequence[Invocation], trace: CaseRunTrace
) -> RunScore:
    try:
        return metric.score_run(criterion, expected, trace.turns)
    except Exception as err:  # a metric bug makes the metric not_evaluated, never passed
        return RunScore(overall=None, error=f"{type(err).__name__}: {err}")


def _add_metric(
    result: CaseResult,
    name: str,
    metric: Metric,
    criterion: Criterion,
    traces: Sequence[CaseRunTrace],
    scores: dict[int, RunScore],
    *,
    judge: JudgeRecord | None = None,
    error: str | None = None,
) -> None:
    """The metric's result on the case: under `metrics`, or `informational` for a metric on
    no axis (it never changes the case's status)."""
    score = case_score(
        [s.overall for s in scores.values()], [s.invocations for s in scores.values()]
    )
    errors = sorted({s.error for s in scores.values() if s.error})
    if not scores:
        errors = [error or "no run finished, so nothing was scored"]
    runs = tuple(scores[t.run].overall if t.run in scores else None for t in traces)
    turns = tuple(tuple(scores[t.run].invocations) if t.run in scores else () for t in traces)
    status, why = status_for(score, criterion.threshold), "; ".join(errors) or None
    if not metric.decides:
        result.informational[name] = InformationalResult(
            score=score,
            threshold=criterion.threshold,
            status=status,
            runs=runs,
            invocations=turns,
            judge=judge,
            error=why,
        )
    else:
        result.metrics[name] = MetricResult(
            axis=metric.axis,
            score=score,
            threshold=criterion.threshold,
            status=status,
            runs=runs,
            invocations=turns,
            judge=judge,
            error=why,
        )


def _simulator_usage(usage: SimulatorUsage) -> Usage:
    return Usage(
        simulator_calls=usage.calls,
        simulator_refused=usage.refused,
        simulator_prompt_tokens=usage.prompt_tokens,
        simulator_output_tokens=usage.output_tokens,
        simulator_thinking_tokens=usage.thinking_tokens,
        cost_usd=usage.cost_usd,
    )


def _case_status(result: CaseResult, errored: list[CaseRunTrace]) -> Status:
    statuses = {m.status for m in result.metrics.values()}
    if errored or not result.runs:
        errors = [f"run {t.run}: {t.error or 'incomplete'}" for t in errored]
        result.note = "; ".join(errors) or "the case was not run"
        return Status.ERRORED
    if Status.FAILED in statuses:
        return Status.FAILED
    if Status.NOT_EVALUATED in statuses or not statuses:
        return Status.NOT_EVALUATED
    return Status.PASSED


def _run_record(expected: Sequence[Invocation], trace: CaseRunTrace) -> RunRecord:
    turns = []
    for index, want in enumerate(expected):
        turn = trace.turns[index] if index < len(trace.turns) else None
        turns.append(
            InvocationRecord(
                user_content=record_of(want.user_content, Content),
                expected=Expected(
                    final_response=_content(want.final_response),
                    tool_uses=[record_of(c, FunctionCall) for c in want.tool_calls()],
                ),
                actual=None
                if turn is None
                else Actual(
                    final_response=_content(turn.final_response),
                    tool_uses=[record_of(c, FunctionCall) for c in turn.tool_uses],
                    tool_responses=[record_of(r, FunctionResponse) for r in turn.tool_responses],
                ),
                duration_s=None if turn is None else turn.duration_s,
            )
        )
    return RunRecord(
        run=trace.run,
        invocations=turns,
        error=trace.error,
        duration_s=trace.duration_s,
        **purpose_fields(trace.purpose),
        fingerprint=behaviour_fingerprint(turns),
        stop=trace.simulation.stop if trace.simulation is not None else None,
        log=trace.log,
        tools=None if trace.tools is None else ToolCounts(**trace.tools.model_dump()),
        tool_effects=_tool_effects(trace),
    )


def _tool_effects(trace: CaseRunTrace) -> list[list[list[str]] | None] | None:
    """Per finished turn, what each tool response's event did (None: nobody recorded it)."""
    effects = [turn.tool_effects for turn in trace.turns]
    return None if all(e is None for e in effects) else effects


def _content(content: EvalContent | None) -> Content | None:
    return None if content is None else record_of(content, Content)


def score_plan(
    plan: Plan,
    traces: Sequence[CaseRunTrace],
    judged: JudgeResults | None = None,
    budgets: Mapping[str, float] | None = None,
) -> list[CaseResult]:
    """Pure: judged metrics score from `judged`, the judge stage's verdicts (when it ran)."""
    by_case: dict[CaseKey, list[CaseRunTrace]] = defaultdict(list)
    for trace in traces:
        by_case[trace.key].append(trace)
    cases = []
    for eval_set in plan.suite.eval_sets:
        for case in eval_set.cases:
            runs = sorted(
                by_case.get(CaseKey(eval_set.eval_set_id, case.eval_id), []), key=lambda t: t.run
            )
            cases.append(
                score_case(
                    eval_set,
                    case,
                    plan.metrics[eval_set.eval_set_id],
                    plan.criteria[eval_set.eval_set_id],
                    runs,
                    judged.case(eval_set.eval_set_id, case.eval_id) if judged else None,
                    budgets,
                )
            )
    return cases


def build_results(
    plan: Plan,
    cases: list[CaseResult],
    run_config: RunConfig,
    started: datetime,
    *,
    partial: bool = False,
    source: Source | None = None,
    adk_version: str | None = None,
) -> Results:
    """The Results of scored cases; `adk_version`: the google-adk the agent stage ran with
    (CaseRuns.adk_version), else this process's."""
    adk_version = adk_version or installed_adk()
    usage = Usage()
    for case in cases:
        usage.add(case.usage)
    finished = datetime.now(UTC)
    return Results(
        tool_version=__version__,
        adk_version=adk_version,
        partial=partial,
        source=source or Source(),
        run_config=run_config,
        eval_sets=[
            EvalSetEntry(
                eval_set_id=s.eval_set_id,
                file=s.file,
                file_sha256=s.file_sha256,
                form=s.form,
                config=s.config.source,
                criteria={name: c.record() for name, c in plan.criteria[s.eval_set_id].items()},
            )
            for s in plan.suite.eval_sets
        ],
        cases=cases,
        usage=usage,
        timing=Timing(
            started_at=started,
            finished_at=finished,
            duration_s=round((finished - started).total_seconds(), 3),
        ),
        warnings=plan.suite.warnings,
    )


@dataclass
class Scored:
    """The score stage's output: the Results, and what the judge did (None: it did not run)."""

    results: Results
    judged: JudgeResults | None


def score(
    plan: Plan,
    case_runs: CaseRuns,
    options: RunOptions,
    *,
    judge: JudgeSettings | None,
    baseline: Results | None = None,
    source: Source | None = None,
    shard: Shard | None = None,
    warnings: Sequence[str] = (),
    judged_before: JudgeResults | None = None,
    selection: Selection | None = None,
    gate: GatePolicy | None = None,
) -> Scored:
    """The score stage: judge the finished case-runs (when a judged metric is configured;
    the baseline lends its verdicts of unchanged answers), score every case, build Results.
    A cancelled agent stage, or a cancellation while judging, gives partial Results.
    `judged_before`: the verdicts of runs judged already (a confirmation round's re-score
    judges only the runs they lack). `selection` and `gate`: what the run was asked to
    evaluate and the gate's policy it was given, recorded in `run_config`."""
    from .judge import judge_plan, judged_metrics

    judged, cancelled = judged_before, case_runs.cancelled
    if judge is not None and judged_metrics(plan) and not cancelled:
        done = {
            (key, run)
            for key, case in (judged.cases if judged else {}).items()
            for _, run in case.runs
        }
        fresh = [t for t in case_runs.traces if (t.key, t.run) not in done]
        print(f"judging {', '.join(sorted(judged_metrics(plan)))} ...", file=sys.stderr)
        try:
            new = run_cancellable(judge_plan(plan, fresh, judge, baseline, judged))
        except Cancelled:
            cancelled = True
        else:
            if judged is None:
                judged = new
            else:
                judged.merge(new)
    run_config = RunConfig(
        runner=case_runs.runner,
        target=case_runs.target,
        num_runs=plan.num_runs,
        concurrency=options.concurrency,
        timeout_s=options.timeout_s,
        trajectory_policy=options.trajectory_policy,
        judge_model=options.judge_model,
        selection=selection,
        gate=gate,
        budgets=dict(options.budgets),
        response_thoughts="stripped" if plan.strip_thoughts else "included",
        confirm_runs=options.confirm_runs,
    )
    results = build_results(
        plan,
        score_plan(plan, case_runs.traces, judged, dict(options.budgets)),
        run_config,
        case_runs.started_at,
        partial=cancelled,
        source=source,
        adk_version=case_runs.adk_version,
    )
    results.shard = shard
    results.warnings.extend([*warnings, *(judged.warnings if judged else [])])
    if results.usage.judge_refused and judge is not None:
        refused = (
            f"warning: {results.usage.judge_refused} judge call(s) were not made, {judge.budget.refusal()}: "
            "their metrics are not evaluated, never passed"
        )
        print(refused, file=sys.stderr)
        results.warnings.append(refused)
    for warning in unchecked_budgets(results):
        print(warning, file=sys.stderr)
        results.warnings.append(warning)
    return Scored(results, judged)


def unchecked_budgets(results: Results) -> list[str]:
    """A warning per budget that some finished case could not be held to: its runner
    reported no such figure (e.g. no token counts), so its budget was not checked."""
    warnings = []
    for name in results.run_config.budgets:
        unknown = [
            case
            for case in results.cases
            if name in case.efficiency and case.efficiency[name].total is None
        ]
        if unknown:
            warnings.append(
                f"warning: --budget {name}: {len(unknown)} case(s) report no such figure "
                f"(e.g. {unknown[0].key}), so their budget was not checked"
            )
    return warnings
