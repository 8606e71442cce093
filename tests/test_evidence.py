"""Weighing a confirmed-looking regression against the case's record on main
(compare/evidence.py, compare/confirm.py): a streak of failures blames a case only when an
unchanged case with that record would rarely show it, held across the suite; a case that
varies is not blamed for what noise explains, and is not re-run when no re-run could tell."""

from __future__ import annotations

import pytest
from helpers.factory import case, results

from agent_eval_action.compare import compare
from agent_eval_action.compare.confirm import to_confirm
from agent_eval_action.compare.evidence import blame_level, unchanged_p
from agent_eval_action.compare.record import MainRecord
from agent_eval_action.compare.statistics_policy import DEFAULT as STATISTICS
from agent_eval_action.results import CaseResult, Results

TRAJ = "tool_trajectory_avg_score"


def _confirmed(c: CaseResult, first: int) -> CaseResult:
    """Runs from number `first` on re-ran the case to confirm a regression."""
    for run in c.runs[first - 1 :]:
        run.confirms = f"trajectory {TRAJ}: passed -> failed"
    return c


def _current(*cases: CaseResult, confirm_runs: int | None = 3) -> Results:
    current = results(*cases, num_runs=1, sha="pr")
    current.run_config.confirm_runs = confirm_runs
    return current


def _steady(n: int) -> list[CaseResult]:
    """Cases that pass every run, the same way, on both sides."""
    return [case(f"steady{i}", {TRAJ: [1.0]}, ["ok"]) for i in range(n)]


def _main(b_scores: list[float], b_behaviour: list[str], others: int) -> tuple[Results, MainRecord]:
    """main's record: the baseline (its last run) and older single-run baselines of case b."""
    runs = [
        results(case("b", {TRAJ: [score]}, [behaviour]), *_steady(others), sha=f"main{i}")
        for i, (score, behaviour) in enumerate(zip(b_scores, b_behaviour, strict=True))
    ]
    return runs[-1], MainRecord.of(runs[:-1])


def _b(diff) -> tuple[str, str]:
    b = next(c for c in diff.cases if c.eval_id == "b")
    metric = next(m for m in b.metrics if m.metric == TRAJ)
    return metric.change.value, metric.reason


def test_the_streak_bound_is_the_worst_case_over_failure_rates():
    # 0 of 6 on main, then 4 of 4 here: max over q of (1-q)^6 q^4, at q = 0.4
    assert unchanged_p(0, 6, 4, 4) == pytest.approx(0.6**6 * 0.4**4, rel=1e-4)
    # more failures on main make the same streak likelier; a longer streak, less likely
    assert unchanged_p(1, 6, 4, 4) > unchanged_p(0, 6, 4, 4) > unchanged_p(0, 6, 6, 6)
    # one run on main (no history) can never make a streak of 4 unlikely enough
    assert unchanged_p(0, 1, 4, 4) > 0.05
    assert blame_level(10) == STATISTICS.blame_alpha / 10


def test_a_streak_main_never_showed_blames_a_case_in_a_small_suite():
    # b answered in other words on each of 6 runs on main, and never failed there
    baseline, history = _main([1.0] * 6, [f"w{i}" for i in range(6)], others=1)
    b = _confirmed(case("b", {TRAJ: [0.0] * 4}, ["x1", "x2", "x3", "x4"]), first=2)
    diff = compare(_current(b, *_steady(1)), baseline, history=history)
    change, reason = _b(diff)
    assert change == "new_failure", reason
    assert "failed 4 of 4 runs here, 0 of 6 on main" in reason
    assert not diff.verdict.passed


def test_the_same_streak_in_a_larger_suite_is_noise():
    # the same record, but 20 cases compared: one streak like it is likely somewhere
    baseline, history = _main([1.0] * 6, [f"w{i}" for i in range(6)], others=19)
    b = _confirmed(case("b", {TRAJ: [0.0] * 4}, ["x1", "x2", "x3", "x4"]), first=2)
    diff = compare(_current(b, *_steady(19)), baseline, history=history)
    change, reason = _b(diff)
    assert change == "unchanged"
    assert reason.startswith("shown again in 3/3 re-runs, but the case failed 0 of 6 runs")
    assert diff.verdict.passed


