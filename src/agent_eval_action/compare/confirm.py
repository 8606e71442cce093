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

from collections.abc import Iterable, Sequence

from ..core import CaseKey
from ..results import CaseResult, MetricResult, Results, Status, case_score, status_for
from .model import REGRESSIONS, CaseDiff, Change, Confirmation, Diff, MetricDiff, Policy

EPSILON = 1e-9


def original(case: CaseResult) -> CaseResult:
    """The case as its own runs scored it: without the runs that re-ran it to confirm."""
    kept = [i for i, run in enumerate(case.runs) if run.confirms is None]
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


def _kept(metric: MetricResult, kept: list[int]) -> MetricResult:
    runs = [metric.runs[i] for i in kept if i < len(metric.runs)]
    turns = [metric.invocations[i] for i in kept if i < len(metric.invocations)]
    score = case_score(runs, turns)  # as the score stage scored the case, without re-runs
    status = status_for(score, metric.threshold)
    return metric.replace(runs=runs, invocations=turns, score=score, status=status)


def settle(diff: CaseDiff, current: CaseResult, policy: Policy) -> None:
    """Decide a regressed case from its confirmation re-runs, if it has any: each regressed
    metric stands if every re-run showed it again, and is likely noise otherwise."""
    confirming = [i for i, run in enumerate(current.runs) if run.confirms is not None]
    regressed = [m for m in diff.metrics if _to_confirm(m)]
    if not confirming or not regressed:
        return
    counts = {
        m.metric: sum(_shows_again(m, current.metrics.get(m.metric), i, policy) for i in confirming)
        for m in regressed
    }
    runs = len(confirming)
    diff.confirmation = Confirmation(runs=runs, reproduced=max(counts.values()))
    for m in regressed:
        if counts[m.metric] == runs:
            if m.pending is not None:  # one run looked like noise on main; the re-runs say not
                m.change, m.pending = m.pending, None
                m.reason = f"{_moved(m)}, though the case varies on main"
            m.reason = f"{m.reason}; confirmed in {runs}/{runs} re-runs"
            continue
        m.pending = None
        both_failed = m.baseline_status == Status.FAILED and m.current_status == Status.FAILED
        m.change = Change.STILL_FAILING if both_failed else Change.UNCHANGED
        m.reason = (
            f"not reproduced: {counts[m.metric]}/{runs} re-runs showed it again, likely "
            f"noise (the first run: {m.reason})"
        )
        # not m.noisy: this metric was picked for having dropped, so its one run would bias
        # the suite test, which weighs noisy metrics drawn without looking at their change
        diff.flaky = True
    if max(counts.values()) < runs:
        diff.likely_noise = True


def _to_confirm(m: MetricDiff) -> bool:
    """A regression, or a flip or drop that looked like noise only because the case varies
    on main: re-runs decide both."""
    return m.change in REGRESSIONS or m.pending in REGRESSIONS


def _moved(m: MetricDiff) -> str:
    scores = f"{m.baseline_score or 0.0:.3f} -> {m.current_score or 0.0:.3f}"
    return (
        f"passed -> failed ({scores})" if m.pending == Change.NEW_FAILURE else f"dropped {scores}"
    )


def _shows_again(m: MetricDiff, metric: MetricResult | None, run: int, policy: Policy) -> bool:
    score = metric.runs[run] if metric is not None and run < len(metric.runs) else None
    if score is None or m.threshold is None:
        return False
    if Change.NEW_FAILURE in (m.change, m.pending):
        return score < m.threshold
    # a drop that crossed no threshold stands only if it comes back the same: a re-run
    # worded afresh that scores a little lower again is noise, for the suite test to weigh
    first = m.current_score if m.current_score is not None else -1.0
    return abs(score - first) <= EPSILON


def known_deterministic(key: CaseKey, known: Iterable[Results]) -> bool:
    """Two or more finished runs of the case in these Results, and all did the same thing."""
    fingerprints = [
        run.behaviour()
        for results in known
        for case in results.cases
        if case.key == key
        for run in case.runs
        if run.error is None and run.confirms is None
    ]
    return len(fingerprints) >= 2 and len(set(fingerprints)) == 1


def to_confirm(
    diff: Diff, current: Results, known: Sequence[Results], runs: int
) -> list[tuple[CaseKey, str]]:
    """The cases to re-run once more, with what the re-run confirms: regressed cases not
    known to be deterministic on both sides (`known`: main's Results), whose re-runs so far
    all showed it again, up to `runs`."""
    wanted = []
    for case in diff.cases:
        regressed = [m for m in case.metrics if _to_confirm(m)]
        if not regressed:
            continue
        key = CaseKey(case.eval_set_id, case.eval_id)
        done = case.confirmation
        if done is None and known_deterministic(key, known) and known_deterministic(key, [current]):
            continue
        if done is not None and (done.reproduced < done.runs or done.runs >= runs):
            continue
        what = "; ".join(
            f"{m.axis} {m.metric}: {m.reason.split('; confirmed')[0]}" for m in regressed
        )
        wanted.append((key, what))
    return wanted
