"""The PR comment in a real browser: GitHub's renderer and stylesheet, headless Chromium.

Needs Debian's chromium and the npm package github-markdown-css (.ci/run installs both);
skips with the reason when either is absent, except in CI (CI=true), where it must run.
Leaves a screenshot at SCREENSHOT to look at.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from helpers.paths import ROOT
from report_diffs import mixed, no_baseline

from agent_eval_action.report import markdown

sys.path.insert(0, str(ROOT / "scripts"))
import screenshot_comment as browser

pytestmark = pytest.mark.browser

SCREENSHOT = Path("/tmp/agent-eval-action/comment-test.png")
NO_BASELINE_SCREENSHOT = Path("/tmp/agent-eval-action/comment-no-baseline-test.png")

if reason := browser.missing():
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"the browser test cannot run in CI: {reason}")
    pytest.skip(f"browser test skipped: {reason}", allow_module_level=True)


def test_the_comment_renders_with_regressions_visible_and_nothing_overflowing():
    diff, current = mixed()
    text = markdown.comment(
        diff, current, markdown.Options(baseline_relation="the PR's merge-base")
    )
    with browser.open_page(text) as tab:
        for heading in ("Trajectory regressions (2)", "Response regressions (2)"):
            assert tab.get_by_role("heading", name=heading).is_visible()
        assert tab.get_by_text("refunds / lucky").first.is_visible()
        # headline news is never folded: the crash in the headline, the removal under it
        assert tab.get_by_role("heading", name="RuntimeError at agent/tools.py:16").is_visible()
        assert tab.get_by_text("1 case removed since the baseline").is_visible()
        # collapsed: the rest is behind <summary> lines, the diffs hidden until opened
        assert tab.locator("details").count() == 12  # 5 sections, 7 first divergent turns
        assert not tab.locator("pre").first.is_visible()
        for details in tab.query_selector_all("details"):
            details.evaluate("d => d.open = true")
        assert tab.locator("pre").first.is_visible()
        overflowing = tab.evaluate(
            """() => {
              const box = document.querySelector('#comment').getBoundingClientRect();
              const bad = [];
              for (const el of document.querySelectorAll('#comment *')) {
                if (el.closest('pre, table') && !el.matches('pre, table')) continue;  // they scroll
                const r = el.getBoundingClientRect();
                if (r.width && (r.left < box.left - 0.5 || r.right > box.right + 0.5))
                  bad.push(el.tagName + ': ' + el.textContent.slice(0, 60));
              }
              for (const el of document.querySelectorAll('#comment table')) {
                if (el.scrollWidth > el.clientWidth + 1) bad.push('TABLE scrolls: ' + el.textContent.slice(0, 60));
              }
              return bad;
            }"""
        )
        assert overflowing == []
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        tab.locator("#comment").screenshot(path=str(SCREENSHOT))
    assert SCREENSHOT.stat().st_size > 10_000


def test_without_a_baseline_every_failing_case_shows_its_turn_without_scrolling():
    diff, current = no_baseline()
    text = markdown.comment(diff, current)
    with browser.open_page(text) as tab:
        assert tab.get_by_role("heading", name="❌ Failing their thresholds (2)").is_visible()
        assert tab.locator("details").count() == 2  # one first divergent turn per failing case
        for details in tab.query_selector_all("details"):
            details.evaluate("d => d.open = true")
        blocks = tab.locator("pre")
        assert blocks.count() == 2
        assert "expected → current run 1" in blocks.nth(0).inner_text()
        assert "[-$40.00-] {+$400.00+}" in blocks.nth(1).inner_text()
        # wrapped: no block needs scrolling sideways to show a change
        scrolls = tab.evaluate(
            """() => [...document.querySelectorAll('#comment pre')]
                 .filter(pre => pre.scrollWidth > pre.clientWidth + 1)
                 .map(pre => pre.textContent.slice(0, 60))"""
        )
        assert scrolls == []
        NO_BASELINE_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        tab.locator("#comment").screenshot(path=str(NO_BASELINE_SCREENSHOT))
    assert NO_BASELINE_SCREENSHOT.stat().st_size > 10_000
