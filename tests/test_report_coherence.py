"""Reports that never contradict themselves (issue 36): properties of the typed view model
(report/view.py, report/states.py) and of every report rendered from it, the comment, the
job summary, the check run, the console and the drill-down page.

- a section appears only when it has rows, and its count is its rows;
- a case has one state per axis everywhere: listed with an axis's regressions exactly when
  that is its state there, never listed or tagged as flaky once blamed, never counted
  "within noise" next to "confirmed";
- the suite-level test's rows and the "What this suite can detect" line appear only where
  their premise holds.

The matrix renders every report for runs 1/3 x history none/some x confirmation on/off x
a judged metric or not x a scenario case or not; the Diffs are the real engine's, built
once per cell. The first test is the issue's reproduction through the real `run`, with
the table agent and a judged metric answered by the fake Gemini.
"""

from __future__ import annotations

import copy
import itertools
import re
from datetime import timedelta
from functools import cache
from pathlib import Path

import pytest
from helpers.factory import NOW, case, results
from helpers.paths import python_command
from helpers.table_suite import RIGHT, SKIPS_THE_TOOL, TABLE_AGENT, order_case
from report_diffs import confirmed_by

from agent_eval_action.cli import main
from agent_eval_action.compare import compare
from agent_eval_action.compare.model import Diff, Rule, Sensitivity
from agent_eval_action.compare.record import MainRecord
from agent_eval_action.core import AXES
from agent_eval_action.report import check, diff_console, drilldown, html, markdown, render, view
from agent_eval_action.report.budget import Detail
from agent_eval_action.report.labels import case_class, confirmed
from agent_eval_action.report.model import Options, Report
from agent_eval_action.report.sections import SECTIONS
from agent_eval_action.report.states import (
    State,
    axis_state,
    regressed,
    shown_flaky,
    suite_test_shown,
)
from agent_eval_action.results import Results, Source

T, R, J = "tool_trajectory_avg_score", "response_match_score", "final_response_match_v2"
COMMENT = Detail(collapse_rest=True, text_chars=1_000)  # markdown._COMMENT
SUMMARY = Detail(collapse_rest=False, text_chars=4_000)
MINIMAL = Detail(collapse_rest=True, text_chars=1_000, minimal=True)
COUNTED = re.compile(r"(?:^### |<summary>)[^\n]*?\((\d[\d,]*)\)", re.M)


# ---- the properties ------------------------------------------------------------------------


def _keys(cases) -> list:
    return [c.key for c in cases]


def check_view(report: Report) -> None:
    """The view model: lists, sections and lines."""
    diff = report.diff
    flaky = set(_keys(report.flaky))
    for c in diff.cases:
        states = {axis: axis_state(c, axis) for axis in AXES}
        for axis in AXES:
            listed = c.key in _keys(report.regressed[axis])
            assert listed == (states[axis] is State.REGRESSED), (c.key, axis, states)
        if c.key in flaky:
            assert State.REGRESSED not in states.values(), c.key
        assert (c.key in flaky) == shown_flaky(c)
        for m in c.metrics:  # "confirmed" is a regression on its axis, never noise
            if m.rule is Rule.CONFIRMED:
                assert states[m.axis] is State.REGRESSED, (c.key, m.metric)
        if confirmed(c):
            assert c.key not in flaky
    for detail in (COMMENT, SUMMARY, MINIMAL):
        for section in SECTIONS:
            shown = section.view(report, detail)
            if isinstance(shown, view.Cases):
                assert shown.visible == (shown.cases.total > 0), section.name
                assert shown.cases.total == len(report.lists[section.name]), section.name
            elif isinstance(shown, view.Regressions):
                assert shown.cases.total == len(report.regressed[shown.axis])
            elif isinstance(shown, view.SuiteLevel):
                expected = suite_test_shown(diff) and not detail.minimal
                assert shown.visible == expected
                assert not shown.visible or len(shown.tests) == len(diff.suite_tests)
            elif isinstance(shown, view.Detects):
                premise = any(s.cases for s in diff.sensitivity) and not detail.minimal
                assert bool(shown.axes) == premise
                re_run = any(c.confirmation for c in diff.cases)
                assert shown.reruns == (bool(report.current.run_config.confirm_runs) or re_run)


def _counted_sections(report: Report, detail: Detail, parts=("body",)) -> list[int]:
    """The counts the sections of these parts put in their headings, in report order."""
    counts = []
    for section in SECTIONS:
        if section.part not in parts:
            continue
        shown = section.view(report, detail)
        if isinstance(shown, view.Regressions | view.Cases) and shown.cases.total:
            counts.append(shown.cases.total)
    return counts


