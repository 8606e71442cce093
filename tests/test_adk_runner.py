"""`--agent DIR`: real ADK agents run in this process with google-adk's Runner."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.adk_agents import write_probe_agent
from helpers.paths import ROOT

from agent_eval_action.cli import main
from agent_eval_action.evalset.models import Content, SessionInput
from agent_eval_action.results import Results
from agent_eval_action.runners.adk import run_adk_suite
from agent_eval_action.runners.adk_events import is_final_response
from agent_eval_action.runners.pool import run_case_run
from agent_eval_action.traces import CaseRunRequest, CaseRunTrace

EXAMPLE = ROOT / "examples" / "customer_support"


def request(eval_id: str, *texts: str, run: int = 1, session: dict | None = None):
    return CaseRunRequest(
        eval_set_id="probe_set",
        eval_id=eval_id,
        run=run,
        session_input=SessionInput.model_validate(session) if session else None,
        user_contents=[Content.from_text(text, role="user") for text in texts],
    )


def run_suite(agent: Path, requests, **options) -> list[CaseRunTrace]:
    return asyncio.run(run_adk_suite(requests, agent, **options))


def answer(trace: CaseRunTrace, turn: int = 0) -> str:
    return trace.turns[turn].final_response.text()


def calls(trace: CaseRunTrace) -> list[list[tuple[str, dict]]]:
    return [[(c.name, c.args) for c in turn.tool_uses] for turn in trace.turns]


# --- the flagship example, end to end through the CLI -------------------------------------


@pytest.mark.adk
def test_quickstart_example_runs_end_to_end(tmp_path, capsys):
    out = tmp_path / "results.json"
    code = main(["run", str(EXAMPLE / "evals"), "--agent", str(EXAMPLE), "--out", str(out)])
    results = Results.from_json(out.read_text())
    statuses = {case.eval_id: case.status for case in results.cases}
    assert code == 1
    assert statuses.pop("gold_damaged_refund") == "failed"
    assert set(statuses.values()) == {"passed"} and len(statuses) == 5
    assert results.run_config.runner == "adk" and results.run_config.target == str(EXAMPLE)

    cases = {case.eval_id: case for case in results.cases}
    slip = cases["gold_damaged_refund"]
    # The lucky answer: a skipped lookup, a word-for-word answer.
    assert slip.metrics["tool_trajectory_avg_score"].score == 0.0
    assert slip.metrics["response_match_score"].score == 1.0
    assert [u.name for u in slip.runs[0].turns()[0].actual.tool_uses] == ["issue_refund"]
    # transfer_to_agent is captured like any tool call, then the sub-agent's own call.
    parcel = cases["where_is_my_parcel"].runs[0].turns()[0].actual
    assert [(u.name, u.args) for u in parcel.tool_uses] == [
        ("transfer_to_agent", {"agent_name": "shipping_agent"}),
        ("track_shipment", {"order_id": "A-5120"}),
    ]
    assert [r.name for r in parcel.tool_responses] == ["transfer_to_agent", "track_shipment"]
    assert "Thursday" in parcel.final_response.text()
    # Multi-turn: the order id given in turn 2 is acted on in the same session.
    refund = cases["damaged_item_refund"].runs[0].turns()
    assert [[u.name for u in inv.actual.tool_uses] for inv in refund] == [
        [],
        ["lookup_order", "issue_refund"],
        [],
    ]
    # Usage comes from the model's usage_metadata.
    assert results.usage.prompt_tokens > 0 and results.usage.output_tokens > 0
    assert "6 cases: 5 passed, 1 failed" in capsys.readouterr().out


@pytest.mark.adk
def test_session_state_drives_the_example_agent():
    evalset = json.loads((EXAMPLE / "evals" / "refund_flow.evalset.json").read_text())
    case = next(c for c in evalset["eval_cases"] if c["eval_id"] == "damaged_item_refund")
    turns = [t["user_content"]["parts"][0]["text"] for t in case["conversation"]]
    silver, gold, unverified = (
        request("refund", *turns, session={**case["session_input"], "state": state})
        for state in (
            {"authenticated": True, "tier": "silver"},
            {"authenticated": True, "tier": "gold"},
            {"authenticated": False, "tier": "silver"},
        )
    )
    traces = run_suite(EXAMPLE, [silver, gold, unverified])
    names = [[[c[0] for c in turn] for turn in calls(t)] for t in traces]
    assert names[0][1] == ["lookup_order", "issue_refund"]
    assert names[1][1] == ["issue_refund"]  # the gold "express" slip
    assert names[2][1] == ["lookup_order"]  # not verified: no refund
    assert "verify your identity" in answer(traces[2], 1)


# --- sessions, capture ------------------------------------------------------------------


@pytest.mark.adk
def test_session_is_seeded_from_session_input_and_fresh_per_run(tmp_path):
    agent = write_probe_agent(tmp_path)
    session = {
        "app_name": "shop",
        "user_id": "user-9",
        "session_id": "pinned-1",
        "state": {"tier": "gold", "authenticated": True},
    }
    traces = run_suite(
        agent,
        [
            request("a", "whoami", session=session),
            request("a", "whoami", session=session, run=2),
            request("b", "whoami", "whoami"),
        ],
    )
    first, second, default = (json.loads(answer(t)) for t in traces)
    assert first == second  # a pinned id is reused per run: every run has its own session
    assert first["app_name"] == "shop" and first["user_id"] == "user-9"
    assert first["session_id"] == "pinned-1"
    assert first["state"] == {"tier": "gold", "authenticated": True}
    # Without session_input: ADK's defaults, and an ADK-style eval session id.
    assert (default["app_name"], default["user_id"]) == ("EvaluationGenerator", "test_user_id")
    assert default["session_id"].startswith("adk-eval-session-b-run1-")
    assert json.loads(answer(traces[2], 1))["session_id"] == default["session_id"]


@pytest.mark.adk
def test_turn_capture_keeps_calls_responses_intermediate_text_and_usage(tmp_path):
    agent = write_probe_agent(tmp_path)
    [trace] = run_suite(agent, [request("c", "think", "whoami")])
    think, who = trace.turns
    assert [c.name for c in think.tool_uses] == ["whoami"]
    assert think.tool_responses[0].name == "whoami"
    assert think.tool_responses[0].response["user_id"] == "test_user_id"
    assert [[a, [p.text for p in parts]] for a, parts in think.intermediate_responses] == [
        ["probe", ["Let me check who you are."]]
    ]
    assert json.loads(think.final_response.text())["app_name"] == "EvaluationGenerator"
    assert think.usage is None  # this reply reported no usage
    assert (who.usage.prompt_tokens, who.usage.output_tokens, who.usage.thinking_tokens) == (
        7,
        3,
        2,
    )
    # ADK's InvocationEvents form: the final event's content is left out.
    authors = [(e.author, e.content is not None) for e in think.invocation_events]
    assert authors == [("probe", True), ("probe", True), ("probe", False)]
    details = think.app_details["agent_details"]["probe"]
    assert details["instructions"].startswith("Probe.")
    declared = [d["name"] for t in details["tool_declarations"] for d in t["function_declarations"]]
    assert declared == ["whoami", "crash"]
    assert think.duration_s > 0


@pytest.mark.adk
@pytest.mark.parametrize(
    "event, final",
    [
        ({"author": "a", "content": {"parts": [{"text": "hi"}]}}, True),
        ({"author": "a", "content": {"parts": [{"functionCall": {"name": "f"}}]}}, False),
        ({"author": "a", "content": {"parts": [{"function_response": {"name": "f"}}]}}, False),
        ({"author": "a", "content": {"parts": [{"text": "x"}]}, "partial": True}, False),
        (
            {
                "author": "a",
                "content": {"parts": [{"functionResponse": {"name": "f"}}]},
                "actions": {"skipSummarization": True},
            },
            True,
        ),
        (
            {
                "author": "a",
                "content": {"parts": [{"function_call": {"name": "f", "id": "1"}}]},
                "long_running_tool_ids": ["1"],
            },
            True,
        ),
        ({"author": "a", "errorCode": "SAFETY"}, True),
        (
            {"author": "a", "content": {"parts": [{"code_execution_result": {"output": "1"}}]}},
            False,
        ),
    ],
)
def test_final_response_rule_on_json_matches_adk(event, final):
    from google.adk.events import Event

    adk_event = Event.model_validate(event)
    assert adk_event.is_final_response() == final
    assert is_final_response(event) == final
    dumped = adk_event.model_dump(mode="json", exclude_none=True, by_alias=True)
    assert is_final_response(dumped) == final


# --- agent module forms, .env ----------------------------------------------------------


@pytest.mark.adk
def test_app_is_preferred_and_its_plugins_apply(tmp_path):
    agent = write_probe_agent(tmp_path, export="app")
    [trace] = run_suite(agent, [request("a", "hello")])
    assert answer(trace) == "ECHO: HELLO"


@pytest.mark.adk
def test_get_agent_async_is_awaited_and_its_exit_stack_closed(tmp_path):
    agent = write_probe_agent(tmp_path, export="get_agent_async")
    [trace] = run_suite(agent, [request("a", "hello")])
    assert answer(trace) == "echo: hello"
    assert (agent / "closed.txt").read_text() == "closed"


@pytest.mark.adk
def test_dotenv_is_loaded_without_overriding_set_variables(tmp_path, monkeypatch):
    monkeypatch.setenv("PROBE_KEPT", "from the environment")
    monkeypatch.delenv("PROBE_GREETING", raising=False)
    agent = write_probe_agent(
        tmp_path, env="PROBE_GREETING=hello from .env\nPROBE_KEPT=from .env\n"
    )
    [trace] = run_suite(agent, [request("a", "whoami")])
    seen = json.loads(answer(trace))
    assert seen["greeting"] == "hello from .env"
    assert seen["kept"] == "from the environment"
    monkeypatch.delenv("PROBE_GREETING")  # loaded into os.environ: leave none behind


@pytest.mark.adk
def test_dotenv_is_skipped_when_adk_is_told_to(tmp_path, monkeypatch):
    monkeypatch.delenv("PROBE_GREETING", raising=False)
    monkeypatch.setenv("ADK_DISABLE_LOAD_DOTENV", "yes")
    agent = write_probe_agent(tmp_path, env="PROBE_GREETING=hello from .env\n")
    [trace] = run_suite(agent, [request("a", "whoami")])
    assert json.loads(answer(trace))["greeting"] == "unset"


@pytest.mark.adk
def test_dotenv_is_found_above_the_agent_as_adk_finds_it(tmp_path, monkeypatch):
    monkeypatch.delenv("PROBE_GREETING", raising=False)
    (tmp_path / ".env").write_text("PROBE_GREETING=from the parent\n")
    agent = write_probe_agent(tmp_path / "agents")
    [trace] = run_suite(agent, [request("a", "whoami")])
    assert json.loads(answer(trace))["greeting"] == "from the parent"
    monkeypatch.delenv("PROBE_GREETING")


@pytest.mark.adk
def test_dotenv_above_the_checkout_is_never_loaded(tmp_path, monkeypatch):
    """In a checkout (GITHUB_WORKSPACE) the walk stops at its top: in the action, main's
    worktree is under /tmp, where the PR's code may have left a `.env` for main's agent."""
    monkeypatch.delenv("PROBE_GREETING", raising=False)
    (tmp_path / ".env").write_text("PROBE_GREETING=planted above the checkout\n")
    checkout = tmp_path / "checkout"
    monkeypatch.setenv("GITHUB_WORKSPACE", str(checkout))
    agent = write_probe_agent(checkout / "agents")
    [trace] = run_suite(agent, [request("a", "whoami")])
    assert json.loads(answer(trace))["greeting"] == "unset"
    (checkout / ".env").write_text("PROBE_GREETING=the checkout's own\n")  # its top: read
    agent = write_probe_agent(checkout / "agents")  # a fresh import: it reads it at import
    [trace] = run_suite(agent, [request("a", "whoami")])
    assert json.loads(answer(trace))["greeting"] == "the checkout's own"
    monkeypatch.delenv("PROBE_GREETING")


def test_dotenv_folders_stop_at_the_checkout_only_when_the_agent_is_in_it(tmp_path):
    from agent_eval_action.runners.adk import dotenv_folders

    agent = tmp_path / "repo" / "agents" / "a"
    inside = dotenv_folders(agent, {"GITHUB_WORKSPACE": str(tmp_path / "repo")})
    assert inside == [agent, agent.parent, tmp_path / "repo"]
    outside = dotenv_folders(agent, {"GITHUB_WORKSPACE": str(tmp_path / "elsewhere")})
    assert outside == [agent, *agent.parents]  # ADK's walk, to the root
    assert dotenv_folders(agent, {}) == outside


def test_a_dotenv_link_in_the_checkout_is_refused_with_one_line(tmp_path):
    """Read as the action reads every file of the checkout: no link followed."""
    from agent_eval_action.errors import InputError
    from agent_eval_action.files import read_beneath
    from agent_eval_action.runners.adk import load_dotenv

    secret = tmp_path / "secret"
    secret.write_text("TOKEN=only root may read this\n")
    checkout = tmp_path / "checkout"
    (checkout / "agent").mkdir(parents=True)
    (checkout / ".env").symlink_to(secret)
    environ: dict[str, str] = {"GITHUB_WORKSPACE": str(checkout)}
    read_beneath(checkout)
    try:
        with pytest.raises(InputError, match=r"\.env.*refused"):
            load_dotenv(checkout / "agent", environ)
    finally:
        read_beneath(None)
    assert "TOKEN" not in environ
    assert load_dotenv(checkout / "agent", environ) == checkout / ".env"  # the CLI: as ADK
    assert environ["TOKEN"] == "only root may read this"


# --- failures, timeouts, concurrency -----------------------------------------------------


@pytest.mark.adk
def test_failures_and_hangs_fail_only_their_case_run(tmp_path):
    agent = write_probe_agent(tmp_path)
    started = time.monotonic()
    traces = run_suite(
        agent,
        [
            request("model_error", "hello", "boom", "never"),
            request("tool_error", "tool crash"),
            request("hangs", "hello", "hang"),
            request("fine", "hello", "whoami"),
            request("cancels_itself", "self cancel"),
        ],
        timeout=1.5,
        concurrency=4,
    )
    model_error, tool_error, hangs, fine, cancels_itself = traces
    # ADK swallows a cancellation inside the agent and ends the turn without a word.
    assert cancels_itself.error == ("the agent returned no events (it did not run) at turn 1 of 1")
    assert time.monotonic() - started < 10
    source = (agent / "agent.py").read_text().splitlines()
    line = next(n for n, text in enumerate(source, 1) if "the model exploded" in text)
    assert model_error.error == (
        f"RuntimeError: the model exploded ({agent.name}/agent.py:{line}) at turn 2 of 3"
    )
    assert [answer(model_error)] == ["echo: hello"] and len(model_error.turns) == 1
    assert "ValueError: the crash tool failed: asked to" in tool_error.error
    assert f"{agent.name}/agent.py:" in tool_error.error
    assert hangs.error == "timed out after 1.5 s at turn 2 of 2"
    assert len(hangs.turns) == 1
    assert fine.error is None and len(fine.turns) == 2


def test_a_cancellation_escaping_the_agent_fails_its_case_run_only():
    @contextlib.asynccontextmanager
    async def conversation(request):
        async def play(user_content):
            raise asyncio.CancelledError()  # nobody cancelled us

        yield play

    trace = asyncio.run(run_case_run(request("a", "hi", "again"), conversation, timeout=5))
    assert trace.error == "the agent's run was cancelled (asyncio.CancelledError) at turn 1 of 2"


@pytest.mark.adk
def test_concurrency_is_honoured_and_runs_overlap(tmp_path):
    agent = write_probe_agent(tmp_path)
    requests = [request(f"c{i}", "slow") for i in range(6)]
    started = time.monotonic()
    traces = run_suite(agent, requests, concurrency=3)
    elapsed = time.monotonic() - started
    module = sys.modules[f"{agent.name}.agent"]
    assert module.IN_MODEL["max"] == 3
    assert all(t.error is None for t in traces)
    assert [t.eval_id for t in traces] == [r.eval_id for r in requests]  # request order
    assert elapsed < 6 * 0.3  # two waves of 0.3 s, not six (plus agent import)


@pytest.mark.adk
def test_cli_num_runs_and_json_results(tmp_path, write):
    agent = write_probe_agent(tmp_path / "agents")
    write(
        "evals/probe.evalset.json",
        {
            "eval_set_id": "probe_set",
            "eval_cases": [
                {
                    "eval_id": "echo",
                    "conversation": [
                        {
                            "user_content": {"parts": [{"text": "hello"}]},
                            "final_response": {"parts": [{"text": "echo: hello"}]},
                        }
                    ],
                }
            ],
        },
    )
    code = main(["run", "evals", "--agent", str(agent), "--num-runs", "3", "--out", "r.json"])
    results = Results.from_json(Path("r.json").read_text())
    [case] = results.cases
    assert code == 0 and case.status == "passed" and len(case.runs) == 3
    assert case.metrics["response_match_score"].runs == (1.0, 1.0, 1.0)


# --- bad input: one line naming the directory, exit 2 --------------------------------------


def bad_agent(tmp_path: Path, kind: str) -> Path:
    if kind == "missing":
        return tmp_path / "nowhere"
    if kind == "file":
        path = tmp_path / "agent.py"
        path.write_text("x = 1\n")
        return path
    directory = tmp_path / {"not-an-identifier": "my-agent"}.get(kind, f"bad_{kind}")
    directory.mkdir()
    if kind == "no_init":
        (directory / "agent.py").write_text("root_agent = None\n")
    elif kind == "no_agent":
        (directory / "__init__.py").write_text("from . import agent\n")
        (directory / "agent.py").write_text("helper = 1\n")
    elif kind == "import_error":
        (directory / "__init__.py").write_text("from . import agent\n")
        (directory / "agent.py").write_text("import os\n\nraise ImportError('no module named x')\n")
    elif kind == "not_an_agent":
        (directory / "__init__.py").write_text("root_agent = 'just a string'\n")
    else:
        (directory / "__init__.py").write_text("")
    return directory


@pytest.mark.adk
@pytest.mark.parametrize(
    "kind, message",
    [
        ("missing", "agent directory not found"),
        ("file", "not a file"),
        ("no_init", "not a Python package (no __init__.py)"),
        ("not-an-identifier", "is not a Python identifier"),
        ("no_agent", "no agent found: define root_agent"),
        ("import_error", "cannot import the agent: ImportError: no module named x"),
        ("not_an_agent", "root_agent is a str, not an ADK agent"),
    ],
)
def test_bad_agent_directory_is_one_line_exit_2(tmp_path, write, capsys, kind, message):
    write("evals/e.evalset.json", {"eval_set_id": "s", "eval_cases": [ECHO_CASE]})
    agent = bad_agent(tmp_path, kind)
    code = main(["run", "evals", "--agent", str(agent), "--out", "r.json"])
    said = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    # an agent found bad only as it loads: the run's first line, its plan, came before
    err = said[1:] if said[0].startswith("plan: 1 case ") else said
    assert len(err) == 1 and err[0].startswith(f"error: {agent}") and message in err[0], err
    assert "Traceback" not in err[0] and not Path("r.json").exists()
    if kind == "import_error":
        assert err[0].endswith(f"({agent.name}/agent.py:3)")


@pytest.mark.adk
def test_a_package_name_already_taken_is_refused(tmp_path, write, capsys):
    write("evals/e.evalset.json", {"eval_set_id": "s", "eval_cases": [ECHO_CASE]})
    first = write_probe_agent(tmp_path / "one", name="probe_taken")
    second = write_probe_agent(tmp_path / "two", name="probe_taken")
    assert main(["run", "evals", "--agent", str(first), "--out", "r.json"]) == 0
    capsys.readouterr()
    assert main(["run", "evals", "--agent", str(second), "--out", "r.json"]) == 2
    assert "a module of that name is already imported from" in capsys.readouterr().err


def test_without_google_adk_agent_is_one_line_exit_2(write, capsys, monkeypatch):
    write("evals/e.evalset.json", {"eval_set_id": "s", "eval_cases": [ECHO_CASE]})
    monkeypatch.setitem(sys.modules, "google.adk", None)  # as if not installed
    code = main(["run", "evals", "--agent", str(EXAMPLE), "--out", "r.json"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err == (
        "error: --agent needs google-adk, which is not installed: "
        "pip install 'agent-eval-action[adk]'"
    )


ECHO_CASE = {
    "eval_id": "echo",
    "conversation": [
        {
            "user_content": {"parts": [{"text": "hello"}]},
            "final_response": {"parts": [{"text": "echo: hello"}]},
        }
    ],
}


# --- cancellation -------------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.adk
def test_sigterm_stops_cleanly_with_partial_results(tmp_path, write):
    agent = write_probe_agent(tmp_path / "agents")
    hang = {
        "eval_id": "hangs",
        "conversation": [{"user_content": {"parts": [{"text": "hang"}]}}],
    }
    write("evals/e.evalset.json", {"eval_set_id": "s", "eval_cases": [ECHO_CASE, hang]})
    process = subprocess.Popen(
        [sys.executable, "-m", "agent_eval_action", "run", "evals", "--agent", str(agent)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    deadline, stderr = time.monotonic() + 60, ""
    while "echo run 1: ok" not in stderr and time.monotonic() < deadline:
        stderr += process.stderr.readline()
    process.send_signal(signal.SIGTERM)
    _, rest = process.communicate(timeout=30)
    assert process.returncode == 3, stderr + rest
    results = Results.from_json(Path("results.json").read_text())
    statuses = {case.eval_id: case.status for case in results.cases}
    assert results.partial and statuses == {"echo": "passed", "hangs": "errored"}
    assert "cancelled" in results.cases[1].runs[0].error
