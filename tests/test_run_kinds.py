"""Why each run ran is a value (`runs[].kind`, `runs[].paired_with`: core.RunKind), and no
decision reads the words of `runs[].confirms`: Results written before the kinds are read
once, at the edge (results.kind_of), and the same runs with their words scrambled weigh
the same on main and in a confirmation."""

from __future__ import annotations

import json
import random

import pytest
from helpers.factory import case, results

from agent_eval_action.compare import compare
from agent_eval_action.compare.confirm import confirming_runs, original, suite_round_runs
from agent_eval_action.compare.evidence import NO_RUNS, grown, kept_runs
from agent_eval_action.core import RUN_KINDS, Purpose, RunKind
from agent_eval_action.results import (
    PAIRED_RUN,
    SAMPLING_RUN,
    SUITE_ROUND,
    CaseResult,
    Results,
    kind_of,
    purpose_fields,
)

TRAJ = "tool_trajectory_avg_score"
# each kind of run as every version words it, and what it pairs with
WORDED: list[tuple[str | None, RunKind, RunKind | None]] = [
    (None, "suite", None),
    ("trajectory tool_trajectory_avg_score: passed -> failed", "confirmation", None),
    (f"{SUITE_ROUND}: response p = 0.05 with one run per case", "suite_round", None),
    (f"{SAMPLING_RUN}: 1 of 10 runs", "sampling", None),
    (f"{PAIRED_RUN} 0123456789ab: trajectory x: passed -> failed", "paired", "confirmation"),
    (f"{PAIRED_RUN} 0123456789ab: {SUITE_ROUND}: response p = 0.05", "paired", "suite_round"),
]


@pytest.mark.parametrize(("words", "kind", "paired_with"), WORDED)
def test_results_written_before_the_kinds_are_read_by_their_words(words, kind, paired_with):
    older = results(case("c", {TRAJ: [1.0]}, ["a"]))
    data = json.loads(older.dump_json())
    run = data["cases"][0]["runs"][0]
    run["confirms"] = words
    for name in ("kind", "paired_with"):
        run.pop(name, None)  # as a version before them wrote it
    (loaded,) = Results.from_json(json.dumps(data)).cases[0].runs
    assert loaded.kind is None
    assert loaded.purpose() == kind_of(words) == (kind, paired_with)


def test_a_recorded_kind_is_believed_over_any_words():
    c = case("c", {TRAJ: [1.0]}, ["a"])
    run = c.runs[0].replace(**purpose_fields(Purpose("suite_round", f"{SAMPLING_RUN}: lies")))
    assert run.purpose() == ("suite_round", None)
    written = json.loads(results(c.replace(runs=[run])).dump_json())["cases"][0]["runs"][0]
    assert (written["kind"], written["paired_with"]) == ("suite_round", None)


def _scrambled(c: CaseResult, rng: random.Random) -> CaseResult:
    """The case with every run's words replaced by nonsense that begins as another kind's
    would (its recorded kind kept)."""
    starts = [SUITE_ROUND, SAMPLING_RUN, PAIRED_RUN, "zz"]
    runs = [
        run
        if run.confirms is None
        else run.replace(confirms=f"{rng.choice(starts)}: {rng.random()}", kind=run.purpose()[0])
        for run in c.runs
    ]
    return c.replace(runs=runs)


def _with_kinds(rng: random.Random, n: int) -> CaseResult:
    """A case of `n` runs of random kinds, outcomes and behaviours, each recorded with its
    kind and its words."""
    scores = [rng.choice([0.0, 1.0]) for _ in range(n)]
    c = case("c", {TRAJ: scores}, [rng.choice("ab") for _ in range(n)])
    runs = []
    for i, run in enumerate(c.runs):
        words, kind, paired_with = WORDED[0] if i == 0 else rng.choice(WORDED)
        why = None if words is None else Purpose(kind, words, paired_with)
        runs.append(
            run.replace(error=None if rng.random() > 0.1 else "crashed", **purpose_fields(why))
        )
    return c.replace(runs=runs)


def test_scrambled_words_change_no_weighing_of_a_cases_runs():
    rng = random.Random(7)
    for _ in range(300):
        c = _with_kinds(rng, rng.randint(1, 6))
        other = _scrambled(c, rng)
        assert kept_runs(other) == kept_runs(c)
        assert grown(NO_RUNS, other) == grown(NO_RUNS, c)
        assert suite_round_runs(other) == suite_round_runs(c)
        assert confirming_runs(other) == confirming_runs(c)
        assert [r.run for r in original(other).runs] == [r.run for r in original(c).runs]


def test_scrambled_words_change_no_verdict():
    """A regression confirmed by two re-runs, and a case's suite-round run: the same
    verdicts, changes and flags whatever the runs' words."""
    rng = random.Random(11)
    base = results(case("b", {TRAJ: [1.0]}, ["ok"]), case("s", {TRAJ: [1.0]}, ["ok"]), sha="main")
    regressed = case("b", {TRAJ: [0.0, 0.0, 0.0]}, ["bad", "bad", "bad"])
    regressed = regressed.replace(
        runs=[
            regressed.runs[0],
            *(
                r.replace(**purpose_fields(Purpose("confirmation", "trajectory: passed -> failed")))
                for r in regressed.runs[1:]
            ),
        ]
    )
    steady = case("s", {TRAJ: [1.0, 1.0]}, ["ok", "ok"])
    steady = steady.replace(
        runs=[steady.runs[0], steady.runs[1].replace(**purpose_fields(Purpose("suite_round", "x")))]
    )
    current = results(regressed, steady, num_runs=1, sha="pr")
    current.run_config.confirm_runs = 3
    scrambled = current.replace(cases=[_scrambled(c, rng) for c in current.cases])
    one, two = compare(current, base), compare(scrambled, base)
    assert one.verdict == two.verdict
    assert [(c.change, c.flaky, c.likely_noise) for c in one.cases] == [
        (c.change, c.flaky, c.likely_noise) for c in two.cases
    ]
    assert [m.change for c in one.cases for m in c.metrics] == [
        m.change for c in two.cases for m in c.metrics
    ]


def test_every_kind_is_declared_once():
    assert {kind for _, kind, _ in WORDED} == set(RUN_KINDS)


def test_the_verdict_scrambled_words_keep_is_a_confirmed_regression():
    """(what test_scrambled_words_change_no_verdict keeps is worth keeping)"""
    base = results(case("b", {TRAJ: [1.0]}, ["ok"]), sha="main")
    regressed = case("b", {TRAJ: [0.0, 0.0, 0.0]}, ["bad", "bad", "bad"])
    why = purpose_fields(Purpose("confirmation", f"{SAMPLING_RUN}: words of another kind"))
    runs = [regressed.runs[0], *(r.replace(**why) for r in regressed.runs[1:])]
    current = results(regressed.replace(runs=runs), num_runs=1, sha="pr")
    current.run_config.confirm_runs = 3
    diff = compare(current, base)
    (b,) = diff.cases
    assert b.confirmation is not None and b.confirmation.runs == 2
    assert not b.likely_noise and not diff.verdict.passed
