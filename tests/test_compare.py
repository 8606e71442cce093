"""The comparison engine: per case and metric changes, axes, noise, and the gate."""

from __future__ import annotations

import pytest
from helpers.factory import case, results

from agent_eval_action.compare import compare
from agent_eval_action.compare.model import Change, Pattern

T, R = "tool_trajectory_avg_score", "response_match_score"


def one(diff, eval_id="c"):
    return next(c for c in diff.cases if c.eval_id == eval_id)


def test_identical_results_have_no_regressions_and_pass():
    base = results(case("c", {T: [1.0], R: [0.9]}), case("d", {T: [0.0], R: [0.5]}))
    diff = compare(base, base)
    assert diff.verdict.passed and diff.verdict.reasons == []
    assert one(diff).change == Change.UNCHANGED and one(diff, "d").change == Change.STILL_FAILING


def test_deterministic_trajectory_drop_is_a_new_failure_with_a_lucky_answer():
    base = results(case("c", {T: [1.0], R: [0.95]}))
    cur = results(case("c", {T: [0.0], R: [0.95]}, ["skipped"]))
    diff = compare(cur, base)
    c = one(diff)
    assert (c.change, c.pattern, c.axes) == (
        Change.NEW_FAILURE,
        Pattern.LUCKY_ANSWER,
        {"trajectory": Change.NEW_FAILURE, "response": Change.UNCHANGED},
    )
    assert not diff.verdict.passed and diff.verdict.reasons == ["1 trajectory regression"]
    assert diff.verdict.trajectory_regressions == 1 and diff.verdict.response_regressions == 0
    assert c.divergence.turn == 0 and c.divergence.current_calls == ['lookup({"id": "skipped"})']
    assert c.divergence.baseline_calls == ['lookup({"id": "same"})']


def test_response_drop_below_min_delta_is_unchanged_and_above_is_a_regression():
    base = results(case("c", {T: [1.0], R: [0.95]}))
    small = compare(results(case("c", {T: [1.0], R: [0.9]}, ["b"])), base)
    assert one(small).change == Change.UNCHANGED and small.verdict.passed
    big = compare(results(case("c", {T: [1.0], R: [0.84]}, ["b"])), base)
    assert (one(big).change, one(big).pattern) == (Change.REGRESSED, Pattern.FUMBLED_SUMMARY)
    strict = compare(
        results(case("c", {T: [1.0], R: [0.9]}, ["b"])), base, min_delta={"response": 0.01}
    )
    assert one(strict).change == Change.REGRESSED


def test_any_trajectory_drop_counts_even_when_still_passing_its_threshold():
    base = results(case("c", {T: [1.0, 1.0]}), num_runs=2)
    cur = results(case("c", {T: [0.5, 0.5]}, ["x", "x"]))
    c = one(compare(cur, base))
    assert c.change == Change.NEW_FAILURE  # 0.5 < threshold 1.0
    loose = results(case("c", {T: [0.9]}))
    cur = results(case("c", {T: [0.8]}, ["y"]))
    c = one(compare(cur, loose))
    assert c.change == Change.REGRESSED


def test_fixed_and_improved():
    base = results(case("c", {T: [0.0]}), case("d", {R: [0.85]}))
    cur = results(case("c", {T: [1.0]}, ["b"]), case("d", {R: [0.99]}, ["b"]))
    diff = compare(cur, base)
    assert one(diff).change == Change.FIXED and one(diff, "d").change == Change.IMPROVED
    assert diff.verdict.passed


def test_noisy_flip_with_few_runs_is_not_blamed_alone():
    base = results(case("c", {T: [1.0, 1.0, 0.0]}, ["a", "a", "b"]))
    cur = results(case("c", {T: [1.0, 0.0, 0.0]}, ["a", "b", "b"]))
    diff = compare(cur, base)
    c = one(diff)
    assert c.flaky and c.likely_noise and c.change == Change.STILL_FAILING
    assert c.metrics[0].p_value is None and diff.verdict.passed


