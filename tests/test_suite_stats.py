"""The suite-level test over noisy cases (compare/stats.py `stratified_shift_p` and the
engine's `_suite_tests`): what it can and cannot reject, reproducibility and edge cases.
How often it is right on simulated suites is bench/gate_trust.py's business, not a test's."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from helpers.factory import case, results
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_eval_action.compare import compare, stats

AXES = ("trajectory", "response")
T, R = "tool_trajectory_avg_score", "response_match_score"


def rows(*values: tuple[float, float]) -> list[tuple[float, float]]:
    return list(values)


def shifted(count: int, base: list[float], cur: list[float]) -> list:
    """`count` cases whose trajectory runs go from `base` to `cur` (the response does not vary)."""
    return [([(v, 1.0) for v in base], [(v, 1.0) for v in cur])] * count


# --- what it cannot reject -------------------------------------------------------------------


@st.composite
def exchangeable(draw):
    """Cases whose current runs are a reordering of the baseline's: nothing changed at all."""
    count = draw(st.integers(1, 45))
    cases = []
    for _ in range(count):
        runs = draw(st.integers(1, 5))
        base = [
            (draw(st.sampled_from([0.0, 0.5, 1.0])), draw(st.sampled_from([0.0, 1.0])))
            for _ in range(runs)
        ]
        cases.append((base, draw(st.permutations(base))))
    return cases


@settings(max_examples=60, deadline=None)
@given(exchangeable())
def test_runs_that_are_only_reordered_can_never_be_significant(cases):
    p = stats.stratified_shift_p(cases, AXES)
    assert all(value >= 0.5 - 1e-9 for value in p.values()), p


@settings(max_examples=60, deadline=None)
@given(exchangeable(), st.data())
def test_a_drop_and_its_mirror_are_never_both_significant(cases, data):
    # swap some runs between the sides of each case, then test it both ways round
    mixed = []
    for base, cur in cases:
        k = data.draw(st.integers(0, min(len(base), len(cur))))
        mixed.append(([*cur[:k], *base[k:]], [*base[:k], *cur[k:]]))
    forward = stats.stratified_shift_p(mixed, AXES)
    backward = stats.stratified_shift_p([(cur, base) for base, cur in mixed], AXES)
    for axis in AXES:
        assert max(forward[axis], backward[axis]) >= 0.5 - 2e-2, (axis, forward, backward)


def test_unchanged_wording_noise_within_right_answers_does_not_count():
    """Every run passes on both sides; only the scores of right answers moved."""
    base_cases, cur_cases = [], []
    for i in range(40):
        base_cases.append(case(f"n{i}", {T: [1.0] * 3, R: [0.99, 0.95, 0.9]}, ["a", "b", "c"]))
        cur_cases.append(case(f"n{i}", {T: [1.0] * 3, R: [0.85, 0.82, 0.8]}, ["d", "e", "f"]))
    diff = compare(results(*cur_cases), results(*base_cases))
    # the scores did drop, but no run fails more often: nothing on the axis can weigh
    assert [t.axis for t in diff.suite_tests if t.axis == "response"] == []
    assert diff.verdict.passed


# --- what it must reject ---------------------------------------------------------------------


@pytest.mark.parametrize("count", [20, 40, 400])  # drawn shuffles, and the normal limit
def test_a_clear_shift_is_significant(count):
    p = stats.stratified_shift_p(shifted(count, [1.0, 1.0, 0.0], [1.0, 0.0, 0.0]), AXES)
    assert p["trajectory"] < 0.0075 and p["response"] == 1.0


def test_a_shift_on_one_axis_is_found_on_that_axis_only():
    cases = [
        ([(1.0, 1.0), (1.0, 1.0), (0.0, 0.0)], [(1.0, 1.0), (0.0, 0.0), (0.0, 1.0)])
        for _ in range(60)
    ]
    p = stats.stratified_shift_p(cases, AXES)
    assert p["trajectory"] < 1e-6 and p["response"] > 0.5


def test_engine_fails_the_gate_when_noisy_runs_fail_more_often():
    base_cases, cur_cases = [], []
    for i in range(40):
        base_cases.append(case(f"n{i}", {T: [1.0, 1.0, 0.0], R: [0.9, 0.95, 0.6]}, list("aab")))
        cur_cases.append(case(f"n{i}", {T: [1.0, 0.0, 0.0], R: [0.85, 0.5, 0.65]}, list("abb")))
    diff = compare(results(*cur_cases), results(*base_cases))
    tests = {t.axis: t for t in diff.suite_tests}
    assert tests["trajectory"].significant and tests["response"].significant
    assert not diff.verdict.passed


