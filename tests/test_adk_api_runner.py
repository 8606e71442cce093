"""`--adk-api URL --adk-app NAME`: agents served by a real `adk api_server` on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from helpers.adk_agents import write_probe_agent
from helpers.paths import ROOT

from agent_eval_action.cli import main
from agent_eval_action.evalset.models import Content, SessionInput
from agent_eval_action.results import Results
from agent_eval_action.runners.adk_api import run_api_suite
from agent_eval_action.runners.adk_events import new_session_id
from agent_eval_action.runners.base import RunnerStartError
from agent_eval_action.traces import CaseRunRequest

# with -n, the tests of the module-scoped `adk api_server` share one worker and one server
pytestmark = pytest.mark.xdist_group("adk_api_server")
EXAMPLE = ROOT / "examples" / "customer_support"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One `adk api_server` for the module, serving the example and a probe agent."""
    root = tmp_path_factory.mktemp("api")
    agents = root / "agents"
    shutil.copytree(EXAMPLE, agents / "customer_support")
    write_probe_agent(agents, name="probe_api")
    port = free_port()
    log = (root / "server.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "google.adk.cli",
            "api_server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-reload",
            "--session_service_uri",
            "memory://",
            "--artifact_service_uri",
            "memory://",
            str(agents),
        ],
        cwd=root,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail("adk api_server did not start:\n" + (root / "server.log").read_text())
        time.sleep(0.1)
    yield url
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    log.close()


def request(eval_id: str, *texts: str, run: int = 1, session: dict | None = None):
    return CaseRunRequest(
        eval_set_id="probe_set",
        eval_id=eval_id,
        run=run,
        session_input=SessionInput.model_validate(session) if session else None,
        user_contents=[Content.from_text(text, role="user") for text in texts],
    )


def answers(trace) -> list[str]:
    return [turn.final_response.text() for turn in trace.turns]


@pytest.mark.adk
@pytest.mark.e2e
def test_served_example_scores_exactly_like_the_in_process_runner(server, tmp_path):
    evals = str(EXAMPLE / "evals")
    options = ["--num-runs", "2", "--concurrency", "4"]
    api_out, local_out = tmp_path / "api.json", tmp_path / "local.json"
    served = ["--adk-api", server, "--adk-app", "customer_support"]
    api_code = main(["run", evals, *served, *options, "--out", str(api_out)])
    local_code = main(["run", evals, "--agent", str(EXAMPLE), *options, "--out", str(local_out)])
    api = Results.from_json(api_out.read_text())
    local = Results.from_json(local_out.read_text())

    assert api_code == local_code == 1
    assert api.run_config.runner == "adk_api"
    assert api.run_config.target == f"{server} app=customer_support"
    assert len(api.cases) == 6

    def behaviour(results: Results):
        return {
            case.eval_id: (
                case.status,
                {name: (m.score, m.runs) for name, m in case.metrics.items()},
                [
                    [
                        (
                            [(u.name, u.args) for u in inv.actual.tool_uses],
                            [r.name for r in inv.actual.tool_responses],
                            inv.actual.final_response.text(),
                        )
                        for inv in run.turns()
                    ]
                    for run in case.runs
                ],
            )
            for case in results.cases
        }

    assert behaviour(api) == behaviour(local)
    assert {c.eval_id: c.status for c in api.cases}["gold_damaged_refund"] == "failed"
    assert api.usage.prompt_tokens == local.usage.prompt_tokens > 0


@pytest.mark.adk
@pytest.mark.e2e
def test_sessions_are_seeded_unique_and_deleted(server):
    session = {"app_name": "ignored", "user_id": "user 9", "state": {"tier": "gold"}}
    traces = asyncio.run(
        run_api_suite(
            [
                request("who am i?", "whoami", "whoami", session=session),
                request("who am i?", "whoami", session=session, run=2),
                request("plain", "think"),
                request("slash", "whoami", session={**session, "user_id": "a/b"}),
            ],
            server,
            "probe_api",
        )
    )
    first, second, plain, slash = traces
    assert slash.error == (
        "session_input.user_id 'a/b' has a '/', which adk api_server cannot route "
        "while starting the session"
    )
    assert all(t.error is None for t in traces[:3])
    seen = [json.loads(text) for text in answers(first)]
    assert seen[0] == seen[1]  # both turns in one session
    assert seen[0]["app_name"] == "probe_api"  # the server's app, not session_input's
    assert seen[0]["user_id"] == "user 9" and seen[0]["state"] == {"tier": "gold"}
    other = json.loads(answers(second)[0])
    assert other["session_id"] != seen[0]["session_id"]
    assert seen[0]["session_id"].startswith("adk-eval-session-who-am-i-run1-")
    assert json.loads(answers(plain)[0])["user_id"] == "test_user_id"
    think = plain.turns[0]
    assert [c.name for c in think.tool_uses] == ["whoami"]
    assert [[a, [p.text for p in parts]] for a, parts in think.intermediate_responses] == [
        ["probe", ["Let me check who you are."]]
    ]
    # Deleted once the case-run is over.
    for data in (seen[0], other):
        path = f"/apps/probe_api/users/user%209/sessions/{data['session_id']}"
        assert httpx.get(server + path).status_code == 404


