"""How many calls a job may make on the judge's key, from its plan, before any agent runs:
the one place this is computed (docs/security.md, "Caps"), the judge's and the user
simulator's apart, and how many case-runs its rounds may add.

A case-run may cost at most: its user simulator's calls (a scenario: one per user turn
after the starting prompt, up to its turn limit) and, per judged metric, each of its
requests asked for every turn and once more for the whole run (a conversation metric's
verdict, the simulator metric's ending), each `num_samples` times when it is sampled. A
job runs the plan's case-runs and at most as many more as its confirmation rounds (their
suite rounds included, all within `confirm_limit`) or main's sampling, when it records a
baseline, may add, each no costlier than the costliest case-run, twice over with paired
runs (main's code runs each round's cases too). That bound is then held within
`judge_max_calls`; a metric whose calls depend on what the agent answers
(hallucinations_v1 over every intermediate text) has no bound of its own, only that one."""

from __future__ import annotations

from dataclasses import dataclass

from ..compare.statistics_policy import DEFAULT as STATISTICS
from ..core import CaseKey
from ..metrics.criteria import judge_options
from ..metrics.judge.metric import JudgedMetric
from ..metrics.simulation.config import SimulatorConfig
from .options import RunOptions
from .plan import Plan


@dataclass(frozen=True)
class Calls:
    """Calls on the key: the judge's and the user simulator's."""

    judge: int = 0
    simulator: int = 0

    @property
    def total(self) -> int:
        return self.judge + self.simulator

    def __add__(self, other: Calls) -> Calls:
        return Calls(self.judge + other.judge, self.simulator + other.simulator)

    def times(self, count: int) -> Calls:
        return Calls(self.judge * count, self.simulator * count)


@dataclass(frozen=True)
class ExtraRuns:
    """The most case-runs a job may add to its plan's, of the PR's code: confirmation
    rounds (with their suite rounds) when it compares, main's sampling when it records a
    baseline; `pairs`: each confirming case-run runs on main's code too (paired runs)."""

    confirming: int
    sampling: int
    pairs: int = 1

    @property
    def most(self) -> int:
        """The most one job adds on the key's account: it confirms or it samples."""
        return max(self.confirming * self.pairs, self.sampling)


@dataclass(frozen=True)
class KeyCalls:
    """The most calls a job may make on the key. `bound`: the plan's own, the judge's and
    the simulator's apart (None: a metric's calls depend on the answers); `most`: the job's
    budget, that bound held within `judge_max_calls`."""

    bound: Calls | None
    most: int


def case_run_calls(plan: Plan, key: CaseKey) -> Calls | None:
    """The most calls one run of a case may make on the key (None: no bound of its own)."""
    eval_set, case = plan.cases[key]
    eval_set_id = key.eval_set_id
    turns = len(case.conversation or ())
    simulator = 0
    if case.conversation_scenario is not None:
        turns = (eval_set.config.simulator or SimulatorConfig()).turn_limit
        simulator = max(turns - 1, 0)  # the starting prompt asks nothing
    judge = 0
    criteria = plan.criteria[eval_set_id]
    for name, metric in plan.metrics[eval_set_id].items():
        if not isinstance(metric, JudgedMetric):
            continue
        if not metric.calls_bounded(criteria[name]):
            return None
        samples = metric.num_samples(judge_options(criteria[name]))
        per_turn = sum(samples if request.sampled else 1 for request in metric.requests)
        judge += per_turn * (turns + 1)
    return Calls(judge, simulator)


def extra_case_runs(
    cases: int, options: RunOptions, *, confirms: bool = True, records: bool = True
) -> ExtraRuns:
    """The most case-runs `cases` cases' rounds may add (pipeline/confirm.py): confirmation
    re-runs, `confirm_runs` a case, then (one run per case) up to the policy's `suite_rounds` suite rounds,
    all within `confirm_limit`; main's sampling, up to `baseline_runs` - 1 rounds. A run
    known not to compare (`confirms` False: no baseline) confirms nothing; one known not to
    record a baseline samples nothing. The job's budget assumes either may happen."""
    suite_rounds = (
        STATISTICS.suite_rounds * STATISTICS.suite_round_runs if options.num_runs == 1 else 0
    )
    confirming = 0
    if confirms and options.confirm_runs >= 1:
        confirming = min(options.confirm_limit, cases * (options.confirm_runs + suite_rounds))
    sampling = cases * max(options.baseline_runs - 1, 0) if records else 0
    return ExtraRuns(confirming, sampling, 2 if options.paired else 1)


def key_calls(
    plan: Plan, options: RunOptions, *, confirms: bool = True, records: bool = True
) -> KeyCalls:
    """The most calls the job may make on the judge's key: its plan's bound, the judge's
    and the simulator's, and that held within `options.judge_max_calls` (`confirms`,
    `records`: as extra_case_runs)."""
    costs = [case_run_calls(plan, key) for key in plan.cases]
    known = [cost for cost in costs if cost is not None]
    if len(known) < len(costs):
        return KeyCalls(None, options.judge_max_calls)
    runs = {key: 0 for key in plan.cases}
    for request in plan.requests:
        runs[request.key] += 1
    suite = sum(
        (cost.times(runs[key]) for key, cost in zip(plan.cases, known, strict=True)), Calls()
    )
    extra = extra_case_runs(len(plan.cases), options, confirms=confirms, records=records).most
    costliest = max(known, key=lambda cost: cost.total, default=Calls())
    most = min(suite.total + extra * costliest.total, options.judge_max_calls)
    # apart, each from its own costliest case-run: together they may pass `most`
    bound = suite + Calls(
        extra * max((cost.judge for cost in known), default=0),
        extra * max((cost.simulator for cost in known), default=0),
    )
    return KeyCalls(bound, most)


def most_calls(plan: Plan, options: RunOptions) -> int:
    """The most calls the job may make on the judge's key: its budget."""
    return key_calls(plan, options).most
