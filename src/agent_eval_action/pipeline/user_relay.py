"""The user-turn relay: the user simulator on the privileged side, the agent elsewhere.

When the agent stage runs the PR's code (`run-cases` as the PR's user, in the action), the
user simulator must not run there: it holds the judge's key. `serve-users` runs it in a
process of its own, with the key, and the agent stage asks it for each user turn over a
pair of pipes (docs/runner-protocol.md, "The user-turn relay"). JSON lines, one request
and one answer at a time:

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
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, ValidationError

from ..errors import InputError
from ..evalset.models import Content
from ..traces import ActualTurn, CaseRunRequest, CaseRuns, Simulation, UserTurnError
from .plan import Plan

RELAY = 1
RECORD_SCHEMA = "agent-eval-simulations/1"
MAX_LINE = 64 * 1024 * 1024  # a request holds the whole conversation so far
MAX_EXTRA_RUNS = 100  # confirmation rounds run after the plan's runs: this many at most


class RelayClient:
    """The agent stage's NextUser: asks `serve-users` over the pipes (file descriptors)."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._reader = os.fdopen(read_fd, "r", encoding="utf-8", newline="\n")
        self._writer = os.fdopen(write_fd, "w", encoding="utf-8", newline="\n")
        self._lock = asyncio.Lock()
        self._ids = 0

    async def __call__(
        self, request: CaseRunRequest, turns: Sequence[ActualTurn]
    ) -> Content | None:
        if request.scenario is None:  # a static case: its own turns
            index = len(turns)
            return request.user_contents[index] if index < len(request.user_contents) else None
        async with self._lock:
            self._ids += 1
            ask = {
                "relay": RELAY,
                "id": self._ids,
                "eval_set_id": request.eval_set_id,
                "eval_id": request.eval_id,
                "run": request.run,
                "turns": [t.model_dump(mode="json", exclude_none=True) for t in turns],
            }
            line = await asyncio.to_thread(self._exchange, json.dumps(ask) + "\n")
        try:
            answer = json.loads(line)
            if answer.get("id") != self._ids:
                raise ValueError("an answer to another request")
            if answer.get("error"):
                raise UserTurnError(f"the user simulator: {answer['error']}")
            content = answer.get("user_content")
            return None if content is None else Content.model_validate(content)
        except (ValueError, AttributeError, ValidationError) as err:
            raise UserTurnError(f"the user-turn relay answered badly: {err}") from None

    def _exchange(self, line: str) -> str:
        try:
            self._writer.write(line)
            self._writer.flush()
            answer = self._reader.readline(MAX_LINE)
        except OSError as err:
            raise UserTurnError(f"the user-turn relay is gone: {err}") from None
        if not answer:
            raise UserTurnError("the user-turn relay closed")
        return answer

    def close(self) -> None:
        for stream in (self._writer, self._reader):
            with contextlib.suppress(OSError):
                stream.close()


class _Ask(BaseModel):
    relay: int
    id: int
    eval_set_id: str
    eval_id: str
    run: int
    turns: list[ActualTurn]


async def serve(plan: Plan, simulator: Any, inbound: IO[str], outbound: IO[str]) -> None:
    """Answer the agent stage's requests until it closes its end (`simulator`: a
    UserSimulator of this plan)."""
    requests = {(r.eval_set_id, r.eval_id): r for r in plan.requests if r.scenario is not None}
    while True:
        line = await asyncio.to_thread(inbound.readline, MAX_LINE)
        if not line:
            return
        answer: dict[str, Any]
        try:
            ask = _Ask.model_validate_json(line)
        except ValidationError as err:
            answer = {"id": None, "error": f"not a relay request: {err.errors()[0]['msg']}"}
        else:
            answer = {"id": ask.id}
            base = requests.get((ask.eval_set_id, ask.eval_id))
            if (
                ask.relay != RELAY
                or base is None
                or not 1 <= ask.run <= plan.num_runs + MAX_EXTRA_RUNS
            ):
                answer["error"] = "no scenario case-run of this suite"
            else:
                request = base.model_copy(update={"run": ask.run})
                try:
                    content = await simulator.next_user(request, ask.turns)
                except UserTurnError as err:
                    answer["error"] = str(err)
                else:
                    answer["user_content"] = (
                        None
                        if content is None
                        else content.model_dump(mode="json", exclude_none=True)
                    )
        try:
            outbound.write(json.dumps(answer) + "\n")
            outbound.flush()
        except BrokenPipeError:  # the agent stage is gone (it ended, or was killed)
            return


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
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps({"simulations": RECORD_SCHEMA, "runs": entries}), encoding="utf-8")
    tmp.replace(path)


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
