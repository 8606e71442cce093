"""Hermetic tools: answers to an agent's tool calls that stand in for the tools
(docs/hermetic-tools.md). Pure bookkeeping, no google-adk: runners/adk.py asks it from
its plugin's `before_tool_callback`.

Two sources, each asked only when its flag is given:

- the eval file (`--tools-from-eval-file`): the expected calls of the case's current
  turn, each paired with its expected response (by id, else by position), in either
  intermediate-data form;
- a recording (`--replay-tools`): the tool calls and responses of the same case in the
  baseline's runs. A recorded call whose event did more than answer (changed state,
  transferred, escalated, wrote artifacts, asked for auth: any non-empty action) is not
  replayed, nor is one recorded without its actions (Results written before they were).

A call is matched by tool name and canonical arguments. Among recorded matches, those of
the same run number and turn come first (run N replays main's run N where it makes the
same calls, so N runs replay N recorded runs, not one of them N times), then the same turn
of other runs, then every other turn, in order of run and turn; within each, a recorded
call not yet used by this case-run first, so a call made twice gets both answers in order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ..evalset.models import EvalCase, FunctionResponse, Invocation
from ..traces import ToolTally


class Call(Protocol):
    """A tool call as the eval file (evalset.models) or the Results (results) hold it."""

    @property
    def name(self) -> str: ...
    @property
    def args(self) -> dict[str, Any] | None: ...
    @property
    def id(self) -> str | None: ...


class Response(Protocol):
    @property
    def response(self) -> dict[str, Any] | None: ...
    @property
    def id(self) -> str | None: ...


AnswerSource = Literal["eval_file", "recording"]
# the ADK tools that act on the session rather than on the world: never answered
SESSION_TOOLS = frozenset({"transfer_to_agent", "exit_loop"})
ARGS_SHOWN = 200  # characters of a missed call's arguments kept in its description


def canonical(args: Mapping[str, Any] | None) -> str:
    """The arguments as one string: keys sorted, whole floats as ints (ADK compares
    arguments with Python's ==, where 1 == 1.0), None and {} alike."""
    return json.dumps(_plain(args or {}), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _plain(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def effects(actions: Mapping[str, Any] | None) -> list[str]:
    """What an event's actions did besides carrying a tool's answer: the names of its
    non-empty actions (state_delta, transfer_to_agent, escalate, artifact_delta,
    requested_auth_configs, ...), sorted. Any one makes a recorded call unreplayable."""
    return sorted(str(name) for name, value in (actions or {}).items() if value)


@dataclass(frozen=True)
class Entry:
    """One call that can be answered: its tool, canonical arguments and response."""

    name: str
    args: str
    response: dict[str, Any]
    turn: int  # 0-based
    # what its recorded event did besides answering; None: not recorded (never replayed)
    effects: tuple[str, ...] | None = ()
    run: int = 0  # the recorded run's number (0: none, the eval file)


def paired(calls: Sequence[Call], responses: Sequence[Response]) -> list[tuple[Call, int | None]]:
    """Each call with the index of its response: the response with its id, else the one at
    its position (when that one has no other call's id); None when it has none."""
    by_id = {r.id: i for i, r in enumerate(responses) if r.id}
    ids = {c.id for c in calls if c.id}
    result: list[tuple[Call, int | None]] = []
    for index, call in enumerate(calls):
        if call.id and call.id in by_id:
            result.append((call, by_id[call.id]))
        elif index < len(responses) and (not responses[index].id or responses[index].id not in ids):
            result.append((call, index))
        else:
            result.append((call, None))
    return result


def _entries(
    turn: int,
    calls: Sequence[Call],
    responses: Sequence[Response],
    effects_of: Sequence[Sequence[str]] | Literal["none"] | None = "none",
    run: int = 0,
) -> list[Entry]:
    """The answerable calls of one turn. `effects_of`: per response, what its event did
    (a recording); None: a recording without them; "none": nothing to record (the eval file)."""
    entries = []
    for call, index in paired(calls, responses):
        response = None if index is None else responses[index].response
        if index is None or response is None:
            continue
        recorded: tuple[str, ...] | None = ()
        if effects_of is None:
            recorded = None
        elif effects_of != "none":
            recorded = tuple(effects_of[index]) if index < len(effects_of) else None
        entries.append(Entry(call.name, canonical(call.args), response, turn, recorded, run))
    return entries


def expected_responses(invocation: Invocation) -> list[FunctionResponse]:
    """A turn's expected tool responses, from either intermediate-data form."""
    data = invocation.intermediate_data
    if data is None:
        return []
    if hasattr(data, "tool_responses"):
        return list(data.tool_responses)
    return [
        part.function_response
        for event in data.invocation_events
        if event.content
        for part in event.content.parts or ()
        if part.function_response
    ]


def from_eval_case(case: EvalCase) -> list[Entry]:
    """The answers an eval case's expected turns hold (no scenario case has any)."""
    entries: list[Entry] = []
    for turn, invocation in enumerate(case.conversation or ()):
        entries += _entries(turn, invocation.tool_calls(), expected_responses(invocation))
    return entries


@dataclass(frozen=True)
class RecordedTurn:
    """One recorded turn of a case: its calls, their responses and their events' effects
    (None: not recorded)."""

    turn: int
    calls: Sequence[Call]
    responses: Sequence[Response]
    effects: Sequence[Sequence[str]] | None
    run: int = 0


def from_recording(turns: Iterable[RecordedTurn]) -> list[Entry]:
    """The answers of a case's recorded turns, in the order given (run, then turn)."""
    entries: list[Entry] = []
    for turn in turns:
        entries += _entries(turn.turn, turn.calls, turn.responses, turn.effects, turn.run)
    return entries


@dataclass(frozen=True)
class CaseAnswers:
    """What may answer one case's tool calls: the eval file's and the recording's."""

    eval_file: tuple[Entry, ...] = ()
    recording: tuple[Entry, ...] = ()


@dataclass(frozen=True)
class HermeticTools:
    """The run's hermetic-tools settings and every case's answers (by eval set and id)."""

    from_eval_file: bool = False
    replay: bool = False
    strict: bool = False
    cases: Mapping[tuple[str, str], CaseAnswers] = field(default_factory=dict)

    def book(self, eval_set_id: str, eval_id: str, run: int = 0) -> AnswerBook:
        """The answer book of run `run` of a case."""
        return AnswerBook(self, self.cases.get((eval_set_id, eval_id), CaseAnswers()), run=run)


class StrictMiss(Exception):
    """A call with no answer under --replay-strict: the case-run stops and is errored."""


@dataclass
class ToolAnswer:
    response: dict[str, Any]
    source: AnswerSource


@dataclass
class AnswerBook:
    """One case-run's answers and its tally; `turn` is the current turn (0-based), `run`
    the case-run's number."""

    tools: HermeticTools
    answers: CaseAnswers
    turn: int = 0
    run: int = 0
    tally: ToolTally = field(default_factory=ToolTally)
    strict_miss: str | None = None  # set once a call missed under --replay-strict
    _used: set[int] = field(default_factory=set)  # ids of the entries already answered

    def answer(self, name: str, args: Mapping[str, Any] | None) -> ToolAnswer | None:
        """The answer to a call, counted; None: the tool runs (counted as live). Under
        --replay-strict a miss raises StrictMiss instead (and is kept in `strict_miss`)."""
        key = canonical(args)
        refused: str | None = None
        if self.tools.from_eval_file:
            found = self._pick(self.answers.eval_file, name, key, same_turn_only=True)
            if found is not None:
                self.tally.from_eval_file += 1
                return ToolAnswer(found.response, "eval_file")
        if self.tools.replay:
            found = self._pick(self.answers.recording, name, key, same_turn_only=False)
            if found is not None and found.effects == ():
                self.tally.from_recording += 1
                return ToolAnswer(found.response, "recording")
            if found is not None:
                refused = (
                    "recorded without its event's actions (an older baseline): not replayed"
                    if found.effects is None
                    else f"its recorded call also did {', '.join(found.effects)}: not replayed"
                )
        self.miss(name, key, refused or self._no_match())
        return None

    def live(self) -> None:
        """A call that is never answered (a sub-agent as a tool, transfer_to_agent): it
        runs, and is no miss."""
        self.tally.live += 1

    def miss(self, name: str, key: str, why: str) -> None:
        shown = key if len(key) <= ARGS_SHOWN else key[: ARGS_SHOWN - 1] + "…"
        what = f"turn {self.turn + 1}: {name} {shown} ({why})"
        if self.tally.first_miss is None:
            self.tally.first_miss = what
        if self.tools.strict:
            self.strict_miss = self.strict_miss or what
            raise StrictMiss(what)
        self.tally.live += 1

    def _no_match(self) -> str:
        sources = []
        if self.tools.from_eval_file:
            sources.append("no expected call of this turn with these arguments")
        if self.tools.replay:
            sources.append("no recorded call of this case with these arguments")
        return "; ".join(sources)

    def _pick(
        self, entries: Sequence[Entry], name: str, key: str, *, same_turn_only: bool
    ) -> Entry | None:
        matches = [e for e in entries if e.name == name and e.args == key]
        if same_turn_only:
            matches = [e for e in matches if e.turn == self.turn]
        else:  # the same run and turn, then the same turn (stable: recorded order kept)
            matches.sort(key=lambda e: (e.turn != self.turn, e.run != self.run))
        fresh = [e for e in matches if id(e) not in self._used]
        if not matches:
            return None
        chosen = (fresh or matches)[0]
        self._used.add(id(chosen))
        return chosen
