"""The user-turn relay: the user simulator on the privileged side, the agent elsewhere.

When the agent stage runs the PR's code (`run-cases` as the PR's user, in the action), the
user simulator must not run there: it holds the judge's key. `serve-users` runs it in a
process of its own, with the key, and the agent stage asks it for each user turn over a
pair of pipes (docs/runner-protocol.md, "The user-turn relay"). JSON lines; the requests
of concurrent case-runs are in flight together, each answered by its id, in any order:

    agent stage -> serve-users  {"relay": 1, "id": N, "eval_set_id": S, "eval_id": E,
                                 "run": R, "turns": [ActualTurn, ...]}   the turns so far
    serve-users -> agent stage  {"id": N, "user_content": Content | null}  null: it is over
                                {"id": N, "error": "why"}                  the run errors

Every request comes from a process that ran the PR's code: `serve-users` answers only for
scenario cases of its own plan, at most the runs a stage can ask for, and turns that
validate, and writes each line it sends in full or not at all. How each conversation ended
and what it cost is written by `serve-users` to a record file the score stage trusts, never
taken from the agent stage's traces.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, ValidationError

from ..errors import InputError
from ..evalset.models import Content
from ..files import write_whole
from ..traces import ActualTurn, CaseRunRequest, CaseRuns, Simulation, UserTurnError
from .plan import Plan

RELAY = 1
RECORD_SCHEMA = "agent-eval-simulations/1"
MAX_LINE = 64 * 1024 * 1024  # a request holds the whole conversation so far
MAX_EXTRA_RUNS = 100  # confirmation rounds run after the plan's runs: this many at most
# requests serve-users answers at once (the simulator bounds its Gemini calls itself); it
# reads no more until one is answered, so a stage that floods it holds this many lines
MAX_IN_FLIGHT = 16
CLOSE_WAIT_S = 10.0  # for serve-users to finish after the agent stage closes its end


class RelayClient:
    """The agent stage's NextUser: asks `serve-users` over the pipes (file descriptors).

    The agent stage runs its case-runs at once, and each may be waiting for its next user
    turn: their requests are all in flight together, and a reader thread hands each answer
    to the request of its id. A thread, not the event loop: the pipe is read until
    `serve-users` closes it, which it does only after this side closes its own end."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._reader = os.fdopen(read_fd, "r", encoding="utf-8", newline="\n")
        self._writer = os.fdopen(write_fd, "w", encoding="utf-8", newline="\n")
        self._sending = threading.Lock()  # one whole line at a time
        self._guard = threading.Lock()  # the fields below
        self._pending: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future[str]]] = {}
        self._ids = itertools.count(1)
        self._gone: str | None = None  # why no more answers will come
        self._given_up: set[int] = set()  # requests whose case-run ended first (a timeout)
        self._thread: threading.Thread | None = None

    async def __call__(
        self, request: CaseRunRequest, turns: Sequence[ActualTurn]
    ) -> Content | None:
        if request.scenario is None:  # a static case: its own turns
            index = len(turns)
            return request.user_contents[index] if index < len(request.user_contents) else None
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[str] = loop.create_future()
        with self._guard:
            if self._gone is not None:
                raise UserTurnError(self._gone)
            ident = next(self._ids)
            self._pending[ident] = (loop, answer)
            if self._thread is None:
                self._thread = threading.Thread(target=self._read, name="relay", daemon=True)
                self._thread.start()
        ask = {
            "relay": RELAY,
            "id": ident,
            "eval_set_id": request.eval_set_id,
            "eval_id": request.eval_id,
            "run": request.run,
            "turns": [t.model_dump(mode="json", exclude_none=True) for t in turns],
        }
        try:
            await asyncio.to_thread(self._send, json.dumps(ask) + "\n")
            line = await answer
        finally:
            with self._guard:
                self._pending.pop(ident, None)
                if not answer.done() or answer.cancelled():  # its answer may still come
                    self._given_up.add(ident)
        try:
            parsed = json.loads(line)
            if parsed.get("error"):
                raise UserTurnError(f"the user simulator: {parsed['error']}")
            content = parsed.get("user_content")
            return None if content is None else Content.model_validate(content)
        except (ValueError, AttributeError, ValidationError) as err:
            raise UserTurnError(f"the user-turn relay answered badly: {err}") from None

    def _send(self, line: str) -> None:
        try:
            with self._sending:
                self._writer.write(line)
                self._writer.flush()
        except (OSError, ValueError) as err:  # ValueError: closed already
            raise UserTurnError(f"the user-turn relay is gone: {err}") from None

    def _read(self) -> None:
        """The reader thread: each answer to its request, until the relay closes (then
        every request still waiting fails, as do later ones)."""
        why = "the user-turn relay closed"
        try:
            while line := self._reader.readline(MAX_LINE):
                ident = _answer_id(line)
                with self._guard:
                    waiting = self._pending.get(ident) if ident is not None else None
                    late = ident in self._given_up
                    self._given_up.discard(ident)
                if late:  # to a request given up: nobody waits for it
                    continue
                if waiting is None:  # nothing to give it to: the relay is broken
                    why = "the user-turn relay answered badly: an answer to no request"
                    break
                _deliver(*waiting, line)
        except (OSError, ValueError) as err:
            why = f"the user-turn relay is gone: {err}"
        with self._guard:
            self._gone = why
            waiting_all = list(self._pending.values())
        for loop, future in waiting_all:
            _deliver(loop, future, UserTurnError(why))

    def close(self) -> None:
        """Close this side: `serve-users` sees the end, finishes, and closes its own."""
        with contextlib.suppress(OSError):
            self._writer.close()
        if self._thread is not None:
            self._thread.join(timeout=CLOSE_WAIT_S)
            if self._thread.is_alive():  # still reading: it dies with the process
                return
        with contextlib.suppress(OSError):
            self._reader.close()


