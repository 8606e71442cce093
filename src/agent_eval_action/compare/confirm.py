"""Confirmation re-runs: a regression seen in one run is re-run before it is blamed.

A real LLM agent answers differently from run to run, so a single run that fails where the
baseline passed proves little. Before the gate blames such a case, the case alone is run
again, one more run per round (pipeline/confirm.py); a re-run that does not show the
regression again ends the confirmation. Re-runs are recorded in Results (`runs[].confirms`:
what they re-ran to confirm), so `compare` reproduces the verdict from the files:

- the case is compared as its own runs scored it (`original`): re-runs never change the
  scores that made the regression;
- a flip seen in one run of a case that varies on main is re-run too: it would otherwise
  pass as noise, and a real regression in a noisy case would be missed;
- each regressed metric stands if every re-run showed it again ("confirmed in 3/3
  re-runs": a new failure fails again; a drop that crossed no threshold comes back with the
  same score, since a re-run worded afresh that scores a little lower is noise), and is otherwise reported as likely noise ("not reproduced: 1/3 re-runs"),
  the case flaky; a broad drop over many such cases is still caught by the suite-level test.

What the re-runs showed is gathered here; `decision.decide_metric` decides from it.

A case known to be deterministic is not re-run: its change is real at once. That takes
two or more runs on each side that all did the same thing (on main: the baseline's and
older baselines' runs; here: this run's own). Runs on main alone are not enough: a case
that rewords its answer 30% of the time does the same thing three runs in a row about one
time in three, and a single run here would then be blamed for noise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ..core import CaseKey, Purpose, RunKind
from ..results import (
    SAMPLING_RUN,
    SUITE_ROUND,
    CaseResult,
    MetricResult,
    Results,
    RunRecord,
    Status,
    case_score,
    status_for,
)
from . import wording
from .decision import MetricEvidence, Reruns, Streaks, can_blame, decide_metric, record_decision
from .evidence import (
    NO_RUNS,
    MainRuns,
    blame_level,
    grown,
    same_runs,
)
from .model import REGRESSIONS, CaseDiff, Change, Confirmation, Diff, MetricDiff, Rule
from .record import MainRecord
from .statistics_policy import DEFAULT as STATISTICS
from .stats import EPSILON


def suite_round_runs(case: CaseResult) -> list[int]:
    """The indices of the case's runs that a suite round added."""
    return [i for i, run in enumerate(case.runs) if run.error is None and _is(run, "suite_round")]


def confirming_runs(case: CaseResult) -> list[int]:
    """The indices of the case's confirmation re-runs."""
    return [i for i, run in enumerate(case.runs) if _is(run, "confirmation")]


def _is(run: RunRecord, kind: RunKind) -> bool:
    return run.purpose()[0] == kind


def original(case: CaseResult) -> CaseResult:
    """The case as its own runs scored it: without the runs that re-ran it to confirm."""
    kept = [i for i, run in enumerate(case.runs) if _is(run, "suite")]
    if len(kept) == len(case.runs):
        return case
    metrics = {name: _kept(metric, kept) for name, metric in case.metrics.items()}
    runs = [case.runs[i] for i in kept]
    statuses = {m.status for m in metrics.values()}
    status = (
        Status.ERRORED
        if any(run.error is not None for run in runs) or not runs
        else Status.FAILED
        if Status.FAILED in statuses
        else Status.NOT_EVALUATED
        if Status.NOT_EVALUATED in statuses or not statuses
        else Status.PASSED
    )
    return case.replace(metrics=metrics, runs=runs, status=status)


def originals(results: Results) -> Results:
    """The Results with each case as its own runs scored it (`original`): the same object
    when no run re-ran anything. A baseline's sampling runs (`to_sample`) are main's record
    of the case, never the baseline's scores."""
    cases = [original(case) for case in results.cases]
    if all(new is old for new, old in zip(cases, results.cases, strict=True)):
        return results
    return results.replace(cases=cases)


def _kept(metric: MetricResult, kept: list[int]) -> MetricResult:
    runs = tuple(metric.runs[i] for i in kept if i < len(metric.runs))
    turns = tuple(metric.invocations[i] for i in kept if i < len(metric.invocations))
    score = case_score(runs, turns)  # as the score stage scored the case, without re-runs
    status = status_for(score, metric.threshold)
    return metric.replace(runs=runs, invocations=turns, score=score, status=status)