def test_noisy_case_with_enough_runs_is_tested_alone():
    # without re-runs the per-case test blames alone, at the level that fits the false-alarm
    # budget (statistics_policy.py): 1/924, the smallest p-value of 6 runs against 6
    base = results(case("c", {T: [1.0] * 6}, ["a", "c"] * 3))
    cur = results(case("c", {T: [0.0] * 6}, ["b", "d"] * 3))
    c = one(compare(cur, base))
    assert c.flaky and c.metrics[0].p_value == pytest.approx(1 / 924)
    assert c.change == Change.NEW_FAILURE and "beyond noise" in c.metrics[0].reason
    assert not c.likely_noise and c.divergence.current_calls[0].startswith("lookup")


def test_a_per_case_p_value_above_the_level_alone_is_within_noise_without_re_runs():
    # 7/924 passes the 5% false-discovery rate that nominates for re-runs, not the level
    # that blames alone: with confirm-runs 0 the case is within noise, and says why
    base = results(case("c", {T: [1.0] * 6}, ["a"] * 6))
    cur = results(case("c", {T: [0.0] * 5 + [1.0]}, ["b"] * 5 + ["a"]))
    diff = compare(cur, base)
    c = one(diff)
    # (the suite-level test weighs the case too, at its own alpha: not the case's verdict)
    assert c.metrics[0].p_value == pytest.approx(7 / 924)
    assert diff.verdict.trajectory_regressions == 0
    assert c.change == Change.UNCHANGED and c.likely_noise and c.metrics[0].pending is None
    assert c.metrics[0].reason == (
        "within noise: runs disagree (per-case test p = 0.0076, above its level 0.0025 alone)"
    )


def test_broad_degradation_of_noisy_cases_fails_the_gate_at_suite_level():
    base_cases, cur_cases = [], []
    for i in range(40):
        base_cases.append(case(f"n{i}", {T: [1.0, 1.0, 0.0]}, ["a", "a", "b"]))
        cur_cases.append(case(f"n{i}", {T: [1.0, 0.0, 0.0]}, ["a", "b", "b"]))
    diff = compare(results(*cur_cases), results(*base_cases))
    (test,) = diff.suite_tests
    assert test.axis == "trajectory" and test.significant and test.worse == 40
    assert not diff.verdict.passed and "noisy cases got worse together" in diff.verdict.reasons[0]
    assert all(c.change != Change.NEW_FAILURE for c in diff.cases)


def test_single_run_flip_is_noise_when_main_history_shows_the_case_flaky():
    base = results(case("c", {T: [1.0]}))
    cur = results(case("c", {T: [0.0]}, ["b"]))
    diff = compare(cur, base, known_flaky={("s", "c")})
    c = one(diff)
    # flaky (history says so), and unchanged: "still failing" would claim the baseline failed
    assert c.likely_noise and c.flaky and c.change == Change.UNCHANGED
    assert "flaky on main" in c.metrics[0].reason
    assert diff.verdict.passed and diff.verdict.counts["flaky"] == 1


def test_same_scores_with_different_behaviour_is_flaky_but_unchanged():
    base = results(case("c", {T: [1.0, 1.0]}, ["a", "b"]))
    c = one(compare(base, base))
    assert c.flaky and c.change == Change.UNCHANGED


def test_added_removed_and_errored():
    base = results(case("old", {T: [1.0]}), case("e", {T: [1.0]}))
    cur = results(case("new", {T: [0.0]}), case("e", {T: [1.0]}, errored_runs=(1,)))
    diff = compare(cur, base)
    assert {c.eval_id: c.change for c in diff.cases} == {
        "new": Change.ADDED,
        "e": Change.ERRORED,
        "old": Change.REMOVED,
    }
    assert not diff.verdict.passed
    assert set(diff.verdict.reasons) == {
        "1 case errored",
        "1 added case does not pass",
        "1 case that passed on the baseline was removed (fail-on regression; -removed opts out)",
    }


