"""Runners: how the agent under test is run (docs/runner-protocol.md, docs/cli.md), chosen
by an `AgentChoice` (the CLI builds one from its flags: cli/args.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import InputError
from ..traces import CaseRunRequest, CaseRunTrace, NextUser, fixed_turns
from .base import OnTrace, Runner, RunnerStartError
from .tool_answers import HermeticTools

__all__ = ["AgentChoice", "Runner", "RunnerStartError", "adk_runner", "runner_for"]


@dataclass(frozen=True)
class AgentChoice:
    """Which agent runs, and how: one of `agent` (an ADK package run in this process),
    `command` (the runner protocol), `adk_api` with `adk_app` (a served agent) or
    `adk_history` (what `adk eval` ran)."""

    concurrency: int
    timeout: float
    agent: str | None = None
    command: str | None = None
    agent_cwd: str | None = None  # where a `command` starts (default: the current folder)
    adk_api: str | None = None
    adk_app: str | None = None
    adk_history: tuple[str, ...] | None = None


def runner_for(choice: AgentChoice, tools: HermeticTools | None = None) -> Runner:
    """The runner `choice` asks for; bad values are InputError (exit 2). `tools`: hermetic
    tools (the in-process ADK runner only: pipeline/hermetic.py checks)."""
    if choice.adk_app is not None and choice.adk_api is None:
        raise InputError("--adk-app NAME goes with --adk-api URL")
    if choice.command is not None:
        return _command_runner(choice)
    if choice.agent is not None:
        return adk_runner(
            choice.agent, concurrency=choice.concurrency, timeout=choice.timeout, tools=tools
        )
    if choice.adk_api is not None:
        return _adk_api_runner(choice)
    if choice.adk_history is not None:
        return _adk_history_runner(choice)
    raise InputError(
        "choose how to run the agent: --agent, --command, --adk-api with --adk-app, or --adk-history"
    )


def _command_runner(choice: AgentChoice) -> Runner:
    from .command import parse_command, run_command_suite

    command = choice.command or ""
    try:
        parse_command(command)
    except ValueError as err:
        raise InputError(f"--command: {err}") from None

    async def run_suite(
        requests: Sequence[CaseRunRequest],
        on_trace: OnTrace | None,
        next_user: NextUser = fixed_turns,
    ) -> list[CaseRunTrace]:
        return await run_command_suite(
            requests,
            command,
            concurrency=choice.concurrency,
            timeout=choice.timeout,
            on_trace=on_trace,
            cwd=choice.agent_cwd,
            next_user=next_user,
        )

    return Runner("command", command, run_suite)


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


def _adk_api_runner(choice: AgentChoice) -> Runner:
    from .adk_api import check_api_flags, run_api_suite

    url, app = check_api_flags(choice.adk_api, choice.adk_app)

    async def run_suite(
        requests: Sequence[CaseRunRequest],
        on_trace: OnTrace | None,
        next_user: NextUser = fixed_turns,
    ) -> list[CaseRunTrace]:
        return await run_api_suite(
            requests,
            url,
            app,
            concurrency=choice.concurrency,
            timeout=choice.timeout,
            on_trace=on_trace,
            next_user=next_user,
        )

    return Runner("adk_api", f"{url} app={app}", run_suite)


def _adk_history_runner(choice: AgentChoice) -> Runner:
    from .adk_history import load_history, run_history_suite

    paths = list(choice.adk_history or ())
    history = load_history(paths)

    async def run_suite(
        requests: Sequence[CaseRunRequest],
        on_trace: OnTrace | None,
        next_user: NextUser = fixed_turns,
    ) -> list[CaseRunTrace]:
        return await run_history_suite(requests, history, on_trace)

    return Runner("adk_history", " ".join(paths), run_suite, converses=False)
