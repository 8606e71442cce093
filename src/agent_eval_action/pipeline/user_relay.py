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

Every request comes from a process that ran the PR's code: `serve-users` answers only the
scenario case-runs of its own plan (the suite's, or the round's it is given), one request
of each at a time, and only when the request's user turns are exactly the ones it gave that
case-run so far (so the turn limit counts its own answers, and no turn is asked twice);
anything else is refused, counted on the case-run it names (which then errors), and costs
no call. It writes each line it sends in full or not at all. How each conversation ended
and what it cost is written by `serve-users` to a record file the score stage trusts, never
taken from the agent stage's traces, with the user turns it gave each case-run: a scenario
case-run is scored only if its traces hold exactly those turns (all of them, unless it
errored), and errors when no record of it came back.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import re
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, ValidationError

from ..core import CaseKey, RunKey
from ..errors import InputError
from ..evalset.models import Content
from ..files import read_text, write_whole
from ..traces import (
    ActualTurn,
    CaseRunRequest,
    CaseRuns,
    CaseRunTrace,
    Simulation,
    UserTurnError,
)
from .plan import Plan

RELAY = 1
RECORD_SCHEMA = "agent-eval-simulations/1"
MAX_LINE = 64 * 1024 * 1024  # a request holds the whole conversation so far
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


def _as_sent(content: Content | None) -> dict[str, Any] | None:
    return None if content is None else content.model_dump(mode="json", exclude_none=True)


@dataclass
class _Conversation:
    """One planned scenario case-run as the relay sees it: the user turns it gave, in
    order; `over` once it said the conversation ended or failed; `asking` while a request
    of it is being answered."""

    request: CaseRunRequest
    given: list[dict[str, Any]] = field(default_factory=list)
    over: bool = False
    asking: bool = False

    def refusal(self, turns: Sequence[ActualTurn]) -> str | None:
        """Why a request with these turns so far is not answered (None: it is). The turn
        limit holds because the turns must be the ones given: the simulator counts them."""
        if self.asking:
            return "its previous request is still being answered"
        if self.over:
            return "its conversation is over"
        if [_as_sent(turn.user_content) for turn in turns] != self.given:
            return f"its user turns so far are not the {len(self.given)} the relay gave"
        return None


class _Ledger:
    """The planned scenario case-runs of one agent stage (never more) and each one's
    conversation so far; a refused request is counted on the case-run it names, else on
    the first planned run of the case it names, else (no planned case) in `stray`."""

    def __init__(self, plan: Plan, simulator: Any) -> None:
        self.simulator = simulator
        self.runs = {r.run_key: _Conversation(r) for r in plan.requests if r.scenario is not None}
        self._firsts: dict[CaseKey, RunKey] = {}
        for key in sorted(self.runs, key=lambda k: k.run):
            self._firsts.setdefault(key.case, key)
        self.stray = 0

    def refuse(self, ident: int | None, key: RunKey | None, why: str) -> dict[str, Any]:
        """The answer refusing request `ident` (which names `key`), counted."""
        owner = key if key is None or key in self.runs else self._firsts.get(key.case)
        if owner is None:
            self.stray += 1
            return {"id": ident, "error": f"refused: {why}"}
        return {"id": ident, "error": str(self.simulator.refuse(owner, why))}


Given = dict[RunKey, list[dict[str, Any]]]  # the user turns given each scenario case-run


async def serve(plan: Plan, simulator: Any, inbound: IO[str], outbound: IO[str]) -> Given:
    """Answer the agent stage's requests until it closes its end (`simulator`: a
    UserSimulator of this plan), at most MAX_IN_FLIGHT at once, each as soon as it is
    ready; then, once every request read has been answered, the user turns given. Only
    the plan's scenario case-runs are answered, each only with the turns it was given."""
    ledger = _Ledger(plan, simulator)
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
            send(await _answer(line, ledger))
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
    if ledger.stray:
        print(
            f"serve-users: refused {ledger.stray} request(s) that named no planned scenario "
            "case-run",
            file=sys.stderr,
        )
    return {key: conversation.given for key, conversation in ledger.runs.items()}


