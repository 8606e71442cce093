"""Check-run output, annotations in batches of 50, and the workflow-command fallback."""

from __future__ import annotations

from helpers.factory import case, results
from report_diffs import ACTUAL_REFUND, EXPECTED_REFUND, answering, huge, mixed, no_baseline, pair

from agent_eval_action.compare import compare
from agent_eval_action.compare.model import Change
from agent_eval_action.report import check
from agent_eval_action.report.budget import size

T, R = "tool_trajectory_avg_score", "response_match_score"
KEYS = {"path", "start_line", "end_line", "annotation_level", "message", "title"}


def test_check_output_has_title_summary_text_and_annotations():
    diff, current = mixed()
    out = check.check_output(diff, current)
    # the crash first, as the headline says it (its error is in the case's note)
    assert out.title.startswith("❌ 1 case errored: RuntimeError at agent/tools.py:16 · 2 traj")
    assert "Gate failed" in out.summary and "Trajectory regressions" not in out.summary
    assert "### Trajectory regressions (2)" in out.text and "<!--" not in out.text
    levels = [a["annotation_level"] for a in out.annotations]
    # 3 regressed cases, then the 4 still failing
    assert levels == ["failure"] * 3 + ["warning"] * 4
    first = out.annotations[0]
    assert set(first) == KEYS
    assert first["path"] == "evals/refunds.evalset.json" and first["start_line"] == 12
    assert first["end_line"] == 12 and first["title"] == "Trajectory regression: refunds / lucky"
    assert "tool_trajectory_avg_score: 1.000 -> 0.000" in first["message"]
    assert 'current tool calls:  lookup({"id": "skipped lookup"})' in first["message"]
    both = next(a for a in out.annotations if "both" in a["title"])
    assert both["title"] == "Trajectory and response regression: refunds / both"


def test_annotations_come_in_batches_of_at_most_50():
    diff, current = huge(300)
    out = check.check_output(diff, current)
    batches = out.batches()
    assert [len(b) for b in batches] == [50, 10]
    assert [a for batch in batches for a in batch] == out.annotations
    assert size(out.summary) <= 65_535 and size(out.text) <= 65_535


def test_workflow_command_escaping():
    line = check.workflow_command(
        {
            "path": "evals/a,b:c.json",
            "start_line": 3,
            "end_line": 3,
            "annotation_level": "failure",
            "title": "x: y, 100%\nz",
            "message": "50% done\r\nnext: a, b",
        }
    )
    assert line == (
        "::error file=evals/a%2Cb%3Ac.json,line=3,title=x%3A y%2C 100%25%0Az"
        "::50%25 done%0D%0Anext: a, b"
    )


def test_workflow_commands_keep_ten_per_level_and_count_the_rest():
    diff, _ = huge(100)  # 20 regressions, no still failing
    lines = check.workflow_commands(diff)
    assert len(lines) == 10 and all(line.startswith("::error ") for line in lines)
    assert lines[-1] == (
        "::error title=11 more regressions::11 more regressions are not annotated here "
        "(the runner keeps 10 per level); see the job summary."
    )
    assert "file=evals/set_00.evalset.json,line=1," in lines[0]


def test_workflow_commands_of_a_few_cases_are_all_there():
    diff, _ = mixed()
    lines = check.workflow_commands(diff)
    assert [line.split(" ")[0] for line in lines] == ["::error"] * 3 + ["::warning"] * 4


def test_no_regressions_no_annotations():
    diff, current = pair([case("c", {T: [1.0]})], [case("c", {T: [1.0]})])
    assert check.check_output(diff, current).annotations == []
    assert check.workflow_commands(diff) == []


def test_a_response_regression_shows_the_answers_not_the_unchanged_tool_calls():
    diff, current = mixed()
    out = check.check_output(diff, current)
    fumbled = next(a for a in out.annotations if "fumbled" in a["title"])
    assert fumbled["title"] == "Response regression: refunds / fumbled"
    message = fumbled["message"]
    assert "tool calls" not in message
    assert "  expected answer: answer\n" in message
    assert "  baseline answer: answer same\n" in message
    assert message.endswith("  current answer:  answer same")
    # both axes: the tool calls and the answers
    both = next(a for a in out.annotations if "both" in a["title"])["message"]
    assert 'current tool calls:  lookup({"id": "wrong"})' in both
    assert "current answer:  answer wrong" in both
    # a trajectory regression alone: the tool calls only
    lucky = out.annotations[0]["message"]
    assert "current tool calls" in lucky and "answer:" not in lucky


def test_a_long_multi_line_answer_is_shortened_and_indented():
    long = "line one\n" + "word " * 400
    base = answering(case("c", {T: [1.0], R: [1.0]}), "expected", "fine")
    cur = answering(case("c", {T: [1.0], R: [0.1]}, ["b"]), "expected", long)
    diff, _ = pair([base], [cur])
    (annotation,) = check.case_annotations(diff)
    message = annotation["message"]
    assert "  current answer:  line one\n                   word word" in message
    assert "more characters)" in message and len(message) <= check.MESSAGE_CHARS + 40


def test_without_a_baseline_each_failing_case_says_where_it_departs_from_its_eval_file():
    diff, _ = no_baseline()
    annotations = check.case_annotations(diff)
    assert [a["title"] for a in annotations] == [
        "Fails its thresholds: s / bad",
        "Fails its thresholds: s / refund",
    ]
    bad, refund = (a["message"] for a in annotations)
    assert bad.splitlines()[2:] == [
        "first divergent turn: 1",
        '  expected tool calls: lookup({"id": 1})',
        '  current tool calls:  lookup({"id": "x"})',
    ]
    assert f"  expected answer: {EXPECTED_REFUND}" in refund
    assert f"  current answer:  {ACTUAL_REFUND}" in refund and "tool calls" not in refund


def test_fail_on_threshold_annotates_every_failing_case_also_one_within_noise():
    base = results(case("c", {T: [1.0]}), case("f", {T: [0.0]}))
    cur = results(case("c", {T: [0.0]}, ["b"]), case("f", {T: [0.0]}))
    diff = compare(cur, base, fail_on=["threshold"], known_flaky={("s", "c")})
    assert next(c for c in diff.cases if c.eval_id == "c").change == Change.UNCHANGED
    titles = [a["title"] for a in check.case_annotations(diff)]
    assert titles == ["Fails its thresholds: s / c", "Fails its thresholds: s / f"]
    # under the default policy only the case failing as on the baseline is warned about
    diff = compare(cur, base, known_flaky={("s", "c")})
    assert [a["title"] for a in check.case_annotations(diff)] == ["Still failing: s / f"]