def _rows_of(text: str, title_count: str) -> list[str]:
    """The table rows of the section whose heading or summary holds `title_count`."""
    start = text.find(title_count)
    if start < 0:
        return []
    rows, seen = [], False
    for line in text[start:].splitlines()[1:]:
        if line.startswith("|"):
            seen = True
            rows.append(line)
        elif seen:
            break
    return rows


def check_markdown(report: Report, text: str, detail: Detail) -> None:
    """A rendered comment or job summary (or a check run's text), against its view."""
    diff = report.diff
    assert [int(n.replace(",", "")) for n in COUNTED.findall(text)] == _counted_sections(
        report, detail
    )
    flaky_view = view.flaky(report, detail)
    flaky_title = f"Flaky ({flaky_view.cases.total:,})"
    assert (flaky_title in text) == flaky_view.visible
    named = (re.match(r"\| <code>([^<]*)</code>", row) for row in _rows_of(text, flaky_title))
    listed = {found.group(1) for found in named if found}
    assert listed == {c.key.name for c in report.flaky}, listed
    for c in diff.cases:  # a confirmed case's rows never say it is within noise
        if confirmed(c):
            rows = [line for line in text.splitlines() if f"<code>{c.key.name}</code>" in line]
            assert not any("within noise" in row for row in rows), rows
    tests = view.suite_level(report, detail)
    axis_rows = [
        line for line in text.splitlines() if re.match(r"\| (trajectory|response) \|", line)
    ]
    assert len(axis_rows) == len(tests.tests)
    line = render.standalone("detects.md.j2", view=view.detects(report, detail)).strip()
    assert bool(line) == bool(view.detects(report, detail).axes)
    if line:
        assert line in text and text.count("What this suite can detect") == 1
    else:
        assert "What this suite can detect" not in text


def check_console(report: Report) -> None:
    diff = report.diff
    text = diff_console.table(diff, report.current)
    for c in diff.cases:
        label = case_class(c)
        if f"{label} · flaky" in text:
            assert shown_flaky(c), c.key
        if regressed(c):
            assert label in text
    suite_lines = [line for line in text.splitlines() if line.startswith("suite-level test, ")]
    assert len(suite_lines) == (len(diff.suite_tests) if suite_test_shown(diff) else 0)
    assert "within noise (" not in text  # no row of the suite-level test speaks of noise


def check_check_run(report: Report) -> None:
    """The check run's text as the comment's body; an annotation says a case regressed
    exactly when the reports blame it, with the label every report gives it."""
    out = check.check_output_of(report)
    check_markdown(report, out.text, COMMENT)
    for c in report.diff.cases:
        said = [a for a in out.annotations if a["title"].endswith(f"regression: {c.key.name}")]
        assert bool(said) == regressed(c), c.key
        for annotation in said:
            assert annotation["annotation_level"] == "failure"
            assert annotation["message"].startswith(f"{c.key.name}: {case_class(c)}\n")


def check_drilldown(report: Report) -> None:
    diff = report.diff
    page = drilldown.page(diff, report.current, report.options)
    by_name = {c.key.name: c for c in diff.cases}
    for shown in page.cases:
        c = by_name[shown.name]
        assert shown.label == case_class(c)
        assert ("flaky" in shown.classes) == shown_flaky(c)
        assert ("regressed" in shown.classes) == regressed(c)
    assert page.counts["flaky"] == len(report.flaky)
    assert page.counts["regressed"] == len({c.key for cs in report.regressed.values() for c in cs})
    html.render(diff, report.current, report.options)


def check_all(diff: Diff, current: Results) -> None:
    report = Report.of(diff, current, Options())
    check_view(report)
    check_markdown(report, markdown.comment_of(report), COMMENT)
    check_markdown(report, markdown.summary_of(report), SUMMARY)
    check_console(report)
    check_check_run(report)
    check_drilldown(report)


# ---- the reproduction, through the real `run` -----------------------------------


