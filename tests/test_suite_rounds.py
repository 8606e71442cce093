"""Suite rounds (compare/confirm.suite_round, pipeline/confirm.rounds, engine.py): with one run
per case, a suite-level test that hints at a broad drop without being significant runs the
suite again, and again while the hint stays strong, a few times at most; each look at its
own alpha. How often that is right is bench/gate_trust_single.py's business."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers.factory import case, results

from agent_eval_action.compare import compare
from agent_eval_action.compare.confirm import suite_round, suite_round_runs
from agent_eval_action.compare.model import Diff, SuiteTest
from agent_eval_action.compare.record import MainRecord
from agent_eval_action.compare.statistics_policy import DEFAULT as STATISTICS
from agent_eval_action.pipeline.confirm import rounds
from agent_eval_action.results import SUITE_ROUND, CaseResult, Results, purpose_fields

SUITE_ALPHA = STATISTICS.suite_alpha
SUITE_FIRST_ALPHA = STATISTICS.suite_first_alpha
SUITE_ROUND_ALPHA = STATISTICS.suite_round_alpha
SUITE_ROUND_BELOW = STATISTICS.suite_round_below
SUITE_ROUND_CONTINUE = STATISTICS.suite_round_continue
SUITE_ROUNDS = STATISTICS.suite_rounds

R = "response_match_score"
NOISY = 40
_WORDING = itertools.count()  # every run answers in words of its own


def _side(passes: list[bool], *, steady: bool = True) -> list[CaseResult]:
    """One run per case: the noisy cases answer right (1.0) or not (0.5), each run in new
    words; a last case always does the same thing."""
    noisy = [
        case(f"c{i}", {R: [1.0 if ok else 0.5]}, [f"w{i}-{ok}-{next(_WORDING)}"])
        for i, ok in enumerate(passes)
    ]
    return [*noisy, case("steady", {R: [1.0]}, ["same"])] if steady else noisy


def _suite(seed: int, drop: float) -> tuple[Results, Results, MainRecord]:
    """(current, baseline, main's record of its history): main's runs pass with 0.8, the
    PR's with 0.8 - drop."""
    rng = np.random.default_rng(seed)
    main = [results(*_side(list(rng.random(NOISY) < 0.8))) for _ in range(3)]
    pr = results(*_side(list(rng.random(NOISY) < 0.8 - drop)))
    pr = pr.replace(run_config=pr.run_config.replace(confirm_runs=3))
    return pr, main[0], MainRecord.of(main[1:])


def _with_round(current: Results, wanted, passes: list[bool]) -> Results:
    """`current` with one more run of each wanted case, saying what it confirms."""
    chosen = {key: what for key, what in wanted}
    cases = []
    for c, ok in zip(current.cases, [*passes, True], strict=True):
        if c.key not in chosen:
            cases.append(c)
            continue
        score = 1.0 if ok else 0.5
        metric = c.metrics[R]
        runs = [*metric.runs, score]
        extra = case(c.eval_id, {R: runs}, [f"r{len(runs)}-{ok}-{next(_WORDING)}"] * len(runs))
        new_run = extra.runs[-1].replace(run=len(c.runs) + 1, **purpose_fields(chosen[c.key]))
        cases.append(
            c.replace(
                metrics={R: extra.metrics[R]},
                runs=[*c.runs, new_run],
            )
        )
    return current.replace(cases=cases)


def _hinting(diff: Diff, p: float) -> Diff:
    """The diff with its response test at p, not significant, the runs worse."""
    test = SuiteTest(
        axis="response",
        cases=NOISY,
        mean_delta=-0.1,
        worse=10,
        better=2,
        p_value=p,
        alpha=diff.policy.suite_alpha,
        significant=False,
    )
    return diff.replace(suite_tests=[test])


def test_the_looks_stay_within_the_suite_alpha():
    assert SUITE_FIRST_ALPHA + SUITE_ROUNDS * SUITE_ROUND_ALPHA <= SUITE_ALPHA + 1e-12
    assert SUITE_ROUND_CONTINUE < SUITE_ROUND_BELOW


def test_a_first_round_runs_every_case_not_known_to_be_deterministic():
    current, baseline, history = _suite(1, 0.0)
    diff = compare(current, baseline, history=history)
    assert diff.policy.suite_rounds == SUITE_ROUNDS
    wanted = suite_round(_hinting(diff, SUITE_ROUND_BELOW * 0.9), current, history.plus(baseline))
    assert sorted(key.eval_id for key, _ in wanted) == sorted(f"c{i}" for i in range(NOISY))
    assert all(why.kind == "suite_round" and "one run per case" in why.text for _, why in wanted)
    # above the first threshold: none
    assert (
        suite_round(_hinting(diff, SUITE_ROUND_BELOW * 1.1), current, MainRecord().plus(baseline))
        == []
    )


def test_a_next_round_needs_a_stronger_hint_and_extends_the_same_cases():
    current, baseline, history = _suite(2, 0.0)
    known = history.plus(baseline)
    diff = compare(current, baseline, history=history)
    first = suite_round(_hinting(diff, 0.05), current, known)
    after = _with_round(current, first, [True] * NOISY)
    # between the two thresholds: the first round's hint, not enough for a second
    between = (SUITE_ROUND_CONTINUE + SUITE_ROUND_BELOW) / 2
    assert suite_round(_hinting(diff, between), after, known) == []
    second = suite_round(_hinting(diff, SUITE_ROUND_CONTINUE / 2), after, known)
    assert {k for k, _ in second} == {k for k, _ in first}
    assert all("2 runs per case" in why.text for _, why in second)


def test_no_round_after_the_last_one_nor_with_several_runs_per_case():
    current, baseline, history = _suite(3, 0.0)
    known = history.plus(baseline)
    diff = compare(current, baseline, history=history)
    grown = current
    for _ in range(SUITE_ROUNDS):
        grown = _with_round(grown, suite_round(_hinting(diff, 0.001), grown, known), [True] * NOISY)
    assert max(len(suite_round_runs(c)) for c in grown.cases) == SUITE_ROUNDS
    assert suite_round(_hinting(diff, 0.001), grown, known) == []
    several = current.replace(run_config=current.run_config.replace(num_runs=2))
    assert suite_round(_hinting(diff, 0.001), several, known) == []


def _drive(seed: int, drop: float, limit: int = 1000) -> tuple[Diff, list[str], list[int]]:
    """The rounds as the action runs them, the agent simulated: (last diff, warnings, how many
    cases each round re-ran)."""
    current, baseline, history = _suite(seed, drop)
    rng = np.random.default_rng(seed + 1)
    sizes: list[int] = []

    def confirm(wanted, _round):
        nonlocal current
        sizes.append(len(wanted))
        current = _with_round(current, wanted, list(rng.random(NOISY) < 0.8 - drop))
        return compare(current, baseline, history=history), current

    diff = compare(current, baseline, history=history)
    diff, warnings = rounds(
        diff, current, known=lambda: history.plus(baseline), runs=3, limit=limit, confirm=confirm
    )
    return diff, warnings, sizes


def test_a_broad_drop_is_found_with_the_rounds_runs():
    """Every noisy case loses 0.25 pass probability: rounds run while the test hints (in some
    seeds twice), and the last test, with their runs, says so at its own alpha."""
    rounds_needed = []
    for seed in range(6):
        diff, warnings, sizes = _drive(seed, 0.25)
        test = next(t for t in diff.suite_tests if t.axis == "response")
        assert test.significant and not diff.verdict.passed, seed
        if test.rounds:  # decided after rounds: their runs are in the test, at the later alpha
            assert test.alpha == SUITE_ROUND_ALPHA and test.first_p_value is not None
            assert test.first_p_value > SUITE_FIRST_ALPHA
        assert sizes == [NOISY] * test.rounds and warnings == []
        rounds_needed.append(test.rounds)
    assert max(rounds_needed) >= 2


def test_an_unchanged_suite_does_not_keep_running():
    """Nothing changed: at most the rounds allowed, and in most seeds none."""
    counts = [len(_drive(seed, 0.0)[2]) for seed in range(10)]
    assert max(counts) <= SUITE_ROUNDS
    assert sum(counts) <= 5


def test_the_limit_stops_the_rounds_and_says_so():
    for seed in range(20):
        current, baseline, history = _suite(seed, 0.3)
        diff = compare(current, baseline, history=history)
        if any(
            not t.significant and t.p_value <= SUITE_ROUND_BELOW for t in diff.suite_tests
        ):  # a seed whose first look hints
            break
    else:
        pytest.fail("no seed hinted")
    diff, warnings, sizes = _drive(seed, 0.3, limit=NOISY - 1)
    assert sizes == []
    assert any("limit" in w for w in warnings)


def test_the_suite_rounds_raise_what_the_suite_is_said_to_detect():
    """The comment's "what this suite can detect" counts the rounds the test may take: with
    them a suite detects more than its first look alone, and never less."""
    from agent_eval_action.compare import stats

    cases = [(0.8, 11, 1)] * 60
    alone = stats.looks_power(cases, 0.2, SUITE_FIRST_ALPHA)
    with_rounds = stats.looks_power(
        cases, 0.2, SUITE_FIRST_ALPHA, SUITE_ROUNDS, SUITE_ROUND_BELOW, SUITE_ROUND_ALPHA
    )
    assert alone == stats.drop_power(cases, 0.2, SUITE_FIRST_ALPHA)
    assert 0.5 < alone < with_rounds < 1.0
    assert stats.looks_power(cases, 0.0, SUITE_FIRST_ALPHA, 3, 0.12, 0.0015) < 0.01
    smaller = stats.smallest_drop(
        lambda d: stats.looks_power(cases, d, SUITE_FIRST_ALPHA, 3, 0.12, 0.0015)
    )
    assert smaller is not None
    assert smaller < stats.smallest_drop(lambda d: stats.drop_power(cases, d, SUITE_FIRST_ALPHA))


def test_the_diff_says_what_the_suite_detects_with_its_rounds():
    current, baseline, history = _suite(4, 0.0)
    single = compare(current, baseline, history=history)
    several = current.replace(run_config=current.run_config.replace(confirm_runs=0))
    without = compare(several, baseline, history=history)  # no confirmation: no rounds
    (with_rounds,) = single.sensitivity
    (first_only,) = without.sensitivity
    assert with_rounds.axis == "response" and with_rounds.power > first_only.power


def test_merged_shards_take_the_suite_test_in_one_look_at_the_full_alpha():
    """After a merge no agent runs: no rounds are planned, and the one look gets all of alpha."""
    current, baseline, history = _suite(5, 0.0)
    merged = compare(current.replace(merged_shards=2), baseline, history=history)
    assert merged.policy.suite_rounds == 0 and merged.policy.suite_alpha == SUITE_ALPHA
    assert (
        suite_round(
            _hinting(merged, 0.001), current.replace(merged_shards=2), MainRecord().plus(baseline)
        )
        == []
    )
    unsharded = compare(current, baseline, history=history)
    assert unsharded.policy.suite_alpha == SUITE_FIRST_ALPHA


def test_a_shard_plans_no_suite_rounds():
    """A shard holds part of the suite: the suite-level test is its merge's (it re-runs its
    own regressed cases only)."""
    from agent_eval_action.results import Shard

    current, baseline, history = _suite(6, 0.0)
    shard = current.replace(shard=Shard(index=1, count=2, partition_hash="p", cases_total=41))
    diff = compare(shard, baseline, history=history)
    assert diff.policy.suite_rounds == 0
    assert suite_round(_hinting(diff, 0.001), shard, MainRecord().plus(baseline)) == []


def test_merge_records_how_many_shards_it_merged():
    from agent_eval_action.compare.merge import merge
    from agent_eval_action.results import Shard

    cases = _side([True, False])
    parts = []
    for index, own in enumerate((cases[:2], cases[2:]), start=1):
        shard = Shard(index=index, count=2, partition_hash="p", cases_total=3)
        parts.append((f"shard-{index}.json", results(*own).replace(shard=shard)))
    assert merge(parts).merged_shards == 2


def test_the_suite_test_weighs_only_main_runs_taken_whatever_the_case_did_here():
    """Paired runs on the merge-base (pipeline/paired.py) join main's record; the suite-level
    test takes those of a suite round (every case alike) but not those paired with one case's
    regression: that case got them because its run here failed, which would tilt the test."""
    from agent_eval_action.compare.evidence import NO_RUNS, grown
    from agent_eval_action.results import PAIRED_RUN

    own = case("c", {R: [1.0, 0.5, 1.0]}, ["a", "b", "c"])
    runs = [
        own.runs[0],
        own.runs[1].replace(confirms=f"{PAIRED_RUN} abc: confirming a new failure"),
        own.runs[2].replace(confirms=f"{PAIRED_RUN} abc: {SUITE_ROUND}: response p = 0.05"),
    ]
    record = grown(NO_RUNS, own.replace(runs=runs))
    assert len(record.passed) == 3  # the case's own evidence: every run on main
    assert record.recorded == ({R: True},)  # the first look: main's recorded runs alone
    assert record.sampled == ({R: True}, {R: True})  # later looks: and the suite round's
