"""Command line (DESIGN.md §2): `agent-eval-action run ...`.

Exit codes: 0 passed, 1 gate failed, 2 bad input or usage, 3 infrastructure
failure or cancellation (partial Results are still written).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from . import __version__
from .errors import (
    EXIT_BAD_INPUT,
    EXIT_GATE_FAILED,
    EXIT_INFRASTRUCTURE,
    EXIT_PASS,
    InfrastructureError,
    InputError,
)

if TYPE_CHECKING:  # imported where used: `--help` and argument errors stay fast
    from .results import Results, Source
    from .traces import CaseRunTrace

RUN_FORMATS = ("table", "markdown", "summary", "json")
COMPARE_FORMATS = ("markdown", "summary", "table", "json")
FORMAT_HELP = "what to print (default table): markdown = the PR comment, summary = the job summary"


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


class _Parser(argparse.ArgumentParser):
    """Usage errors as every other bad input: one line, `error: ...`, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
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
    agents = run.add_argument_group("the agent (one of)")
    agent = agents.add_mutually_exclusive_group(required=True)
    agent.add_argument(
        "--agent",
        metavar="DIR",
        help="an ADK agent package, run in this process as `adk eval` runs it (needs the adk extra)",
    )
    agent.add_argument(
        "--command",
        metavar="CMD",
        help="the agent as a command speaking the JSON-lines runner protocol (see docs/runner-protocol.md)",
    )
    agent.add_argument(
        "--adk-api",
        metavar="URL",
        help="an agent served by `adk api_server` at URL (with --adk-app)",
    )
    agent.add_argument(
        "--adk-history",
        nargs="+",
        metavar="PATH",
        help="score what `adk eval` ran: its .adk/eval_history result files or directories",
    )
    agents.add_argument(
        "--adk-app",
        metavar="NAME",
        help="with --adk-api: the app (agent folder) name on the server",
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
        "--judge-model",
        metavar="NAME",
        help="judge model for every LLM-judged metric, overriding each criterion's (the pin)",
    )
    run.add_argument(
        "--judge-cache",
        metavar="DIR",
        help="keep judge verdicts in DIR and reuse them in later runs",
    )
    run.add_argument(
        "--baseline",
        metavar="BASE.json",
        help="a baseline Results file: compare with it and gate on regressions (its judge verdicts are reused for unchanged answers)",
    )
    run.add_argument(
        "--shard",
        metavar="I/N",
        help="run only shard I of N (split by the baseline's case durations, else by a stable hash); "
        "write its Results without comparing: `merge` the shards, then `compare`",
    )
    _add_gate_options(run)
    run.add_argument("--format", choices=RUN_FORMATS, default="table", help=FORMAT_HELP)
    _add_check_name(run)
    run.add_argument(
        "--out",
        default="results.json",
        metavar="FILE",
        help="where to write the Results (default results.json)",
    )
    run.set_defaults(handler=_run)

    compare = commands.add_parser(
        "compare", help="compare a Results file with its baseline and gate on it"
    )
    compare.add_argument(
        "--baseline",
        required=True,
        metavar="BASE.json",
        help="the baseline Results (from main); missing or unreadable means no baseline",
    )
    compare.add_argument(
        "--current", required=True, metavar="CUR.json", help="the Results to judge"
    )
    _add_gate_options(compare)
    compare.add_argument("--format", choices=COMPARE_FORMATS, default="table", help=FORMAT_HELP)
    _add_check_name(compare)
    compare.add_argument("--out", metavar="FILE", help="write the output there instead of stdout")
    compare.set_defaults(handler=_compare)

    merge = commands.add_parser("merge", help="merge the Results of shards into one")
    merge.add_argument("shards", nargs="+", metavar="SHARD.json")
    merge.add_argument(
        "--out", required=True, metavar="FILE", help="where to write the merged Results"
    )
    merge.set_defaults(handler=_merge)

    action = commands.add_parser(
        "action",
        help="the GitHub Action's entry point: reads INPUT_* and GITHUB_* from the environment",
    )
    action.set_defaults(handler=_action)
    return parser


