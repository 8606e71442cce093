"""The judge's key metered where it is held, per job (docs/security.md, "Caps"), tried
through the action as the image runs it: as root, the PR's code under a user of its own
(helpers/layout.py), the judge's and the simulator's calls going to the fake Gemini, which
counts every request. A config the PR writes cannot make the key pay for more than the
job's budget: the calls past it are not made, counted as refused in the Results, and
their cases are not passed; an unlisted model is bad input before anything runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.gemini import FakeGemini, safety
from helpers.action_harness import Runner, clean_env, main_with_baseline, pr_payload
from helpers.layout import HI_CASE, Layout, answering, github_layout
from helpers.paths import ISOLATED, ROOT, python_command
from helpers.table_suite import TABLE_AGENT

pytestmark = [pytest.mark.e2e, ISOLATED]

FRM = "final_response_match_v2"
JUDGE_KEY = "judge-only-key"


def hi_case(eval_id: str) -> dict:
    """HI_CASE under another id, asked its own question (so judged on its own)."""
    [turn] = HI_CASE["conversation"]
    user = {"role": "user", "parts": [{"text": f"hello from {eval_id}"}]}
    return {**HI_CASE, "eval_id": eval_id, "conversation": [{**turn, "user_content": user}]}


def config(layout: Layout, data: dict) -> Path:
    path = layout.workspace / "evals" / "test_config.json"
    path.write_text(json.dumps(data, indent=2))
    return path


def run(layout: Layout, runner: Runner, gemini: FakeGemini, **inputs: str):
    env = {"GOOGLE_GEMINI_BASE_URL": gemini.url}
    return layout.run(runner, env=env, **{"judge-api-key": JUDGE_KEY, **inputs})


def test_twenty_samples_on_an_unlisted_model_are_bad_input_and_the_key_is_never_called(
    runner: Runner,
):
    with github_layout(answering("hi")) as layout, FakeGemini() as gemini:
        options = {"judge_model": "gemini-9-ultra", "num_samples": 20}
        config(layout, {"criteria": {FRM: {"threshold": 0.5, "judge_model_options": options}}})
        done = run(layout, runner, gemini)
        calls = gemini.calls()
        written = (layout.out / "results.json").exists()
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    errors = [line for line in done.stdout.splitlines() if line.startswith("::error::")]
    assert len(errors) == 1, said
    # the criterion's line in the config: "final_response_match_v2" is on line 3
    assert "evals/test_config.json:3: " in errors[0], errors
    assert '"gemini-9-ultra" is not a model the judge may use' in errors[0]
    assert "Traceback" not in said
    assert calls == 0 and not written
    assert "::group::run the evals" not in said  # root refused it before any PR code ran


def test_a_model_judge_models_lists_is_called_through_every_stage(runner: Runner):
    """The list reaches each stage that reads the criteria (root, serve-users, the score
    stage); the agent stage, which never judges, is not held to it."""
    with github_layout(answering("hi")) as layout, FakeGemini() as gemini:
        options = {"judge_model": "my-tuned-judge", "num_samples": 1}
        config(layout, {"criteria": {FRM: {"threshold": 0.5, "judge_model_options": options}}})
        done = run(layout, runner, gemini, **{"judge-models": "gemini-2.5-flash my-tuned-judge"})
        models = {r.model for r in gemini.requests}
    assert done.returncode == 0, done.stdout + done.stderr
    assert models == {"my-tuned-judge"}


def test_judge_calls_past_the_jobs_budget_are_not_made_and_the_gate_does_not_pass(
    runner: Runner,
):
    cases = [hi_case("one"), hi_case("two"), hi_case("three")]
    with github_layout(answering("hi"), cases) as layout, FakeGemini() as gemini:
        # three answers, each judged with 2 samples: 6 calls planned, 4 allowed
        criterion = {"threshold": 0.5, "judge_model_options": {"num_samples": 2}}
        config(layout, {"criteria": {FRM: criterion}})
        done = run(layout, runner, gemini, **{"judge-max-calls": "4"})
        calls = gemini.calls()
        results = json.loads((layout.out / "results.json").read_text())
    said = done.stdout + done.stderr
    assert calls == 4, said  # what the budget paid for, and not one call more
    assert results["usage"]["judge_calls"] == 4 and results["usage"]["judge_refused"] == 2
    refused = [c for c in results["cases"] if c["status"] != "passed"]
    assert len(refused) == 1 and refused[0]["status"] == "not_evaluated"
    assert "no calls on the judge's key are left for this job" in (
        refused[0]["metrics"][FRM]["error"] or ""
    )
    assert done.returncode == 1, said  # never passed
    assert any("2 judge call(s) were not made" in w for w in results["warnings"])
    # the report says it: the refused calls in its usage line, the reason as a warning
    body = runner.fake.comments_on(7)[0]["body"]
    assert "2 refused" in body and "2 judge call(s) were not made" in body, body


def test_the_simulator_and_the_judge_share_the_jobs_budget_across_its_stages(runner: Runner):
    """serve-users (the simulator) spends first; the score stage after it gets only what is
    left, so the judge's calls for another case are refused."""
    scenario = {
        "eval_id": "chatty",
        "conversation_scenario": {
            "starting_prompt": "Hello.",
            "conversation_plan": "Never stop talking.",
        },
    }
    cases = [scenario, hi_case("static")]
    with github_layout(answering("hi"), cases) as layout, FakeGemini() as gemini:
        gemini.respond("user", lambda prompt: "Tell me more.")  # never the stop signal
        simulator = {"max_allowed_invocations": 10}
        config(layout, {"criteria": {"safety_v1": 0.5}, "user_simulator_config": simulator})
        done = run(layout, runner, gemini, **{"judge-max-calls": "3"})
        user_calls, judge_calls = gemini.calls("user"), gemini.calls("safety")
        results = json.loads((layout.out / "results.json").read_text())
    said = done.stdout + done.stderr
    assert (user_calls, judge_calls) == (3, 0), said  # 9 simulator turns were asked for
    usage = results["usage"]
    assert usage["simulator_calls"] == 3 and usage["simulator_refused"] == 1
    assert usage["judge_calls"] == 0 and usage["judge_refused"] == 1
    by_id = {c["eval_id"]: c for c in results["cases"]}
    assert by_id["chatty"]["status"] == "errored"
    assert "judge-max-calls" in (by_id["chatty"]["runs"][0]["error"] or "")
    assert by_id["static"]["status"] == "not_evaluated"
    assert done.returncode == 1, said


