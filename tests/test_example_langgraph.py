"""The LangGraph example (examples/langgraph): a real LangGraph agent through `--command`.

Its worker speaks the protocol itself; the CLI runs its eval set, which passes as shipped,
and a run with the shortcut prompt (the model reserves without searching the catalog) is a
trajectory regression against that baseline, through `run --baseline` and through the action.
Skips, saying why, when langgraph is not installed, except in CI (which installs [dev]).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from helpers.action_harness import Runner, clean_env, main_with_baseline, pr_payload
from helpers.paths import ROOT, python_command

if importlib.util.find_spec("langgraph") is None and os.environ.get("CI") != "true":
    pytest.skip(
        "needs langgraph and langchain-core (the dev extra): pip install -e '.[dev]'",
        allow_module_level=True,
    )

EXAMPLE = ROOT / "examples" / "langgraph"
EVALS = "examples/langgraph/evals"
WORKER = python_command(EXAMPLE / "worker.py")
SHORTCUT = str(EXAMPLE / "shortcut_prompt.txt")
REGRESSED = "reserve_in_one_message"
# All of a module's tests share one xdist worker, so `shipped` runs once.
pytestmark = pytest.mark.xdist_group("langgraph_example")


def run_cli(out: Path, *extra: str, prompt: str | None = None) -> subprocess.CompletedProcess[str]:
    env = clean_env()
    env.pop("LIBRARY_PROMPT", None)
    if prompt:
        env["LIBRARY_PROMPT"] = prompt
    argv = [sys.executable, "-m", "agent_eval_action", "run", EVALS, "--command", WORKER]
    argv += ["--out", str(out), "--format", "json", *extra]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Results of the example as shipped: main's baseline."""
    out = tmp_path_factory.mktemp("langgraph") / "results.json"
    done = run_cli(out)
    assert done.returncode == 0, done.stderr
    return out


