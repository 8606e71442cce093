"""The statistics policy (compare/statistics_policy.py): its false-alarm budget over every run
configuration the engine can reach, the engine deciding with the same numbers, the per-case
test's two roles (nominating for re-runs, blaming alone without them), and docs/statistics.md's
table of the policy's numbers."""

from __future__ import annotations

import dataclasses
import re
import sys

import pytest
from helpers.factory import case, results
from helpers.paths import ROOT

from agent_eval_action.compare import compare
from agent_eval_action.compare.confirm import to_confirm
from agent_eval_action.compare.model import Change, Diff, Rule
from agent_eval_action.compare.record import MainRecord
from agent_eval_action.compare.statistics_policy import (
    DEFAULT,
    FALSE_ALARM_BUDGET,
    StatisticsPolicy,
)
from agent_eval_action.core import Purpose
from agent_eval_action.results import CaseResult, Results, purpose_fields

T = "tool_trajectory_avg_score"
CONFIGURATIONS = [
    (runs, confirm, sharded)
    for runs in (1, 2, 3, 4, 5, 6, 10)
    for confirm in (None, 0, 1, 3, 5)
    for sharded in (False, True)
]


@pytest.mark.parametrize(("runs", "confirm", "sharded"), CONFIGURATIONS)
def test_every_configuration_stays_within_the_false_alarm_budget(runs, confirm, sharded):
    budget = DEFAULT.budget(runs, confirm, sharded)
    assert 0 < budget.total <= FALSE_ALARM_BUDGET + 1e-12, budget
    families = [s.family for s in budget.shares]
    assert len(families) == len(set(families)) and "suite-level test" in families


def test_the_default_run_counts_blame_after_re_runs_and_the_suite_tests_looks():
    budget = DEFAULT.budget(num_runs=1, confirm_runs=3)
    assert {s.family: s.share for s in budget.shares} == {
        "case blame after re-runs": DEFAULT.blame_alpha,
        "suite-level test": DEFAULT.suite_first_alpha
        + DEFAULT.suite_rounds * DEFAULT.suite_round_alpha,
    }
    assert budget.total == pytest.approx(0.008)


def test_the_per_case_test_counts_fully_only_where_it_blames_alone():
    alone = {s.family: s.share for s in DEFAULT.budget(num_runs=5, confirm_runs=0).shares}
    assert alone == {"per-case test": DEFAULT.case_alone_alpha, "suite-level test": 0.0075}
    nominating = {s.family: s.share for s in DEFAULT.budget(num_runs=5, confirm_runs=3).shares}
    assert nominating["per-case test"] == 0.0
    assert nominating["case blame after re-runs"] == DEFAULT.blame_alpha
    # at the old 5% false-discovery rate alone, an unchanged suite could fail 5% of gates
    old = dataclasses.replace(DEFAULT, case_alone_alpha=0.05)
    assert old.budget(num_runs=5, confirm_runs=0).total > FALSE_ALARM_BUDGET


def test_a_policy_whose_looks_overrun_the_suite_alpha_is_refused():
    with pytest.raises(ValueError, match="looks"):
        StatisticsPolicy(suite_rounds=10)


