"""A scenario case simulated by real `adk eval` (ADK 2.13's own user simulator, pointed at
the fake Gemini through GOOGLE_GEMINI_BASE_URL), then scored from its eval history with
`--adk-history`: the simulated turns are read as ADK wrote them, no simulator call made."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.gemini import STOP_SIGNAL, FakeGemini
from helpers.paths import ROOT

from agent_eval_action.cli import main
from agent_eval_action.results import Results

pytestmark = [pytest.mark.e2e, pytest.mark.adk]
EXAMPLE = ROOT / "examples" / "customer_support"
STARTING = "Hi, my blender arrived broken. I want my money back."
EVALSET = {
    "eval_set_id": "chat",
    "eval_cases": [
        {
            "eval_id": "refund_chat",
            "conversation_scenario": {
                "starting_prompt": STARTING,
                "conversation_plan": "You want a refund for order B-2002. Give the order number when asked.",
            },
            "session_input": {
                "app_name": "customer_support",
                "user_id": "u1",
                "state": {"authenticated": True, "tier": "silver"},
            },
        }
    ],
}
CONFIG = {
    "criteria": {
        "per_turn_user_simulator_quality_v1": {
            "threshold": 0.5,
            "judge_model_options": {"num_samples": 1},
        }
    },
    "user_simulator_config": {"model": "gemini-2.5-flash", "max_allowed_invocations": 4},
}
ORDER_TURN = "It is order B-2002."


def adk_side(prompt: str) -> str:
    """The fake's answers to ADK's own prompts: its user simulator, then its judge."""
    if "Simulated User" in prompt:
        return STOP_SIGNAL if f"user: {ORDER_TURN}" in prompt else ORDER_TURN
    return '{"criteria": [], "is_valid": true}'


def test_adk_history_scores_what_adks_simulator_wrote(tmp_path, monkeypatch):
    shutil.copytree(EXAMPLE, tmp_path / "customer_support", ignore=shutil.ignore_patterns(".adk"))
    evals = tmp_path / "scenario_evals"
    evals.mkdir()
    (evals / "chat.evalset.json").write_text(json.dumps(EVALSET, indent=1))
    (evals / "test_config.json").write_text(json.dumps(CONFIG, indent=1))
    with FakeGemini() as fake:
        fake.respond(None, adk_side)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "google.adk.cli",
                "eval",
                "customer_support",
                str(evals / "chat.evalset.json"),
                "--config_file_path",
                str(evals / "test_config.json"),
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            env={
                **__import__("os").environ,
                "GOOGLE_API_KEY": "fake",
                "GOOGLE_GEMINI_BASE_URL": fake.url,
                "GOOGLE_GENAI_USE_VERTEXAI": "false",
            },
        )
        assert "Tests passed: 1" in done.stdout, done.stdout + done.stderr
        adk_calls = fake.calls()
        assert adk_calls >= 2  # ADK's simulator wrote the order turn and the stop
        history = tmp_path / "customer_support" / ".adk" / "eval_history"
        [result_file] = history.iterdir()

        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("GOOGLE_API_KEY", "fake")
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
        code = main(["run", str(evals), "--adk-history", str(result_file), "--out", "results.json"])
        results = Results.from_json(Path("results.json").read_text())
    case = results.cases[0]
    turns = case.runs[0].turns()
    assert [t.user_content.text() for t in turns] == [STARTING, ORDER_TURN]
    assert all(t.expected.final_response is None for t in turns)
    assert turns[1].actual is not None and turns[1].actual.tool_uses[0].name == "lookup_order"
    # scoring made judge calls only (our own prompt), never a simulator call
    assert results.usage.simulator_calls == 0 and results.usage.judge_calls == 2
    quality = case.informational["per_turn_user_simulator_quality_v1"]
    assert quality.invocations == ((1.0, 1.0),) and quality.score == 1.0
    assert code == 1  # no metric on an axis: the case is not evaluated, never passed
    assert case.status == "not_evaluated"
