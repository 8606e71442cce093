"""Printing what a command produced: the markdown reports, and its report (`--format`) to
stdout or to `--report FILE`."""

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
REPORT_HELP = "write the report (what --format renders) there instead of stdout"


def add_html(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--html", type=output_file, metavar="FILE", help=HTML_HELP)


def add_report(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--report", type=output_file, metavar="FILE", help=REPORT_HELP)


class Printed:
    """Where a command's report goes (`--format`): stdout as it is made, or, with `--report
    FILE`, gathered and written to FILE whole once the command has made all of it (a
    command stopped by an exception writes none)."""

    def __init__(self, report: str | None) -> None:
        self.report = report
        self._texts: list[str] = []

    def __enter__(self) -> Printed:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None and self.report is not None and self._texts:
            write_whole(Path(self.report), "\n".join(self._texts) + "\n")

    def text(self, text: str) -> None:
        if self.report is None:
            print(text)
        else:
            self._texts.append(text)

    def record(self, record: Results | Diff) -> None:
        """`--format json`: the record, a few cases at a time (at 100,000 cases, hundreds
        of MB: never one str)."""
        if self.report is None:
            sys.stdout.flush()
            record.stream(sys.stdout.buffer)
            sys.stdout.buffer.flush()
        else:
            record.write(Path(self.report))


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