def _suite(runs: int, flipped: CaseResult | None = None) -> tuple[list, list]:
    steady = [case(f"steady{i}", {T: [1.0] * runs}) for i in range(3)]
    noisy_base = case("noisy", {T: [1.0] * runs}, ["a", "b"] * (runs // 2) + ["a"] * (runs % 2))
    noisy_now = flipped or case("noisy", {T: [1.0] * runs}, ["b"] * runs)
    return [*steady, noisy_base], [*steady, noisy_now]


def _compared(
    runs: int, confirm: int | None, sharded: bool, flipped: CaseResult | None = None
) -> tuple[Diff, Results]:
    base_cases, now_cases = _suite(runs, flipped)
    current = results(*now_cases, num_runs=runs)
    current.run_config.confirm_runs = confirm
    if sharded:
        current = current.replace(merged_shards=2)
    return compare(current, results(*base_cases, num_runs=runs)), current


@pytest.mark.parametrize(("runs", "confirm", "sharded"), CONFIGURATIONS[::3])
def test_the_engine_decides_with_the_numbers_the_budget_counts(runs, confirm, sharded):
    diff, _ = _compared(runs, confirm, sharded)
    shares = {s.family: s.share for s in DEFAULT.budget(runs, confirm, sharded).shares}
    policy = diff.policy
    looks = policy.suite_alpha + policy.suite_rounds * policy.suite_round_alpha
    assert looks == pytest.approx(shares["suite-level test"])
    assert policy.case_alone_alpha == DEFAULT.case_alone_alpha
    assert policy.blame_alpha == DEFAULT.blame_alpha and policy.case_alpha == 0.05


def _six_runs(failed: int, reruns: list[float] = ()) -> CaseResult:
    """The noisy case with `failed` of its six runs failing here, then confirmation re-runs
    scoring `reruns`."""
    scores = [0.0] * failed + [1.0] * (6 - failed) + list(reruns)
    noisy = case("noisy", {T: scores}, ["b"] * failed + ["a"] * (len(scores) - failed))
    why = purpose_fields(Purpose("confirmation", "trajectory: passed -> failed"))
    runs = [r if i < 6 else r.replace(**why) for i, r in enumerate(noisy.runs)]
    return noisy.replace(runs=runs)


def _noisy(diff: Diff):
    return next(c for c in diff.cases if c.eval_id == "noisy")


def test_without_re_runs_the_per_case_test_blames_alone_at_its_budgeted_level():
    # six failing of six against six passing: p = 1/924, within the 0.25% level alone
    diff, _ = _compared(6, 0, False, _six_runs(6))
    noisy = _noisy(diff)
    assert noisy.change == Change.NEW_FAILURE and noisy.metrics[0].rule == Rule.BEYOND_NOISE
    # five of six: p = 7/924, nominated at 5% but not blamed alone
    diff, _ = _compared(6, 0, False, _six_runs(5))
    noisy = _noisy(diff)
    assert noisy.change == Change.UNCHANGED and noisy.metrics[0].rule == Rule.WITHIN_NOISE
    assert diff.verdict.trajectory_regressions == 0 and noisy.metrics[0].pending is None


def test_with_re_runs_a_nominated_case_waits_for_them_and_they_decide():
    # five failing of six: p = 7/924, nominated; its own streak is not enough to blame it
    diff, current = _compared(6, 3, False, _six_runs(5))
    noisy = _noisy(diff)
    metric = noisy.metrics[0]
    assert metric.p_value == pytest.approx(7 / 924) and metric.pending == Change.NEW_FAILURE
    assert metric.rule == Rule.WITHIN_NOISE and noisy.change == Change.UNCHANGED
    # not blamed as a case (the suite-level test weighs it with its own alpha), as when the
    # confirm limit leaves it without re-runs
    assert diff.verdict.trajectory_regressions == 0
    wanted = to_confirm(diff, current, MainRecord().plus(results(*_suite(6)[0])), 3)
    assert [key for key, _ in wanted] == [noisy.key]
    # every re-run fails again: 8 of 9 against 0 of 6 on main is more than noise explains
    diff, _ = _compared(6, 3, False, _six_runs(5, [0.0, 0.0, 0.0]))
    noisy = _noisy(diff)
    assert noisy.metrics[0].rule == Rule.CONFIRMED and noisy.change == Change.NEW_FAILURE
    assert diff.verdict.trajectory_regressions == 1 and not noisy.likely_noise
    # a re-run that passes clears it: likely noise, never confirmed
    diff, _ = _compared(6, 3, False, _six_runs(5, [1.0]))
    noisy = _noisy(diff)
    assert noisy.metrics[0].rule == Rule.NOT_REPRODUCED and noisy.likely_noise
    assert noisy.change == Change.UNCHANGED and noisy.confirmation.reproduced == 0


def test_a_nominated_case_whose_own_runs_are_streak_enough_is_blamed_without_re_runs():
    # six failing of six: p = 1/924 is over this case's share of the blame budget (0.25%
    # over 4 cases compared), but 6 of 6 failing against 0 of 6 on main reaches it
    diff, current = _compared(6, 3, False, _six_runs(6))
    noisy = _noisy(diff)
    assert noisy.change == Change.NEW_FAILURE and noisy.metrics[0].rule == Rule.BEYOND_NOISE
    assert "failed 6 of 6 runs here, 0 of 6 on main" in noisy.metrics[0].reason
    assert not to_confirm(diff, current, MainRecord().plus(results(*_suite(6)[0])), 3)


# ---- docs/statistics.md's table ------------------------------------------------------------

ROW = re.compile(r"^\| `([a-z_.]+)` \| ([0-9.]+)(%?) \|", re.M)


def _documented() -> dict[str, float]:
    text = (ROOT / "docs" / "statistics.md").read_text()
    table = text[: text.index("\n## ")]  # the opening: before the first section
    rows = {}
    for name, value, percent in ROW.findall(table):
        assert name not in rows, f"{name} is in the table twice"
        rows[name] = float(value) / (100 if percent else 1)
    return rows


def _policy_numbers() -> dict[str, float]:
    numbers: dict[str, float] = {}
    for f in dataclasses.fields(DEFAULT):
        value = getattr(DEFAULT, f.name)
        if f.name == "min_delta":
            numbers |= {f"min_delta.{axis}": v for axis, v in value.items()}
        else:
            numbers[f.name] = value
    return numbers


def test_the_docs_open_with_the_policys_numbers():
    assert _documented() == pytest.approx(_policy_numbers())


def test_the_docs_open_with_one_diagram_of_a_cases_verdict():
    text = (ROOT / "docs" / "statistics.md").read_text()
    opening = text[: text.index("\n## ")]
    assert opening.count("```mermaid") == 1 and text.count("```mermaid") == 1


# ---- bench/gate_trust.py's vectorised gate -------------------------------------------------


def test_the_benchs_vectorised_gate_decides_as_the_engine_where_the_per_case_test_runs():
    """bench/gate_trust.py keeps a numpy copy of the gate, which must change with the engine:
    on its shapes with enough runs for the per-case test, its verdicts and suite p-values
    equal compare()'s trial for trial (its trials have no re-runs: the level alone)."""
    sys.path.insert(0, str(ROOT / "bench"))
    import gate_trust

    shapes = [i for i, s in enumerate(gate_trust.SHAPES) if s.runs >= DEFAULT.case_min_runs]
    rows = gate_trust.measure(20, engine_checks=20, shapes=shapes)
    assert len(rows) == 4 * len(shapes) >= 8
    assert all(r["engine_agree"] == r["engine_trials"] == 20 for r in rows), rows