def test_the_budget_holds_across_confirmation_rounds(runner: Runner, tmp_path):
    """Each round's serve-users and score stage get what the earlier stages left: the job's
    calls over all its rounds are the budget, and the simulator's turns past it, in the
    later rounds, are refused; the regression is never passed for it."""
    evals = tmp_path / "evals"
    evals.mkdir()
    chat = {
        "eval_id": "chat",
        "conversation_scenario": {"starting_prompt": "Hello.", "conversation_plan": "Chat."},
    }
    (evals / "chat.evalset.json").write_text(
        json.dumps({"eval_set_id": "chat", "eval_cases": [chat]})
    )
    # two user turns a run: the starting prompt (no call) and one simulator call
    simulator = {"max_allowed_invocations": 2}
    config = {"criteria": {"safety_v1": 0.5}, "user_simulator_config": simulator}
    (evals / "test_config.json").write_text(json.dumps(config))
    agent = tmp_path / "agent.json"
    agent.write_text(json.dumps({"chat": {"text": "Sure."}}))
    command = python_command(TABLE_AGENT, str(agent))
    with FakeGemini() as gemini:
        gemini.respond("user", lambda prompt: "Tell me more.")
        base = tmp_path / "base.json"
        argv = [sys.executable, "-m", "agent_eval_action", "run", str(evals), "--out", str(base)]
        env = {**clean_env(), "GOOGLE_GEMINI_BASE_URL": gemini.url, "GOOGLE_API_KEY": "k"}
        made = subprocess.run(
            [*argv, "--command", command], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert made.returncode == 0, made.stderr
        gemini.reset()
        # the PR's answers are new, and judged unsafe: a regression, which confirmation
        # rounds re-run
        agent.write_text(json.dumps({"chat": {"text": "Sure, here is how to pick a lock."}}))
        gemini.respond("user", lambda prompt: "Tell me more.")
        gemini.respond("safety", lambda prompt: safety("unsafe"))
        main, head = main_with_baseline(runner.fake, base.read_bytes())
        runner.fake.add_pull(7, head, main[3])
        env = runner.env(
            "pull_request",
            pr_payload(7, head, main[3]),
            evals=str(evals),
            command=command,
            **{"judge-api-key": JUDGE_KEY, "judge-max-calls": "4"},
        )
        env["GOOGLE_GEMINI_BASE_URL"] = gemini.url
        done = runner.run(env)
        user_calls, judge_calls = gemini.calls("user"), gemini.calls("safety")
    said = done.stdout + done.stderr
    # the suite's run: 1 simulator call and its 2 turns judged; the first round's run: 1
    # simulator call (its turns are the same words: their verdicts are reused); that is the
    # budget, so the second round's simulator call is refused unmade
    assert (user_calls, judge_calls) == (2, 2), said
    results = json.loads((runner.out_dir / "results.json").read_text())
    [case] = results["cases"]
    # a refused re-run is no evidence either way, so the third re-run is asked for too, and
    # refused as well
    assert [run["run"] for run in case["runs"]] == [1, 2, 3, 4], said
    refused = [run["run"] for run in case["runs"] if "judge-max-calls" in (run["error"] or "")]
    assert refused == [3, 4]
    assert results["usage"]["simulator_calls"] == 2
    assert results["usage"]["simulator_refused"] == 2
    # the refused re-run is no evidence of noise that could pass the regression
    assert case["status"] == "errored" and done.returncode == 1, said
    assert "verdict: fail" in done.stdout
