"""How many calls a job may make on the judge's key, from its plan, before any agent runs:
the one place this is computed (docs/security.md, "Caps").

A case-run may cost at most: its user simulator's calls (a scenario: one per user turn
after the starting prompt, up to its turn limit) and, per judged metric, each of its
requests asked for every turn and once more for the whole run (a conversation metric's
verdict, the simulator metric's ending), each `num_samples` times when it is sampled. A
job runs the plan's case-runs and at most as many more as its confirmation rounds (or
main's sampling, when it records a baseline) may add, each no costlier than the costliest
case-run, twice over with paired runs (main's code runs each round's cases too). That
bound is then held within `judge_max_calls`; a metric whose calls depend on what the agent
answers (hallucinations_v1 over every intermediate text) has no bound of its own, only
that one."""

from __future__ import annotations

from ..core import CaseKey
from ..metrics.criteria import judge_options
from ..metrics.judge.metric import JudgedMetric
from ..metrics.simulation.config import SimulatorConfig
from .options import RunOptions
from .plan import Plan


def case_run_calls(plan: Plan, key: CaseKey) -> int | None:
    """The most calls one run of a case may make on the key (None: no bound of its own)."""
    eval_set, case = plan.cases[key]
    eval_set_id = key.eval_set_id
    turns = len(case.conversation or ())
    calls = 0
    if case.conversation_scenario is not None:
        turns = (eval_set.config.simulator or SimulatorConfig()).turn_limit
        calls += max(turns - 1, 0)  # the starting prompt asks nothing
    criteria = plan.criteria[eval_set_id]
    for name, metric in plan.metrics[eval_set_id].items():
        if not isinstance(metric, JudgedMetric):
            continue
        if not metric.calls_bounded(criteria[name]):
            return None
        samples = metric.num_samples(judge_options(criteria[name]))
        per_turn = sum(samples if request.sampled else 1 for request in metric.requests)
        calls += per_turn * (turns + 1)
    return calls


def most_calls(plan: Plan, options: RunOptions) -> int:
    """The most calls the job may make on the judge's key: its plan's bound, held within
    `options.judge_max_calls`."""
    costs = [case_run_calls(plan, key) for key in plan.cases]
    if any(cost is None for cost in costs):
        return options.judge_max_calls
    known = [cost for cost in costs if cost is not None]
    runs = {key: 0 for key in plan.cases}
    for request in plan.requests:
        runs[request.key] += 1
    suite = sum(cost * runs[key] for key, cost in zip(plan.cases, known, strict=True))
    cases = len(plan.cases)
    confirming = min(options.confirm_limit, cases * options.confirm_runs)
    sampling = cases * max(options.baseline_runs - 1, 0)
    extra = max(confirming, sampling) * (2 if options.paired else 1) * max(known, default=0)
    return min(suite + extra, options.judge_max_calls)
