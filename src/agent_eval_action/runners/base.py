"""What every runner is: a way to turn case-run requests into traces.

A runner gets the case-runs to do and a callback for each finished one, and
returns one trace per request in request order. A runner that cannot start at
all raises RunnerStartError (the CLI reports it as bad input, exit 2); a case-run
that fails is a trace with `error` set, and the suite goes on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from ..core import RunnerKind
from ..traces import CaseRunRequest, CaseRunTrace

OnTrace = Callable[[CaseRunTrace], None]
RunSuite = Callable[[Sequence[CaseRunRequest], OnTrace | None], Awaitable[list[CaseRunTrace]]]


class RunnerStartError(Exception):
    """The agent cannot be started at all (e.g. its executable is not found)."""


@dataclass(frozen=True)
class Runner:
    kind: RunnerKind
    target: str  # what runs: the command, the agent directory, the server URL, ...
    run_suite: RunSuite