@pytest.mark.parametrize("confirm_runs", ["3", "0"])
@pytest.mark.parametrize("runs", [1, 3])
def test_confirmed_regressions_at_one_run_are_never_called_noise(
    write, monkeypatch, runs, confirm_runs
):
    """A deterministic agent, a one-run baseline, two regressions each confirmed in 3/3
    re-runs: the comment showed an empty "Flaky (0)" section holding a suite-level test
    "within noise" over those very cases. Now every report tells each case one way. With
    three runs per case the cases are known to be deterministic: blamed at once, no re-run,
    no suite-level test and no detection line (as before); with `--confirm-runs 0` a flip
    is blamed at once, and the detection line says so. The judge (the fake Gemini) finds
    the wrong answer wrong, so a judged metric regresses too."""
    from fakes.gemini import FakeGemini, verdict

    ids = ["a", "b", "c", "d", "e"]
    write(
        "evals/shop.evalset.json",
        {"eval_set_id": "shop", "eval_cases": [order_case(i) for i in ids]},
    )
    criteria = {T: 1.0, R: 0.8, J: 0.5}
    write("evals/test_config.json", {"criteria": criteria})
    write("base.table", {i: RIGHT for i in ids})
    wrong = {"text": "Nope.", "tools": [["track", {}]]}
    write("pr.table", {**{i: RIGHT for i in ids}, "a": SKIPS_THE_TOOL, "b": wrong})
    with FakeGemini() as gemini:
        gemini.respond("verdict", lambda p: verdict("invalid" if "Nope." in p else "valid"))
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", gemini.url)
        monkeypatch.setenv("GOOGLE_API_KEY", "k")
        n = ["--num-runs", str(runs), "--confirm-runs", confirm_runs]
        base = ["--command", python_command(TABLE_AGENT, "base.table"), *n]
        assert main(["run", "evals", *base, "--out", "base.json"]) == 0
        pr = ["--command", python_command(TABLE_AGENT, "pr.table"), *n]
        assert main(["run", "evals", *pr, "--baseline", "base.json", "--out", "r.json"]) == 1
    diff = Diff.from_json(Path("diff.json").read_bytes())
    current = Results.from_json(Path("r.json").read_text())
    blamed = {c.eval_id: c for c in diff.cases if regressed(c)}
    assert sorted(blamed) == ["a", "b"]
    assert all(confirmed(c) == (runs == 1 and confirm_runs != "0") for c in blamed.values())
    judged = next(m for m in blamed["b"].metrics if m.metric == J)
    assert (judged.baseline_score, judged.current_score) == (1.0, 0.0)
    report = Report.of(diff, current, Options())
    assert not view.flaky(report, COMMENT).visible
    assert not view.suite_level(report, COMMENT).visible
    comment = markdown.comment_of(report)
    assert "Flaky (" not in comment and "within noise" not in comment
    detects = view.detects(report, COMMENT)
    if runs == 1:  # the engine's decisions, untouched: the suite-level test ran, found nothing
        assert diff.suite_tests and not any(t.significant for t in diff.suite_tests)
        assert detects.axes and detects.reruns == (confirm_runs != "0")
        how = "by re-running the case" if confirm_runs != "0" else "by its own runs"
        assert f"a single case's regression is judged on its own, {how}." in comment
    else:
        assert not diff.suite_tests and not detects.axes
    check_all(diff, current)


# ---- the matrix ------------------------------------------------------------------------------


Cell = tuple[int, bool, bool, bool, bool]  # runs, history, confirmation, judged, scenario
CELLS: list[Cell] = list(
    itertools.product((1, 3), (False, True), (False, True), (False, True), (False, True))
)


def _scores(runs: int, t: list[float], r: list[float], judged: bool) -> dict:
    scores = {T: t, R: r}
    if judged:  # a judge's verdicts: valid (1) or not (0), as final_response_match_v2 scores
        scores[J] = [1.0 if x >= 0.8 else 0.0 for x in r]
    return scores