def _answer_id(line: str) -> int | None:
    try:
        ident = json.loads(line).get("id")
    except (ValueError, AttributeError):
        return None
    return ident if isinstance(ident, int) else None


def _deliver(
    loop: asyncio.AbstractEventLoop, future: asyncio.Future[str], outcome: str | UserTurnError
) -> None:
    """Settle a request's future on its own loop (from the reader thread) with the answer's
    line or the error, unless it was given up (cancelled) or its loop has ended."""

    def on_loop() -> None:
        if future.done():
            return
        if isinstance(outcome, str):
            future.set_result(outcome)
        else:
            future.set_exception(outcome)

    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
        loop.call_soon_threadsafe(on_loop)


class _Ask(BaseModel):
    relay: int
    id: int
    eval_set_id: str
    eval_id: str
    run: int
    turns: list[ActualTurn]


async def serve(plan: Plan, simulator: Any, inbound: IO[str], outbound: IO[str]) -> None:
    """Answer the agent stage's requests until it closes its end (`simulator`: a
    UserSimulator of this plan), at most MAX_IN_FLIGHT at once, each as soon as it is
    ready; then return once every request read has been answered."""
    requests = {(r.eval_set_id, r.eval_id): r for r in plan.requests if r.scenario is not None}
    slots = asyncio.Semaphore(MAX_IN_FLIGHT)
    answering: set[asyncio.Task[None]] = set()
    gone = False  # the agent stage closed its end: answers go nowhere

    def send(answer: dict[str, Any]) -> None:
        nonlocal gone
        if gone:
            return
        try:  # one whole line, written and flushed with no await in between
            outbound.write(json.dumps(answer) + "\n")
            outbound.flush()
        except BrokenPipeError:  # the agent stage is gone (it ended, or was killed)
            gone = True

    async def answer(line: str) -> None:
        try:
            send(await _answer(line, requests, plan, simulator))
        finally:
            slots.release()

    while True:
        await slots.acquire()
        line = await asyncio.to_thread(inbound.readline, MAX_LINE)
        if not line:
            slots.release()
            break
        task = asyncio.create_task(answer(line))
        answering.add(task)
        task.add_done_callback(answering.discard)
    if answering:
        await asyncio.gather(*answering)


async def _answer(
    line: str, requests: dict[tuple[str, str], CaseRunRequest], plan: Plan, simulator: Any
) -> dict[str, Any]:
    """One request's answer: the next user turn, None when the conversation is over, or
    the error."""
    try:
        ask = _Ask.model_validate_json(line)
    except ValidationError as err:
        return {"id": None, "error": f"not a relay request: {err.errors()[0]['msg']}"}
    answer: dict[str, Any] = {"id": ask.id}
    base = requests.get((ask.eval_set_id, ask.eval_id))
    if ask.relay != RELAY or base is None or not 1 <= ask.run <= plan.num_runs + MAX_EXTRA_RUNS:
        answer["error"] = "no scenario case-run of this suite"
        return answer
    request = base.model_copy(update={"run": ask.run})
    try:
        content = await simulator.next_user(request, ask.turns)
    except UserTurnError as err:
        answer["error"] = str(err)
    else:
        answer["user_content"] = (
            None if content is None else content.model_dump(mode="json", exclude_none=True)
        )
    return answer


def write_record(path: Path, simulator: Any, plan: Plan) -> None:
    """How each simulated case-run ended and what it cost, for the score stage."""
    entries = []
    for key, scenario in plan.cases.items():
        if scenario[1].conversation_scenario is None:
            continue
        for run in range(1, plan.num_runs + MAX_EXTRA_RUNS + 1):
            found = simulator.simulation(key.eval_set_id, key.eval_id, run)
            if found is not None:
                entries.append(
                    {
                        "eval_set_id": key.eval_set_id,
                        "eval_id": key.eval_id,
                        "run": run,
                        **found.model_dump(mode="json"),
                    }
                )
    write_whole(path, json.dumps({"simulations": RECORD_SCHEMA, "runs": entries}))


def apply_records(case_runs: CaseRuns, paths: Sequence[Path]) -> None:
    """Put the relay's records on the traces of scenario case-runs (whatever the agent
    stage wrote there is dropped: only the privileged side knows)."""
    found: dict[tuple[str, str, int], Simulation] = {}
    for path in paths:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("simulations") != RECORD_SCHEMA:
                raise ValueError("not a simulations record")
            for entry in data["runs"]:
                key = (str(entry["eval_set_id"]), str(entry["eval_id"]), int(entry["run"]))
                found[key] = Simulation.model_validate(entry)
        except (OSError, ValueError, KeyError, TypeError, ValidationError) as err:
            raise InputError(f"cannot read the simulations record: {err}", str(path)) from None
    for trace in case_runs.traces:
        trace.simulation = found.get((trace.eval_set_id, trace.eval_id, trace.run))
