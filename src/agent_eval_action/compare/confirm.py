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

A case known to be deterministic is not re-run: its change is real at once. That takes
two or more runs on each side that all did the same thing (on main: the baseline's and
older baselines' runs; here: this run's own). Runs on main alone are not enough: a case
that rewords its answer 30% of the time does the same thing three runs in a row about one
time in three, and a single run here would then be blamed for noise.
"""

from __future__ import annotations

from typing import NamedTuple

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
from .evidence import (
    NO_RUNS,
    MainRuns,
    blame_level,
    grown,
    same_runs,
    unchanged_p,
)
from .model import REGRESSIONS, CaseDiff, Change, Confirmation, Diff, MetricDiff, Policy, Rule
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
    policy: Policy,
    main: MainRuns,
    *,
    family: int,
    confirm_runs: int | None,
) -> None:
    """Decide a regressed case from its confirmation re-runs: a regressed metric stands if
    every re-run showed it again and that is more than noise explains (`evidence`), and is
    otherwise likely noise. A case that was not re-run keeps its regression, unless no
    number of re-runs within `confirm_runs` could have blamed it (then it is noise: one
    run proves nothing). `main`: the case's runs on main; `family`: the cases compared
    (the suite's chance of one false blame is held, not each case's); `confirm_runs`: the
    re-runs the gate allows (None: not recorded, as in older Results)."""
    regressed = [m for m in diff.metrics if _to_confirm(m)]
    if not regressed:
        return
    confirming = confirming_runs(current)
    if not confirming:
        blamed = _blamed_by_streak(regressed, current, main, family)
        if confirm_runs and blamed:
            _blame_streaks(regressed, current, main, family)
        if (
            confirm_runs
            and not blamed
            and not _can_blame(regressed, current, main, family, confirm_runs)
        ):
            for m in regressed:
                why = wording.untellable(m, _noise_record(m, main), allowed=confirm_runs)
                _noise(diff, m, Rule.UNTELLABLE, why)
            diff.likely_noise = True
        return
    shown = {m.metric: [_shows_again(m, current, i) for i in confirming] for m in regressed}
    counts = {name: seen.count(True) for name, seen in shown.items()}
    faults = {name: seen.count(None) for name, seen in shown.items()}
    runs = len(confirming)
    diff.confirmation = Confirmation(
        runs=runs, reproduced=max(counts.values()), inconclusive=max(faults.values())
    )
    for m in regressed:
        decided = runs - faults[m.metric]  # re-runs that either showed it again or did not
        blame = evidence(m, current, main, family) if counts[m.metric] == decided > 0 else None
        if blame is not None:
            if m.pending is not None:  # one run looked like noise on main; the re-runs say not
                m.change, m.pending = m.pending, None
                m.reason = wording.though_varies(m)
            m.rule, m.reason = Rule.CONFIRMED, wording.confirmed_in(m, decided, blame.tally)
            continue
        left = (confirm_runs or 0) - runs
        if (
            counts[m.metric] == decided
            and left > 0
            and _can_blame([m], current, main, family, left)
        ):
            # every re-run so far that finished showed it again, and the ones left may still
            # blame it: undecided until they ran (to_confirm asks for them); the rule stays
            m.reason = wording.shown_so_far(m, counts[m.metric], faults[m.metric])
            continue
        if counts[m.metric] < decided:
            why = wording.not_reproduced(m, counts[m.metric], decided)
            _noise(diff, m, Rule.NOT_REPRODUCED, why)
        elif faults[m.metric] and _can_blame([m], current, main, family, faults[m.metric]):
            # a fault is no evidence either way: a re-run that crashed, timed out or could
            # not be scored, where one that showed it again could have blamed it, never turns
            # the regression into noise
            if m.pending is not None:
                m.change, m.pending = m.pending, None
            m.rule = Rule.UNCONFIRMED
            m.reason = wording.unconfirmed(m, counts[m.metric], faults[m.metric])
        else:
            why = wording.untellable(m, _noise_record(m, main), shown=runs)
            _noise(diff, m, Rule.UNTELLABLE, why)
    if any(m.change not in REGRESSIONS for m in regressed):
        diff.likely_noise = True


def _noise(diff: CaseDiff, m: MetricDiff, rule: Rule, why: str) -> None:
    """A regression that noise explains (`rule`): unchanged (or still failing), the case flaky."""
    m.pending = None
    both_failed = m.baseline_status == Status.FAILED and m.current_status == Status.FAILED
    m.change = Change.STILL_FAILING if both_failed else Change.UNCHANGED
    m.rule, m.reason = rule, why
    # not m.noisy: this metric was picked for having dropped, so its one run would bias
    # the suite test, which weighs noisy metrics drawn without looking at their change
    diff.flaky = True


class Blame(NamedTuple):
    """Why a regression every re-run showed again is real: the case changed what it does
    (`tally` None), or it failed here more often than main's record makes likely: (failed
    on main, runs on main, failed here, runs here, p)."""

    tally: tuple[int, int, int, int, float] | None = None


def evidence(m: MetricDiff, current: CaseResult, main: MainRuns, family: int) -> Blame | None:
    """Why a regression every re-run showed again is real, or None when noise could explain it:
    - the case did the same thing in every run, on main and here, and here something new;
    - or it is a new failure that failed here more often than its record on main makes
      likely, by a margin that holds across the suite (`unchanged_p` at `blame_level`)."""
    if changed_behaviour(current, main):
        return Blame()
    tally = _tally(m, current, main)
    if tally is None:
        return None
    p = unchanged_p(*tally)
    return None if p > blame_level(family) else Blame((*tally, p))


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


def _noise_record(m: MetricDiff, main: MainRuns) -> str:
    return wording.noise_record(*main.failures(m.metric))


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
    """Whether `left` more re-runs, all showing the regression again, could blame it, and
    nothing blames it yet: its runs may still all be one new behaviour (`changed_behaviour`,
    re-run up to the end), or a new failure's streak may still become unlikely enough."""
    if _blamed_by_streak(regressed, case, main, family):
        return False
    if changed_behaviour(case, main) or (same_runs(case) is not None and not main.runs):
        return True
    for m in regressed:
        tally = _tally(m, case, main)
        if tally is not None:
            main_failed, main_runs, failed, here = tally
            if unchanged_p(main_failed, main_runs, failed + left, here + left) <= blame_level(
                family
            ):
                return True
    return False


def _blame_streaks(
    regressed: list[MetricDiff], case: CaseResult, main: MainRuns, family: int
) -> None:
    """A metric the per-case test nominated for re-runs (`pending`) whose own runs already
    failed more often than noise explains (the bar a streak after re-runs must reach): blamed
    without them, as a re-run could not clear it."""
    for m in regressed:
        tally = _tally(m, case, main)
        if m.pending is None or tally is None:
            continue
        p = unchanged_p(*tally)
        if p <= blame_level(family):
            m.change, m.pending, m.rule = m.pending, None, Rule.BEYOND_NOISE
            m.reason = wording.streak(m, (*tally, p))


def _blamed_by_streak(
    regressed: list[MetricDiff], case: CaseResult, main: MainRuns, family: int
) -> bool:
    tallies = [t for m in regressed if (t := _tally(m, case, main)) is not None]
    return any(unchanged_p(*t) <= blame_level(family) for t in tallies)


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
