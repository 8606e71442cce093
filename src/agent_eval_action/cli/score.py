"""`score`: the score stage alone. Reads the traces file `run-cases` wrote, judges and
scores it, writes the Results and gates exactly as `run` does (same flags, same exit codes).
Each confirmation round's traces file comes with the round's plan (`--round`), and only
the case-runs that plan names are read from it.
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
        help="the traces file `run-cases` wrote; again for each confirmation round's (each "
        "with its --round)",
    )
    parser.add_argument(
        "--round",
        action="append",
        default=[],
        dest="rounds",
        metavar="PLAN",
        help="the plan of each confirmation round (the file run-cases got as --confirm), in "
        "the order of the --traces files after the first: only the case-runs it names are "
        "accepted from its traces file",
    )
    parser.add_argument(
        "--simulations",
        action="append",
        default=[],
        metavar="FILE",
        help="the records `serve-users` wrote (how each scenario conversation ended, its cost)",
    )
    parser.add_argument(
        "--relayed",
        action="store_true",
        help="the scenario case-runs' user turns came from serve-users: one without a record "
        "of it in --simulations errors",
    )
    common.add_run_options(parser)
    common.add_gate_options(parser)
    common.add_merge_base_traces(parser)
    add_output(parser)


def handle(args: argparse.Namespace) -> int:
    from ..pipeline.run_cases import read_traces
    from .paired import merge_base_rounds

    job, gate, _ = prepare(args)
    suite, *more = args.traces
    rounds = common.rounds(job.plan, more, args.rounds, "--round")
    merge_base_rounds(args, job.plan)  # checked before anything is judged
    case_runs = read_traces(Path(suite), job.plan, rounds)
    if args.simulations or args.relayed:
        from ..pipeline.user_relay import apply_records

        scenario = {k for k, (_, case) in job.plan.cases.items() if case.conversation_scenario}
        apply_records(case_runs, [Path(path) for path in args.simulations], scenario)
    return finish(args, job, case_runs, gate)
