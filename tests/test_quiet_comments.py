"""Quiet comments (report/quiet.py, report/all_clear.py): what a comparison has to say,
decided from real Diffs of the comparison engine, one change kind at a time, and what each
`comment` setting does with it."""

from __future__ import annotations

import pytest
from helpers.factory import case, results

from agent_eval_action.compare import compare
from agent_eval_action.compare.model import Change, Diff
from agent_eval_action.report.all_clear import all_clear
from agent_eval_action.report.markdown import marker
from agent_eval_action.report.model import Options, Report
from agent_eval_action.report.quiet import (
    CommentAction,
    CommentWhen,
    News,
    comment_action,
    news_of,
    parse_comment_when,
)
from agent_eval_action.results import Results, Source

T, R = "tool_trajectory_avg_score", "response_match_score"

# main: one case that passes, one that fails (and keeps failing), one run each
PASSING = case("kept", {T: [1.0], R: [0.9]})
FAILING = case("red", {T: [0.0], R: [0.5]})
MAIN = results(PASSING, FAILING)


def diff_with(*cases, base: Results | None = MAIN, **policy) -> Diff:
    """This run: `cases` beside main's two, unchanged unless replaced by id."""
    given = {c.eval_id: c for c in cases}
    current = [given.pop(c.eval_id, c) for c in (PASSING, FAILING)] + list(given.values())
    return compare(results(*current), base, **policy)


def the(diff: Diff, eval_id: str):
    return next(c for c in diff.cases if c.eval_id == eval_id)


def test_nothing_moved_is_quiet_and_a_still_failing_case_stays_quiet():
    diff = diff_with()
    assert the(diff, "red").change == Change.STILL_FAILING
    assert diff.verdict.passed
    assert news_of(diff) == News.QUIET


# Each change kind, as the engine decides it, and the news it is.
KINDS = [
    ("regressed", (case("red", {T: [0.0], R: [0.3]}, ["other"]),), {}, Change.REGRESSED),
    ("new_failure", (case("kept", {T: [0.0], R: [0.9]}, ["other"]),), {}, Change.NEW_FAILURE),
    # a regression the policy does not fail on is still a regression to hear of
    (
        "regressed_not_gated",
        (case("kept", {T: [1.0], R: [0.6]}, ["other"]),),
        {"fail_on": ["trajectory"]},
        Change.NEW_FAILURE,
    ),
    ("errored_here", (case("kept", {T: [1.0], R: [0.9]}, errored_runs=(1,)),), {}, Change.ERRORED),
    ("not_computed", (case("kept", {T: [1.0], R: [None]}),), {}, Change.INCOMPLETE),
    ("fixed", (case("red", {T: [1.0], R: [0.9]}, ["other"]),), {}, Change.FIXED),
    ("improved", (case("red", {T: [0.0], R: [0.7]}, ["other"]),), {}, Change.IMPROVED),
    ("added", (case("new", {T: [1.0], R: [0.9]}),), {}, Change.ADDED),
    # an added case that fails fails the gate: that is an alert, not only a change
    ("added_failing", (case("new", {T: [0.0], R: [0.9]}),), {}, Change.ADDED),
]
NEWS = {
    "regressed": News.ALERT,
    "new_failure": News.ALERT,
    "regressed_not_gated": News.ALERT,
    "errored_here": News.ALERT,
    "not_computed": News.ALERT,
    "fixed": News.CHANGE,
    "improved": News.CHANGE,
    "added": News.CHANGE,
    "added_failing": News.ALERT,
}


@pytest.mark.parametrize(("name", "cases", "policy", "change"), KINDS, ids=[k[0] for k in KINDS])
def test_each_change_kind_is_the_news_it_should_be(name, cases, policy, change):
    diff = diff_with(*cases, **policy)
    changed = next(
        c for c in diff.cases if c.change not in (Change.UNCHANGED, Change.STILL_FAILING)
    )
    assert changed.change == change  # the engine made the kind this row is about
    assert news_of(diff) == NEWS[name]


def test_removed_cases_are_a_change_and_an_alert_when_the_gate_counts_them():
    only_red = results(FAILING)
    # the passing case removed: the gate fails on it by default
    gated = compare(only_red, MAIN)
    assert the(gated, "kept").change == Change.REMOVED and not gated.verdict.passed
    assert news_of(gated) == News.ALERT
    # with -removed, the gate passes, and it is still a change
    opted_out = compare(only_red, MAIN, fail_on=["regression", "-removed"])
    assert opted_out.verdict.passed and the(opted_out, "kept").change == Change.REMOVED
    assert news_of(opted_out) == News.CHANGE


def test_an_error_on_the_baseline_side_is_an_alert_too():
    base = results(case("kept", {T: [1.0], R: [0.9]}, errored_runs=(1,)), FAILING)
    diff = compare(results(PASSING, FAILING), base)
    assert the(diff, "kept").errored_side == "baseline"
    assert news_of(diff) == News.ALERT