def test_without_history_a_varying_streak_cannot_be_told_from_noise():
    baseline, _ = _main([1.0], ["w0"], others=1)
    b = _confirmed(case("b", {TRAJ: [0.0] * 4}, ["x1", "x2", "x3", "x4"]), first=2)
    diff = compare(_current(b, *_steady(1)), baseline)
    change, reason = _b(diff)
    assert change == "unchanged" and "main's history is too short" in reason
    assert diff.verdict.passed


def test_a_new_behaviour_the_same_every_run_is_blamed_without_history():
    baseline, _ = _main([1.0], ["ok"], others=1)
    b = _confirmed(case("b", {TRAJ: [0.0] * 4}, ["broken"] * 4), first=2)
    diff = compare(_current(b, *_steady(1)), baseline)
    change, reason = _b(diff)
    assert change == "new_failure" and reason.endswith("confirmed in 3/3 re-runs")


def test_a_failure_main_has_shown_before_is_not_re_run_when_no_re_run_could_blame_it():
    # b failed 2 of 6 runs on main: even 3 more failures here would be common for it
    scores = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    baseline, history = _main(scores, [f"w{i}" for i in range(6)], others=9)
    current = _current(case("b", {TRAJ: [0.0]}, ["x1"]), *_steady(9))
    diff = compare(current, baseline, history=history)
    assert to_confirm(diff, current, history.plus(baseline), 3) == []
    change, reason = _b(diff)
    assert change == "unchanged" and reason.startswith("3 re-runs could not tell it from noise")
    assert diff.verdict.passed


def test_a_case_never_failing_on_main_is_re_run_while_a_streak_could_still_blame_it():
    baseline, history = _main([1.0] * 6, [f"w{i}" for i in range(6)], others=1)
    current = _current(case("b", {TRAJ: [0.0]}, ["x1"]), *_steady(1))
    diff = compare(current, baseline, history=history)
    assert [key.eval_id for key, _ in to_confirm(diff, current, history.plus(baseline), 3)] == ["b"]
    # a re-run that passed ends it
    b = _confirmed(case("b", {TRAJ: [0.0, 1.0]}, ["x1", "w9"]), first=2)
    current = _current(b, *_steady(1))
    diff = compare(current, baseline, history=history)
    assert to_confirm(diff, current, history.plus(baseline), 3) == []
    assert _b(diff)[1].startswith("not reproduced: 0/1 re-runs")


def test_older_results_without_confirm_runs_keep_an_unconfirmed_regression():
    scores = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    baseline, history = _main(scores, [f"w{i}" for i in range(6)], others=9)
    b = case("b", {TRAJ: [0.0]}, ["x1"])
    # b failed on main now and then: its one failing run here is noise, recorded or not
    diff = compare(_current(b, *_steady(9), confirm_runs=None), baseline, history=history)
    assert _b(diff)[0] == "unchanged"
    # a case steady on main, run once here: kept as it was when nothing is recorded
    baseline, history = _main([1.0] * 6, ["ok"] * 6, others=9)
    diff = compare(_current(b, *_steady(9), confirm_runs=None), baseline, history=history)
    assert _b(diff)[0] == "new_failure"


def test_a_streak_that_could_still_blame_is_re_run_up_to_confirm_runs():
    """Every re-run so far showed the failure again and more re-runs could still make the
    streak unlikely enough: the case stays undecided and is re-run again, until confirm-runs."""
    baseline, history = _main([1.0] * 6, [f"w{i}" for i in range(6)], others=1)
    known = history.plus(baseline)
    for done in (1, 2):
        b = _confirmed(case("b", {TRAJ: [0.0] * (1 + done)}, [f"x{i}" for i in range(1 + done)]), 2)
        current = _current(b, *_steady(1))
        diff = compare(current, baseline, history=history)
        assert [key.eval_id for key, _ in to_confirm(diff, current, known, 3)] == ["b"]
        change, reason = _b(diff)
        assert change == "new_failure" and reason.endswith(
            f"shown again in {done}/{done} re-runs so far"
        )
    # the third: blamed (0 of 6 on main, 4 of 4 here, in a suite of 2)
    b = _confirmed(case("b", {TRAJ: [0.0] * 4}, ["x1", "x2", "x3", "x4"]), first=2)
    current = _current(b, *_steady(1))
    diff = compare(current, baseline, history=history)
    assert to_confirm(diff, current, known, 3) == []
    assert "failed 4 of 4 runs here, 0 of 6 on main" in _b(diff)[1]
