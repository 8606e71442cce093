"""Every failing case explains itself, and every class the report names is true: "still
failing" only where the baseline failed too, "flaky" from one source (`CaseDiff.flaky`)
in the markdown and the JSON, and a legend of the classes the report uses."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.factory import case, results
from report_diffs import DIFFS, mixed, no_baseline, pair

from agent_eval_action.cli import main
from agent_eval_action.compare import compare
from agent_eval_action.compare.model import CaseDiff, Change, Diff
from agent_eval_action.report import check, diff_console, markdown
from agent_eval_action.report.budget import size

T, R = "tool_trajectory_avg_score", "response_match_score"


def name(c: CaseDiff) -> str:
    return f"{c.eval_set_id} / {c.eval_id}"


def section(text: str, title: str) -> str:
    """One collapsed or headed section of a report, up to the next one."""
    start = text.index(title)
    ends = [
        m.start()
        for m in re.finditer(
            r"^(<details><summary>[^F]|### |\*\*(Legend|Comparability|Usage))", text, re.M
        )
        if m.start() > start
    ]
    return text[start : min(ends, default=len(text))]


def listed(text: str) -> set[str]:
    """The case names in the first column of a section's table rows."""
    return set(re.findall(r"^\| <code>([^<]+)</code>", text, re.M))


# ---- no baseline: every failing case, against its eval file ---------------------------------


def test_without_a_baseline_every_failing_case_shows_expected_against_actual():
    diff, current = no_baseline()
    failing = [c for c in diff.cases if c.current_status == "failed"]
    assert len(failing) == 2
    # in the JSON: the turn, against the eval file (no baseline run)
    for c in failing:
        assert c.divergence is not None and c.divergence.baseline_calls is None
    ok = next(c for c in diff.cases if c.eval_id == "ok")
    assert ok.divergence is None
    for text in (markdown.comment(diff, current), markdown.summary(diff, current)):
        for c in failing:
            summary = f"First divergent turn of <code>{name(c)}</code> ({c.file}:{c.line})"
            block = text[text.index(summary) :]
            assert block.split("```diff\n", 1)[1].startswith(
                "@@ turn 1: expected → current run 1 @@"
            )
        assert '- lookup({"id": 1})\n+ lookup({"id": "x"})' in text  # s / bad: the tool call
        assert "[-$40.00-] {+$400.00+}" in text  # s / refund: the answer, word by word
        # a failing case is the gate's reason: shown, not collapsed
        assert "### ❌ Failing their thresholds (2)" in text


def test_without_a_baseline_nothing_claims_a_past():
    diff, current = no_baseline()
    texts = [
        markdown.comment(diff, current),
        markdown.summary(diff, current),
        *markdown.check_parts(diff, current),
        diff_console.table(diff),
        json.dumps(check.case_annotations(diff)),
        *check.workflow_commands(diff),
    ]
    for text in texts:
        assert "still failing" not in text.lower(), text
    assert "| failing |" in texts[0]  # the eval set table's column
    (row,) = [line for line in texts[4].splitlines() if line.startswith("s / bad")]
    assert row.split()[3] == "failing"  # the console's class


def test_a_failing_case_with_a_baseline_explains_itself_against_its_eval_file():
    diff, current = mixed()
    stuck = next(c for c in diff.cases if c.eval_id == "stuck")
    assert stuck.change == Change.STILL_FAILING and stuck.baseline_status == "failed"
    assert stuck.divergence is not None and stuck.divergence.baseline_calls is None
    text = markdown.comment(diff, current)
    still = section(text, "<details><summary>⚠️ Still failing (4), as on the baseline")
    assert "First divergent turn of <code>orders / stuck</code>" in still
    assert '- lookup({"id": 1})\n+ lookup({"id": "bad"})' in still


def test_an_added_case_that_fails_explains_itself():
    diff, current = pair(
        [case("c", {T: [1.0]})], [case("c", {T: [1.0]}), case("n", {T: [0.0]}, ["z"])]
    )
    text = markdown.comment(diff, current)
    odd = section(text, "Added, removed, errored or incomplete (1)")
    assert "First divergent turn of <code>s / n</code>" in odd
    assert '+ lookup({"id": "z"})' in odd


# ---- flaky: one source, the JSON and the markdown agree -------------------------------------


def save(path: Path, res) -> str:
    path.write_text(res.dump_json())
    return str(path)


def test_a_drop_judged_noise_through_history_is_flaky_in_the_json_and_the_markdown(tmp_path):
    """Passed on the baseline, 1.000 -> 0.333 now, one run each; older baselines (--history)
    show the case flaky: noise, so not blamed, flaky in both outputs, never "still failing"."""
    base = save(tmp_path / "base.json", results(case("c", {T: [1.0]}), case("d", {T: [1.0]})))
    older = results(case("c", {T: [1.0, 0.0]}, ["a", "b"]), case("d", {T: [1.0, 1.0]}))
    history = save(tmp_path / "old.json", older)
    cur = results(case("c", {T: [1 / 3]}, ["b"]), case("d", {T: [1.0]}))
    current = save(tmp_path / "cur.json", cur)
    args = ["compare", "--baseline", base, "--current", current, "--history", history]
    out_json, out_md = tmp_path / "diff.json", tmp_path / "comment.md"
    assert main([*args, "--format", "json", "--out", str(out_json)]) == 0
    assert main([*args, "--format", "markdown", "--out", str(out_md)]) == 0
    diff = json.loads(out_json.read_text())
    (c,) = [c for c in diff["cases"] if c["eval_id"] == "c"]
    assert (c["baseline_status"], c["current_status"]) == ("passed", "failed")
    assert c["flaky"] is True and c["likely_noise"] is True and c["change"] == "unchanged"
    assert diff["verdict"]["counts"]["flaky"] == 1
    assert c["metrics"][0]["reason"] == "within noise: flaky on main's history"
    text = out_md.read_text()
    assert "Still failing" not in text and "still failing" not in text.split("\n", 2)[1]
    flaky = section(text, "<details><summary>🎲 Flaky (1)")
    assert listed(flaky) == {"s / c"} and "within noise: flaky on main's history" in flaky
    # it fails now, so it explains itself there, against its eval file
    assert "First divergent turn of <code>s / c</code>" in flaky
    assert "*flaky*: its runs disagree, or main's history shows it flaky" in text


