"""Printing what a command produced: the markdown reports, and text to a file or stdout."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..compare.model import Diff
    from ..results import Results


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


def emit(text: str, out: str | None) -> None:
    if out is None:
        print(text)
        return
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n", encoding="utf-8")