def test_each_metric_of_an_axis_counts_by_its_own_threshold():
    """Two response metrics: a run counts by the share of them it passed."""
    judged = "final_response_match_v2"  # threshold 0.5 in the factory
    base_cases, cur_cases = [], []
    for i in range(40):
        base_cases.append(case(f"n{i}", {R: [0.9, 0.9, 0.9], judged: [1.0, 1.0, 0.0]}, list("abc")))
        cur_cases.append(case(f"n{i}", {R: [0.9, 0.9, 0.9], judged: [1.0, 0.0, 0.0]}, list("abc")))
    (test,) = compare(results(*cur_cases), results(*base_cases)).suite_tests
    assert test.axis == "response" and test.significant


# --- reproducible ----------------------------------------------------------------------------


@pytest.mark.parametrize("count", [5, 50])
def test_the_same_data_gives_the_same_p_value(count):
    rng = np.random.default_rng(3)
    cases = [
        (rng.integers(0, 2, (3, 2)).astype(float).tolist(), rng.integers(0, 2, (3, 2)).tolist())
        for _ in range(count)
    ]
    first = stats.stratified_shift_p(cases, AXES)
    assert stats.stratified_shift_p([(list(b), list(c)) for b, c in cases], AXES) == first


def test_the_normal_limit_does_not_depend_on_the_order_of_cases():
    rng = np.random.default_rng(4)
    cases = [
        (rng.integers(0, 2, (3, 2)).tolist(), rng.integers(0, 2, (4, 2)).tolist())
        for _ in range(60)
    ]
    forward = stats.stratified_shift_p(cases, AXES)
    backward = stats.stratified_shift_p(cases[::-1], AXES)
    assert forward == pytest.approx(backward, abs=1e-12)


# --- edge cases ------------------------------------------------------------------------------


def test_no_case_all_tied_and_no_informative_case_give_one():
    assert stats.stratified_shift_p([], AXES) == {"trajectory": 1.0, "response": 1.0}
    tied = [([(1.0, 0.0)] * 3, [(1.0, 0.0)] * 3)] * 50
    assert stats.stratified_shift_p(tied, AXES) == {"trajectory": 1.0, "response": 1.0}
    one_sided = [([(1.0, 1.0)] * 3, [])] * 50  # no current run: nothing to shuffle
    assert stats.stratified_shift_p(one_sided, AXES) == {"trajectory": 1.0, "response": 1.0}


def test_one_case_gets_its_exact_shuffle_p_value():
    """3 passes against 0: one split in C(6, 3) = 20 is as bad, so p = 1/20 (drawn)."""
    p = stats.stratified_shift_p(shifted(1, [1.0] * 3, [0.0] * 3), AXES)
    assert p["trajectory"] == pytest.approx(1 / 20, abs=0.006) and p["response"] == 1.0


def test_drop_moments_are_the_exact_mean_and_covariance_over_every_split():
    pooled = np.array([[1.0, 0.5], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.5]])
    n_base = 2
    drops = []
    for picks in itertools.combinations(range(5), 5 - n_base):
        current = pooled[list(picks)]
        drops.append(3 * pooled.mean(axis=0) - current.sum(axis=0))
    drop, covariance, informative = stats.drop_moments(pooled, n_base)
    assert np.allclose(np.mean(drops, axis=0), 0.0) and bool(informative)
    assert np.allclose(np.cov(np.array(drops).T, bias=True), covariance)
    assert np.allclose(drop, 3 * pooled.mean(axis=0) - pooled[n_base:].sum(axis=0))


def test_max_t_p_against_closed_forms():
    tail = 0.5 * math.erfc(2.0 / math.sqrt(2))
    one = stats.max_t_p(np.array([2.0]), np.array([[1.0]]))
    same = stats.max_t_p(np.array([2.0, 2.0]), np.array([[1.0, 1.0], [1.0, 1.0]]))
    apart = stats.max_t_p(np.array([2.0, -9.0]), np.eye(2))
    still = stats.max_t_p(np.array([2.0, 1.0]), np.array([[1.0, 0.0], [0.0, 0.0]]))
    assert one[0] == pytest.approx(tail, rel=1e-12)
    assert same == pytest.approx([tail, tail], rel=1e-9)  # one axis twice: no penalty
    assert apart[0] == pytest.approx(1 - (1 - tail) ** 2, rel=1e-9)  # independent axes
    assert still.tolist() == [pytest.approx(tail, rel=1e-12), 1.0]  # an axis that cannot move
    batch = stats.max_t_p(np.array([[2.0, -9.0], [2.0, 2.0]]), np.array([np.eye(2)] * 2))
    assert batch[0] == pytest.approx(apart) and batch[1, 0] == pytest.approx(batch[1, 1])