def settle(
    diff: CaseDiff,
    current: CaseResult,
    main: MainRuns,
    firsts: Mapping[str, MetricEvidence],
) -> None:
    """Decide a regressed case's metrics again with its confirmation re-runs (decision.py):
    gather what each re-run showed, and what the case's runs here say against `main` (the
    case's runs on main); `firsts`: each metric's evidence at its first decision, by name."""
    regressed = [m for m in diff.metrics if _to_confirm(m)]
    if not regressed:
        return
    confirming = confirming_runs(current)
    shown = {m.metric: [_shows_again(m, current, i) for i in confirming] for m in regressed}
    case = _streaks(regressed, current, main)
    decisions = []
    for m in regressed:  # all decided before any is recorded: each reads the first decisions
        seen = shown[m.metric]
        reruns = Reruns(
            ran=len(confirming),
            shown=seen.count(True),
            faults=seen.count(None),
            tally=_tally(m, current, main),
            on_main=main.failures(m.metric),
            case=case,
        )
        evidence = replace(firsts[m.metric], reruns=reruns)
        decisions.append((m, decide_metric(evidence, STATISTICS)))
    for m, decided in decisions:
        if decided.by_reruns:
            record_decision(m, decided)
            if decided.rule in (Rule.NOT_REPRODUCED, Rule.UNTELLABLE):
                # not m.noisy: this metric was picked for having dropped, so its one run
                # would bias the suite test, which weighs noisy metrics drawn without
                # looking at their change
                diff.flaky = True
    if confirming:
        diff.confirmation = Confirmation(
            runs=len(confirming),
            reproduced=max(seen.count(True) for seen in shown.values()),
            inconclusive=max(seen.count(None) for seen in shown.values()),
        )
        if any(m.change not in REGRESSIONS for m in regressed):
            diff.likely_noise = True
    elif any(decided.rule == Rule.UNTELLABLE for _, decided in decisions):
        diff.likely_noise = True


def _streaks(regressed: list[MetricDiff], case: CaseResult, main: MainRuns) -> Streaks:
    """What the case's runs here say against main's of it, for the metrics to confirm."""
    here = same_runs(case)
    return Streaks(
        tallies=tuple(t for m in regressed if (t := _tally(m, case, main)) is not None),
        changed_behaviour=changed_behaviour(case, main),
        one_behaviour_unrecorded=here is not None and not main.runs,
    )


def changed_behaviour(current: CaseResult, main: MainRuns) -> bool:
    """Deterministic on both sides, and not the same: every finished run here did one thing,
    every run on main did one thing, and they differ."""
    here = same_runs(current)
    return here is not None and main.deterministic and here != main.sole


def _tally(m: MetricDiff, current: CaseResult, main: MainRuns) -> tuple[int, int, int, int] | None:
    """(failed on main, runs on main, failed here, runs here) of a new failure's metric; None
    for a drop that crossed no threshold (only a deterministic change shows those)."""
    if Change.NEW_FAILURE not in (m.change, m.pending):
        return None
    metric = current.metrics.get(m.metric)
    if metric is None or metric.threshold is None:
        return None
    finished = [s for s, run in zip(metric.runs, current.runs, strict=False) if run.error is None]
    scored = [s for s in finished if s is not None]
    return (*main.failures(m.metric), sum(s < metric.threshold for s in scored), len(scored))


def _to_confirm(m: MetricDiff) -> bool:
    """A regression, or a flip or drop that looked like noise only because the case varies
    on main: re-runs decide both."""
    return m.change in REGRESSIONS or m.pending in REGRESSIONS


def _shows_again(m: MetricDiff, case: CaseResult, run: int) -> bool | None:
    """Whether re-run `run` (an index into the case's runs) showed the regression of `m`
    again; None when it cannot say: the re-run errored, or the metric has no score in it."""
    metric = case.metrics.get(m.metric)
    score = metric.runs[run] if metric is not None and run < len(metric.runs) else None
    if case.runs[run].error is not None or score is None or m.threshold is None:
        return None
    if Change.NEW_FAILURE in (m.change, m.pending):
        return score < m.threshold
    # a drop that crossed no threshold stands only if it comes back the same: a re-run
    # worded afresh that scores a little lower again is noise, for the suite test to weigh
    first = m.current_score if m.current_score is not None else -1.0
    return abs(score - first) <= EPSILON