def test_incomplete_metric_never_passes():
    base = results(case("c", {T: [1.0], "final_response_match_v2": [1.0]}))
    cur = results(case("c", {T: [1.0], "final_response_match_v2": [None]}))
    diff = compare(cur, base)
    assert one(diff).change == Change.INCOMPLETE and not diff.verdict.passed
    assert "could not be computed" in diff.verdict.reasons[0]
    assert compare(cur, base, fail_on=["trajectory"]).verdict.passed


def test_expectation_change_is_noted():
    base = results(case("c", {T: [1.0]}, case_sha256="one"))
    cur = results(case("c", {T: [1.0]}, case_sha256="two"))
    assert "expectation changed" in one(compare(cur, base)).notes[0]


@pytest.mark.parametrize(
    ("fail_on", "passes"),
    [
        (["regression"], False),
        (["trajectory"], True),
        (["response"], False),
        (["threshold"], False),
        (["never"], True),
    ],
)
def test_policies(fail_on, passes):
    base = results(case("c", {T: [1.0], R: [0.95]}), case("f", {T: [0.0]}))
    cur = results(case("c", {T: [1.0], R: [0.5]}, ["b"]), case("f", {T: [0.0]}))
    assert compare(cur, base, fail_on=fail_on).verdict.passed is passes


def test_still_failing_fails_only_the_threshold_policy():
    base = results(case("f", {T: [0.0]}))
    assert compare(base, base).verdict.passed
    assert not compare(base, base, fail_on=["threshold"]).verdict.passed


def test_no_baseline_falls_back_to_thresholds_and_says_so():
    cur = results(case("c", {T: [1.0]}), case("f", {T: [0.0]}))
    diff = compare(cur, None, no_baseline_reason="the artifact expired")
    assert diff.baseline is None and "No baseline: the artifact expired" in diff.notes[0]
    assert not diff.verdict.passed and diff.verdict.reasons == [
        "1 case does not pass its thresholds"
    ]
    assert compare(results(case("c", {T: [1.0]})), None).verdict.passed


def test_zero_cases_fail_the_gate():
    empty = results()
    diff = compare(empty, empty)
    assert not diff.verdict.passed and diff.verdict.reasons == ["no case was evaluated"]


def test_accepted_passes_but_keeps_the_reasons():
    base = results(case("c", {T: [1.0]}))
    cur = results(case("c", {T: [0.0]}, ["b"]))
    diff = compare(cur, base, accepted=True)
    assert diff.verdict.passed and diff.verdict.accepted and diff.verdict.reasons


def test_comparability_notes():
    base = results(case("c", {T: [1.0]}))
    cur = results(case("c", {T: [1.0]}))
    cur.tool_version = "0.2.0"
    cur.eval_sets[0].criteria = {"tool_trajectory_avg_score": {"threshold": 0.5}}
    notes = compare(cur, base).notes
    assert any("agent-eval-action version differs" in n for n in notes)
    assert any(
        "Criteria changed in evals/s.evalset.json: tool_trajectory_avg_score" in n for n in notes
    )


def test_diff_serialises_and_reloads():
    from agent_eval_action.compare.model import Diff

    base = results(case("c", {T: [1.0]}))
    diff = compare(results(case("c", {T: [0.0]}, ["b"])), base)
    again = Diff.from_json(diff.dump_json())
    assert again == diff and '"schema": "agent-eval-diff/1"' in diff.dump_json()


def test_a_changed_judge_is_noted():
    from agent_eval_action.results import JudgeRecord

    def judged(model):
        c = case("c", {"final_response_match_v2": [1.0]})
        c.metrics["final_response_match_v2"].judge = JudgeRecord(
            model=model, prompt_version="v1", parser_version="p1", num_samples=5
        )
        return results(c)

    notes = compare(judged("gemini-2.5-pro"), judged("gemini-2.5-flash")).notes
    assert notes == [
        "The judge of final_response_match_v2 differs: gemini-2.5-flash (prompt v1, parser p1) on the "
        "baseline, gemini-2.5-pro (prompt v1, parser p1) now; its scores may move for that reason alone."
    ]
    assert compare(judged("gemini-2.5-pro"), judged("gemini-2.5-pro")).notes == []
