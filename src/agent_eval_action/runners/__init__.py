"""Runners: how the agent under test is run (DESIGN.md §3), chosen from the CLI flags."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ..errors import InputError
from ..traces import CaseRunRequest, CaseRunTrace
from .base import OnTrace, Runner, RunnerStartError

__all__ = ["Runner", "RunnerStartError", "runner_from_args"]


def runner_from_args(args: argparse.Namespace) -> Runner:
    """The runner the `run` flags ask for; bad flag values are InputError (exit 2)."""
    if args.command is not None:
        return _command_runner(args)
    raise InputError("choose how to run the agent: --command")


def _command_runner(args: argparse.Namespace) -> Runner:
    from .command import parse_command, run_command_suite

    try:
        parse_command(args.command)
    except ValueError as err:
        raise InputError(f"--command: {err}") from None

    async def run_suite(
        requests: Sequence[CaseRunRequest], on_trace: OnTrace | None
    ) -> list[CaseRunTrace]:
        return await run_command_suite(
            requests,
            args.command,
            concurrency=args.concurrency,
            timeout=args.timeout,
            on_trace=on_trace,
        )

    return Runner("command", args.command, run_suite)
