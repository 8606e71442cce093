"""Older baselines are read as main's record only (compare/loading.as_history): their runs'
turns and per-turn scores are let go where the behaviour fingerprint is recorded, and every
verdict, the evidence and the report's history stay what they were with the full files."""

from __future__ import annotations

from helpers.factory import case, results

from agent_eval_action.compare import compare
from agent_eval_action.compare.evidence import main_runs
from agent_eval_action.compare.history import flaky_in_history
from agent_eval_action.compare.loading import as_history
from agent_eval_action.results import Results

T, R = "tool_trajectory_avg_score", "response_match_score"


def _main(index: int, *, fingerprints: bool = True) -> Results:
    """One older baseline: a steady case, and one that answers in new words every run."""
    older = results(
        case("steady", {T: [1.0], R: [1.0]}),
        case("noisy", {T: [1.0], R: [1.0 if index % 3 else 0.2]}, [f"words{index}"]),
        sha=f"main{index}",
    )
    if fingerprints:
        for c in older.cases:
            for run in c.runs:
                run.fingerprint = run.behaviour()
    return older


def test_an_older_baseline_keeps_its_record_and_lets_its_turns_go():
    full = [_main(i) for i in range(6)]
    lean = [as_history(_main(i)) for i in range(6)]
    assert all(run.turns() == [] for r in lean for c in r.cases for run in c.runs)
    assert all(m.invocations == () for r in lean for c in r.cases for m in c.metrics.values())
    assert main_runs(lean) == main_runs(full)
    assert flaky_in_history(lean) == flaky_in_history(full)
    # statuses and scores, which the report's history shows, are kept
    assert [c.status for r in lean for c in r.cases] == [c.status for r in full for c in r.cases]
    baseline = _main(6)
    pr = results(
        case("steady", {T: [0.0], R: [1.0]}, ["broken"]),
        case("noisy", {T: [1.0], R: [0.2]}, ["pr words"]),
        sha="pr",
    )
    with_lean, with_full = compare(pr, baseline, history=lean), compare(pr, baseline, history=full)
    assert with_lean.verdict.passed is False  # the steady case's slip
    assert with_lean.replace(created_at=with_full.created_at) == with_full


def test_an_older_baseline_written_before_fingerprints_keeps_its_turns():
    older = as_history(_main(1, fingerprints=False))
    assert all(len(run.turns()) == 1 for c in older.cases for run in c.runs)
