"""Run an agent of any framework as worker processes speaking JSON lines.

`--command "CMD"` starts up to `concurrency` processes of CMD (split like a shell, no
shell) with credentials scrubbed from their environment. Each worker reads one JSON
request per line on stdin and answers each with exactly one JSON line on stdout; its
stderr is forwarded to ours, prefixed with the worker's name. All turns of one case-run
go to one worker, in order, and are followed by an "end" message that needs no answer:

    -> {"protocol": 1, "id": "r-1", "session_id": "set.case.run1", "eval_set_id": "set",
        "eval_id": "case", "run": 1, "turn": 0, "session_input": {...} | null,
        "user_content": {"role": "user", "parts": [{"text": "..."}]}}
    <- {"id": "r-1", "final_response": {...} | null, "tool_uses": [...],
        "tool_responses": [...], "intermediate_responses": [...], "usage": {...}}
    <- {"id": "r-1", "error": "message"}                     (the agent failed the turn)
    -> {"protocol": 1, "type": "end", "session_id": "set.case.run1"}

A worker that exits, answers anything else, or overruns the case-run's timeout fails
that case-run only (its finished turns are kept) and is replaced by a fresh process.

Each worker runs in a process group of its own and carries a scope mark (reaper.py): when
one of its case-runs ends, whatever detached from it meanwhile is killed (its own children
live on with it), and when it goes, its group and all it left go with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shlex
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from pydantic import ValidationError

from ..traces import (
    ActualTurn,
    CaseRunRequest,
    CaseRunTrace,
    NextUser,
    UserTurnError,
    fixed_turns,
    turn_place,
)
from .base import RunnerStartError
from .environment import scrubbed_environment
from .reaper import SCOPE_ENV, Reaper, current

PROTOCOL_VERSION = 1
# Agents may answer with very large JSON lines (whole documents as tool responses).
LINE_LIMIT = 64 * 1024 * 1024
# How long a worker gets to exit by itself once its stdin is closed.
EXIT_GRACE_S = 2.0
# A stderr line of a worker is forwarded to the log cut to this many bytes (docs/security.md).
STDERR_LINE_BYTES = 8 * 1024

_ANSWER_FIELDS = (
    "final_response",
    "tool_uses",
    "tool_responses",
    "intermediate_responses",
    "usage",
)


class _TurnFailed(Exception):
    """A worker failed the turn it was asked; the message is the one-line reason."""


def parse_command(command: str) -> list[str]:
    """Split an agent command like a shell would (no shell is involved)."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ValueError(f"cannot parse the agent command {command!r}: {exc}") from None
    if not argv:
        raise ValueError("the agent command is empty")
    return argv


