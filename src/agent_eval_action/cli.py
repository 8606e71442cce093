"""Command line (DESIGN.md §2): `agent-eval-action run ...`.

Exit codes: 0 passed, 1 gate failed, 2 bad input or usage, 3 infrastructure
failure or cancellation (partial Results are still written).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from . import __version__
from .errors import EXIT_BAD_INPUT, EXIT_GATE_FAILED, EXIT_INFRASTRUCTURE, EXIT_PASS, InputError
from .results import Results, RunConfig, Source, Status
from .traces import CaseRunTrace

FORMATS = ("table", "json")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-eval-action",
        description="Run ADK eval files against an agent, score them as ADK does, write results.json.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command_name", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run eval files against an agent and score them")
    run.add_argument(
        "eval_paths",
        nargs="+",
        metavar="EVAL_PATH",
        help="an eval file, a directory (every *.evalset.json / *.test.json below it), or FILE:id1,id2",
    )
    agent = run.add_argument_group("the agent (one of)").add_mutually_exclusive_group(required=True)
    agent.add_argument(
        "--command",
        metavar="CMD",
        help="the agent as a command speaking the JSON-lines runner protocol (see docs/runner-protocol.md)",
    )
    run.add_argument(
        "--config",
        metavar="FILE",
        help="test_config.json for every eval file (default: the one beside each file, else ADK's defaults)",
    )
    run.add_argument(
        "--num-runs", type=_positive_int, default=1, metavar="N", help="runs per case (default 1)"
    )
    run.add_argument(
        "--concurrency",
        type=_positive_int,
        default=8,
        metavar="N",
        help="agent workers at once (default 8)",
    )
    run.add_argument(
        "--timeout",
        type=_positive_float,
        default=600.0,
        metavar="SECONDS",
        help="limit for one case-run, all its turns (default 600)",
    )
    run.add_argument(
        "--trajectory-policy",
        choices=("business", "strict"),
        help="override every trajectory match_type: business = IN_ORDER, strict = EXACT",
    )
    run.add_argument(
        "--format", choices=FORMATS, default="table", help="what to print (default table)"
    )
    run.add_argument(
        "--out",
        default="results.json",
        metavar="FILE",
        help="where to write the Results (default results.json)",
    )
    run.set_defaults(handler=_run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _source_from_environment() -> Source:
    env = os.environ
    return Source(
        repo=env.get("GITHUB_REPOSITORY"),
        sha=env.get("GITHUB_SHA"),
        ref=env.get("GITHUB_REF"),
        run_id=env.get("GITHUB_RUN_ID"),
        event=env.get("GITHUB_EVENT_NAME"),
    )


def _run(args: argparse.Namespace) -> int:
    from .evalset.loader import load_suite
    from .report.console import table
    from .run import build_results, cancelled_traces, plan, score_plan
    from .runners import RunnerStartError, runner_from_args

    runner = runner_from_args(args)
    suite = load_suite(args.eval_paths, args.config)
    for warning in suite.warnings:
        print(warning, file=sys.stderr)
    the_plan = plan(suite, args.num_runs, args.trajectory_policy)
    started, clock = datetime.now(UTC), time.monotonic()
    finished: list[CaseRunTrace] = []

    def on_trace(trace: CaseRunTrace) -> None:
        finished.append(trace)
        mark = "ok" if trace.error is None else f"ERROR: {trace.error}"
        print(
            f"  {trace.eval_set_id} / {trace.eval_id} run {trace.run}: {mark} ({trace.duration_s:.1f}s)",
            file=sys.stderr,
        )

    try:
        traces, cancelled = _run_cancellable(runner.run_suite(the_plan.requests, on_trace)), False
    except RunnerStartError as err:
        raise InputError(str(err)) from None
    except asyncio.CancelledError:
        traces, cancelled = cancelled_traces(the_plan, finished), True
    run_config = RunConfig(
        runner=runner.kind,
        target=runner.target,
        num_runs=args.num_runs,
        concurrency=args.concurrency,
        timeout_s=args.timeout,
        trajectory_policy=args.trajectory_policy,
    )
    results = build_results(
        the_plan,
        score_plan(the_plan, traces),
        run_config,
        started,
        clock,
        partial=cancelled,
        source=_source_from_environment(),
    )
    results.write(Path(args.out))
    print(results.dump_json() if args.format == "json" else table(results))
    if cancelled:
        print(f"error: cancelled; partial results written to {args.out}", file=sys.stderr)
        return EXIT_INFRASTRUCTURE
    return threshold_gate(results)


def threshold_gate(results: Results) -> int:
    """Without a baseline: pass only if there were cases and every one passed (ADK-like)."""
    if results.cases and all(case.status == Status.PASSED for case in results.cases):
        return EXIT_PASS
    return EXIT_GATE_FAILED


def _run_cancellable(coroutine):  # type: ignore[no-untyped-def]
    """Run the coroutine; SIGTERM or SIGINT cancels it (raising CancelledError here)."""

    async def main():  # type: ignore[no-untyped-def]
        task = asyncio.ensure_future(coroutine)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, task.cancel)
        return await task

    return asyncio.run(main())
