"""Printing what a command produced: the markdown reports, and text to a file or stdout."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..files import write_whole
from .args import output_file

if TYPE_CHECKING:
    from ..compare.model import Diff
    from ..pipeline.gate import Baseline
    from ..results import Results

HTML_HELP = (
    "also write the drill-down report there: one self-contained HTML page with every case, "
    "run and turn, and each case on the baseline and the --history baselines"
)


def add_html(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--html", type=output_file, metavar="FILE", help=HTML_HELP)


def report(diff: Diff, current: Results, args: argparse.Namespace) -> str:
    """The comparison as markdown: the PR comment or the job summary (report/markdown.py)."""
    from ..report import markdown

    render = markdown.comment if args.format == "markdown" else markdown.summary
    options = markdown.Options(
        check_name=args.check_name,
        # the report names the files compared (`compare`: both; `run --baseline`: the baseline)
        baseline_file=getattr(args, "baseline", None),
        current_file=getattr(args, "current", None),
    )
    return render(diff, current, options).rstrip("\n")


def write_html(diff: Diff, current: Results, baseline: Baseline, args: argparse.Namespace) -> None:
    """`--html FILE`: the drill-down report (report/html.py), said on stderr."""
    if not args.html:
        return
    from ..report import html, markdown

    options = markdown.Options(check_name=args.check_name)
    page = html.render(diff, current, options, baseline=baseline.results, history=baseline.history)
    html.write(Path(args.html), page)
    print(f"drill-down report: {args.html}", file=sys.stderr)


def emit(text: str, out: str | None) -> None:
    if out is None:
        print(text)
        return
    write_whole(Path(out), text + "\n")  # whole or not at all
