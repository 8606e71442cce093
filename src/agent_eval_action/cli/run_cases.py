"""`run-cases`: the agent stage alone. Runs every case-run and writes the traces file that
`score` reads (pipeline/run_cases.py); no judge, no baseline comparison, no Results.

Exit codes: 0 the traces are written (whatever the agent did), 2 bad input, 3 cancelled
(the traces hold what finished).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import EXIT_INFRASTRUCTURE, EXIT_PASS
from . import args as common


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_eval_paths(parser)
    common.add_agent(parser)
    common.add_run_options(parser, judge=False)
    parser.add_argument(
        "--traces", required=True, metavar="FILE", help="where to write the traces (JSON lines)"
    )


def handle(args: argparse.Namespace) -> int:
    from ..pipeline.job import prepare
    from ..pipeline.progress import Progress, quick_verdict
    from ..pipeline.run_cases import TracesWriter, run_cases
    from ..runners import runner_from_args
    from ..traces import CaseRunTrace

    shard = common.shard(args)
    runner = runner_from_args(args)
    job = prepare(args.eval_paths, common.run_options(args), baseline=args.baseline, shard=shard)
    writer = TracesWriter(Path(args.traces), runner)
    progress = Progress(len(job.plan.requests), verdict=quick_verdict(job.plan))

    def on_trace(trace: CaseRunTrace) -> None:
        writer.add(trace)
        progress.on_trace(trace)

    with progress:
        case_runs = run_cases(job.plan, runner, on_trace=on_trace)
    writer.finish(case_runs.cancelled)
    return EXIT_INFRASTRUCTURE if case_runs.cancelled else EXIT_PASS
