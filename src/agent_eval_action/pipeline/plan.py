"""The plan: which metrics and criteria apply to each eval set, and the case-runs to do.

Planning resolves every metric (importing custom ones) before any agent runs, so bad
configuration fails fast; the run and score stages both work from the same plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

from ..core import CaseKey, Purpose, RunKey
from ..errors import InputError
from ..evalset.models import EvalCase
from ..metrics import Criterion, Metric
from ..metrics.trajectory import MatchType
from ..traces import CaseRunRequest
from .suite import LoadedEvalSet, Suite

TRAJECTORY_POLICIES = {
    "business": MatchType.IN_ORDER,
    "strict": MatchType.EXACT,
    "any_order": MatchType.ANY_ORDER,
}


@dataclass
class Plan:
    """Resolved metrics and effective criteria per eval set, and the case-runs to do."""

    suite: Suite
    num_runs: int
    trajectory_policy: str | None = None
    strip_thoughts: bool = False  # --strip-thoughts: recorded as run_config.response_thoughts
    metrics: dict[str, dict[str, Metric]] = field(default_factory=dict)
    criteria: dict[str, dict[str, Criterion]] = field(default_factory=dict)
    requests: list[CaseRunRequest] = field(default_factory=list)
    # a round that takes its runs from a stage that also ran later rounds' ahead (pipeline/
    # ahead.py): every case-run that stage was asked for, with its purpose there; its
    # traces file may hold them all, and only `requests` are taken. None: `requests` alone
    stage: dict[RunKey, Purpose | None] | None = None

    @cached_property
    def cases(self) -> dict[CaseKey, tuple[LoadedEvalSet, EvalCase]]:
        """Every case of the plan by its key, with its eval set."""
        return {
            CaseKey(s.eval_set_id, c.eval_id): (s, c) for s in self.suite.eval_sets for c in s.cases
        }

    @property
    def has_custom(self) -> bool:
        return any(m.custom for metrics in self.metrics.values() for m in metrics.values())


def plan(
    suite: Suite,
    num_runs: int,
    trajectory_policy: str | None = None,
    *,
    import_custom: bool = True,
    strip_thoughts: bool = False,
    render_personas: bool = True,
) -> Plan:
    """Resolve metrics before any agent runs, so bad config fails fast. Custom metrics are
    imported where they run, in the agent stage; the score stage (`import_custom=False`)
    only declares them and reads their scores from the traces. `strip_thoughts`: the
    metrics score answers without the model's thought parts (--strip-thoughts).
    `render_personas` False: personas are resolved but not rendered (the action's own
    process plans the job so, and leaves the PR's templates to the stages)."""
    from ..metrics.judge import check_judge_inputs

    result = Plan(suite, num_runs, trajectory_policy, strip_thoughts)
    for eval_set in suite.eval_sets:
        metrics = eval_set.config.metrics(import_custom=import_custom)
        if strip_thoughts:
            metrics = {name: metric.without_thoughts() for name, metric in metrics.items()}
        result.metrics[eval_set.eval_set_id] = metrics
        result.criteria[eval_set.eval_set_id] = effective_criteria(eval_set, trajectory_policy)
        check_judge_inputs(
            eval_set, result.metrics[eval_set.eval_set_id], result.criteria[eval_set.eval_set_id]
        )
        cases = [
            check_scenario(eval_set, case, result.metrics[eval_set.eval_set_id], render_personas)
            for case in eval_set.cases
        ]
        for case in cases:
            for run in range(1, num_runs + 1):
                result.requests.append(request(eval_set.eval_set_id, case, run))
    return result


def check_scenario(
    eval_set: LoadedEvalSet, case: EvalCase, metrics: dict[str, Metric], render: bool = True
) -> EvalCase:
    """A scenario case with its persona id resolved; InputError (file and line) for a persona
    that is not known or does not render within the cap, or a metric that needs expected
    turns (ADK: not evaluated)."""
    scenario = case.conversation_scenario
    if scenario is None:
        return case
    from ..metrics.simulation.personas import resolve_persona
    from ..metrics.simulation.prompt import check_persona

    line = eval_set.case_lines.get(case.eval_id)
    for name, metric in metrics.items():
        if metric.needs_expected:
            raise InputError(
                f'case "{case.eval_id}" is a conversation_scenario, which has no expected turns '
                f'to compare with: "{name}" cannot score it (give scenario cases their own eval '
                "file and test_config.json)",
                eval_set.file,
                line,
            )
    try:
        persona = resolve_persona(scenario.user_persona)
        if render:
            check_persona(persona)
    except ValueError as err:
        raise InputError(f'case "{case.eval_id}": {err}', eval_set.file, line) from None
    if persona is scenario.user_persona:
        return case
    case.conversation_scenario = scenario.model_copy(update={"user_persona": persona})
    return case


def request(
    eval_set_id: str, case: EvalCase, run: int, purpose: Purpose | None = None
) -> CaseRunRequest:
    """Run `run` of a case: its user turns, replayed in one session (`purpose`: why a run
    beyond the suite's own runs)."""
    return CaseRunRequest(
        eval_set_id=eval_set_id,
        eval_id=case.eval_id,
        run=run,
        session_input=case.session_input,
        user_contents=[turn.user_content for turn in case.conversation or ()],
        purpose=purpose,
        scenario=case.conversation_scenario,
    )


def restrict(plan: Plan, cases: set[CaseKey]) -> Plan:
    """The plan for some of its cases only (a shard): every eval set stays, so Results list
    the whole suite's eval files and criteria, as every shard of it does."""
    eval_sets = [
        s.model_copy(
            update={"cases": [c for c in s.cases if CaseKey(s.eval_set_id, c.eval_id) in cases]}
        )
        for s in plan.suite.eval_sets
    ]
    return replace(
        plan,
        suite=plan.suite.model_copy(update={"eval_sets": eval_sets}),
        requests=[r for r in plan.requests if r.key in cases],
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
