"""Runners: how the agent under test is run (docs/runner-protocol.md, docs/cli.md), chosen from the CLI flags."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ..errors import InputError
from ..traces import CaseRunRequest, CaseRunTrace, NextUser, fixed_turns
from .base import OnTrace, Runner, RunnerStartError
from .tool_answers import HermeticTools

__all__ = ["Runner", "RunnerStartError", "adk_runner", "runner_from_args"]


def runner_from_args(args: argparse.Namespace, tools: HermeticTools | None = None) -> Runner:
    """The runner the `run` flags ask for; bad flag values are InputError (exit 2).
    `tools`: hermetic tools (the in-process ADK runner only: pipeline/hermetic.py checks)."""
    if getattr(args, "adk_app", None) is not None and getattr(args, "adk_api", None) is None:
        raise InputError("--adk-app NAME goes with --adk-api URL")
    if args.command is not None:
        return _command_runner(args)
    if getattr(args, "agent", None) is not None:
        return adk_runner(
            args.agent, concurrency=args.concurrency, timeout=args.timeout, tools=tools
        )
    if getattr(args, "adk_api", None) is not None or getattr(args, "adk_app", None) is not None:
        return _adk_api_runner(args)
    if getattr(args, "adk_history", None) is not None:
        return _adk_history_runner(args)
    raise InputError(
        "choose how to run the agent: --agent, --command, --adk-api with --adk-app, or --adk-history"
    )


def _command_runner(args: argparse.Namespace) -> Runner:
    from .command import parse_command, run_command_suite

    try:
        parse_command(args.command)
    except ValueError as err:
        raise InputError(f"--command: {err}") from None

    async def run_suite(
        requests: Sequence[CaseRunRequest],
        on_trace: OnTrace | None,
        next_user: NextUser = fixed_turns,
    ) -> list[CaseRunTrace]:
        return await run_command_suite(
            requests,
            args.command,
            concurrency=args.concurrency,
            timeout=args.timeout,
            on_trace=on_trace,
            cwd=getattr(args, "agent_cwd", None),
            next_user=next_user,
        )

    return Runner("command", args.command, run_suite)


def adk_runner(
    agent: str,
    *,
    concurrency: int,
    timeout: float,
    flag: str = "--agent",
    tools: HermeticTools | None = None,
) -> Runner:
    """The in-process ADK runner of the agent package directory `agent` (its target);
    `tools`: answer tool calls from the eval file or a recording."""
    from .adk import agent_directory, require_adk, run_adk_suite

    require_adk(flag)
    directory = agent_directory(agent)

    async def run_suite(
        requests: Sequence[CaseRunRequest],
        on_trace: OnTrace | None,
        next_user: NextUser = fixed_turns,
    ) -> list[CaseRunTrace]:
        return await run_adk_suite(
            requests,
            directory,
            concurrency=concurrency,
            timeout=timeout,
            on_trace=on_trace,
            next_user=next_user,
            tools=tools,
        )

    return Runner("adk", agent, run_suite)


def _adk_api_runner(args: argparse.Namespace) -> Runner:
    from .adk_api import check_api_flags, run_api_suite

    url, app = check_api_flags(args.adk_api, args.adk_app)

    async def run_suite(
        requests: Sequence[CaseRunRequest],
        on_trace: OnTrace | None,
        next_user: NextUser = fixed_turns,
    ) -> list[CaseRunTrace]:
        return await run_api_suite(
            requests,
            url,
            app,
            concurrency=args.concurrency,
            timeout=args.timeout,
            on_trace=on_trace,
            next_user=next_user,
        )

    return Runner("adk_api", f"{url} app={app}", run_suite)


def _adk_history_runner(args: argparse.Namespace) -> Runner:
    from .adk_history import load_history, run_history_suite

    history = load_history(args.adk_history)

    async def run_suite(
        requests: Sequence[CaseRunRequest],
        on_trace: OnTrace | None,
        next_user: NextUser = fixed_turns,
    ) -> list[CaseRunTrace]:
        return await run_history_suite(requests, history, on_trace)

    return Runner("adk_history", " ".join(args.adk_history), run_suite, converses=False)