def _sides(runs: int, judged: bool, scenario: bool) -> tuple[list, list, list]:
    """(baseline cases, current cases, an older baseline's cases) of the suite: steady
    cases, a trajectory and a response regression, an improvement, a case failing on both
    sides, and a coin-flip case (its runs disagree at 3 runs; one flip at 1 run)."""
    n = runs

    def both(eval_id, t, r, behaviour=None):
        return case(eval_id, _scores(n, t, r, judged), behaviour)

    shaky = [0.9, 0.85, 0.95][:n]  # its answers vary: at 3 runs its runs disagree
    shaky_b, shaky_c = ["p", "q", "r"][:n], ["s", "t", "u"][:n]
    coin_base = [1.0, 0.0, 1.0][:n]
    coin_now = [0.0, 1.0, 0.0][:n]
    coin_b = ["a", "b", "a"][:n]
    coin_c = ["b", "a", "b"][:n]
    base = [
        *(both(f"steady{i}", [1.0] * n, [1.0] * n) for i in range(3)),
        both("lucky", [1.0] * n, [0.9] * n),
        both("fumbled", [1.0] * n, [0.9] * n),
        both("fixed", [0.0] * n, [0.9] * n, ["old"] * n),
        both("stuck", [0.0] * n, [0.9] * n, ["bad"] * n),
        both("coin", coin_base, [0.9] * n, coin_b),
        both("shaky", [1.0] * n, shaky, shaky_b),
    ]
    now = [
        *(both(f"steady{i}", [1.0] * n, [1.0] * n) for i in range(3)),
        both("lucky", [0.0] * n, [0.9] * n, ["skipped"] * n),
        both("fumbled", [1.0] * n, [0.3] * n),
        both("fixed", [1.0] * n, [0.9] * n),
        both("stuck", [0.0] * n, [0.9] * n, ["bad"] * n),
        both("coin", coin_now, [0.9] * n, coin_c),
        both("shaky", [0.0] * n, shaky, shaky_c),  # a slip, and answers worded anew
    ]
    older = [
        *(both(f"steady{i}", [1.0] * n, [1.0] * n) for i in range(3)),
        both("lucky", [1.0] * n, [0.9] * n),
        both("fumbled", [1.0] * n, [0.9] * n),
        both("fixed", [0.0] * n, [0.9] * n, ["old"] * n),
        both("stuck", [0.0] * n, [0.9] * n, ["bad"] * n),
        both("coin", [0.0] * n, [0.9] * n, ["b"] * n),  # main's record of it varies
        both("shaky", [1.0] * n, shaky, shaky_b),
    ]
    if scenario:  # a simulated conversation whose answer regressed
        for side, r in ((base, 0.9), (now, 0.2), (older, 0.9)):
            chat = both("chat", [1.0] * n, [r] * n, ["talk"] * n)
            chat.scenario = True
            side.append(chat)
    return base, now, older


@cache
def _cell(cell: Cell) -> tuple[Diff, Results]:
    runs, history, confirmation, judged, scenario = cell
    base_cases, now_cases, older_cases = _sides(runs, judged, scenario)
    if confirmation and runs == 1:  # the re-runs `run` makes: two confirm, one does not
        by_id = {c.eval_id: c for c in now_cases}
        confirmed_by(by_id["lucky"], [0.0, 0.0, 0.0], T)
        confirmed_by(by_id["fumbled"], [0.3, 0.3, 0.3], R)
        confirmed_by(by_id["coin"], [1.0], T)
        confirmed_by(by_id["shaky"], [0.0, 0.0, 0.0], T)
        if scenario:
            confirmed_by(by_id["chat"], [0.2, 0.2, 0.2], R)
    base = _dated(results(*base_cases, num_runs=runs), hours=5, sha="1")
    current = _dated(results(*now_cases, num_runs=runs), hours=0, sha="2")
    current.run_config.confirm_runs = 3 if confirmation else 0
    record = None
    if history:
        olders = [
            _dated(results(*copy.deepcopy(older_cases), num_runs=runs), hours=h, sha=s)
            for h, s in ((9, "3"), (8, "4"))
        ]
        record = MainRecord.of(olders)
    return compare(current, base, history=record), current


def _dated(res: Results, *, hours: int, sha: str) -> Results:
    return res.replace(created_at=NOW - timedelta(hours=hours), source=Source(sha=sha * 40))


@pytest.mark.parametrize(
    "cell", CELLS, ids=lambda c: "runs{}-history{:d}-confirm{:d}-judged{:d}-scenario{:d}".format(*c)
)
def test_every_report_of_the_matrix_is_coherent(cell):
    diff, current = _cell(cell)
    check_all(diff, current)


def test_the_matrix_reaches_the_states_it_is_meant_to_check():
    """A property that no cell exercises proves nothing: the cells together hold confirmed
    regressions beside flaky cases, a suite-level test shown and one hidden, and the
    detection line in both of its forms."""
    seen: set[str] = set()
    for cell in CELLS:
        diff, current = _cell(cell)
        report = Report.of(diff, current, Options())
        if any(map(confirmed, diff.cases)):
            seen.add("confirmed")
            if report.flaky:
                seen.add("confirmed beside flaky")
        if diff.suite_tests and not suite_test_shown(diff):
            seen.add("suite test hidden")
        if suite_test_shown(diff):
            seen.add("suite test shown")
        detects = view.detects(report, COMMENT)
        if detects.axes:
            seen.add("re-runs" if detects.reruns else "own runs")
    assert seen >= {
        "confirmed",
        "confirmed beside flaky",
        "suite test hidden",
        "suite test shown",
        "re-runs",
        "own runs",
    }, seen


