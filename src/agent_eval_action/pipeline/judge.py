"""The judge stage: run → **judge** → score. It judges every judged metric on every
finished case-run of the plan, concurrently (bounded over the whole suite), reusing the
baseline's and the cache's verdicts, and returns per case, metric and run the scores and
verdicts for the pure scoring stage.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core import CaseKey
from ..metrics.judge.metric import Evaluation, JudgedMetric, judge_header
from ..metrics.judge.outcome import CaseJudgement, JudgedRun, JudgeResults
from ..metrics.judge.service import JudgeService
from ..metrics.judge.settings import NO_KEY, JudgeSettings
from ..results import Results, Status
from ..traces import CaseRunTrace
from .turns import expected_turns, finished

if TYPE_CHECKING:
    from .plan import Plan


def judged_metrics(plan: Plan) -> set[str]:
    return {name for metrics in plan.metrics.values() for name, m in metrics.items() if m.judged}


async def judge_plan(
    plan: Plan,
    traces: Sequence[CaseRunTrace],
    settings: JudgeSettings,
    baseline: Results | None = None,
    earlier: JudgeResults | None = None,
) -> JudgeResults:
    """`earlier`: what this run judged before (its earlier rounds): a question they answered
    is not asked again."""
    import asyncio

    by_case: dict[CaseKey, list[CaseRunTrace]] = defaultdict(list)
    for trace in traces:
        by_case[trace.key].append(trace)
    service = JudgeService(settings, baseline, earlier.verdicts() if earlier else None)
    results = JudgeResults()
    jobs: list[tuple[CaseJudgement, str, int, Evaluation]] = []
    for eval_set in plan.suite.eval_sets:
        criteria = plan.criteria[eval_set.eval_set_id]
        to_judge = {
            name: metric
            for name, metric in plan.metrics[eval_set.eval_set_id].items()
            if isinstance(metric, JudgedMetric)
        }
        headers = {
            name: judge_header(metric, criteria[name], settings.model_pin)
            for name, metric in to_judge.items()
        }
        if not headers:
            continue
        for case in eval_set.cases:
            key = CaseKey(eval_set.eval_set_id, case.eval_id)
            judgement = CaseJudgement(headers=dict(headers))
            results.cases[key] = judgement
            for trace in by_case.get(key, []):
                if not finished(case, trace):
                    continue  # an errored run is not scored, so not judged either
                for name, header in headers.items():
                    evaluation = Evaluation(
                        to_judge[name],
                        criteria[name],
                        header,
                        case,
                        trace.run,
                        expected_turns(case, trace),
                        trace.turns,
                        service,
                    )
                    jobs.append((judgement, name, trace.run, evaluation))
    try:
        outcomes = await asyncio.gather(*(ev.evaluate() for _, _, _, ev in jobs))
    finally:
        await service.close()
    for (judgement, name, run, _), judged in zip(jobs, outcomes, strict=True):
        _add(results, judgement, name, run, judged)
    for judgement in results.cases.values():
        results.usage.add(judgement.usage)
    results.warnings.extend(service.warnings)
    return results


def _add(
    results: JudgeResults, judgement: CaseJudgement, name: str, run: int, judged: JudgedRun
) -> None:
    judgement.runs[(name, run)] = judged
    judgement.usage.add(judged.usage)
    results.no_key += judged.no_key
    for verdict in judged.verdicts:
        if verdict.source != "call" and verdict.error is None:
            results.reused_from[verdict.source] += len(verdict.samples)


def blocked_by_outage(results: Results, judged: JudgeResults | None) -> bool:
    """True when the gate failed only because Gemini was unreachable (exit 3): every case
    that did not pass is not_evaluated, and each of those lost a verdict to the outage."""
    if judged is None:
        return False
    outage = judged.outage_cases
    unpassed = [c for c in results.cases if c.status != Status.PASSED]
    return bool(unpassed) and all(
        c.status == Status.NOT_EVALUATED and c.key in outage for c in unpassed
    )


def no_key_advice(judged: JudgeResults) -> str | None:
    """What to tell a maintainer when answers could not be judged for lack of a key."""
    if not judged.no_key:
        return None
    reused = sum(judged.reused_from.values())
    return (
        f"{judged.no_key} judge request(s) could not be made ({NO_KEY}; a pull request "
        f"from a fork gets no secrets), so their metrics are not evaluated, never passed; "
        f"{reused} verdict(s) of unchanged answers were reused. To judge the rest, a "
        "maintainer can run this command on the PR's head on their own machine with "
        "AGENT_EVAL_JUDGE_API_KEY (or GOOGLE_API_KEY) set and the same --baseline, or push "
        "the reviewed branch to this repository. Never give the fork's code a secret: no "
        "pull_request_target, and no workflow_run job that checks out or runs the PR "
        "(docs/security.md)."
    )