@pytest.mark.parametrize("make", sorted(DIFFS))
def test_the_markdown_lists_as_flaky_exactly_the_cases_the_json_calls_flaky(make):
    diff, current = DIFFS[make]()
    diff = Diff.from_json(diff.dump_json())  # what other tools read
    text = markdown.summary(diff, current)
    flaky = {name(c) for c in diff.cases if c.flaky}
    shown = listed(section(text, "### 🎲 Flaky")) if "### 🎲 Flaky" in text else set()
    assert shown == flaky
    assert all(c.flaky for c in diff.cases if c.likely_noise)
    assert diff.verdict.counts.get("flaky", 0) == len(flaky)


@pytest.mark.parametrize("make", sorted(DIFFS))
def test_still_failing_only_where_the_baseline_failed_too(make):
    diff, current = DIFFS[make]()
    text = markdown.summary(diff, current)
    if "### ⚠️ Still failing" not in text:
        return
    still = listed(section(text, "### ⚠️ Still failing"))
    assert still and all(c.baseline_status == "failed" for c in diff.cases if name(c) in still)


# ---- the legend ---------------------------------------------------------------------------


LEGEND = re.compile(r"^\*\*Legend:\*\* .*$", re.M)


def test_the_legend_names_only_the_classes_the_report_uses():
    diff, current = mixed()
    (line,) = LEGEND.findall(markdown.comment(diff, current))
    assert "*lucky answer*" in line and "*fumbled summary*" in line and "*flaky*" in line
    assert "confirmed" not in line
    # a lucky answer alone
    diff, current = pair(
        [case("c", {T: [1.0], R: [0.9]})], [case("c", {T: [0.0], R: [0.9]}, ["skip"])]
    )
    (line,) = LEGEND.findall(markdown.comment(diff, current))
    assert line == "**Legend:** *lucky answer*: the tool calls regressed while the answer held."
    # nothing to explain: no legend
    diff, current = no_baseline()
    assert LEGEND.findall(markdown.comment(diff, current)) == []


def test_the_legend_says_confirmed_when_a_regression_was_confirmed():
    model = pytest.importorskip("agent_eval_action.compare.model")
    if not hasattr(model, "Confirmation"):
        pytest.skip("no confirmation re-runs in this Diff model yet")
    diff, current = pair([case("c", {T: [1.0]})], [case("c", {T: [0.0]}, ["skip"])])
    diff.cases[0].confirmation = model.Confirmation(runs=2, reproduced=2)
    text = markdown.comment(diff, current)
    (line,) = LEGEND.findall(text)
    assert "*confirmed*: the regression showed again in every re-run of the case" in line
    assert "new failure · confirmed" in text
    diff.cases[0].confirmation = model.Confirmation(runs=2, reproduced=1)
    assert "confirmed" not in "".join(LEGEND.findall(markdown.comment(diff, current)))


# ---- the size budget: failing cases are cut late when the gate counts them ------------------


def test_a_large_suite_without_a_baseline_keeps_its_failing_cases_longest():
    long = "the refund was issued to the card on file and will arrive soon " * 8
    cases = [
        case(f"c{i:04d}", {T: [0.0]}, [f"{long}{i}"], eval_set_id=f"set{i % 40}")
        for i in range(2_000)
    ]
    current = results(*cases)
    diff = compare(current, None)
    text = markdown.comment(diff, current)
    assert size(text) <= markdown.COMMENT_LIMIT
    note = re.search(r"✂️ \*\*Shortened to fit GitHub's size limit:\*\* (.*?) not shown", text)
    assert note and "failing case" in note.group(1) and "regression" not in note.group(1)
    rows = listed(section(text, "### ❌ Failing their thresholds (2,000)"))
    left = re.search(r"… and ([\d,]+) more cases not shown", text)
    assert rows and left and len(rows) + int(left.group(1).replace(",", "")) == 2_000
    head, body = markdown.check_parts(diff, current)
    assert size(head) <= markdown.CHECK_LIMIT and size(body) <= markdown.CHECK_LIMIT


def test_the_budget_fits_a_no_baseline_report_at_every_limit():
    long = "word " * 400
    cases = [case(f"c{i}", {T: [0.0], R: [0.2]}, [f"{long}{i}"]) for i in range(12)]
    current = results(case("ok", {T: [1.0]}), *cases)
    diff = compare(current, None)
    full = size(markdown.summary(diff, current))
    for limit in range(2_500, full + 100, 997):
        text = markdown.comment(diff, current, limit=limit)
        assert size(text) <= limit
