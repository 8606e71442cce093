"""The example support agent, driven through the command runner with its own eval files."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from pathlib import Path

from agent_eval_action.evalset.models import Content, SessionInput
from agent_eval_action.runners.command import run_command_suite
from agent_eval_action.traces import CaseRunRequest, CaseRunTrace

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
AGENT = shlex.join([sys.executable, str(EXAMPLES / "agent" / "support_agent.py")])
FAILS_ON_PURPOSE = "gold_express_refund"


def run_agent(requests: list[CaseRunRequest]) -> list[CaseRunTrace]:
    traces = asyncio.run(run_command_suite(requests, AGENT, concurrency=2, timeout=30))
    for request, trace in zip(requests, traces, strict=True):
        assert trace.error is None, trace.error
        assert len(trace.turns) == len(request.user_contents)
        assert all(turn.final_response and turn.final_response.text() for turn in trace.turns)
    return traces


def trajectories(trace: CaseRunTrace) -> list[list[tuple[str, dict]]]:
    return [[(call.name, call.args) for call in turn.tool_uses] for turn in trace.turns]


def test_support_evalset_passes_except_the_deliberate_failure():
    evalset = json.loads((EXAMPLES / "evals" / "support.evalset.json").read_text())
    cases = evalset["eval_cases"]
    requests = [
        CaseRunRequest(
            eval_set_id=evalset["eval_set_id"],
            eval_id=case["eval_id"],
            run=1,
            session_input=SessionInput.model_validate(case["session_input"]),
            user_contents=[Content.model_validate(t["user_content"]) for t in case["conversation"]],
        )
        for case in cases
    ]

    traces = run_agent(requests)

    assert len(cases) >= 5
    assert any(len(case["conversation"]) > 1 for case in cases)
    for case, trace in zip(cases, traces, strict=True):
        expected = [
            [(use["name"], use["args"]) for use in t["intermediate_data"]["tool_uses"]]
            for t in case["conversation"]
        ]
        if case["eval_id"] == FAILS_ON_PURPOSE:
            # The express path refunds without looking the order up first.
            assert trajectories(trace) != expected
            assert trajectories(trace) == [
                [("issue_refund", {"order_id": "A-3090", "reason": "damaged"})]
            ]
        else:
            assert trajectories(trace) == expected, case["eval_id"]


def test_legacy_faq_rows_are_one_conversation_that_matches():
    rows = json.loads((EXAMPLES / "evals" / "legacy" / "faq.test.json").read_text())
    request = CaseRunRequest(
        eval_set_id="legacy",
        eval_id="faq",
        run=1,
        user_contents=[Content.from_text(row["query"], role="user") for row in rows],
    )

    [trace] = run_agent([request])

    assert trajectories(trace) == [
        [(use["tool_name"], use["tool_input"]) for use in row["expected_tool_use"]] for row in rows
    ]
