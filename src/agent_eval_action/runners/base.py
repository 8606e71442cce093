"""What every runner is: a way to turn case-run requests into traces.

A runner gets the case-runs to do and a callback for each finished one, and
returns one trace per request in request order. A runner that cannot start at
all raises RunnerStartError (the CLI reports it as bad input, exit 2); a case-run
that fails is a trace with `error` set, and the suite goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..core import RunnerKind
from ..traces import CaseRunRequest, CaseRunTrace, NextUser, fixed_turns

OnTrace = Callable[[CaseRunTrace], None]


class RunSuite(Protocol):
    """Run the case-runs; `next_user` writes each user turn (the case's own by default; the
    user simulator's for scenario cases)."""

    async def __call__(
        self,
        requests: Sequence[CaseRunRequest],
        on_trace: OnTrace | None,
        next_user: NextUser = fixed_turns,
    ) -> list[CaseRunTrace]: ...


class RunnerStartError(Exception):
    """The agent cannot be started at all (e.g. its executable is not found)."""


@dataclass(frozen=True)
class Runner:
    kind: RunnerKind
    target: str  # what runs: the command, the agent directory, the server URL, ...
    run_suite: RunSuite
    # whether it runs the agent (and so needs the user simulator for scenario cases); the
    # ADK history runner reads conversations ADK already simulated
    converses: bool = True