def to_confirm(
    diff: Diff, current: Results, known: MainRecord, runs: int
) -> list[tuple[CaseKey, Purpose]]:
    """The cases to re-run once more, with what the re-run confirms: regressed cases not
    known to be deterministic on both sides (`known`: main's record), whose re-runs so far
    all showed it again, up to `runs` — and only while re-runs could still blame them (a
    case that varies on main needs a streak its record makes unlikely: `_can_blame`)."""
    cases = {case.key: case for case in current.cases}
    family = family_size(current, compared(diff))
    wanted = []
    for case in diff.cases:
        regressed = [m for m in case.metrics if _to_confirm(m)]
        key = case.key
        if not regressed or key not in cases:
            continue
        done = case.confirmation
        main = known.runs(key)
        if done is None and main.known_deterministic and _own_runs(cases[key]).known_deterministic:
            continue
        if done is not None and (
            done.reproduced < done.runs - done.inconclusive or done.runs >= runs
        ):
            continue
        if not _can_blame(regressed, cases[key], main, family, runs - (done.runs if done else 0)):
            continue
        what = "; ".join(
            f"{m.axis} {m.metric}: {wording.moved(m, m.pending or m.change)}" for m in regressed
        )
        wanted.append((key, Purpose("confirmation", what)))
    return wanted


def to_sample(current: Results, known: MainRecord, runs: int) -> list[tuple[CaseKey, Purpose]]:
    """Main's sampling: the cases of `current`, a run on main that records the baseline, to
    run once more because main has fewer than `runs` finished runs of them (its own and
    `known`'s: the older baselines), with why. One run per case cannot tell a noisy case from
    a steady one, and a pull request's suite-level test can only see a broad drop as clearly
    as main's record of each case allows; with the history of several baselines there is
    nothing to sample. A case whose first `sampling_settled` runs (statistics_policy.py) all
    did the same thing is settled as deterministic; one with no finished run (errored) is
    not sampled."""
    record = known.plus(current)
    wanted = []
    for case in current.cases:
        main = record.runs(case.key)
        have = main.runs
        if not 0 < have < runs or (have >= STATISTICS.sampling_settled and main.deterministic):
            continue
        wanted.append((case.key, Purpose("sampling", f"{SAMPLING_RUN}: {have} of {runs} runs")))
    return wanted


def _own_runs(case: CaseResult) -> MainRuns:
    """The case's own finished runs here, as main's are kept (re-runs left out)."""
    return grown(NO_RUNS, case)


def _can_blame(
    regressed: list[MetricDiff], case: CaseResult, main: MainRuns, family: int, left: int
) -> bool:
    """Whether `left` more re-runs could still blame the case (decision.can_blame)."""
    return can_blame(_streaks(regressed, case, main), left, blame_level(family))


def compared(diff: Diff) -> int:
    """The cases compared with a baseline self: the family a streak's evidence is held over."""
    return sum(case.change not in (Change.ADDED, Change.REMOVED) for case in diff.cases)


def family_size(current: Results, compared: int) -> int:
    """The family a streak's evidence is held over: the `compared` cases, or for a shard its
    whole suite's (`shard.cases_compared`), so that a shard blames as the merged suite will."""
    shard = current.shard
    return compared if shard is None or shard.cases_compared is None else shard.cases_compared


def suite_round(diff: Diff, current: Results, known: MainRecord) -> list[tuple[CaseKey, Purpose]]:
    """The cases to run once more for the suite-level test, or none: with one run per case a
    broad drop shows only faintly, so when an axis's test falls below the policy's
    `suite_round_below` without being significant, every compared case that main does not
    know to be deterministic runs once more (all of them alike, whatever their change, so the
    new runs are a fair sample) and the test is taken again with them (engine.py); while that
    test stays below `suite_round_continue` without being significant, the same cases run once
    more, `suite_rounds` times at most."""
    policy = diff.policy
    done = max((len(suite_round_runs(case)) for case in current.cases), default=0)
    below = policy.suite_round_continue if done else policy.suite_round_below
    hints = [
        f"{t.axis} p = {t.p_value:.3g}"
        for t in diff.suite_tests
        if not t.significant and t.mean_delta < 0 and t.p_value <= below
    ]
    if not hints or done >= policy.suite_rounds or current.run_config.num_runs > 1:
        return []  # (several runs per case: the test has its evidence)
    runs = "one run per case" if not done else f"{1 + done} runs per case"
    what = Purpose("suite_round", f"{SUITE_ROUND}: {', '.join(hints)} with {runs}")
    if done:  # the cases of the first round, that the next ones extend alike
        return [(case.key, what) for case in current.cases if len(suite_round_runs(case)) == done]
    wanted = []
    for case in diff.cases:
        if case.change in (Change.ADDED, Change.REMOVED, Change.ERRORED):
            continue
        key = case.key
        was = case.renamed_from
        main = known.runs(was.key if was else key)
        if main.known_deterministic:
            continue
        wanted.append((key, what))
    return wanted
