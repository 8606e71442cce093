"""The `run` stage: plan case-runs from a Suite, run them, score them into Results.

Scoring is pure (scoring.py); this module wires the runner in and keeps every
finished case-run, so a cancelled suite still yields (partial) Results.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from importlib import metadata
from typing import TYPE_CHECKING

from .. import __version__
from ..evalset.config import Criterion
from ..evalset.loader import LoadedEvalSet, Suite
from ..metrics import Metric
from ..metrics.trajectory import MatchType
from ..results import CaseResult, EvalSetEntry, Results, RunConfig, Source, Timing, Usage
from ..traces import CaseRunRequest, CaseRunTrace
from .score import score_case

if TYPE_CHECKING:
    from ..metrics.judge import JudgeResults

TRAJECTORY_POLICIES = {"business": MatchType.IN_ORDER, "strict": MatchType.EXACT}
CANCELLED = "cancelled before this run finished"


@dataclass
class Plan:
    """Resolved metrics and effective criteria per eval set, and the case-runs to do."""

    suite: Suite
    num_runs: int
    trajectory_policy: str | None = None
    metrics: dict[str, dict[str, Metric]] = field(default_factory=dict)
    criteria: dict[str, dict[str, Criterion]] = field(default_factory=dict)
    requests: list[CaseRunRequest] = field(default_factory=list)


def plan(suite: Suite, num_runs: int, trajectory_policy: str | None = None) -> Plan:
    """Resolve metrics (importing custom ones) before any agent runs: bad config fails fast."""
    from ..metrics.judge import check_judge_inputs

    result = Plan(suite, num_runs, trajectory_policy)
    for eval_set in suite.eval_sets:
        result.metrics[eval_set.eval_set_id] = eval_set.config.metrics()
        result.criteria[eval_set.eval_set_id] = effective_criteria(eval_set, trajectory_policy)
        check_judge_inputs(
            eval_set, result.metrics[eval_set.eval_set_id], result.criteria[eval_set.eval_set_id]
        )
        for case in eval_set.cases:
            if case.conversation is None:
                continue  # scenarios cannot run yet: scored as not_evaluated with a note
            for run in range(1, num_runs + 1):
                result.requests.append(
                    CaseRunRequest(
                        eval_set_id=eval_set.eval_set_id,
                        eval_id=case.eval_id,
                        run=run,
                        session_input=case.session_input,
                        user_contents=[turn.user_content for turn in case.conversation],
                    )
                )
    return result


def restrict(plan: Plan, cases: set[tuple[str, str]]) -> Plan:
    """The plan for some of its cases only (a shard): every eval set stays, so Results list
    the whole suite's eval files and criteria, as every shard of it does."""
    eval_sets = [
        s.model_copy(update={"cases": [c for c in s.cases if (s.eval_set_id, c.eval_id) in cases]})
        for s in plan.suite.eval_sets
    ]
    return replace(
        plan,
        suite=plan.suite.model_copy(update={"eval_sets": eval_sets}),
        requests=[r for r in plan.requests if (r.eval_set_id, r.eval_id) in cases],
    )


def effective_criteria(
    eval_set: LoadedEvalSet, trajectory_policy: str | None
) -> dict[str, Criterion]:
    """The criteria as scored: `--trajectory-policy` overrides the trajectory match type."""
    criteria = dict(eval_set.config.criteria)
    trajectory = criteria.get("tool_trajectory_avg_score")
    if trajectory is not None and trajectory_policy:
        criteria["tool_trajectory_avg_score"] = trajectory.model_copy(
            update={"match_type": TRAJECTORY_POLICIES[trajectory_policy]}
        )
    return criteria


def score_plan(
    plan: Plan, traces: Sequence[CaseRunTrace], judged: JudgeResults | None = None
) -> list[CaseResult]:
    """Pure: judged metrics score from `judged`, the judge stage's verdicts (when it ran)."""
    by_case: dict[tuple[str, str], list[CaseRunTrace]] = defaultdict(list)
    for trace in traces:
        by_case[(trace.eval_set_id, trace.eval_id)].append(trace)
    cases = []
    for eval_set in plan.suite.eval_sets:
        for case in eval_set.cases:
            runs = sorted(
                by_case.get((eval_set.eval_set_id, case.eval_id), []), key=lambda t: t.run
            )
            cases.append(
                score_case(
                    eval_set,
                    case,
                    plan.metrics[eval_set.eval_set_id],
                    plan.criteria[eval_set.eval_set_id],
                    runs,
                    judged.case(eval_set.eval_set_id, case.eval_id) if judged else None,
                )
            )
    return cases


def cancelled_traces(plan: Plan, finished: Sequence[CaseRunTrace]) -> list[CaseRunTrace]:
    """Finished traces plus an errored one for every case-run that never finished."""
    done = {(t.eval_set_id, t.eval_id, t.run) for t in finished}
    missing = [
        CaseRunTrace(eval_set_id=r.eval_set_id, eval_id=r.eval_id, run=r.run, error=CANCELLED)
        for r in plan.requests
        if (r.eval_set_id, r.eval_id, r.run) not in done
    ]
    return [*finished, *missing]


def adk_version() -> str | None:
    try:
        return metadata.version("google-adk")
    except metadata.PackageNotFoundError:
        return None


def build_results(
    plan: Plan,
    cases: list[CaseResult],
    run_config: RunConfig,
    started: datetime,
    started_clock: float,
    *,
    partial: bool = False,
    source: Source | None = None,
) -> Results:
    usage = Usage()
    for case in cases:
        usage.add(case.usage)
    return Results(
        tool_version=__version__,
        adk_version=adk_version(),
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
                criteria={
                    name: c.model_dump(mode="json", exclude_none=True)
                    for name, c in plan.criteria[s.eval_set_id].items()
                },
            )
            for s in plan.suite.eval_sets
        ],
        cases=cases,
        usage=usage,
        timing=Timing(
            started_at=started,
            finished_at=datetime.now(UTC),
            duration_s=round(time.monotonic() - started_clock, 3),
        ),
        warnings=plan.suite.warnings,
    )
