"""Scenario cases under the action: the user simulator runs in `serve-users` with the
judge-only key and relays each user turn to the agent stage, which runs as the PR's user
without the key; on a fork (no key) the case is not run, never passed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.gemini import STOP_SIGNAL, FakeGemini
from helpers.action_harness import Runner, pr_payload
from helpers.paths import WORKERS, python_command

pytestmark = pytest.mark.e2e  # the action's entry point in a child process, against the fakes

SCRIPTED = WORKERS / "scripted_worker.py"
KEYS = "AGENT_EVAL_JUDGE_API_KEY INPUT_JUDGE-API-KEY GOOGLE_API_KEY GEMINI_API_KEY"


def scenario_suite(tmp: Path) -> Path:
    case = {
        "eval_id": "probe_chat",
        "conversation_scenario": {
            # the scripted worker answers "env NAMES" with those variables as it sees them
            "starting_prompt": f"env {KEYS}",
            "conversation_plan": "Ask about the keys, then end.",
        },
    }
    evals = tmp / "evals"
    evals.mkdir(parents=True, exist_ok=True)
    (evals / "chat.evalset.json").write_text(
        json.dumps({"eval_set_id": "chat", "eval_cases": [case]})
    )
    (evals / "test_config.json").write_text(
        json.dumps(
            {
                "criteria": {"safety_v1": 0.5},
                "user_simulator_config": {"max_allowed_invocations": 4},
            }
        )
    )
    return evals


def open_pr(runner: Runner) -> dict:
    fake = runner.fake
    main = fake.linear_history(2)
    head = fake.linear_history(1, parent=main[1], prefix="pr", branch="feature")[0]
    fake.add_pull(7, head, main[1])
    return pr_payload(7, head, main[1])


def test_the_simulator_relays_turns_and_its_key_never_reaches_the_agent(runner: Runner):
    payload = open_pr(runner)
    evals = scenario_suite(runner.tmp)
    with FakeGemini() as gemini:
        gemini.script("user", f"env {KEYS}", STOP_SIGNAL)
        env = runner.env(
            "pull_request",
            payload,
            evals=str(evals),
            command=python_command(SCRIPTED),
            baseline="none",
            **{"judge-api-key": "judge-only-key-42"},
        )
        env["GOOGLE_GEMINI_BASE_URL"] = gemini.url
        done = runner.run(env)
        simulator = [r for r in gemini.requests if r.kind == "user"]
        keys = {r.headers.get("x-goog-api-key") for r in gemini.requests}
    assert len(simulator) == 2 and keys == {"judge-only-key-42"}, done.stdout + done.stderr
    results = json.loads((runner.out_dir / "results.json").read_text())
    [case] = results["cases"]
    run = case["runs"][0]
    assert case["scenario"] and run["stop"] == "stop_signal"
    turns = run["invocations"]
    assert [t["user_content"]["parts"][0]["text"] for t in turns] == [f"env {KEYS}"] * 2
    for turn in turns:  # the agent stage saw none of the keys
        seen = json.loads(turn["actual"]["final_response"]["parts"][0]["text"])
        assert seen == dict.fromkeys(KEYS.split())
    # the simulator's work is the privileged side's record, in the usage
    assert results["usage"]["simulator_calls"] == 2
    assert case["status"] == "passed"


def test_without_a_key_the_action_records_the_scenario_not_run(runner: Runner):
    payload = open_pr(runner)
    evals = scenario_suite(runner.tmp)
    with FakeGemini() as gemini:
        env = runner.env(
            "pull_request",
            payload,
            evals=str(evals),
            command=python_command(SCRIPTED),
            baseline="none",
        )
        for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "AGENT_EVAL_JUDGE_API_KEY"):
            env.pop(name, None)
        env["GOOGLE_GEMINI_BASE_URL"] = gemini.url
        done = runner.run(env)
        calls = gemini.calls()
    assert calls == 0
    results = json.loads((runner.out_dir / "results.json").read_text())
    [case] = results["cases"]
    assert case["status"] == "not_evaluated" and "API key" in case["note"], done.stdout
    assert done.returncode != 0  # never passed