def _min_delta(text: str) -> tuple[str | None, float]:
    axis, _, value = text.rpartition("=")
    if axis and axis not in ("trajectory", "response"):
        raise argparse.ArgumentTypeError(f"unknown axis {axis!r}; use trajectory=X or response=X")
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not 0.0 <= number <= 1.0:
        raise argparse.ArgumentTypeError(f"must be within [0, 1], got {number}")
    return axis or None, number


def _add_check_name(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--check-name",
        default="agent-eval",
        metavar="NAME",
        help="names the report's hidden sticky-comment marker (default agent-eval)",
    )


def _add_gate_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fail-on",
        default="regression",
        metavar="POLICY",
        help="regression (default), trajectory, response, threshold, never; or a comma list",
    )
    parser.add_argument(
        "--min-delta",
        type=_min_delta,
        action="append",
        default=[],
        metavar="[AXIS=]X",
        help="smallest score drop that counts (defaults: any drop for trajectory, 0.1 for response)",
    )
    parser.add_argument(
        "--history",
        nargs="+",
        default=[],
        metavar="BASE.json",
        help="older baselines from main: cases whose runs disagreed there are treated as flaky",
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except InfrastructureError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_INFRASTRUCTURE


def _source_from_environment() -> Source:
    """Where the run happened, from the GITHUB_* values (read by the action's one reader)."""
    from .action.settings import GitHubEnv
    from .results import Source

    github = GitHubEnv.from_env(os.environ)
    return Source(
        repo=github.repository,
        sha=github.sha,
        ref=github.ref,
        run_id=github.run_id,
        event=github.event_name,
    )


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from .compare import gate_options
    from .evalset.loader import load_suite
    from .pipeline.plan import cancelled_traces, plan
    from .pipeline.progress import Progress, quick_verdict
    from .pipeline.score import build_results, score_plan
    from .report.console import table
    from .results import RunConfig
    from .runners import RunnerStartError, runner_from_args

    shard = _shard_option(args.shard)
    gate_options(args.fail_on, args.min_delta)  # a bad policy fails before any agent runs
    runner = runner_from_args(args)
    suite = load_suite(args.eval_paths, args.config)
    for warning in suite.warnings:
        print(warning, file=sys.stderr)
    the_plan = plan(suite, args.num_runs, args.trajectory_policy)
    baseline, no_baseline_reason, warnings = _baseline(args.baseline)
    shard_record = None
    if shard is not None:
        the_plan, shard_record = _shard_plan(the_plan, *shard, baseline)
    judge_settings = _judge_settings(args, the_plan)
    started, clock = datetime.now(UTC), time.monotonic()
    run_config = RunConfig(
        runner=runner.kind,
        target=runner.target,
        num_runs=args.num_runs,
        concurrency=args.concurrency,
        timeout_s=args.timeout,
        trajectory_policy=args.trajectory_policy,
        judge_model=args.judge_model,
    )
    if shard_record is not None and not the_plan.suite.case_count:
        return _empty_shard(args, the_plan, shard_record, run_config, started, clock, warnings)
    finished: list[CaseRunTrace] = []
    progress = Progress(len(the_plan.requests), verdict=quick_verdict(the_plan))

    def on_trace(trace: CaseRunTrace) -> None:
        finished.append(trace)
        progress.on_trace(trace)

    try:
        with progress:
            traces = _run_cancellable(runner.run_suite(the_plan.requests, on_trace))
        cancelled = False
    except RunnerStartError as err:
        raise InputError(str(err)) from None
    except asyncio.CancelledError:
        traces, cancelled = cancelled_traces(the_plan, finished), True
    judged = None
    if judge_settings is not None and not cancelled:
        from .pipeline.judge import judge_plan, judged_metrics

        print(f"judging {', '.join(sorted(judged_metrics(the_plan)))} ...", file=sys.stderr)
        try:
            judged = _run_cancellable(judge_plan(the_plan, traces, judge_settings, baseline))
        except asyncio.CancelledError:
            cancelled = True
    results = build_results(
        the_plan,
        score_plan(the_plan, traces, judged),
        run_config,
        started,
        clock,
        partial=cancelled,
        source=_source_from_environment(),
    )
    results.shard = shard_record
    results.warnings.extend([*warnings, *(judged.warnings if judged else [])])
    results.write(Path(args.out))
    if args.format in ("table", "json"):
        print(results.dump_json() if args.format == "json" else table(results))
    if cancelled:
        print(f"error: cancelled; partial results written to {args.out}", file=sys.stderr)
        return EXIT_INFRASTRUCTURE
    if shard_record is not None and args.baseline is not None:
        print(
            f"shard {shard_record.index}/{shard_record.count}: not compared with the baseline "
            "(a shard is not the whole suite); merge the shards' Results, then compare",
            file=sys.stderr,
        )
        return _judged_gate(results, judged, EXIT_PASS)
    gate = threshold_gate(results)
    if args.baseline is not None:
        gate = _compare_with_baseline(args, results, baseline, no_baseline_reason)
    elif args.format in ("markdown", "summary"):
        from .compare import compare

        no_baseline = compare(results, None, no_baseline_reason="no --baseline was given")
        print(_report(no_baseline, results, args))
    return _judged_gate(results, judged, gate)


def _shard_option(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    from .shard import parse_shard

    try:
        return parse_shard(text)
    except ValueError as err:
        raise InputError(str(err)) from None


def _shard_plan(the_plan, index: int, count: int, baseline: Results | None):  # type: ignore[no-untyped-def]
    """This shard's part of the plan, and its `shard` record. Every shard computes the same
    partition from the same suite and baseline (see shard.py)."""
    from .pipeline.plan import restrict
    from .results import Shard
    from .shard import partition

    cases = [(s.eval_set_id, c.eval_id) for s in the_plan.suite.eval_sets for c in s.cases]
    durations = (
        {(c.eval_set_id, c.eval_id): c.duration_s for c in baseline.cases} if baseline else None
    )
    split = partition(cases, count, durations)
    mine = split.cases(index)
    how = "the baseline's case durations" if split.by_durations else "stable hash"
    print(
        f"shard {index}/{count}: {len(mine)} of {len(cases)} cases (split by {how})",
        file=sys.stderr,
    )
    record = Shard(
        index=index,
        count=count,
        partition_hash=split.partition_hash,
        cases_total=len(cases),
        baseline_sha=baseline.source.sha if baseline else None,
    )
    return restrict(the_plan, set(mine)), record


def _empty_shard(args, the_plan, record, run_config, started, clock, warnings) -> int:  # type: ignore[no-untyped-def]
    """More shards than cases: this one writes valid empty Results, and has nothing to fail."""
    from .pipeline.score import build_results

    results = build_results(
        the_plan, [], run_config, started, clock, source=_source_from_environment()
    )
    results.shard = record
    results.warnings.extend(warnings)
    results.write(Path(args.out))
    print(
        f"shard {record.index}/{record.count} has no cases (the suite has {record.cases_total}); "
        f"wrote its empty Results to {args.out}",
        file=sys.stderr,
    )
    return EXIT_PASS


def _compare_with_baseline(
    args: argparse.Namespace, results: Results, baseline: Results | None, reason: str | None
) -> int:
    """`run --baseline`: compare as `compare` does, write diff.json beside the Results, gate on it."""
    from .compare import compare, flaky_in_history, gate_options, load_baseline
    from .report.diff_console import table as diff_table

    fail_on, min_delta = gate_options(args.fail_on, args.min_delta)
    history = [b for b, _ in map(load_baseline, args.history) if b is not None]
    diff = compare(
        results,
        baseline,
        fail_on=fail_on,
        min_delta=min_delta,
        known_flaky=flaky_in_history([*history, *([baseline] if baseline else [])]),
        no_baseline_reason=reason,
    )
    diff_path = Path(args.out).with_name("diff.json")
    diff_path.write_text(diff.dump_json() + "\n", encoding="utf-8")
    if args.format == "table":
        print("\n" + diff_table(diff))
    elif args.format != "json":
        print(_report(diff, results, args))
    return EXIT_PASS if diff.verdict.passed else EXIT_GATE_FAILED


def _baseline(path: str | None) -> tuple[Results | None, str | None, list[str]]:
    """The baseline Results, or None with the reason and a loud warning (never a crash, DESIGN §2)."""
    if path is None:
        return None, None, []
    from .compare.loading import load_baseline

    baseline, reason = load_baseline(path)
    if baseline is not None:
        return baseline, None, []
    warning = f"warning: NO BASELINE: {reason}; cases are judged by their thresholds and every judged answer afresh"
    print(warning, file=sys.stderr)
    return None, reason, [warning]


def _judge_settings(args: argparse.Namespace, the_plan):  # type: ignore[no-untyped-def]
    """The judge's settings when a judged metric is configured (else None, and google-genai
    is never imported); bad price tables and cache directories are bad input (exit 2)."""
    from .metrics.judge import judge_settings
    from .pipeline.judge import judged_metrics

    if not judged_metrics(the_plan):
        return None
    if args.judge_cache:
        try:
            Path(args.judge_cache).mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise InputError(f"--judge-cache: cannot create the directory: {err}") from None
    return judge_settings(
        os.environ,
        model_pin=args.judge_model,
        cache_dir=args.judge_cache,
        parallelism=args.concurrency,
    )


def _judged_gate(results: Results, judged, code: int) -> int:  # type: ignore[no-untyped-def]
    """The gate's exit code, after saying what the judge did; exit 3 when only a Gemini
    outage (after retries) kept the gate from a verdict."""
    from .pipeline.judge import blocked_by_outage, no_key_advice

    if judged is not None and (advice := no_key_advice(judged)):
        print(f"warning: {advice}", file=sys.stderr)
    if code == EXIT_GATE_FAILED and blocked_by_outage(results, judged):
        print(
            "error: Gemini could not be reached for judged metrics (after retries); "
            "no verdict, re-run later",
            file=sys.stderr,
        )
        return EXIT_INFRASTRUCTURE
    return code


def _compare(args: argparse.Namespace) -> int:
    from .compare import compare_files

    diff, current = compare_files(
        args.current,
        args.baseline,
        fail_on=args.fail_on,
        min_delta=args.min_delta,
        history=args.history,
    )
    from .report.diff_console import table as diff_table

    if diff.baseline is None:
        print(f"warning: {diff.notes[0] if diff.notes else 'No baseline.'}", file=sys.stderr)
    if args.format in ("markdown", "summary"):
        text = _report(diff, current, args)
    else:
        text = diff.dump_json() if args.format == "json" else diff_table(diff)
    _emit(text, args.out)
    return EXIT_PASS if diff.verdict.passed else EXIT_GATE_FAILED


def _report(diff, current: Results, args: argparse.Namespace) -> str:  # type: ignore[no-untyped-def]
    """The comparison as markdown: the PR comment or the job summary (report/markdown.py)."""
    from .report import markdown

    render = markdown.comment if args.format == "markdown" else markdown.summary
    return render(diff, current, markdown.Options(check_name=args.check_name)).rstrip("\n")


def _merge(args: argparse.Namespace) -> int:
    from .compare.loading import load_results
    from .compare.merge import merge

    merged = merge([(path, load_results(path)) for path in args.shards])
    merged.write(Path(args.out))
    print(f"merged {len(args.shards)} shards, {len(merged.cases)} cases, into {args.out}")
    return EXIT_PASS


def _action(args: argparse.Namespace) -> int:
    from .action.main import main as action_main

    return action_main()


def _emit(text: str, out: str | None) -> None:
    if out is None:
        print(text)
        return
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n", encoding="utf-8")


def threshold_gate(results: Results) -> int:
    """Without a baseline: pass only if there were cases and every one passed (ADK-like)."""
    from .results import Status

    if results.cases and all(case.status == Status.PASSED for case in results.cases):
        return EXIT_PASS
    return EXIT_GATE_FAILED


def _run_cancellable(coroutine):  # type: ignore[no-untyped-def]
    """Run the coroutine; SIGTERM or SIGINT cancels it (raising CancelledError here)."""
    import asyncio

    async def main():  # type: ignore[no-untyped-def]
        task = asyncio.ensure_future(coroutine)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, task.cancel)
        return await task

    return asyncio.run(main())
