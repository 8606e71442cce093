"""Main's record (compare/record.py): main's Results folded one at a time into what the gate
and the reports read of them, so that older baselines need not stay loaded. The record must
say what the Results said: each case's runs on main, whether it was flaky there, and the
status and scores the report's history shows."""

from __future__ import annotations

import json
import math

from helpers.factory import case, results

from agent_eval_action.compare import compare
from agent_eval_action.compare.record import MainRecord, PastCase
from agent_eval_action.core import CaseKey
from agent_eval_action.results import Results, Status

T, R = "tool_trajectory_avg_score", "response_match_score"
STEADY, NOISY = CaseKey("s", "steady"), CaseKey("s", "noisy")


def _main(index: int, *, fingerprints: bool = True) -> Results:
    """One older baseline: a steady case, and one that answers in new words every run and
    fails one baseline in three."""
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


def test_each_cases_runs_on_main_are_counted_across_the_results():
    record = MainRecord.of(_main(i) for i in range(6))
    steady, noisy = record.runs(STEADY), record.runs(NOISY)
    assert (steady.runs, steady.known_deterministic) == (6, True)
    assert (noisy.runs, noisy.deterministic) == (6, False)  # other words every time
    assert noisy.failures(R) == (2, 6) and noisy.varies(R) and not steady.varies(R)
    assert record.runs(CaseKey("s", "never ran")).runs == 0


def test_a_case_is_flaky_when_its_status_changed_between_results_or_its_runs_disagreed():
    record = MainRecord.of(_main(i) for i in range(3))
    assert record.flaky == {NOISY}  # failed in one of them: its status changed
    one_run_each = MainRecord.of([_main(1), _main(2)])
    assert one_run_each.flaky == set()  # passed in both, one run each
    disagreeing = results(case("steady", {R: [1.0, 0.5]}, ["a", "b"]))
    assert one_run_each.plus(disagreeing).flaky == {STEADY}


def test_plus_leaves_the_record_it_extends_as_it_was():
    record = MainRecord.of([_main(1), _main(2)])
    extended = record.plus(_main(3), None)
    assert extended.runs(NOISY).runs == 3 and record.runs(NOISY).runs == 2
    assert extended.flaky == {NOISY} and record.flaky == set()
    assert record.plus(None) is record
    assert len(extended.past) == len(record.past) == 2  # plus adds main's runs, not history


def test_the_history_the_report_shows_keeps_each_status_and_score():
    older = [_main(i) for i in range(3)]
    older[1].cases[0].metrics[R].score = None  # a score that could not be computed
    older[2] = older[2].replace(cases=[older[2].cases[1]])  # the steady case left out
    record = MainRecord.of(iter(older))
    assert [p.source.sha for p in record.past] == ["main0", "main1", "main2"]
    assert record.past[0].case(NOISY) == PastCase(Status.FAILED, {T: 1.0, R: 0.2})
    assert record.past[1].case(STEADY) == PastCase(Status.PASSED, {T: 1.0, R: None})
    assert record.past[2].case(STEADY) is None
    assert record.past[0].case(CaseKey("s", "unknown")) is None
    assert record.past[1].rates == {"trajectory": 100.0, "response": 100.0}
    assert math.isclose(record.past[0].rates["response"] or 0, 50.0)


def test_an_older_baseline_written_before_fingerprints_folds_as_one_with_them():
    old, new = MainRecord.of([_main(1, fingerprints=False)]), MainRecord.of([_main(1)])
    assert old.runs(STEADY) == new.runs(STEADY) and old.runs(NOISY) == new.runs(NOISY)


def test_the_gate_reads_the_record_as_it_read_the_results():
    """The steady case's slip is blamed (it never varied on main); the noisy case failed on
    the baseline too."""
    baseline = _main(6)
    pr = results(
        case("steady", {T: [0.0], R: [1.0]}, ["broken"]),
        case("noisy", {T: [1.0], R: [0.2]}, ["pr words"]),
        sha="pr",
    )
    diff = compare(pr, baseline, history=MainRecord.of(_main(i) for i in range(6)))
    assert diff.verdict.passed is False
    by_id = {c.eval_id: c for c in diff.cases}
    assert by_id["steady"].axes["trajectory"] == "new_failure"
    assert by_id["noisy"].change == "still_failing"


def test_an_older_baseline_is_read_without_its_turns_where_fingerprints_say_enough(tmp_path):
    from agent_eval_action.compare.loading import load_baseline

    older = _main(1)
    older.cases[1].runs[0].fingerprint = None  # written before fingerprints: turns needed
    data = json.loads(older.dump_json())
    data["cases"][0]["runs"][0]["invocations"] = [{"user_content": 7}]  # never read
    path = tmp_path / "older.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    refused, why = load_baseline(str(path))  # as the baseline, its turns are checked
    assert refused is None and "invocations" in str(why)
    read, why = load_baseline(str(path), turns=False)
    assert read is not None, why
    steady, noisy = read.cases
    assert steady.runs[0].turns() == [] and len(noisy.runs[0].turns()) == 1
    record = MainRecord.of([read])
    assert record.runs(NOISY).sole == _main(1).cases[1].runs[0].fingerprint
