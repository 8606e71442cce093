"""`score`: the score stage alone. Reads the traces file `run-cases` wrote, judges and
scores it, writes the Results and gates exactly as `run` does (same flags, same exit codes).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from . import args as common
from .run import add_output, finish, prepare


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_eval_paths(parser)
    parser.add_argument(
        "--traces",
        required=True,
        action="append",
        metavar="FILE",
        help="the traces file `run-cases` wrote; again for each confirmation round's",
    )
    parser.add_argument(
        "--simulations",
        action="append",
        default=[],
        metavar="FILE",
        help="the records `serve-users` wrote (how each scenario conversation ended, its cost)",
    )
    common.add_run_options(parser)
    common.add_gate_options(parser)
    common.add_merge_base_traces(parser)
    add_output(parser)


def handle(args: argparse.Namespace) -> int:
    from ..pipeline.run_cases import read_traces

    job, gate, _ = prepare(args)
    case_runs = read_traces([Path(path) for path in args.traces], job.plan)
    if args.simulations:
        from ..pipeline.user_relay import apply_records

        apply_records(case_runs, [Path(path) for path in args.simulations])
    return finish(args, job, case_runs, gate)
