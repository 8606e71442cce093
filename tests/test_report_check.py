"""Check-run output, annotations in batches of 50, and the workflow-command fallback."""

from __future__ import annotations

from helpers.factory import case
from report_diffs import huge, mixed, pair

from agent_eval_action.report import check
from agent_eval_action.report.budget import size

T = "tool_trajectory_avg_score"
KEYS = {"path", "start_line", "end_line", "annotation_level", "message", "title"}


def test_check_output_has_title_summary_text_and_annotations():
    diff, current = mixed()
    out = check.check_output(diff, current)
    assert out.title.startswith("❌ 2 trajectory regressions")
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