def test_the_detection_line_is_one_plain_sentence():
    def line(*axes: tuple[str, float, float | None], reruns: bool = True) -> str:
        sensitivity = tuple(
            Sensitivity(axis=a, cases=60, drop=0.2, power=p, smallest=s) for a, p, s in axes
        )
        return render.standalone("detects.md.j2", view=view.Detects(sensitivity, reruns)).strip()

    lead = "**What this suite can detect:** a drop of 0.2 in the pass rate of every case not known to be deterministic (60 cases) would be caught about "
    assert line(("trajectory", 0.95, 0.15), ("response", 0.951, 0.15)) == (
        lead
        + "95% of the time; a single case's regression is judged on its own, by re-running the case."
    )
    assert line(("trajectory", 0.95, 0.15), ("response", 0.5, 0.3), reruns=False) == (
        lead + "95% of the time (trajectory) and 50% (response), a drop of 0.30 (response) about 4 "
        "times in 5; a single case's regression is judged on its own, by its own runs."
    )
    assert line(("trajectory", 0.03, None)) == (
        "**What this suite can detect:** 60 cases not known to be deterministic are too few for "
        "the suite-level test to catch even a total loss of their pass rate; a single case's "
        "regression is judged on its own, by re-running the case."
    )
    assert line() == ""


def test_a_blamed_case_whose_runs_disagree_is_shown_as_blamed_only():
    """Six runs a side: the per-case test blames a case whose answers vary (the Diff calls
    it flaky, and counts it so). The console said "new failure · flaky" and the drill-down
    page tagged it flaky, while the comment listed it with the regressions only."""
    words = ["p", "q", "r", "s", "t", "u"]
    answers = [0.9, 0.85, 0.95, 0.9, 0.85, 0.9]
    base = [case("wordy", {T: [1.0] * 6, R: answers}, words), case("calm", {T: [1.0] * 6})]
    now = [case("wordy", {T: [0.0] * 6, R: answers}, words[::-1]), case("calm", {T: [1.0] * 6})]
    baseline = _dated(results(*base), hours=5, sha="1")
    current = _dated(results(*now), hours=0, sha="2")
    diff = compare(current, baseline)
    wordy = next(c for c in diff.cases if c.eval_id == "wordy")
    assert wordy.flaky and regressed(wordy) and diff.verdict.counts["flaky"] == 1
    check_all(diff, current)
    assert "flaky" not in diff_console.table(diff, current)
    page = drilldown.page(diff, current, Options())
    assert page.counts["flaky"] == 0 and page.counts["regressed"] == 1


def test_a_nominated_case_cleared_by_its_re_run_is_noise_while_the_suite_test_fails():
    """The issue's reproduction: the per-case test flags a noisy case (six runs a side), a
    passing re-run clears it, and the suite-level test still fails the gate. The case is
    likely noise everywhere, never "confirmed"; the gate's reason is the suite test's."""
    words = ["p", "q"] * 3
    base = [case(f"noisy{i}", {T: [1.0] * 6}, words) for i in range(6)]
    now = [case(f"noisy{i}", {T: [0.0] * 5 + [1.0]}, words[::-1]) for i in range(6)]
    confirmed_by(now[0], [1.0])  # its re-run passes: not reproduced
    baseline = _dated(results(*base), hours=5, sha="1")
    current = _dated(results(*now), hours=0, sha="2")
    current.run_config.confirm_runs = 3
    diff = compare(current, baseline)
    cleared = diff.cases[0]
    assert cleared.metrics[0].rule is Rule.NOT_REPRODUCED and not confirmed(cleared)
    assert axis_state(cleared, "trajectory") is State.NOISE
    nominated = diff.cases[1]  # not re-run (yet): within noise, its re-runs to decide
    assert nominated.metrics[0].rule is Rule.WITHIN_NOISE and nominated.metrics[0].pending
    assert [w.code for w in diff.verdict.why] == ["suite_drop"]
    check_all(diff, current)
    comment = markdown.comment_of(Report.of(diff, current, Options()))
    lines = [line for line in comment.splitlines() if "noisy0" in line]
    assert lines and not any("confirmed" in line for line in lines), lines
