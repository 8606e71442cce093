"""Render the example's PR comment as GitHub shows it and save a screenshot.

    python scripts/screenshot_comment.py [OUT.png]     # default docs/images/comment.png
    python scripts/screenshot_comment.py --no-baseline [OUT.png]
                                  # default docs/images/comment-no-baseline.png: the first
                                  # PR after adoption, every failing case against its eval file

Runs the example support agent twice (scripts/example_results.py: a baseline without its
deliberate slip, and as shipped), renders `compare --format markdown` with cmarkgfm
(GitHub's GFM renderer) and GitHub's stylesheet (npm `github-markdown-css`, which .ci/run
installs into .ci/node/), and photographs it in Debian's headless Chromium through
playwright, as GitHub first shows it: folded blocks stay folded. Needs the dev extra,
`chromium` and the stylesheet; tests/test_comment_browser.py uses the same functions.
"""

from __future__ import annotations

import hashlib
import html
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STYLESHEET = (
    ROOT / ".ci" / "node" / "node_modules" / "github-markdown-css" / "github-markdown-light.css"
)
CHROMIUM = "/usr/bin/chromium"
DEFAULT_OUT = ROOT / "docs" / "images" / "comment.png"
NO_BASELINE_OUT = ROOT / "docs" / "images" / "comment-no-baseline.png"
WIDTH = 800  # about a PR comment's width on a desktop screen
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def to_html(markdown: str) -> str:
    """GitHub's renderer with raw HTML kept (GitHub keeps <details>, then sanitises)."""
    import cmarkgfm
    from cmarkgfm.cmark import Options

    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


def page(markdown: str, title: str = "comment") -> str:
    """A self-contained page (no network): the comment in GitHub's markdown body."""
    css = STYLESHEET.read_text(encoding="utf-8")
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{css}</style>
<style>body {{ margin: 0; background: #fff; }}
.markdown-body {{ box-sizing: border-box; width: {WIDTH}px; padding: 16px 20px;
  border: 1px solid #d0d7de; border-radius: 6px; margin: 8px; }}</style>
</head><body><article class="markdown-body" id="comment">{to_html(markdown)}</article></body></html>"""


def missing() -> str | None:
    """Why a browser rendering cannot be made here, or None."""
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is absent (apt-get install chromium; .ci/run does it)"
    if not STYLESHEET.is_file():
        return f"{STYLESHEET.relative_to(ROOT)} is absent (.ci/run installs it with npm)"
    try:
        import cmarkgfm  # noqa: F401
        import playwright  # noqa: F401
    except ImportError as err:
        return f"{err.name} is not installed (pip install -e '.[dev]')"
    return None


def open_page(markdown: str):  # type: ignore[no-untyped-def]
    """A context manager yielding a playwright page showing the rendered comment."""
    from contextlib import contextmanager

    from playwright.sync_api import sync_playwright

    @contextmanager
    def opened():  # type: ignore[no-untyped-def]
        profile = tempfile.mkdtemp(prefix="agent-eval-chromium-")
        try:
            with sync_playwright() as pw:
                context = pw.chromium.launch_persistent_context(
                    profile,
                    executable_path=CHROMIUM,
                    headless=True,
                    args=FLAGS,  # the profile is the fresh user_data_dir above
                    viewport={"width": WIDTH + 40, "height": 600},
                    offline=True,
                )
                try:
                    tab = context.new_page()
                    tab.set_content(page(markdown), wait_until="load")
                    yield tab
                finally:
                    context.close()
        finally:
            shutil.rmtree(profile, ignore_errors=True)

    return opened()


def screenshot(markdown: str, out: Path) -> Path:
    """The comment as GitHub first shows it: every <details> as the markdown leaves it (the
    comment's first divergent turns folded), none opened for the picture; beside it,
    OUT.source.sha256, what it was rendered from (`source_hash`)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with open_page(markdown) as tab:
        tab.locator("#comment").screenshot(path=str(out))
    sidecar(out).write_text(source_hash(markdown) + "\n", encoding="ascii")
    return out


# what changes from one run of the example to the next: how long things took, and when
_VOLATILE = re.compile(r"\b[0-9][0-9.,]* (ms|s|min|h)\b")
_WHEN = re.compile(
    r"\b[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}(:[0-9.]+)?( ?UTC|Z|[+-][0-9:]{4,5})?"
)


def source_hash(markdown: str) -> str:
    """The sha256 of the markdown (or HTML) a picture shows, durations and times of day left
    out: a test checks that each picture in docs/images/ shows what the code renders today
    (not its pixels)."""
    steady = _WHEN.sub("…", _VOLATILE.sub("… s", markdown))
    return hashlib.sha256(steady.encode("utf-8")).hexdigest()


def sidecar(picture: Path) -> Path:
    return picture.with_name(picture.name + ".source.sha256")


def example_comment(*, with_baseline: bool = True) -> str:
    """The example's comment against its baseline, or, `with_baseline=False`, as on the
    first PR after adoption (no baseline yet)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from example_results import make

    from agent_eval_action.compare import load_results
    from agent_eval_action.pipeline.gate import Baseline, gate, read_baseline
    from agent_eval_action.pipeline.options import DEFAULTS
    from agent_eval_action.report import markdown

    with tempfile.TemporaryDirectory() as tmp:
        base, current = make(Path(tmp))
        results = load_results(str(current))
        baseline = (
            read_baseline(str(base))
            if with_baseline
            else Baseline(None, "no baseline has been recorded on main yet")
        )
        diff = gate(results, baseline, DEFAULTS.gate)
        return markdown.comment(
            diff,
            results,
            markdown.Options(baseline_relation="the PR's merge-base" if with_baseline else None),
        )


if __name__ == "__main__":
    reason = missing()
    if reason:
        raise SystemExit(f"cannot take the screenshot: {reason}")
    args = sys.argv[1:]
    with_baseline = "--no-baseline" not in args
    args = [a for a in args if a != "--no-baseline"]
    default = DEFAULT_OUT if with_baseline else NO_BASELINE_OUT
    target = Path(args[0]) if args else default
    print(screenshot(example_comment(with_baseline=with_baseline), target))
