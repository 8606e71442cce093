"""examples/customer_support/scenarios: the scenario case of the example agent, its user
simulator and judge against the fake Gemini, offline (README, "A scenario case")."""

from __future__ import annotations

import re

import pytest
from fakes.gemini import STOP_SIGNAL, FakeGemini
from helpers.paths import ROOT

from agent_eval_action.cli import main
from agent_eval_action.results import Results

pytestmark = pytest.mark.adk
EXAMPLE = ROOT / "examples" / "customer_support"
SCENARIOS = EXAMPLE / "scenarios"


def customer(prompt: str) -> str:
    """A customer who follows the example's plan: the order number when asked, thanks once
    refunded, then done."""
    history = prompt.split("<<<CONVERSATION>>>")[1]
    said = re.findall(r"^user: (.*)$", history, re.M)
    if len(said) == 1:
        return "It's order A-4471."
    if len(said) == 2:
        return "Great, thank you!"
    return STOP_SIGNAL


def test_the_example_scenario_runs_offline_against_the_fake(tmp_path, monkeypatch):
    pytest.importorskip("google.adk")
    with FakeGemini() as fake:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
        monkeypatch.setenv("GOOGLE_API_KEY", "fake")
        fake.respond("user", customer)
        out = tmp_path / "results.json"
        code = main(["run", str(SCENARIOS), "--agent", str(EXAMPLE), "--out", str(out)])
        results = Results.from_json(out.read_text())
        calls = {kind: fake.calls(kind) for kind in ("user", "user_turn", "rubrics")}
        simulator_prompt = next(r.prompt for r in fake.requests if r.kind == "user")
    assert code == 0
    [case] = results.cases
    run = case.runs[0]
    assert [inv.user_content.text() for inv in run.turns()] == [
        "Hi, my blender arrived broken and I'd like a refund.",
        "It's order A-4471.",
        "Great, thank you!",
    ]
    assert run.stop == "stop_signal" and case.scenario
    refund = run.turns()[1].actual
    assert refund is not None and [c.name for c in refund.tool_uses] == [
        "lookup_order",
        "issue_refund",
    ]
    assert case.status == "passed"
    assert case.metrics["rubric_based_multi_turn_trajectory_quality_v1"].score == 1.0
    assert case.informational["per_turn_user_simulator_quality_v1"].score == 1.0
    # 3 simulator calls (turns 2, 3 and the stop); the quality judge 5 samples for turns 2,
    # 3 and the stop check; the conversation judge 5 samples once
    assert calls == {"user": 3, "user_turn": 15, "rubrics": 5}
    assert results.usage.simulator_calls == 3 and results.usage.judge_calls == 20
    # the NOVICE persona, from ADK's registry, shaped the simulator's prompt
    from google.adk.evaluation.simulation.pre_built_personas import (
        get_default_persona_registry,
    )

    novice = get_default_persona_registry().get_persona("NOVICE")
    assert novice.description in simulator_prompt
