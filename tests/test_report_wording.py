"""What the report says at the top and how it says it: the verdict's notes as headline news,
the policy that decided, cases not run, renamed and confirmed cases, a crash in the
headline, where each side comes from (never an empty Baseline line), and one way of
writing numbers and counts in the markdown, the check run and the console."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from helpers.factory import NOW, case, results
from report_diffs import CRASH, REPO, crashed, mixed, news, no_baseline, pair

from agent_eval_action.compare import compare
from agent_eval_action.compare.model import Change
from agent_eval_action.report import check, diff_console, markdown
from agent_eval_action.report.labels import headline, short_error
from agent_eval_action.results import Source

T, R = "tool_trajectory_avg_score", "response_match_score"


def head_of(text: str) -> str:
    """The comment up to its first table or section: what a reader sees first."""
    return text[: text.index("\n| ")]


def outside_details(text: str) -> str:
    return re.sub(r"<details.*?</details>", "", text, flags=re.S)


# ---- A: the verdict's notes, said at the top ------------------------------------------------


@pytest.mark.parametrize("render", [markdown.comment, markdown.summary])
def test_every_verdict_note_is_headline_news_above_the_gate_line(render):
    diff, current = news()
    assert len(diff.verdict.notes) == 4
    text = render(diff, current)
    top = head_of(text)
    gate = top.index("**Gate failed**")
    for note in diff.verdict.notes:
        lead = note.removeprefix("⚠️ ").split(": ")[0]
        assert f"> ⚠️ **{lead.replace('_', chr(92) + '_')}:**" in top[:gate], lead
    # never only in a collapsed block
    assert "1 case removed since the baseline" in outside_details(text)


def test_the_check_summary_and_the_console_say_the_notes_too():
    diff, current = news()
    summary = check.check_output(diff, current).summary
    console = diff_console.table(diff, current)
    for note in diff.verdict.notes:
        assert note.split(": ")[0].removeprefix("⚠️ ") in summary
        assert note in console
    # at the top of the console, before the cases
    assert console.index("⚠️ 1 case removed") < console.index("\ncase ")


def test_a_merge_group_accepted_by_a_pr_says_which_with_its_own_icon():
    diff, current = pair([case("c", {T: [1.0]})], [case("c", {T: [0.0]}, ["x"])], accepted=True)
    diff.verdict.notes.append(
        "☑️ Accepted by the label accept-regression on PR #12 of this merge group (PRs #11, #12)."
    )
    text = markdown.comment(diff, current)
    assert "> ☑️ **Accepted by the label accept-regression on PR \\#\u200b12" in text
    assert "⚠️ **Accepted" not in text and "this PR carries" not in text
    assert (
        "**Accepted** (fail-on <code>regression</code>): the gate would have failed on: "
        "1 trajectory regression; the accept label passes it." in text
    )


def test_scores_from_another_google_adk_are_said_at_the_top():
    """A run on another google-adk than the baseline's (Results.adk_version): one line at the
    top of the comment, the check run and the console, not among the notes below the cases."""
    base, cur = results(case("c", {T: [1.0]})), results(case("c", {T: [1.0]}))
    base.adk_version, cur.adk_version = "1.36.0", "2.13.0"
    diff = compare(cur, base)
    (note,) = diff.verdict.notes
    assert note == (
        "⚠️ Scores from another google-adk than the baseline's: this run had google-adk "
        "2.13.0, the baseline's run google-adk 1.36.0. What changed may be ADK, not this change."
    )
    assert not any("google-adk" in n for n in diff.notes), "said twice"
    top = head_of(markdown.comment(diff, cur))
    assert "> ⚠️ **Scores from another google-adk than the baseline's:** this run had" in top
    assert "Scores from another google-adk" in check.check_output(diff, cur).summary
    assert note in diff_console.table(diff, cur)
    cur.adk_version = None  # e.g. a --command agent's run where google-adk is not installed
    (note,) = compare(cur, base).verdict.notes
    assert "this run had no google-adk, the baseline's run google-adk 1.36.0" in note
    cur.adk_version = "1.36.0"
    assert compare(cur, base).verdict.notes == []


def test_the_notes_hold_no_markup_of_their_own():
    diff, current = pair([case("c", {T: [1.0]})], [case("c", {T: [1.0]})])
    diff.verdict.notes.append("⚠️ <b>@octocat</b>: see [here](https://evil.example) **now**")
    text = markdown.comment(diff, current)
    (line,) = [ln for ln in text.splitlines() if "octocat" in ln]
    assert line.startswith("> ⚠️ **&lt;b&gt;@\u200boctocat&lt;/b&gt;:** ")
    assert "\\[here\\](https:\u200b//evil" in line and "\\*\\*now\\*\\*" in line


# ---- A: the policy that decided -------------------------------------------------------------


def test_the_gate_line_names_the_policy_that_decided():
    diff, current = news()
    assert diff.verdict.decided_by == ["regression", "-removed"]
    text = markdown.comment(diff, current)
    assert (
        "**Gate failed** (fail-on <code>regression,-removed</code>): 1 trajectory regression"
        in text
    )
    diff, current = pair([case("c", {T: [1.0]})], [case("c", {T: [1.0]})])
    assert "**Gate passed** (fail-on <code>regression</code>)." in markdown.comment(diff, current)
    assert diff_console.verdict_line(diff).startswith("PASS (fail-on regression): no regressions")


def test_without_a_baseline_the_gate_line_says_threshold_replaced_the_policy():
    diff, current = no_baseline()
    assert diff.verdict.decided_by == ["threshold"]
    policy = (
        "(fail-on <code>threshold</code>: without a baseline, <code>regression</code> falls "
        "back to it)"
    )
    assert f"**Gate failed** {policy}: 2 cases do not pass" in markdown.comment(diff, current)
    assert diff_console.verdict_line(diff).startswith(
        "FAIL (fail-on threshold: without a baseline, regression falls back to it): no baseline"
    )


def test_report_only_says_so_with_its_policy():
    diff, current = pair([case("c", {T: [1.0]})], [case("c", {T: [0.0]}, ["x"])], fail_on=["never"])
    text = markdown.comment(diff, current)
    assert text.splitlines()[1] == "### ✅ 1 trajectory regression · 0 unchanged"
    assert "**Report only** (fail-on <code>never</code>)." in text
    assert diff_console.verdict_line(diff).startswith(
        "PASS (fail-on never): 1 trajectory regression"
    )


# ---- A: not run, renamed, confirmation re-runs ------------------------------------------------


def test_cases_not_run_are_counted_near_the_top_and_never_as_removed():
    diff, current = news()
    (ping,) = diff.not_run
    assert ping.eval_id == "ping" and diff.verdict.counts["removed"] == 1  # cancel only
    title = headline(diff, current)
    assert "1 not run (selection)" in title and "1 removed" in title
    text = markdown.comment(diff, current)
    assert "smoke / ping" in head_of(text)
    odd = text[text.index("Added, removed, errored or incomplete") :].split("</details>")[0]
    assert "cancel" in odd and "ping" not in odd  # not a removed row
    console = diff_console.table(diff, current)
    assert (
        "not run (selection), not counted as removed:\n  smoke / ping (evals/smoke.evalset.json:5)"
        in console
    )


def test_a_renamed_case_says_its_old_name_and_is_neither_removed_nor_added():
    diff, current = news()
    (renamed,) = [c for c in diff.cases if c.renamed_from is not None]
    assert renamed.change == Change.NEW_FAILURE
    assert {c.eval_id for c in diff.cases if c.change in (Change.REMOVED, Change.ADDED)} == {
        "cancel",
        "late_fee",
    }
    label = "new failure · confirmed in 3/3 re-runs · renamed from orders / refund"
    text = markdown.comment(diff, current)
    assert f"<code>orders / refund\\_v2</code><br>{label}" in text
    assert f"orders / refund_v2  {label}" in diff_console.table(diff, current)


def test_what_the_re_runs_showed_is_said_where_the_case_is_listed():
    diff, current = news()
    lookup = next(c for c in diff.cases if c.eval_id == "lookup")
    assert lookup.confirmation is not None and lookup.confirmation.reproduced == 0
    text = markdown.comment(diff, current)
    flaky = text[text.index("🎲 Flaky") :]
    assert "| <code>orders / lookup</code> |" in flaky
    assert "not reproduced: 0/1 re-runs showed it again, likely noise" in flaky
    console = diff_console.table(diff, current)
    assert (
        "orders / lookup     unchanged · not reproduced: 0/1 re-runs, likely noise · flaky"
        in console
    )
    # the legend explains "confirmed" because a confirmed regression is listed
    assert "*confirmed*: the regression showed again in every re-run" in text


# ---- B6: where each side comes from ---------------------------------------------------------


def local_pair(**sources):
    """Results a local run writes: no commit, no run."""
    base = results(case("c", {T: [1.0]}), sha="")
    base.source = Source()
    base.created_at = NOW - timedelta(minutes=3)
    cur = results(case("c", {T: [1.0]}), sha="")
    cur.source = Source()
    cur.created_at = NOW
    return compare(cur, base), cur


def test_a_local_baseline_is_its_file_never_an_empty_line():
    diff, current = local_pair()
    text = markdown.comment(
        diff, current, markdown.Options(baseline_file="base.json", current_file="results.json")
    )
    assert (
        "**Baseline:** the file <code>base.json</code>, recorded 3 minutes before the current "
        "Results · 1 run per case" in text
    )
    assert "**Current:** the file <code>results.json</code> · check" in text
    # `run --baseline`: the current side is this run
    text = markdown.comment(diff, current, markdown.Options(baseline_file="base.json"))
    assert "recorded 3 minutes before this run" in text and "**Current:** this run · check" in text


def test_a_baseline_the_action_read_from_a_path_is_that_file():
    diff, current = local_pair()
    text = markdown.comment(diff, current, markdown.Options(baseline_relation="the file b.json"))
    assert "**Baseline:** the file b.json, recorded 3 minutes before this run" in text


def test_a_baseline_with_nothing_to_name_it_by_still_says_what_it_is():
    diff, current = local_pair()
    text = markdown.comment(diff, current)
    assert "**Baseline:** Results that name no commit, recorded 3 minutes" in text
    for line in text.splitlines():
        assert not re.match(r"\*\*(Baseline|Current):\*\* *[,(·]", line), line


@pytest.mark.parametrize(
    ("relation", "said"),
    [
        ("the merge-base 1111111", "(the merge-base)"),
        (
            "1111111, 2 commits before the merge-base 3333333 (the nearest with an artifact)",
            "(2 commits before the merge-base 333333\u200b3 (the nearest with an artifact))",
        ),
        ("1111111", ", recorded"),  # a push: the commit itself, said once
        ("the file evals/base.json", "(the file evals/base.json)"),
    ],
)
def test_the_baseline_commit_is_not_said_twice(relation, said):
    diff, current = pair([case("c", {T: [1.0]})], [case("c", {T: [1.0]})])
    text = markdown.comment(diff, current, markdown.Options(baseline_relation=relation))
    line = next(ln for ln in text.splitlines() if ln.startswith("**Baseline:**"))
    assert f"on <code>main</code> {said}" in line or f"<code>main</code>{said}" in line
    assert re.sub(r"\(https://[^)]*\)", "", line).count("1111111") == 1  # the link's label


def test_compare_names_the_current_file_beside_its_commit():
    diff, current = pair([case("c", {T: [1.0]})], [case("c", {T: [1.0]})])
    text = markdown.comment(diff, current, markdown.Options(current_file="cur.json"))
    assert (
        f"**Current:** [`2222222`](https://github.com/{REPO}/commit/{'2' * 40}) (the file "
        f"<code>cur.json</code>) · [its run](https://github.com/{REPO}/actions/runs/202)" in text
    )
    assert "this run" not in text


# ---- B7: a crash in the headline -----------------------------------------------------------


def test_a_crashed_case_says_its_error_in_the_headline():
    before = [case("ok", {T: [1.0]}), case("boom", {T: [1.0]})]
    after = [case("ok", {T: [1.0]}), crashed(case("boom", {T: [None]}, errored_runs=(1,)))]
    diff, current = pair(before, after)
    text = markdown.comment(diff, current)
    assert text.splitlines()[1] == (
        "### ❌ 1 case errored: RuntimeError at agent/tools.py:16 · no regressions · 1 unchanged"
    )
    assert check.check_output(diff, current).title.startswith("❌ 1 case errored: RuntimeError")
    assert diff_console.verdict_line(diff).startswith(
        "FAIL (fail-on regression): 1 case errored: RuntimeError at agent/tools.py:16"
    )


def test_an_added_or_unbaselined_crash_takes_its_error_from_the_results():
    diff, current = news()  # late_fee: added, and crashed
    assert headline(diff, current).startswith("❌ 1 case errored: RuntimeError at agent/tools")
    assert "errored: " + CRASH in markdown.summary(diff, current)
    cur = results(case("ok", {T: [1.0]}), crashed(case("boom", {T: [None]}, errored_runs=(1,))))
    diff = compare(cur, None)
    assert headline(diff, cur) == (
        "❌ no baseline · 1 case errored: RuntimeError at agent/tools.py:16 · 1 of 2 cases passed"
    )


def test_several_errors_name_the_first_and_count_the_others():
    before = [case(f"c{i}", {T: [1.0]}) for i in range(3)]
    after = [
        crashed(case("c0", {T: [None]}, errored_runs=(1,))),
        crashed(case("c1", {T: [None]}, errored_runs=(1,))),
        crashed(case("c2", {T: [None]}, errored_runs=(1,)), "run 1: timed out after 600 s"),
    ]
    diff, current = pair(before, after)
    assert headline(diff, current) == (
        "❌ 3 cases errored: RuntimeError at agent/tools.py:16 and 1 other error · "
        "no regressions · 0 unchanged"
    )


@pytest.mark.parametrize(
    ("error", "short"),
    [
        (CRASH, "RuntimeError at agent/tools.py:16"),
        (
            "run 1: KeyError: 'x' (a (b) c) (pkg/m.py:3) at turn 2 of 2; run 2: OSError",
            "KeyError at pkg/m.py:3",
        ),
        ("run 2: timed out after 600 s at turn 1 of 3", "timed out after 600 s at turn 1 of 3"),
        ("the case was not run", "the case was not run"),
        ("run 1: " + "x" * 200, "x" * 79 + "…"),
    ],
)
def test_a_short_error_names_the_exception_and_where(error, short):
    assert short_error(error) == short


def test_an_error_in_the_headline_is_escaped():
    before = [case("boom", {T: [1.0]})]
    hostile = "run 1: ## <b>@octocat</b> see #1 [x](https://evil.example)"
    diff, current = pair(before, [crashed(case("boom", {T: [None]}, errored_runs=(1,)), hostile)])
    first = markdown.comment(diff, current).splitlines()[1]
    assert first.startswith("### ❌ 1 case errored: \\#\\# &lt;b&gt;@\u200boctocat")
    assert "\\[x\\](https:\u200b//evil" in first and "\\#\u200b1" in first


# ---- B9: words and numbers -----------------------------------------------------------------


def test_counts_agree_with_their_nouns_everywhere():
    diff, current = pair(
        [case("a", {T: [1.0], R: [1.0]}), case("b", {T: [0.0]}, ["x"])],
        [case("a", {T: [0.0], R: [0.5]}, ["y"]), case("b", {T: [1.0]})],
    )
    for text in (
        headline(diff, current),
        diff_console.verdict_line(diff),
        markdown.comment(diff, current),
        diff_console.table(diff, current),
    ):
        assert "1 trajectory regression ·" in text or "1 trajectory regression\n" in text
        assert not re.search(r"\b1 (trajectory|response) regressions\b", text), text
        assert not re.search(r"\b1 (cases|runs|improvements|calls)\b", text), text


def test_usage_counts_reused_verdicts_as_nouns():
    diff, current = mixed()
    current.usage.judge_calls, current.usage.judge_reused = 1, 1
    assert "judge: 1 call, 1 reused verdict ·" in markdown.comment(diff, current)


def test_every_score_and_change_has_three_decimals():
    diff, current = mixed()
    text = markdown.comment(diff, current)
    scores = re.findall(r"(\d+\.\d+) → (\d+\.\d+)", text)
    changes = re.findall(r"([+\u2212]\d+\.\d+)\xa0", text)
    assert len(scores) == 12 and len(changes) == 5  # 9 rows of scores, 3 flaky runs
    assert all(len(n.split(".")[1]) == 3 for pair_ in scores for n in pair_)
    assert all(len(n.split(".")[1]) == 3 for n in changes), changes
    failing = check.check_output(*no_baseline()).annotations
    assert any("tool_trajectory_avg_score: 0.000 < 1.000" in a["message"] for a in failing)
    assert not any(re.search(r"< \d\.\d(?!\d)", a["message"]) for a in failing)


def test_the_console_table_has_no_empty_column_and_no_repeated_headline():
    diff, current = mixed()
    text = diff_console.table(diff, current)
    header = next(ln for ln in text.splitlines() if ln.startswith("case "))
    assert header.split() == ["case", "change", "metrics", "(baseline", "->", "current)"]
    assert all(line == line.rstrip() for line in text.splitlines())
    # the headline's reasons are not said again as a list (above the cases' turns, whose
    # diffs have lines of their own that start with "- ")
    above = text.split("\nwhy: ", 1)[0]
    assert "  - " not in above and "2 trajectory regressions;" not in text
    lines = text.splitlines()
    assert lines[1] == (
        "  also failed on: 1 case that passed on the baseline was removed "
        "(fail-on regression; -removed opts out)"
    )
    # a flaky case says so in its change
    assert re.search(r"faq / noisy0 +still failing · likely noise · flaky  ", text)


def test_the_console_says_nothing_more_when_the_headline_says_it_all():
    diff, current = pair([case("c", {T: [1.0]})], [case("c", {T: [0.0]}, ["x"])])
    lines = diff_console.table(diff, current).splitlines()
    assert lines[0] == "FAIL (fail-on regression): 1 trajectory regression · 0 unchanged"
    assert lines[1] == ""


def test_the_summary_opens_every_divergent_turn_and_the_comment_folds_them():
    diff, current = mixed()
    summary, comment = markdown.summary(diff, current), markdown.comment(diff, current)
    assert summary.count("<details open><summary>First divergent turn") == 7
    assert "<details>" not in summary and "<summary>" in summary
    assert comment.count("<details><summary>First divergent turn") == 7
    assert "<details open>" not in comment
    assert "<details open>" not in "".join(markdown.check_parts(diff, current))