def test_newly_flaky_is_a_change_and_flaky_on_both_sides_is_not():
    steady = results(case("kept", {T: [1.0, 1.0], R: [0.9, 0.9]}, ["a", "a"]), num_runs=2)
    varying = results(case("kept", {T: [1.0, 1.0], R: [0.95, 0.85]}, ["a", "b"]), num_runs=2)
    newly = compare(varying, steady)
    assert the(newly, "kept").change == Change.UNCHANGED and the(newly, "kept").flaky
    assert news_of(newly) == News.CHANGE
    other_words = results(case("kept", {T: [1.0, 1.0], R: [0.85, 0.95]}, ["c", "d"]), num_runs=2)
    known = compare(other_words, varying)
    assert the(known, "kept").change == Change.UNCHANGED and the(known, "kept").flaky
    assert news_of(known) == News.QUIET


def test_a_flip_that_noise_explains_is_a_change():
    base = results(case("c", {T: [1.0, 1.0, 0.0]}, ["a", "a", "b"]))
    cur = results(case("c", {T: [1.0, 0.0, 0.0]}, ["a", "b", "b"]))
    diff = compare(cur, base)
    assert the(diff, "c").likely_noise and diff.verdict.passed
    assert the(diff, "c").change == Change.STILL_FAILING  # a kind that is quiet by itself
    assert news_of(diff) == News.CHANGE


def test_what_could_not_be_compared_is_an_alert():
    assert news_of(diff_with(base=None, fail_on=["never"])) == News.ALERT  # no baseline
    elsewhere = compare(results(case("other", {T: [1.0], R: [0.9]})), MAIN)
    assert not elsewhere.comparable
    assert news_of(elsewhere) == News.ALERT


def test_a_failing_gate_is_an_alert_whatever_the_cases():
    diff = diff_with(fail_on=["threshold"])  # main's failing case, unchanged, fails the gate
    assert not diff.verdict.passed and the(diff, "red").change == Change.STILL_FAILING
    assert news_of(diff) == News.ALERT


def test_an_accepted_regression_is_still_an_alert():
    diff = diff_with(case("kept", {T: [0.0], R: [0.9]}, ["other"]), accepted=True)
    assert diff.verdict.passed and diff.verdict.accepted
    assert news_of(diff) == News.ALERT


POST, CLEAR, NOTHING = CommentAction.POST, CommentAction.ALL_CLEAR, CommentAction.NOTHING
ACTIONS = {
    CommentWhen.ALWAYS: {News.QUIET: POST, News.CHANGE: POST, News.ALERT: POST},
    CommentWhen.ON_CHANGE: {News.QUIET: CLEAR, News.CHANGE: POST, News.ALERT: POST},
    CommentWhen.ON_REGRESSION: {News.QUIET: CLEAR, News.CHANGE: CLEAR, News.ALERT: POST},
    CommentWhen.NEVER: {News.QUIET: NOTHING, News.CHANGE: NOTHING, News.ALERT: NOTHING},
}


@pytest.mark.parametrize("when", list(CommentWhen))
@pytest.mark.parametrize("news", list(News))
def test_each_setting_acts_on_each_news(when: CommentWhen, news: News):
    assert comment_action(news, when) == ACTIONS[when][news]


@pytest.mark.parametrize(
    ("text", "when"),
    [
        ("always", CommentWhen.ALWAYS),
        ("on-change", CommentWhen.ON_CHANGE),
        ("ON-REGRESSION", CommentWhen.ON_REGRESSION),
        ("never", CommentWhen.NEVER),
        ("true", CommentWhen.ALWAYS),
        ("False", CommentWhen.NEVER),
    ],
)
def test_the_spellings(text: str, when: CommentWhen):
    assert parse_comment_when(text) == when


@pytest.mark.parametrize("text", ["on_change", "yes", "changes", "1", "on-change,never"])
def test_other_spellings_are_refused_naming_the_choices(text: str):
    with pytest.raises(
        ValueError, match=r"^must be one of always, on-change, on-regression, never"
    ):
        parse_comment_when(text)


HEAD, BASE = "a" * 40, "b" * 40


def _report(check_name: str = "agent-eval") -> Report:
    base = MAIN.replace(source=Source(repo="o/r", sha=BASE, ref="refs/heads/main"))
    current = MAIN.replace(source=Source(repo="o/r", sha=HEAD, run_id="42"))
    return Report.of(compare(current, base), current, Options(check_name=check_name))


@pytest.mark.parametrize(
    ("when", "said"),
    [(CommentWhen.ON_CHANGE, "no changes"), (CommentWhen.ON_REGRESSION, "no regressions")],
)
def test_the_all_clear_comment_is_the_marker_and_one_line(when: CommentWhen, said: str):
    text = all_clear(_report(), when)
    first, line = text.rstrip("\n").split("\n")
    assert first == marker("agent-eval")
    assert line == (
        f"✅ **agent-eval**: {said} against the baseline "
        f"[`bbbbbbb`](https://github.com/o/r/commit/{BASE}) on <code>main</code> "
        f"at [`aaaaaaa`](https://github.com/o/r/commit/{HEAD}) · the report is in "
        "[this run](https://github.com/o/r/actions/runs/42)"
    )


def test_the_all_clear_line_escapes_the_check_name():
    text = all_clear(_report("evals --> @team #1"), CommentWhen.ON_CHANGE)
    first, line = text.rstrip("\n").split("\n")
    assert first == marker("evals --> @team #1")  # a marker that cannot end its comment
    assert "-->" not in line and "@team" not in line and "#1" not in line
