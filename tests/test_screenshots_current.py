"""The pictures in docs/images/ show what the code renders today: each was taken from a
markdown (the PR comment, scripts/screenshot_comment.py) or an HTML page (report.html,
scripts/screenshot_report.py) whose hash is kept beside it, and the example's comment or
page, rendered now, must have that hash. Pixels are not compared (fonts and the browser's
version move them); the source is what a change to a report moves. When this fails, run
the command the failure names."""

from __future__ import annotations

import sys

import pytest
from helpers.paths import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import screenshot_comment
import screenshot_report

# each picture, what it shows rendered today (its source hash), and the command that takes it
PICTURES = [
    pytest.param(
        screenshot_comment.DEFAULT_OUT,
        lambda: screenshot_comment.source_hash(screenshot_comment.example_comment()),
        "python scripts/screenshot_comment.py",
        id="comment",
    ),
    pytest.param(
        screenshot_comment.NO_BASELINE_OUT,
        lambda: screenshot_comment.source_hash(
            screenshot_comment.example_comment(with_baseline=False)
        ),
        "python scripts/screenshot_comment.py --no-baseline",
        id="comment-no-baseline",
    ),
    pytest.param(
        screenshot_report.DEFAULT_OUT,
        screenshot_report.example_page_hash,
        "python scripts/screenshot_report.py",
        id="report-html",
    ),
]


@pytest.mark.parametrize(("picture", "today", "command"), PICTURES)
def test_each_picture_shows_todays_rendering(picture, today, command):
    kept = screenshot_comment.sidecar(picture)
    assert picture.is_file() and kept.is_file(), f"{picture.name}: none taken yet ({command})"
    assert kept.read_text(encoding="ascii").strip() == today(), (
        f"{picture.relative_to(ROOT)} shows an older rendering: {command}"
    )


def test_the_wall_time_alone_does_not_make_a_picture_stale():
    one = "**Usage:** ⏱️ 0.3 s · agent tokens 2,112 in"
    assert screenshot_comment.source_hash(one) == screenshot_comment.source_hash(
        one.replace("0.3 s", "12.5 s")
    )
    assert screenshot_comment.source_hash(one) != screenshot_comment.source_hash(
        one.replace("2,112", "2,113")
    )


def test_the_time_of_day_a_run_started_does_not_make_a_picture_stale():
    row = "<td>2026-12-04 11:42 UTC</td><td>0.919</td>"
    assert screenshot_comment.source_hash(row) == screenshot_comment.source_hash(
        row.replace("11:42", "11:43")
    )
    assert screenshot_comment.source_hash(row) != screenshot_comment.source_hash(
        row.replace("0.919", "0.918")
    )
