"""The drill-down report.html in a real browser: headless Chromium through playwright,
opened from file:// offline, as a reader opens the downloaded file; and the job summary's
chart drawn by Mermaid, as GitHub draws it.

Needs Debian's chromium (and npm's mermaid in .ci/mermaid for the chart); skips with the
reason when either is absent, except in CI (CI=true), where it must run. Leaves a
screenshot at SCREENSHOT to look at (the README's picture is made by
scripts/screenshot_report.py from the example agent).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from helpers.factory import case, results
from helpers.paths import ROOT
from test_report_html import HOSTILE, _at, hostile_case

from agent_eval_action.compare import compare
from agent_eval_action.compare.record import MainRecord, Past
from agent_eval_action.report import chart, html

sys.path.insert(0, str(ROOT / "scripts"))
import screenshot_report as browser

pytestmark = pytest.mark.browser

SCREENSHOT = Path("/tmp/agent-eval-action/report-html-test.png")
MERMAID = ROOT / ".ci" / "mermaid" / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
T, R = "tool_trajectory_avg_score", "response_match_score"

if reason := browser.missing():
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"the browser test cannot run in CI: {reason}")
    pytest.skip(f"browser test skipped: {reason}", allow_module_level=True)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    """A report with a regression on each axis, a flaky case, a case failing on both sides
    whose agent wrote markup, an unchanged one, and an older baseline."""
    before = [
        case("lucky", {T: [1.0], R: [0.9]}, line=10),
        case("fumbled", {T: [1.0], R: [0.9]}, line=20),
        case("noisy", {T: [1.0, 0.0, 1.0]}, ["a", "b", "a"], line=30),
        case("bad", {T: [0.0], R: [0.2]}, ["x"], line=3),
        case("fine", {T: [1.0]}, line=40),
    ]
    after = [
        case("lucky", {T: [0.0], R: [0.9]}, ["skipped lookup"], line=10),
        case("fumbled", {T: [1.0], R: [0.5]}, line=20),
        case("noisy", {T: [0.0, 1.0, 0.0]}, ["b", "a", "b"], line=30),
        hostile_case(),
        case("fine", {T: [1.0]}, line=40),
    ]
    older = _at(results(*before), 48, "a" * 40)
    base = _at(results(*before), 5, "b" * 40)
    cur = _at(results(*after), 0, "c" * 40, "202")
    path = tmp_path_factory.mktemp("report") / "report.html"
    html.write(
        path, html.render(compare(cur, base), cur, baseline=base, history=MainRecord.of([older]))
    )
    return path


def _visible(tab) -> list[str]:
    return tab.locator("details.case:not([hidden]) > summary .name").all_inner_texts()


def test_filters_hide_cases_and_a_case_opens_with_its_runs_offline(page: Path):
    with browser.open_report(page) as opened:
        tab = opened.tab
        assert len(_visible(tab)) == 5
        assert tab.locator("#shown").inner_text() == "5 of 5 cases shown"
        tab.get_by_label("regressed").check()
        assert _visible(tab) == ["s / lucky", "s / fumbled"]
        tab.get_by_label("response").check()  # and on the response axis
        assert _visible(tab) == ["s / fumbled"]
        tab.get_by_label("regressed").uncheck()
        tab.get_by_label("response").uncheck()
        tab.get_by_label("flaky").check()
        assert _visible(tab) == ["s / noisy"]
        tab.get_by_label("flaky").uncheck()
        tab.get_by_label("failing").check()
        assert "s / bad" in _visible(tab) and "s / fine" not in _visible(tab)
        # open the hostile case, then its run: expected and actual side by side
        bad = tab.locator("details.case", has_text="s / bad")
        assert not bad.locator("table.metrics").is_visible()
        bad.locator("summary").first.click()
        assert bad.locator("table.metrics").is_visible()
        assert bad.locator("table.history tr").count() == 4  # header, older, baseline, now
        bad.locator("details.run > summary").first.click()
        turn = bad.locator("section.turn").first
        assert turn.get_by_text("expected tool calls").is_visible()
        assert turn.get_by_text("actual tool calls").is_visible()
        # the agent's markup is text on the page, never an element
        assert HOSTILE.replace("\u202e", "\ufffd").replace("\u202c", "\ufffd") in turn.inner_text()
        assert tab.locator("img").count() == 0
        assert tab.locator("script").count() == 1
        assert tab.evaluate("() => window.alerted === undefined")
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=str(SCREENSHOT), full_page=True)
        assert opened.requests == []  # nothing but the file itself was asked for
        assert opened.errors == []  # the policy blocked nothing of ours
    assert SCREENSHOT.stat().st_size > 10_000


def test_without_javascript_every_case_is_shown_and_opens(page: Path):
    with browser.open_report(page, javascript=False) as opened:
        tab = opened.tab
        assert not tab.locator("#filters").is_visible()  # no dead buttons
        assert len(_visible(tab)) == 5
        fine = tab.locator("details.case", has_text="s / fine")
        fine.locator("summary").first.click()
        assert fine.locator("table.metrics").is_visible()
        assert opened.requests == []


def test_the_summarys_chart_is_drawn_by_mermaid_with_a_line_per_axis(tmp_path):
    if not MERMAID.is_file():
        if os.environ.get("CI") == "true":
            raise RuntimeError(f"{MERMAID.relative_to(ROOT)} is absent (.ci/run installs it)")
        pytest.skip(f"{MERMAID.relative_to(ROOT)} is absent (.ci/run installs it with npm)")
    older = _at(
        results(case("a", {T: [1.0], R: [1.0]}), case("b", {T: [0.0], R: [1.0]})), 48, "a" * 40
    )
    base = _at(
        results(case("a", {T: [1.0], R: [1.0]}), case("b", {T: [1.0], R: [1.0]})), 5, "b" * 40
    )
    cur = _at(
        results(case("a", {T: [1.0], R: [0.5]}), case("b", {T: [0.0], R: [1.0]})), 0, "c" * 40
    )
    block = (
        chart.mermaid([Past.header(older), Past.header(base)], cur)
        .split("```mermaid\n")[1]
        .split("```")[0]
    )
    empty = tmp_path / "chart.html"
    empty.write_text('<!doctype html><meta charset="utf-8"><div id="chart"></div>')
    with browser.open_report(empty) as opened:
        tab = opened.tab
        tab.add_script_tag(path=str(MERMAID))
        svg = tab.evaluate(
            """async (source) => {
                 mermaid.initialize({ startOnLoad: false });
                 const { svg } = await mermaid.render("drawn", source);
                 document.getElementById("chart").innerHTML = svg;
                 return svg;
               }""",
            block,
        )
        # a line per axis, in the legend's colours, over the three points' labels
        for colour, _ in chart.COLOURS.values():
            assert colour in svg
        labels = tab.locator("#chart text").all_text_contents()
        assert {"aaaaaaa", "bbbbbbb", "this run", "cases passed (%)"} <= set(labels)
        assert opened.requests == [] and opened.errors == []
