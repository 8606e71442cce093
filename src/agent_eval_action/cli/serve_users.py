"""`serve-users`: the user simulator of scenario cases, for an agent stage in another process
(`run-cases --user-turns`): reads its requests on stdin, answers on stdout, and writes
how each conversation ended and what it cost to --record (pipeline/user_relay.py). It runs
where the judge's key is and runs none of the project's code. It answers only the case-runs
of its plan: the suite's, or with --confirm the round's (the plan `run-cases --confirm`
gets).

Exit codes: 0 the agent stage closed its end (the record is written), 2 bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import EXIT_PASS
from . import args as common


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_eval_paths(parser)
    common.add_run_options(parser)
    parser.add_argument(
        "--record",
        required=True,
        type=common.output_file,
        metavar="FILE",
        help="where to write the simulations record",
    )
    parser.add_argument(
        "--confirm",
        metavar="FILE",
        help="a confirmation round's plan (what run-cases --confirm reads): answer only its "
        "case-runs",
    )


def handle(args: argparse.Namespace) -> int:
    import asyncio
    import os

    from ..metrics.judge import judge_settings
    from ..pipeline.job import prepare
    from ..pipeline.run_cases import user_simulator
    from ..pipeline.user_relay import Given, serve, write_record
    from .run import spent

    job = prepare(
        args.eval_paths,
        common.run_options(args),
        baseline=args.baseline,
        shard=common.shard(args),
        import_custom=False,
    )
    plan = job.plan if args.confirm is None else common.round_plan(job.plan, args.confirm)
    settings = job.judge or judge_settings(os.environ, max_calls=0)  # no scenario: no call
    simulator = user_simulator(plan, settings)

    async def main() -> Given:
        try:
            return await serve(plan, simulator, sys.stdin, sys.stdout)
        finally:
            await simulator.close()

    given = asyncio.run(main())
    write_record(Path(args.record), simulator, plan, given)
    spent(args, job)
    return EXIT_PASS