async def _answer(line: str, ledger: _Ledger) -> dict[str, Any]:
    """One request's answer: the next user turn, None when the conversation is over, or
    the error (a refusal, counted)."""
    try:
        ask = _Ask.model_validate_json(line)
    except ValidationError as err:
        return ledger.refuse(None, None, f"not a relay request: {err.errors()[0]['msg']}")
    if ask.relay != RELAY:
        return ledger.refuse(ask.id, None, f"relay {ask.relay} is not relay {RELAY}")
    key = RunKey(ask.eval_set_id, ask.eval_id, ask.run)
    conversation = ledger.runs.get(key)
    if conversation is None:
        return ledger.refuse(ask.id, key, f"{key}: not a planned scenario case-run")
    why = conversation.refusal(ask.turns)
    if why is not None:
        return ledger.refuse(ask.id, key, f"{key}: {why}")
    conversation.asking = True
    try:
        said = _as_sent(await ledger.simulator.next_user(conversation.request, ask.turns))
    except UserTurnError as err:
        conversation.over = True
        return {"id": ask.id, "error": str(err)}
    finally:
        conversation.asking = False
    if said is None:
        conversation.over = True
    else:
        conversation.given.append(said)
    return {"id": ask.id, "user_content": said}


def write_record(path: Path, simulator: Any, plan: Plan, given: Given) -> None:
    """How each planned simulated case-run ended, what it cost (its refused requests too)
    and the user turns it was given, for the score stage."""
    entries = []
    for request in plan.requests:
        found = simulator.simulation(*request.run_key) if request.scenario else None
        if found is not None:
            key = {"eval_set_id": request.eval_set_id, "eval_id": request.eval_id}
            turns = {"user_turns": given.get(request.run_key, [])}
            entries.append({**key, "run": request.run, **found.model_dump(mode="json"), **turns})
    write_whole(path, json.dumps({"simulations": RECORD_SCHEMA, "runs": entries}))


NO_RECORD = (
    "the user simulator kept no record of this conversation (serve-users ended before "
    "writing one): what the agent stage says of it cannot be scored"
)
NOT_GIVEN = "its user turns in the agent stage's traces are not the {given} the user simulator gave"
# the judges print an event authored "user" as a USER line: in a scenario, only the user
# simulator speaks for the user
USER_EVENT = (
    "an event in the agent stage's traces is authored {author!r}, not an agent's name: the "
    "user's words come from the user simulator alone"
)


def apply_records(case_runs: CaseRuns, paths: Sequence[Path], scenario: set[CaseKey]) -> None:
    """Put the relay's records on the traces of scenario case-runs (whatever the agent
    stage wrote there is dropped: only the privileged side knows). A case-run of a
    `scenario` case errors when the relay refused a request of it, when no record of it
    came back, when its traces' user turns are not the ones the relay gave (all of them,
    unless the case-run errored), or when they hold an event authored "user": it is never
    passed on the agent stage's word."""
    found: dict[RunKey, tuple[Simulation, list[Any] | None]] = {}
    for path in paths:
        try:
            data = json.loads(read_text(path, str(path)))
            if data.get("simulations") != RECORD_SCHEMA:
                raise ValueError("not a simulations record")
            for entry in data["runs"]:
                key = RunKey(str(entry["eval_set_id"]), str(entry["eval_id"]), int(entry["run"]))
                turns = entry.get("user_turns")
                if turns is not None and not isinstance(turns, list):
                    raise ValueError("user_turns is not a list")
                found[key] = (Simulation.model_validate(entry), turns)
        except (OSError, ValueError, KeyError, TypeError, ValidationError) as err:
            raise InputError(f"cannot read the simulations record: {err}", str(path)) from None
    for trace in case_runs.traces:
        record = found.get(trace.run_key)
        trace.simulation = record[0] if record is not None else None
        if trace.key not in scenario or trace.not_run is not None:
            continue
        why = _unrecorded(trace, record)
        if why is not None:
            trace.error = why


def _unrecorded(
    trace: CaseRunTrace, record: tuple[Simulation, list[Any] | None] | None
) -> str | None:
    """Why a scenario case-run's traces cannot be scored as the relay recorded it, or None."""
    if record is None:
        return trace.error or NO_RECORD
    simulation, given = record
    if simulation.refused is not None:
        return f"the user simulator refused a request of this run: {simulation.refused}"
    if given is None:
        return None
    said = [_as_sent(turn.user_content) for turn in trace.turns]
    whole = said == given or (trace.error is not None and said == given[: len(said)])
    if not whole:
        return NOT_GIVEN.format(given=len(given))
    users = [e.author for t in trace.turns for e in t.invocation_events or () if _user(e.author)]
    return USER_EVENT.format(author=users[0]) if users else None


AGENT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")  # an ADK agent's name, and no more


def _user(author: str) -> bool:
    """Whether an event's author would speak for the user to the judges: "user" in any
    spelling, or anything but an agent's name (a line break in it prints a line of its own)."""
    return author.strip().lower() == "user" or AGENT_NAME.fullmatch(author) is None