@pytest.mark.adk
@pytest.mark.e2e
def test_agent_errors_and_hangs_fail_only_their_case_run(server):
    started = time.monotonic()
    traces = asyncio.run(
        run_api_suite(
            [
                request("model_error", "hello", "boom"),
                request("hangs", "hang"),
                request("fine", "hello"),
            ],
            server,
            "probe_api",
            timeout=1.5,
        )
    )
    model_error, hangs, fine = traces
    assert time.monotonic() - started < 10
    assert model_error.error.startswith("POST /run failed: HTTP 500")
    assert model_error.error.endswith("at turn 2 of 2")
    assert answers(model_error) == ["echo: hello"]
    assert hangs.error == "timed out after 1.5 s at turn 1 of 1" and hangs.turns == []
    assert fine.error is None and answers(fine) == ["echo: hello"]


@pytest.mark.adk
@pytest.mark.e2e
def test_unknown_app_is_one_line_exit_2(server, capsys, write):
    write("evals/e.evalset.json", {"eval_set_id": "s", "eval_cases": [ECHO_CASE]})
    code = main(["run", "evals", "--adk-api", server, "--adk-app", "nope", "--out", "r.json"])
    plan, err = capsys.readouterr().err.strip().split("\n", 1)  # the run's first line, then
    assert plan.startswith("plan: 1 case ")
    assert code == 2 and "\n" not in err
    assert err == (
        f"error: --adk-app: the server at {server} does not serve an app named 'nope' "
        "(it serves: customer_support, probe_api)"
    )
    assert not Path("r.json").exists()


@pytest.mark.adk
@pytest.mark.e2e
def test_something_else_at_the_url_is_refused(server):
    with pytest.raises(RunnerStartError, match="answered HTTP 404; is this an `adk api_server`"):
        asyncio.run(run_api_suite([request("a", "hi")], server + "/elsewhere", "probe_api"))


def test_unreachable_server_is_refused_after_a_short_wait():
    url = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(RunnerStartError, match=f"cannot reach the ADK API server at {url}"):
        asyncio.run(run_api_suite([request("a", "hi")], url, "app", startup_wait_s=0.5))
    assert 0.5 <= time.monotonic() - started < 5


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--adk-api", "http://127.0.0.1:9"], "--adk-api URL needs --adk-app NAME"),
        (["--adk-api", "localhost:8000", "--adk-app", "a"], "is not an http:// or https:// URL"),
        (["--command", "x", "--adk-app", "a"], "--adk-app NAME goes with --adk-api URL"),
    ],
)
def test_bad_api_flags_are_exit_2(write, capsys, flags, message):
    write("evals/e.evalset.json", {"eval_set_id": "s", "eval_cases": [ECHO_CASE]})
    assert main(["run", "evals", *flags]) == 2
    assert message in capsys.readouterr().err


def test_session_ids_are_url_safe_and_unique():
    odd = request("Ünïcode / spaces & ?query=1 " + "x" * 100, "hi", run=3)
    ids = {new_session_id(odd) for _ in range(100)}
    assert len(ids) == 100
    for session_id in ids:
        assert session_id.startswith("adk-eval-session-n-code-spaces-query-1-xxx")
        assert "-run3-" in session_id and len(session_id) <= 17 + 40 + 5 + 13
        assert all(c.isascii() and (c.isalnum() or c == "-") for c in session_id)
        assert session_id == session_id.lower()


ECHO_CASE = {
    "eval_id": "echo",
    "conversation": [
        {
            "user_content": {"parts": [{"text": "hello"}]},
            "final_response": {"parts": [{"text": "echo: hello"}]},
        }
    ],
}