async def run_command_suite(
    requests: Sequence[CaseRunRequest],
    command: str,
    *,
    concurrency: int = 8,
    timeout: float = 600.0,
    on_trace: Callable[[CaseRunTrace], None] | None = None,
    cwd: str | None = None,
    next_user: NextUser = fixed_turns,
) -> list[CaseRunTrace]:
    """Run every case-run on a pool of workers; one trace per request, in request order.

    `timeout` bounds one whole case-run. `on_trace` is called as each case-run finishes.
    Raises RunnerStartError if the command cannot be started. On cancellation every
    worker is killed before CancelledError propagates.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, not {concurrency}")
    if timeout <= 0:
        raise ValueError(f"timeout must be positive, not {timeout}")
    try:
        argv = parse_command(command)
    except ValueError as exc:
        raise RunnerStartError(str(exc)) from None

    env = scrubbed_environment(os.environ)
    reaper = current()
    traces: list[CaseRunTrace | None] = [None] * len(requests)
    pending = iter(enumerate(requests))  # shared by the slots: each takes the next case-run
    request_ids = (f"r-{n}" for n in itertools.count(1))

    async def slot(number: int) -> None:
        """One place in the pool: at most one worker at a time, started when needed."""
        worker: _Worker | None = None
        try:
            for index, request in pending:
                if worker is not None and not worker.alive:  # it died between case-runs
                    await worker.kill()
                    worker = None
                if worker is None:
                    worker = await _Worker.start(argv, cwd=cwd, env=env, slot=number, reaper=reaper)
                trace = await _run_case(worker, request, timeout, request_ids, next_user)
                if trace.error is not None or not await worker.end_session(request.session_id):
                    await worker.kill()  # the next case-run gets a fresh process
                    worker = None
                else:
                    worker.sweep()  # what detached during the case-run goes with it
                traces[index] = trace
                if on_trace is not None:
                    on_trace(trace)
        except BaseException:
            if worker is not None:
                await worker.kill()
            raise
        if worker is not None:
            await worker.close()

    tasks = [asyncio.create_task(slot(n)) for n in range(1, min(concurrency, len(requests)) + 1)]
    try:
        if tasks:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        # Stop the other slots if one failed or we are cancelled, and wait until each
        # has killed its worker: nothing is left running when we return or raise.
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
    for task in tasks:
        if not task.cancelled() and (error := task.exception()) is not None:
            raise error
    finished = [trace for trace in traces if trace is not None]
    assert len(finished) == len(requests)
    return finished


async def _run_case(
    worker: _Worker,
    request: CaseRunRequest,
    timeout: float,
    request_ids: Iterator[str],
    next_user: NextUser,
) -> CaseRunTrace:
    trace = CaseRunTrace(eval_set_id=request.eval_set_id, eval_id=request.eval_id, run=request.run)
    turn = 0
    started = time.monotonic()
    try:
        async with asyncio.timeout(timeout):
            while True:
                turn = len(trace.turns)
                user_content = await next_user(request, trace.turns)
                if user_content is None:
                    break
                message: dict[str, Any] = {
                    "protocol": PROTOCOL_VERSION,
                    "id": next(request_ids),
                    "session_id": request.session_id,
                    "eval_set_id": request.eval_set_id,
                    "eval_id": request.eval_id,
                    "run": request.run,
                    "turn": turn,
                    "session_input": (
                        request.session_input.model_dump(mode="json", exclude_none=True)
                        if request.session_input is not None
                        else None
                    ),
                    "user_content": user_content.model_dump(mode="json", exclude_none=True),
                }
                turn_started = time.monotonic()
                actual = _parse_answer(await worker.ask(message), message["id"])
                actual.duration_s = time.monotonic() - turn_started
                if request.scenario is not None:
                    actual.user_content = user_content
                trace.turns.append(actual)
    except TimeoutError:
        trace.error = f"timed out after {timeout:g} s at {turn_place(request, turn + 1)}"
    except (_TurnFailed, UserTurnError) as exc:
        trace.error = f"{exc} at {turn_place(request, turn + 1)}"
    trace.duration_s = time.monotonic() - started
    return trace


def _parse_answer(answer: Any, request_id: str) -> ActualTurn:
    if not isinstance(answer, dict):
        raise _TurnFailed(f"answered {type(answer).__name__} JSON, not an object")
    if "id" not in answer:
        raise _TurnFailed(f"answered without an id, expected {request_id}")
    if answer["id"] != request_id:
        raise _TurnFailed(f"answered id {_snippet(answer['id'])}, expected {request_id}")
    if answer.get("error") is not None:
        raise _TurnFailed(f"agent error: {_snippet(answer['error'], 300)}")
    if "final_response" not in answer:
        raise _TurnFailed('answer has no "final_response" (it may be null, not missing)')
    # A null list or usage means "none", as in languages that write every field.
    fields = {
        name: answer[name]
        for name in _ANSWER_FIELDS
        if name in answer and (answer[name] is not None or name == "final_response")
    }
    try:
        return ActualTurn.model_validate(fields)
    except ValidationError as exc:
        raise _TurnFailed(f"invalid answer: {_first_error(exc)}") from None


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    first = errors[0]
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"])
    text = f"{where.lstrip('.') or 'answer'}: {first['msg']}"
    if len(errors) > 1:
        text += f" (and {len(errors) - 1} more)"
    return text


def _snippet(value: Any, limit: int = 80) -> str:
    """Something a worker sent, shortened to one line for an error message."""
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    text = " ".join((value if isinstance(value, str) else json.dumps(value)).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Worker:
    """One agent process: a JSON line to its stdin, a JSON line back from its stdout."""

    def __init__(
        self, process: asyncio.subprocess.Process, name: str, reaper: Reaper, mark: str
    ) -> None:
        assert process.stdin and process.stdout and process.stderr
        self.process = process
        self.name = name
        self._reaper = reaper
        self._mark = mark  # its scope: what it starts carries the mark
        self._stdin: asyncio.StreamWriter = process.stdin
        self._stdout: asyncio.StreamReader = process.stdout
        self._stderr: asyncio.StreamReader = process.stderr
        self._last_stderr_line = ""
        self._stderr_task = asyncio.create_task(self._forward_stderr())

    @classmethod
    async def start(
        cls, argv: list[str], *, cwd: str | None, env: dict[str, str], slot: int, reaper: Reaper
    ) -> _Worker:
        mark = reaper.open()
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=cwd,
                env={**env, SCOPE_ENV: mark},
                limit=LINE_LIMIT,
                # Its own process group, so killing it also kills what it started.
                start_new_session=os.name == "posix",
            )
        except OSError as exc:
            reaper.close(mark)
            reason = f"{exc.strerror}: {exc.filename}" if exc.filename else str(exc)
            raise RunnerStartError(
                f"cannot start the agent command {shlex.join(argv)!r}: {reason}"
            ) from exc
        return cls(process, f"worker {slot} pid {process.pid}", reaper, mark)

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    async def ask(self, message: dict[str, Any]) -> Any:
        """Send one request and return the decoded JSON line that answers it."""
        await self._send(message)
        try:
            line = await self._stdout.readline()
        except ValueError:  # asyncio's "separator not found, chunk exceeds the limit"
            raise _TurnFailed(f"answered a line longer than {LINE_LIMIT >> 20} MiB") from None
        if not line.endswith(b"\n"):
            # End of stdout: the worker is exiting, and a partial line is no answer.
            raise _TurnFailed(await self._exit_reason())
        try:
            return json.loads(line)
        except ValueError:
            raise _TurnFailed(
                f"answered a line that is not JSON: {_snippet(line)!r} (write logs to stderr)"
            ) from None

    async def end_session(self, session_id: str) -> bool:
        """Tell the worker a case-run is over; False if it could not be told."""
        message = {"protocol": PROTOCOL_VERSION, "type": "end", "session_id": session_id}
        try:
            async with asyncio.timeout(EXIT_GRACE_S):
                await self._send(message)
        except (TimeoutError, _TurnFailed):
            return False
        return True

    async def close(self) -> None:
        """Close stdin so the worker can exit by itself; kill it after a short grace."""
        try:
            self._stdin.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.process.wait(), EXIT_GRACE_S)
        finally:
            await self.kill()

    def sweep(self) -> None:
        """Kill what detached from the worker (its own children are left to it)."""
        self._reaper.sweep(self._mark)

    async def kill(self) -> None:
        """Kill the worker and anything it started, and wait until it is gone."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if os.name == "posix":
                os.killpg(self.process.pid, signal.SIGKILL)
            else:
                self.process.kill()
        # Its exit, not process.wait(): that also waits for its pipes to close, which a
        # process that left its group (setsid) may hold open for ever.
        while self.process.returncode is None:
            await asyncio.sleep(0.01)
        # What left its group came back to the reaper as it died: it goes too, and with it
        # the pipes it held. (Without a reaper it may live on: then do not wait for ever.)
        self._reaper.close(self._mark)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.process.wait(), EXIT_GRACE_S)
        await asyncio.wait({self._stderr_task}, timeout=1.0)
        self._stderr_task.cancel()
        await asyncio.wait({self._stderr_task})

    async def _send(self, message: dict[str, Any]) -> None:
        try:
            self._stdin.write(json.dumps(message).encode() + b"\n")
            await self._stdin.drain()
        except OSError:  # BrokenPipeError, ConnectionResetError: it has exited
            raise _TurnFailed(await self._exit_reason()) from None

    async def _exit_reason(self) -> str:
        try:
            code = await asyncio.wait_for(self.process.wait(), EXIT_GRACE_S)
        except TimeoutError:
            return "worker closed its stdout"
        # Let the last stderr lines (often a traceback) arrive before quoting them.
        await asyncio.wait({self._stderr_task}, timeout=1.0)
        if code < 0:
            reason = f"worker was killed by signal {_signal_name(-code)}"
        else:
            reason = f"worker exited with code {code}"
        if self._last_stderr_line:
            reason += f" (last stderr line: {_snippet(self._last_stderr_line, 200)})"
        return reason

    async def _forward_stderr(self) -> None:
        while True:
            try:
                line = await self._stderr.readline()
            except ValueError:  # a line beyond LINE_LIMIT: asyncio has dropped it
                continue
            if not line:
                return
            text = _stderr_text(line)
            if text:
                self._last_stderr_line = text
                print(f"[{self.name}] {text}", file=sys.stderr, flush=True)


def _stderr_text(line: bytes) -> str:
    """A stderr line as forwarded: its first STDERR_LINE_BYTES bytes (cut at a UTF-8
    character's start), and how many bytes were cut."""
    size = len(line)
    while size and line[size - 1] in b" \t\n\r\x0b\x0c":
        size -= 1
    if size <= STDERR_LINE_BYTES:
        return line.decode(errors="replace").rstrip()
    end = STDERR_LINE_BYTES
    while end > STDERR_LINE_BYTES - 3 and line[end] & 0xC0 == 0x80:  # a continuation byte
        end -= 1
    return line[:end].decode(errors="replace") + f" …({size - end:,} bytes cut)"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