def talk(*requests: dict, prompt: str | None = None) -> list[dict]:
    """Send protocol lines to one worker process; its answers, one per turn request."""
    env = {k: v for k, v in os.environ.items() if k != "LIBRARY_PROMPT"}
    if prompt:
        env["LIBRARY_PROMPT"] = prompt
    lines = "".join(json.dumps(request) + "\n" for request in requests)
    done = subprocess.run(
        [sys.executable, str(EXAMPLE / "worker.py")],
        input=lines,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def turn(rid: str, session: str, number: int, text: str, state: dict | None = None) -> dict:
    session_input = None if state is None else {"app_name": "a", "user_id": "u", "state": state}
    return {
        "protocol": 1,
        "id": rid,
        "session_id": session,
        "turn": number,
        "session_input": session_input,
        "user_content": {"role": "user", "parts": [{"text": text}]},
    }


def calls(answer: dict) -> list[tuple[str, dict]]:
    return [(use["name"], use["args"]) for use in answer["tool_uses"]]


def test_the_example_requirements_are_the_dev_extra_pins():
    lines = (EXAMPLE / "requirements.txt").read_text(encoding="utf-8").splitlines()
    pins = {line for line in lines if line and not line.startswith("#")}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    dev = set(project["optional-dependencies"]["dev"])
    assert {pin.split("==")[0] for pin in pins} == {"langgraph", "langchain-core"}
    assert pins <= dev  # CI tests the versions users are told to install


def test_the_worker_keeps_each_conversation_in_its_thread_until_the_end_message():
    member = {"member_id": "M-7"}
    answers = talk(
        turn("a1", "s-a", 0, 'Do you have "Dune"?', member),
        turn("b1", "s-b", 0, 'Do you have "Piranesi"?', {"member_id": "M-8"}),
        turn("a2", "s-a", 1, "Yes please, reserve it.", member),
        {"protocol": 1, "type": "end", "session_id": "s-a"},
        turn("a3", "s-a", 0, "Yes please, reserve it.", member),
    )

    assert [answer["id"] for answer in answers] == ["a1", "b1", "a2", "a3"]
    assert calls(answers[0]) == [("search_catalog", {"title": "Dune"})]
    assert answers[0]["tool_responses"][0]["response"]["isbn"] == "9780441172719"
    # turn 2 of s-a reserves the book s-a found, for s-a's member, not s-b's Piranesi
    assert calls(answers[2]) == [("reserve_book", {"isbn": "9780441172719", "member_id": "M-7"})]
    assert "reserved for member M-7" in answers[2]["final_response"]["parts"][0]["text"]
    assert answers[2]["usage"]["prompt_tokens"] > answers[0]["usage"]["prompt_tokens"] > 0
    # after "end" the thread is gone: nothing found earlier, so nothing to reserve
    assert calls(answers[3]) == []
    assert "Which title" in answers[3]["final_response"]["parts"][0]["text"]


def test_a_turn_the_graph_cannot_run_is_an_error_answer_and_the_worker_keeps_serving():
    answers = talk(
        turn("r1", "s-1", 0, 'Do you have "Dune"?', state=None),  # no member_id for the prompt
        turn("r2", "s-2", 0, 'Do you have "Dune"?', {"member_id": "M-1"}),
    )

    assert answers[0] == {"id": "r1", "error": "KeyError: 'member_id'"}
    assert calls(answers[1]) == [("search_catalog", {"title": "Dune"})]


def test_the_shortcut_prompt_reserves_without_searching():
    [answer] = talk(
        turn("r1", "s", 0, 'Please reserve "Piranesi" for me.', {"member_id": "M-2290"}),
        prompt=SHORTCUT,
    )
    assert calls(answer) == [("reserve_book", {"isbn": "9781635575637", "member_id": "M-2290"})]


@pytest.mark.e2e
def test_the_example_passes_as_shipped_with_every_turn_recorded(shipped: Path):
    results = json.loads(shipped.read_text(encoding="utf-8"))

    assert results["run_config"]["runner"] == "command"
    assert {case["eval_id"]: case["status"] for case in results["cases"]} == {
        "find_then_reserve": "passed",
        "reserve_in_one_message": "passed",
        "on_loan_not_reserved": "passed",
    }
    [multi_turn] = [case for case in results["cases"] if case["eval_id"] == "find_then_reserve"]
    turns = multi_turn["runs"][0]["invocations"]
    assert [[use["name"] for use in t["actual"]["tool_uses"]] for t in turns] == [
        ["search_catalog"],
        ["reserve_book"],
    ]
    assert results["usage"]["prompt_tokens"] > 0 and results["usage"]["output_tokens"] > 0


@pytest.mark.e2e
def test_the_shortcut_prompt_is_a_trajectory_regression_with_a_lucky_answer(
    shipped: Path, tmp_path: Path
):
    # one confirmation re-run (of the default 3) is enough to show the slip happens again
    done = run_cli(
        tmp_path / "pr.json", "--baseline", str(shipped), "--confirm-runs", "1", prompt=SHORTCUT
    )

    assert done.returncode == 1, done.stderr
    diff = json.loads((tmp_path / "diff.json").read_text(encoding="utf-8"))
    verdict = diff["verdict"]
    assert not verdict["passed"]
    assert verdict["trajectory_regressions"] == 1 and verdict["response_regressions"] == 0
    changed = {case["eval_id"]: case for case in diff["cases"] if case["change"] != "unchanged"}
    assert list(changed) == [REGRESSED]
    assert changed[REGRESSED]["axes"] == {"trajectory": "new_failure", "response": "unchanged"}
    assert changed[REGRESSED]["pattern"] == "lucky_answer"
    assert changed[REGRESSED]["confirmation"] == {"runs": 1, "reproduced": 1, "inconclusive": 0}


@pytest.mark.e2e
def test_the_action_fails_the_pr_whose_prompt_skips_the_search(runner: Runner, shipped: Path):
    fake = runner.fake
    main, head = main_with_baseline(fake, shipped.read_bytes())
    fake.add_pull(7, head, main[3])
    inputs = {"evals": EVALS, "command": WORKER, "confirm-runs": "1"}
    env = runner.env("pull_request", pr_payload(7, head, main[3]), **inputs)
    env["LIBRARY_PROMPT"] = SHORTCUT

    done = runner.run(env)

    assert done.returncode == 1, done.stderr
    out = runner.outputs()
    assert out["verdict"] == "fail"
    assert out["trajectory-regressions"] == "1" and out["response-regressions"] == "0"
    [comment] = fake.comments_on(7)
    assert REGRESSED in comment["body"] and "lucky answer" in comment["body"]
    (check,) = fake.check_runs.values()
    assert check["conclusion"] == "failure"
    (annotation,) = check["_annotations"]
    assert annotation["path"] == "examples/langgraph/evals/library.evalset.json"
