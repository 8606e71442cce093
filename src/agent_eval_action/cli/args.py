"""Flags shared by several commands, their types, and the options they make.

Defaults come from pipeline/options.py (declared once); nothing heavy is imported here.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from ..core import Axis, TrajectoryPolicy, parse_trajectory_policy
from ..errors import EXIT_BAD_INPUT, InputError
from ..evalset.discovery import EVAL_SUFFIXES
from ..pipeline.options import DEFAULTS, GateOptions, RunOptions

if TYPE_CHECKING:
    from ..pipeline.plan import Plan
    from ..runners import AgentChoice

FORMAT_HELP = "what to print (default table): markdown = the PR comment, summary = the job summary"


class Parser(argparse.ArgumentParser):
    """Usage errors as every other bad input: one line, `error: ...`, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"error: {message} (see {self.prog} --help)\n")


def output_file(text: str) -> str:
    """An argparse type: a file the command will write, refused before anything runs when
    it is a folder or a file stands where one of its folders must be (missing folders are
    made as it is written)."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: is a directory, not a file")
    folder = next((p for p in path.parents if p.exists()), None)
    if folder is not None and not folder.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: {folder} is a file, not a directory")
    return text


def history_file(text: str) -> str:
    """An argparse type: a `--history` path, a Results file (or main's record). A folder or
    an eval file is refused with the order that works: several paths may follow one
    --history (spread), so eval paths given after it are taken as its own."""
    if Path(text).is_dir():
        what = "a folder"
    elif text.endswith(EVAL_SUFFIXES) or text.partition(":")[0].endswith(EVAL_SUFFIXES):
        what = "an eval file"  # FILE, or FILE:id1,id2
    else:
        return text
    raise argparse.ArgumentTypeError(
        f"{text}: {what}, not a Results file; put the eval paths before --history: "
        "`run evals/ --history A B --command …`"
    )


def at_least(least: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least `least`."""

    def whole(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}, got {value}")
        return value

    return whole


positive_int, non_negative_int = at_least(1), at_least(0)


def trajectory_policy(text: str) -> TrajectoryPolicy:
    try:
        return parse_trajectory_policy(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def model_list(text: str) -> tuple[str, ...]:
    """Model names, comma-separated (at least one)."""
    models = tuple(name.strip() for name in text.split(",") if name.strip())
    if not models:
        raise argparse.ArgumentTypeError("name at least one model")
    return models


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def min_delta(text: str) -> tuple[Axis | None, float]:
    from ..compare.policy import parse_min_delta

    try:
        return parse_min_delta(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def budget(text: str) -> tuple[str, float]:
    from ..metrics.efficiency import parse_budget

    try:
        return parse_budget(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


MULTI_VALUE = ("--history", "--adk-history")


def spread(argv: Sequence[str]) -> list[str]:
    """`--history A B --flag` as `--history A --history B --flag`. Several values are taken
    only when another flag or `--` follows them; at the end of the command line the flag
    takes one value, and the rest are the eval paths (`run --adk-history DIR evals/`)."""
    out: list[str] = []
    tokens = list(argv)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token not in MULTI_VALUE:
            out.append(token)
            i += 1
            continue
        j = i + 1
        while j < len(tokens) and not tokens[j].startswith("-"):
            j += 1
        values = tokens[i + 1 : j]
        if j == len(tokens) and len(values) > 1:  # nothing follows: one value, then paths
            values, rest = values[:1], values[1:]
        else:
            rest = []
        out += [arg for value in values for arg in (token, value)] or [token]
        out += rest
        i = j
    return out


def add_eval_paths(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "eval_paths",
        nargs="+",
        metavar="EVAL_PATH",
        help="an eval file, a directory (every *.evalset.json / *.test.json below it), or FILE:id1,id2",
    )


def add_agent(parser: argparse.ArgumentParser) -> None:
    agents = parser.add_argument_group("the agent (one of)")
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
        action="append",
        metavar="PATH",
        help="score what `adk eval` ran: its .adk/eval_history result file or directory; "
        "repeat it for more (or give several before another flag or --)",
    )
    agents.add_argument(
        "--adk-app",
        metavar="NAME",
        help="with --adk-api: the app (agent folder) name on the server",
    )


def add_run_options(parser: argparse.ArgumentParser, *, judge: bool = True) -> None:
    """The flags of RunOptions (`judge`: with the judge's), plus --baseline and --shard."""
    run = DEFAULTS.run
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="test_config.json for every eval file (default: the one beside each file, else ADK's defaults)",
    )
    parser.add_argument(
        "--num-runs",
        type=positive_int,
        default=run.num_runs,
        metavar="N",
        help=f"runs per case (default {run.num_runs})",
    )
    parser.add_argument(
        "--concurrency",
        type=positive_int,
        default=run.concurrency,
        metavar="N",
        help=f"agent workers at once (default {run.concurrency})",
    )
    parser.add_argument(
        "--timeout",
        type=positive_float,
        default=run.timeout_s,
        metavar="SECONDS",
        help=f"limit for one case-run, all its turns (default {run.timeout_s:g})",
    )
    parser.add_argument(
        "--trajectory-policy",
        type=trajectory_policy,
        metavar="POLICY",
        help="override every trajectory match_type: business = IN_ORDER, strict = EXACT, "
        "any_order = ANY_ORDER (ADK's names exact, in_order, any_order work too)",
    )
    parser.add_argument(
        "--confirm-runs",
        type=non_negative_int,
        default=run.confirm_runs,
        metavar="N",
        help="with --baseline: re-run a regressed case up to N times, one at a time, before "
        f"blaming it (a case known to be deterministic is not re-run; 0: never; default {run.confirm_runs})",
    )
    parser.add_argument(
        "--confirm-limit",
        type=non_negative_int,
        default=run.confirm_limit,
        metavar="N",
        help=f"at most N confirmation re-runs in all (default {run.confirm_limit})",
    )
    parser.add_argument(
        "--initial-session",
        metavar="FILE",
        help="the session (app_name, user_id, state) of every legacy .test.json row file, as "
        "AgentEvaluator's initial_session_file (default: an initial.session.json beside the file)",
    )
    parser.add_argument(
        "--strip-thoughts",
        action="store_true",
        default=run.strip_thoughts,
        help="score response_match_score without the model's thought parts (ADK includes them)",
    )
    parser.add_argument(
        "--budget",
        type=budget,
        action="append",
        default=list(run.budgets),
        metavar="METRIC=MAX",
        help="fail the gate when a case's total of an efficiency metric (tool_call_count_v1, "
        "inference_call_count_v1, token_usage_v1, invocation_duration_v1) is above MAX; repeat it "
        "for more (default: efficiency is only reported)",
    )
    if judge:
        parser.add_argument(
            "--judge-model",
            metavar="NAME",
            help="judge model for every LLM-judged metric, overriding each criterion's (the pin)",
        )
        parser.add_argument(
            "--judge-models",
            type=model_list,
            default=run.judge_models,
            metavar="M1,M2",
            help="the models the judge may call, comma-separated (default: those with a price "
            "in the built-in table); a criterion or --judge-model naming another is bad input",
        )
        parser.add_argument(
            "--judge-max-calls",
            type=non_negative_int,
            default=run.judge_max_calls,
            metavar="N",
            help="the most calls on the judge's key, the judge's and the user simulator's "
            f"together, in all rounds (default {run.judge_max_calls}); a call past it is not "
            "made, counted as refused, and its case is not passed",
        )
        parser.add_argument(
            "--key-spent",
            type=output_file,
            metavar="FILE",
            help="write what this command spent of --judge-max-calls to FILE (JSON)",
        )
        parser.add_argument(
            "--judge-cache",
            metavar="DIR",
            help="keep judge verdicts in DIR and reuse them in later runs",
        )
        parser.add_argument(
            "--judge-cache-this-run",
            action="store_true",
            help="the --judge-cache DIR holds only verdicts asked in this run (the action's "
            "confirmation rounds): a verdict found there counts as the call it was",
        )
    parser.add_argument(
        "--baseline",
        metavar="BASE.json",
        help="a baseline Results file: compare with it and gate on regressions (its judge verdicts are reused for unchanged answers)",
    )
    parser.add_argument(
        "--shard",
        metavar="I/N",
        help="run only shard I of N (split by the baseline's case durations, else by a stable hash); "
        "write its Results without comparing: `merge` the shards, then `compare`",
    )


def add_hermetic(parser: argparse.ArgumentParser) -> None:
    """The hermetic-tools flags of `run` and `run-cases` (pipeline/hermetic.py)."""
    run = DEFAULTS.run
    parser.add_argument(
        "--tools-from-eval-file",
        action="store_true",
        default=run.tools_from_eval_file,
        help="with --agent: answer a tool call that matches an expected call of the turn "
        "(name and arguments) with its expected response from the eval file; the tool does not run",
    )
    parser.add_argument(
        "--replay-tools",
        action="store_true",
        default=run.replay_tools,
        help="with --agent and --baseline: answer a tool call with the response the baseline "
        "recorded for the same call (name and arguments) of the same case; the tool does not run",
    )
    parser.add_argument(
        "--replay-strict",
        action="store_true",
        default=run.replay_strict,
        help="with --tools-from-eval-file or --replay-tools: a call with no answer errors its "
        "case-run instead of running the tool",
    )


def add_paired(parser: argparse.ArgumentParser) -> None:
    """`run --paired REF` (pipeline/paired.py)."""
    parser.add_argument(
        "--paired",
        metavar="REF",
        default=None,
        help="deprecated, goes in the next minor release (a warning says so): "
        "with --baseline and --agent or --command: run each confirmation round's cases "
        "once more on REF's code (e.g. $(git merge-base HEAD main)), in a git worktree, as "
        "main's record of them; written to merge-base.json beside --out "
        f"(default: {'on' if DEFAULTS.run.paired else 'off'})",
    )


def add_recording(parser: argparse.ArgumentParser) -> None:
    """`run --record-baseline [--baseline-runs N]` (main's sampling, pipeline/confirm.py)."""
    runs = DEFAULTS.run.baseline_runs
    parser.add_argument(
        "--record-baseline",
        action="store_true",
        help="this run records main's baseline: it gates nothing (as --fail-on never) and "
        "runs no confirmation re-runs; instead each case runs again until main has "
        "--baseline-runs runs of it, counting --baseline's and --history's, or is seen to be "
        "deterministic (sampling runs, marked as such in the Results)",
    )
    parser.add_argument(
        "--baseline-runs",
        type=positive_int,
        default=runs,
        metavar="N",
        help=f"with --record-baseline: the runs on main each case is sampled to (1: none; "
        f"default {runs})",
    )


def add_merge_base_traces(parser: argparse.ArgumentParser) -> None:
    """`score`: the merge-base's traces the action's paired agent stages wrote."""
    parser.add_argument(
        "--merge-base-traces",
        action="append",
        default=[],
        metavar="FILE",
        help="the traces of paired runs on the merge-base's code (one file per round): scored "
        "into merge-base.json beside --out and compared as main's newest history",
    )
    parser.add_argument(
        "--merge-base-round",
        action="append",
        default=[],
        dest="merge_base_rounds",
        metavar="PLAN",
        help="the plan of each --merge-base-traces file's round (as run-cases' --confirm), in "
        "the same order: only the case-runs it names are accepted from that file",
    )
    parser.add_argument(
        "--merge-base", metavar="SHA", help="the commit --merge-base-traces ran (its source)"
    )


STDIN = "-"  # `run-cases --confirm -`: the round's plan on standard input


def round_plan(plan: Plan, where: str, *, stdin: bool = False) -> Plan:
    """A confirmation round's plan (pipeline/confirm.round_plan) from the file `where`, or
    (`stdin`, and `where` is "-") from standard input; at most files.MAX_FILE_BYTES."""
    from ..files import MAX_FILE_BYTES, decode, read_bytes
    from ..pipeline.confirm import round_plan as parse

    if not (stdin and where == STDIN):
        return parse(plan, decode(read_bytes(Path(where), where), where), where)
    display = "standard input"
    try:
        raw = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
    except (AttributeError, OSError, ValueError) as err:  # none, closed, or not readable
        raise InputError(f"cannot read the round's plan: {err}", display) from None
    if len(raw) > MAX_FILE_BYTES:
        raise InputError(f"the round's plan is over the limit of {MAX_FILE_BYTES} bytes", display)
    return parse(plan, decode(raw, display), display)


def rounds(
    plan: Plan, traces: Sequence[str], plans: Sequence[str], flag: str
) -> list[tuple[Path, Plan]]:
    """Each round's traces file with its round's plan (`flag` PLAN, given in the same
    order): a traces file without one, or a plan without a traces file, is bad input."""
    if len(plans) < len(traces):
        raise InputError(
            f"a confirmation round's traces file needs its round's plan ({flag} PLAN, in the "
            "order of the traces files)",
            traces[len(plans)],
        )
    if len(plans) > len(traces):
        raise InputError(
            f"{len(plans)} {flag} plan(s) for {len(traces)} round traces file(s): each {flag} "
            "is the plan of one, in the same order"
        )
    return [
        (Path(file), round_plan(plan, where)) for file, where in zip(traces, plans, strict=True)
    ]


def add_agent_cwd(parser: argparse.ArgumentParser) -> None:
    """`run-cases`: where a --command agent starts (a paired run: in the merge-base's
    worktree, while the eval paths stay the PR's)."""
    parser.add_argument(
        "--agent-cwd",
        metavar="DIR",
        help="start the --command agent in DIR (default: the current folder)",
    )


def add_gate_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fail-on",
        default=",".join(DEFAULTS.gate.fail_on),
        metavar="POLICY",
        help="regression (default), trajectory, response, threshold, never; or a comma list",
    )
    parser.add_argument(
        "--min-delta",
        type=min_delta,
        action="append",
        default=[],
        metavar="[AXIS=]X",
        help="smallest score drop that counts (defaults: any drop for trajectory, 0.1 for response)",
    )
    parser.add_argument(
        "--history",
        action="append",
        default=[],
        type=history_file,
        metavar="BASE.json",
        help="an older baseline from main, which tells noise from change; repeat it for more "
        "(or give several before another flag or --)",
    )


def add_report_options(parser: argparse.ArgumentParser, formats: tuple[str, ...]) -> None:
    parser.add_argument("--format", choices=formats, default="table", help=FORMAT_HELP)
    parser.add_argument(
        "--check-name",
        default=DEFAULTS.report.check_name,
        metavar="NAME",
        help=f"names the report's hidden sticky-comment marker (default {DEFAULTS.report.check_name})",
    )


def agent_choice(args: argparse.Namespace) -> AgentChoice:
    """The agent the flags of `add_agent` (and `--agent-cwd`) name, as runners/ takes it."""
    from ..runners import AgentChoice

    history = getattr(args, "adk_history", None)
    return AgentChoice(
        concurrency=args.concurrency,
        timeout=args.timeout,
        agent=getattr(args, "agent", None),
        command=getattr(args, "command", None),
        agent_cwd=getattr(args, "agent_cwd", None),
        adk_api=getattr(args, "adk_api", None),
        adk_app=getattr(args, "adk_app", None),
        adk_history=None if history is None else tuple(history),
    )


def run_options(args: argparse.Namespace) -> RunOptions:
    return RunOptions(
        num_runs=args.num_runs,
        concurrency=args.concurrency,
        timeout_s=args.timeout,
        trajectory_policy=args.trajectory_policy,
        judge_model=getattr(args, "judge_model", None),
        judge_models=getattr(args, "judge_models", DEFAULTS.run.judge_models),
        judge_max_calls=getattr(args, "judge_max_calls", DEFAULTS.run.judge_max_calls),
        judge_cache=getattr(args, "judge_cache", None),
        judge_cache_this_run=getattr(args, "judge_cache_this_run", False),
        config=args.config,
        confirm_runs=args.confirm_runs,
        confirm_limit=args.confirm_limit,
        baseline_runs=getattr(args, "baseline_runs", DEFAULTS.run.baseline_runs),
        paired=getattr(args, "paired", None) is not None
        or bool(getattr(args, "merge_base_traces", None)),
        initial_session=args.initial_session,
        strip_thoughts=args.strip_thoughts,
        budgets=tuple(dict(args.budget).items()),  # a metric named twice: the last one
        tools_from_eval_file=getattr(args, "tools_from_eval_file", False),
        replay_tools=getattr(args, "replay_tools", False),
        replay_strict=getattr(args, "replay_strict", False),
    )


def gate_options(args: argparse.Namespace) -> GateOptions:
    """The gate flags, checked (a bad policy is InputError before any agent runs)."""
    from ..pipeline.gate import gate_options as checked

    return checked(args.fail_on, args.min_delta)


def shard(args: argparse.Namespace) -> tuple[int, int] | None:
    if args.shard is None:
        return None
    from ..pipeline.shard import parse_shard

    try:
        return parse_shard(args.shard)
    except ValueError as err:
        raise InputError(str(err)) from None
