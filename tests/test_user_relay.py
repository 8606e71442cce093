"""The agent stage's side of the user-turn relay (pipeline/user_relay.RelayClient) against a
scripted `serve-users` on real pipes: answers matched by id, in any order, and a relay that
breaks fails the requests waiting on it instead of leaving them hanging."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable
from typing import IO

import pytest

from agent_eval_action.evalset.models import ConversationScenario
from agent_eval_action.pipeline.user_relay import RelayClient
from agent_eval_action.traces import CaseRunRequest, UserTurnError

Server = Callable[[IO[str], IO[str]], None]


def request(eval_id: str) -> CaseRunRequest:
    scenario = ConversationScenario(starting_prompt="hi", conversation_plan="ask for a refund")
    return CaseRunRequest(
        eval_set_id="chat", eval_id=eval_id, run=1, user_contents=[], scenario=scenario
    )


def relayed(server: Server) -> tuple[RelayClient, threading.Thread]:
    """A RelayClient whose pipes lead to `server(inbound, outbound)` in a thread."""
    to_server_r, to_server_w = os.pipe()
    to_agent_r, to_agent_w = os.pipe()

    def serve() -> None:
        with (
            os.fdopen(to_server_r, "r", encoding="utf-8") as inbound,
            os.fdopen(to_agent_w, "w", encoding="utf-8") as outbound,
        ):
            server(inbound, outbound)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return RelayClient(to_agent_r, to_server_w), thread


def say(outbound: IO[str], answer: dict) -> None:
    outbound.write(json.dumps(answer) + "\n")
    outbound.flush()


def ask_all(client: RelayClient, *eval_ids: str) -> list[object]:
    """Every request at once; each one's answer text, or the error it raised."""

    async def ask(eval_id: str) -> object:
        try:
            content = await client(request(eval_id), [])
        except UserTurnError as err:
            return err
        return None if content is None else content.parts[0].text

    async def every() -> list[object]:
        return list(await asyncio.gather(*(ask(e) for e in eval_ids)))

    return asyncio.run(asyncio.wait_for(every(), timeout=30))


def test_answers_given_in_another_order_reach_their_own_requests():
    def server(inbound: IO[str], outbound: IO[str]) -> None:
        asks = [json.loads(inbound.readline()) for _ in range(3)]  # all three are in flight
        for ask in reversed(asks):
            text = {"role": "user", "parts": [{"text": f"for {ask['eval_id']}"}]}
            say(outbound, {"id": ask["id"], "user_content": text})
        inbound.readline()  # until the client closes

    client, thread = relayed(server)
    try:
        assert ask_all(client, "a", "b", "c") == ["for a", "for b", "for c"]
    finally:
        client.close()
    thread.join(timeout=10)
    assert not thread.is_alive()


def test_a_relay_that_closes_fails_the_waiting_requests_and_every_later_one():
    def server(inbound: IO[str], outbound: IO[str]) -> None:
        ask = json.loads(inbound.readline())
        say(outbound, {"id": ask["id"], "user_content": None})  # "a" is over
        inbound.readline()  # "b" is read, and then the simulator's side goes away

    client, _ = relayed(server)
    try:
        first, second = ask_all(client, "a", "b")
        assert first is None
        assert isinstance(second, UserTurnError) and str(second) == "the user-turn relay closed"
        (later,) = ask_all(client, "c")
        assert isinstance(later, UserTurnError)
    finally:
        client.close()


@pytest.mark.parametrize("answer", ['{"id": 99, "user_content": null}', "not json"])
def test_an_answer_to_no_request_fails_what_waits_rather_than_hang(answer: str):
    def server(inbound: IO[str], outbound: IO[str]) -> None:
        inbound.readline()
        outbound.write(answer + "\n")
        outbound.flush()
        inbound.readline()

    client, _ = relayed(server)
    try:
        (failed,) = ask_all(client, "a")
        assert isinstance(failed, UserTurnError)
        assert str(failed).startswith("the user-turn relay answered badly")
    finally:
        client.close()


def test_the_simulators_error_fails_only_its_own_request():
    def server(inbound: IO[str], outbound: IO[str]) -> None:
        asks = [json.loads(inbound.readline()) for _ in range(2)]
        for ask in asks:
            if ask["eval_id"] == "a":
                say(outbound, {"id": ask["id"], "error": "Gemini said 400"})
            else:
                text = {"role": "user", "parts": [{"text": "A-1001."}]}
                say(outbound, {"id": ask["id"], "user_content": text})
        inbound.readline()

    client, _ = relayed(server)
    try:
        failed, answered = ask_all(client, "a", "b")
        assert str(failed) == "the user simulator: Gemini said 400" and answered == "A-1001."
    finally:
        client.close()


def test_a_late_answer_to_a_request_given_up_is_dropped_and_the_relay_goes_on():
    def server(inbound: IO[str], outbound: IO[str]) -> None:
        first = json.loads(inbound.readline())  # its case-run times out before the answer
        second = json.loads(inbound.readline())
        text = {"role": "user", "parts": [{"text": "late"}]}
        say(outbound, {"id": first["id"], "user_content": text})
        text = {"role": "user", "parts": [{"text": "in time"}]}
        say(outbound, {"id": second["id"], "user_content": text})
        inbound.readline()

    client, _ = relayed(server)

    async def both() -> object:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(client(request("a"), []), timeout=0.2)
        content = await asyncio.wait_for(client(request("b"), []), timeout=30)
        return None if content is None else content.parts[0].text

    try:
        assert asyncio.run(both()) == "in time"
    finally:
        client.close()
