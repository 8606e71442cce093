"""`compare`: a Results file against its baseline (and history), as the gate decides it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import args as common
from .output import add_html

FORMATS = ("markdown", "summary", "table", "json")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--baseline",
        required=True,
        metavar="BASE.json",
        help="the baseline Results (from main); it must exist, but unreadable or newer means no baseline",
    )
    parser.add_argument("--current", required=True, metavar="CUR.json", help="the Results to judge")
    common.add_gate_options(parser)
    common.add_report_options(parser, FORMATS)
    parser.add_argument(
        "--out",
        type=common.output_file,
        metavar="FILE",
        help="write the output there instead of stdout",
    )
    add_html(parser)


def handle(args: argparse.Namespace) -> int:
    from ..compare import load_results
    from ..pipeline.gate import gate, read_baseline, verdict_code
    from .output import emit, report, write_html

    options = common.gate_options(args)
    baseline = read_baseline(args.baseline, args.history)  # a missing file is bad input
    for said in baseline.left_out:
        print(said, file=sys.stderr)
    current = load_results(args.current)
    diff = gate(current, baseline, options)
    if diff.baseline is None:
        print(f"warning: {diff.notes[0] if diff.notes else 'No baseline.'}", file=sys.stderr)
    if args.format == "json":  # a few cases at a time: at 100,000 cases, hundreds of MB
        if args.out is None:
            sys.stdout.flush()
            diff.stream(sys.stdout.buffer)
            sys.stdout.buffer.flush()
        else:
            diff.write(Path(args.out))
    elif args.format in ("markdown", "summary"):
        emit(report(diff, current, args), args.out)
    else:
        from ..report.diff_console import table

        emit(table(diff), args.out)
    write_html(diff, current, baseline, args)
    return verdict_code(diff)
