"""`run-cases`: the agent stage alone. Runs every case-run and writes the traces file that
`score` reads (pipeline/run_cases.py); no judge, no baseline comparison, no Results.

Exit codes: 0 the traces are written (whatever the agent did), 2 bad input, 3 cancelled
(the traces hold what finished).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import EXIT_INFRASTRUCTURE, EXIT_PASS
from . import args as common

if TYPE_CHECKING:
    from ..pipeline.plan import Plan
    from ..pipeline.user_relay import RelayClient


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_eval_paths(parser)
    common.add_agent(parser)
    common.add_run_options(parser, judge=False)
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
        "run N of each case only, each saying what it re-runs to confirm",
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
    plan = job.plan if args.confirm is None else _confirmation(job.plan, Path(args.confirm))
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


def _confirmation(plan: Plan, path: Path) -> Plan:
    """The plan of a confirmation round, from the file the action wrote."""
    from ..core import CaseKey
    from ..errors import InputError
    from ..pipeline.confirm import confirmation_plan

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        run = int(data["run"])
        wanted = [(CaseKey(str(s), str(e)), str(w)) for s, e, w in data["cases"]]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise InputError(f"not a confirmation round: {err}", path) from None
    unknown = [key for key, _ in wanted if key not in plan.cases]
    if unknown or run <= plan.num_runs:
        raise InputError("the round names cases or runs the suite does not have", path)
    return confirmation_plan(plan, wanted, run)
