"""Open the example's drill-down report.html in headless Chromium and save a screenshot.

    python scripts/screenshot_report.py [OUT.png]      # default docs/images/report-html.png

Runs the example support agent twice (scripts/example_results.py: a baseline without its
deliberate slip, and as shipped), writes `compare --html`'s page, opens it from file://
in Debian's Chromium through playwright, ticks the "regressed" filter, opens the
regressed case and photographs the page; beside it, OUT.source.sha256, the hash of the
page's HTML it was taken from (tests/test_screenshots_current.py checks it is today's).
Needs the dev extra and `chromium`; tests/test_report_html_browser.py uses the same functions.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from screenshot_comment import CHROMIUM, FLAGS, sidecar, source_hash  # noqa: E402

DEFAULT_OUT = ROOT / "docs" / "images" / "report-html.png"
WIDTH = 1100


def missing() -> str | None:
    """Why the page cannot be opened here, or None."""
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is absent (apt-get install chromium; .ci/run does it)"
    try:
        import playwright  # noqa: F401
    except ImportError as err:
        return f"{err.name} is not installed (pip install -e '.[dev]')"
    return None


class Opened:
    """A tab showing the page, and every request it made that was not for the file."""

    def __init__(self, tab: Any, requests: list[str], errors: list[str]) -> None:
        self.tab, self.requests, self.errors = tab, requests, errors


@contextmanager
def open_report(path: Path, *, javascript: bool = True) -> Iterator[Opened]:
    """The page at `path`, opened from file:// offline, every other request recorded."""
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="agent-eval-chromium-")
    requests: list[str] = []
    errors: list[str] = []
    try:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                profile,
                executable_path=CHROMIUM,
                headless=True,
                args=FLAGS,
                viewport={"width": WIDTH, "height": 900},
                offline=True,
                java_script_enabled=javascript,
            )
            try:
                context.on(
                    "request",
                    lambda r: None if r.url.startswith("file:") else requests.append(r.url),
                )
                tab = context.new_page()
                tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                tab.on("pageerror", lambda e: errors.append(str(e)))
                tab.goto(path.resolve().as_uri(), wait_until="load")
                yield Opened(tab, requests, errors)
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def example_report(out_dir: Path) -> Path:
    """The example's report.html against its baseline, as `compare --html` writes it."""
    from example_results import make

    from agent_eval_action.cli import main

    base, current = make(out_dir)
    page = out_dir / "report.html"
    argv = ["compare", "--baseline", str(base), "--current", str(current)]
    main([*argv, "--format", "json", "--report", str(out_dir / "diff.json"), "--html", str(page)])
    return page


def example_page_hash() -> str:
    """The source hash of the example's report.html as the code writes it today."""
    with tempfile.TemporaryDirectory() as tmp:
        return source_hash(example_report(Path(tmp)).read_text(encoding="utf-8"))


def screenshot(page: Path, out: Path) -> Path:
    """The page with the "regressed" filter ticked and its first case opened."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with open_report(page) as opened:
        tab = opened.tab
        tab.get_by_label("regressed").check()
        first = tab.locator("details.case:not([hidden])").first
        first.locator("summary").first.click()
        first.locator("details.run summary").first.click()
        tab.screenshot(path=str(out), full_page=True)
    sidecar(out).write_text(source_hash(page.read_text(encoding="utf-8")) + "\n", encoding="ascii")
    return out


if __name__ == "__main__":
    reason = missing()
    if reason:
        raise SystemExit(f"cannot take the screenshot: {reason}")
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT
    with tempfile.TemporaryDirectory() as tmp:
        print(screenshot(example_report(Path(tmp)), target))
