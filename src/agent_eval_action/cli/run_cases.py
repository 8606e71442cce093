"""`run-cases`: the agent stage alone. Runs every case-run and writes the traces file that
`score` reads (pipeline/run_cases.py); no judge, no baseline comparison, no Results.

Exit codes: 0 the traces are written (whatever the agent did), 2 bad input, 3 cancelled
(the traces hold what finished).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import EXIT_INFRASTRUCTURE, EXIT_PASS
from . import args as common

if TYPE_CHECKING:
    from ..pipeline.user_relay import RelayClient


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_eval_paths(parser)
    common.add_agent(parser)
    common.add_run_options(parser, judge=False)
    common.add_hermetic(parser)
    common.add_agent_cwd(parser)
    parser.add_argument(
        "--traces",
        required=True,
        type=common.output_file,
        metavar="FILE",
        help="where to write the traces (JSON lines)",
    )
    parser.add_argument(
        "--user-turns",
        metavar="R,W|no-key",
        help="scenario cases: read the simulated user turns from `serve-users` on file "
        "descriptor R, asking on W (docs/runner-protocol.md); no-key: there is no key for the "
        "simulator, so scenario cases are not run",
    )
    parser.add_argument(
        "--confirm",
        metavar="FILE",
        help='a confirmation round: {"run": N, "cases": [[EVAL_SET_ID, EVAL_ID, WHAT], ...]}: '
        'run N of each case only, each saying what it re-runs to confirm; with "ahead": K, '
        "runs N+1 to N+K too (-: read it from standard input)",
    )


def handle(args: argparse.Namespace) -> int:
    from ..launch import add_agent_paths, not_dumpable
    from ..pipeline.hermetic import check_flags, hermetic_tools
    from ..pipeline.job import prepare
    from ..pipeline.progress import Progress, quick_verdict
    from ..pipeline.run_cases import TracesWriter, run_cases
    from ..runners import runner_for
    from ..traces import CaseRunTrace

    not_dumpable()  # before any of the agent's code: its workers cannot reach into this one
    add_agent_paths()  # the tool's own modules are imported: now the agent's folders
    shard = common.shard(args)
    options = common.run_options(args)
    check_flags(options, agent=args.agent is not None, baseline=args.baseline)
    runner = runner_for(common.agent_choice(args))
    job = prepare(args.eval_paths, options, baseline=args.baseline, shard=shard, judges=False)
    tools = hermetic_tools(options, job.plan, job.baseline)
    if tools is not None:
        runner = runner_for(common.agent_choice(args), tools)
    plan = job.plan
    if args.confirm is not None:
        plan = common.round_plan(job.plan, args.confirm, stdin=True)
    writer = TracesWriter(Path(args.traces), runner)
    progress = Progress(len(plan.requests), verdict=quick_verdict(plan))

    def on_trace(trace: CaseRunTrace) -> None:
        writer.add(trace)
        progress.on_trace(trace)

    relay = _relay(args.user_turns)
    try:
        with progress:
            case_runs = run_cases(
                plan,
                runner,
                on_trace=on_trace,
                relay=relay,
                no_key=args.user_turns == "no-key",
            )
    finally:
        if relay is not None:
            relay.close()
    writer.finish(case_runs.cancelled)
    return EXIT_INFRASTRUCTURE if case_runs.cancelled else EXIT_PASS


def _relay(value: str | None) -> RelayClient | None:
    from ..errors import InputError
    from ..pipeline.user_relay import RelayClient

    if value is None or value == "no-key":
        return None
    try:
        read_fd, write_fd = (int(part) for part in value.split(","))
        return RelayClient(read_fd, write_fd)
    except (ValueError, OSError) as err:
        raise InputError(
            f"--user-turns: want R,W (two file descriptors) or no-key: {err}"
        ) from None
