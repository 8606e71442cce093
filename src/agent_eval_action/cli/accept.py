"""`accept`: rewrite the eval files of chosen cases to expect what the agent now does, on
the chosen axes, in place (docs/accept.md). Exit 0: every chosen case accepted (or none
to accept); 1: some were refused, each said why (the others are written); 2: bad input."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..core import AXES, Axis
from ..errors import EXIT_GATE_FAILED, EXIT_PASS

AXIS_CHOICES: dict[str, tuple[Axis, ...]] = {
    "trajectory": ("trajectory",),
    "response": ("response",),
    "both": AXES,
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", metavar="RESULTS", help="the run's Results (results.json)")
    parser.add_argument(
        "cases",
        nargs="*",
        metavar="CASE",
        help="SET/ID (or ID) of each case to accept; default: the regressed cases of --diff "
        "or --baseline, else the failing cases of RESULTS",
    )
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument("--diff", metavar="DIFF", help="accept the regressed cases of this Diff")
    chosen.add_argument(
        "--baseline", metavar="BASE", help="accept the cases regressed against these Results"
    )
    parser.add_argument(
        "--axis",
        choices=tuple(AXIS_CHOICES),
        default="both",
        help="what to accept: the expected tool calls (trajectory), the reference answers "
        "(response), or both (default)",
    )
    parser.add_argument(
        "--run", type=int, metavar="N", help="the run to take when a case's runs disagree"
    )
    parser.add_argument(
        "--with-tool-responses",
        action="store_true",
        help="with the expected tool calls, write what the run's tools answered them "
        "(default: keep the responses the file gave calls it still expects)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the change as a diff; write nothing"
    )
    parser.add_argument(
        "--root",
        default=".",
        metavar="DIR",
        help="the folder the Results' eval file paths are below (default: the current one)",
    )


def handle(args: argparse.Namespace) -> int:
    from ..accept.apply import edit
    from ..accept.plan import choose
    from ..compare import compare, load_results
    from ..compare.model import Diff
    from ..errors import InputError
    from ..files import read_bytes

    results = load_results(args.results)
    diff = None
    if args.diff is not None:
        try:
            diff = Diff.from_json(read_bytes(Path(args.diff), args.diff))
        except ValueError as err:
            raise InputError(f"not a Diff (agent-eval-diff/1): {err}", args.diff) from None
    elif args.baseline is not None:
        diff = compare(results, load_results(args.baseline))
    accepted, refused = choose(
        results,
        args.cases,
        diff=diff,
        axes=AXIS_CHOICES[args.axis],
        run=args.run,
        with_tool_responses=args.with_tool_responses,
    )
    edited, unwritable = edit(results, accepted, Path(args.root))
    refused += unwritable
    for file in edited:
        if args.dry_run:
            sys.stdout.write(file.diff())
        else:
            file.write()
        for case in file.cases:
            verb = "would accept" if args.dry_run else "accepted"
            axes = ", ".join(case.axes)
            print(
                f"{verb} {case.case.key.name} ({axes}, run {case.run}): {file.file}",
                file=sys.stderr,
            )
    for refusal in refused:
        print(f"refused {refusal.key.name}: {refusal.why}", file=sys.stderr)
    if not edited and not refused:
        print("nothing to accept", file=sys.stderr)
    return EXIT_GATE_FAILED if refused else EXIT_PASS
