"""Run case-runs concurrently in this process: the pool the ADK runners share.

Each case-run opens a conversation (a session with the agent), plays its user
turns in order, and closes it. A case-run that fails, or overruns its timeout,
becomes a trace with `error` set that keeps its finished turns; the others go on.
Cancellation (SIGTERM/SIGINT in the CLI) cancels every case-run, lets each close
its conversation, and propagates.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path

from ..evalset.models import Content
from ..traces import (
    ActualTurn,
    CaseRunRequest,
    CaseRunTrace,
    NextUser,
    UserTurnError,
    fixed_turns,
    turn_place,
)
from .base import OnTrace

PlayTurn = Callable[[Content], Awaitable[ActualTurn]]
OpenConversation = Callable[[CaseRunRequest], AbstractAsyncContextManager[PlayTurn]]
ERROR_LIMIT = 400  # characters of an agent's exception message kept in a trace


class CaseRunError(Exception):
    """A case-run failed for a reason its message states in full (no type name needed)."""


NO_EVENTS = "the agent returned no events (it did not run)"


async def run_pool(
    requests: Sequence[CaseRunRequest],
    run_one: Callable[[CaseRunRequest], Awaitable[CaseRunTrace]],
    *,
    concurrency: int,
    on_trace: OnTrace | None = None,
) -> list[CaseRunTrace]:
    """Run every request, at most `concurrency` at once, started in request order.

    Returns one trace per request, in request order; `on_trace` is called as each
    case-run finishes.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, not {concurrency}")
    traces: list[CaseRunTrace | None] = [None] * len(requests)
    pending = iter(enumerate(requests))  # shared: each slot takes the next case-run

    async def slot() -> None:
        for index, request in pending:
            trace = await run_one(request)
            traces[index] = trace
            if on_trace is not None:
                on_trace(trace)

    async with asyncio.TaskGroup() as group:
        for _ in range(min(concurrency, len(requests))):
            group.create_task(slot())
    return [
        trace
        if trace is not None
        else CaseRunTrace(
            eval_set_id=request.eval_set_id,
            eval_id=request.eval_id,
            run=request.run,
            error="the runner stopped before this case-run finished",
        )
        for trace, request in zip(traces, requests, strict=True)
    ]


async def run_case_run(
    request: CaseRunRequest,
    open_conversation: OpenConversation,
    *,
    timeout: float,
    source_dir: Path | None = None,
    next_user: NextUser = fixed_turns,
) -> CaseRunTrace:
    """Play one case-run's turns in one conversation, within `timeout` seconds overall;
    `next_user` gives each user turn (the case's own, or the user simulator's).

    An exception from the agent is the trace's one-line error, located in the
    agent's own code (below `source_dir`) when the traceback reaches it.
    """
    trace = CaseRunTrace(eval_set_id=request.eval_set_id, eval_id=request.eval_id, run=request.run)
    phase = "while starting the session"
    started = time.monotonic()
    scope = asyncio.timeout(timeout)
    try:
        async with scope, open_conversation(request) as play:
            while True:
                phase = f"at {turn_place(request, len(trace.turns) + 1)}"
                user_content = await next_user(request, trace.turns)
                if user_content is None:
                    break
                turn = await play(user_content)
                if request.scenario is not None:
                    turn.user_content = user_content
                trace.turns.append(turn)
            phase = "while closing the session"
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # we are being cancelled (SIGTERM): stop
        # The agent's own code let a cancellation escape: its failure, not ours.
        trace.error = f"the agent's run was cancelled (asyncio.CancelledError) {phase}"
    except UserTurnError as exc:
        trace.error = f"{exc} {phase}"
    except Exception as exc:
        if isinstance(exc, TimeoutError) and scope.expired():
            trace.error = f"timed out after {timeout:g} s {phase}"
        else:
            trace.error = f"{describe_exception(exc, source_dir)} {phase}"
    trace.duration_s = time.monotonic() - started
    return trace


def describe_exception(exc: BaseException, source_dir: Path | None = None) -> str:
    """`Type: message (file.py:LINE)` on one line, shortened."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]  # a TaskGroup's wrapper says nothing about the cause
    message = " ".join(str(exc).split())
    if isinstance(exc, CaseRunError):
        return message
    if len(message) > ERROR_LIMIT:
        message = message[: ERROR_LIMIT - 1] + "…"
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    location = _location(exc, source_dir)
    return f"{text} ({location})" if location else text


def _location(exc: BaseException, source_dir: Path | None) -> str | None:
    if source_dir is None:
        return None
    root = source_dir.resolve()
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        try:
            relative = Path(frame.filename).resolve().relative_to(root)
        except ValueError:
            continue
        found = f"{(Path(root.name) / relative).as_posix()}:{frame.lineno}"
    return found
