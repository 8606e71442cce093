"""`compare`: a Results file against its baseline (and history), as the gate decides it."""

from __future__ import annotations

import argparse
import sys

from . import args as common
from .output import add_html, add_report

FORMATS = ("markdown", "summary", "table", "json")
# `compare --out` was the report's file until --out came to mean Results everywhere
DEPRECATED_OUT = (
    "warning: compare --out is deprecated: use --report FILE (the same file); --out goes in "
    "the next minor release"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--baseline",
        required=True,
        metavar="BASE.json",
        help="the baseline Results (from main); it must exist and be Results, but unreadable or "
        "newer Results mean no baseline",
    )
    parser.add_argument("--current", required=True, metavar="CUR.json", help="the Results to judge")
    common.add_gate_options(parser)
    common.add_report_options(parser, FORMATS)
    add_report(parser)
    parser.add_argument(
        "--out",
        type=common.output_file,
        metavar="FILE",
        help="deprecated: the old spelling of --report (removed in the next minor release)",
    )
    add_html(parser)


def handle(args: argparse.Namespace) -> int:
    from ..compare import load_results
    from ..errors import InputError
    from ..pipeline.gate import gate, read_baseline, verdict_code
    from ..report.labels import no_baseline_notes
    from .output import Printed, report, write_html

    if args.out is not None and args.report is not None:
        raise InputError("--out is the old spelling of --report: give --report only")
    options = common.gate_options(args)
    baseline = read_baseline(args.baseline, args.history)  # missing, or not Results: exit 2
    for said in baseline.left_out:
        print(said, file=sys.stderr)
    current = load_results(args.current)
    diff = gate(current, baseline, options)
    if diff.baseline is None:
        print(f"warning: {' '.join(no_baseline_notes(diff)) or 'No baseline.'}", file=sys.stderr)
    with Printed(args.report or args.out) as out:
        if args.format == "json":
            out.record(diff)
        elif args.format in ("markdown", "summary"):
            out.text(report(diff, current, args))
        else:
            from ..report.diff_console import table

            out.text(table(diff, html=args.html))
    write_html(diff, current, baseline, args)
    if args.out is not None:  # said last: bad input stays one line
        print(DEPRECATED_OUT, file=sys.stderr)
    return verdict_code(diff)
