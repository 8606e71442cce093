"""Scenario cases (conversation_scenario): the user simulator writes each user turn, with
ADK's turn loop and stop rules, against the fake Gemini; every runner that holds a
conversation plays them, and Results record each simulated turn like a static one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.gemini import FakeGemini, error, rubric_block
from helpers.paths import ROOT, WORKERS, python_command

from agent_eval_action.cli import main
from agent_eval_action.metrics.judge import settings
from agent_eval_action.metrics.judge.caps import MAX_OUTPUT_TOKENS
from agent_eval_action.metrics.judge.settings import RetryPolicy
from agent_eval_action.metrics.simulation.config import STOP_SIGNAL
from agent_eval_action.results import Results

TABLE_AGENT = WORKERS / "table_agent.py"
SUPPORT_AGENT = ROOT / "examples" / "customer_support"
FAST = RetryPolicy(attempts=2, initial_delay=0.001, max_delay=0.002, jitter=0.0)
PLAN = "You want a refund for order A-1001. Give the order number when asked. Then say thanks."
SCENARIO = {
    "eval_id": "refund_chat",
    "conversation_scenario": {
        "starting_prompt": "My blender is broken.",
        "conversation_plan": PLAN,
    },
    "session_input": {
        "app_name": "customer_support",
        "user_id": "u1",
        "state": {"authenticated": True, "tier": "silver"},
    },
}
CONFIG = {
    "criteria": {"safety_v1": 0.5},
    "user_simulator_config": {"model": "gemini-2.5-flash", "max_allowed_invocations": 5},
}


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(settings, "DEFAULT_RETRY", FAST)
    with FakeGemini() as server:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
        monkeypatch.setenv("GOOGLE_API_KEY", "fake")
        yield server


def suite(write, *cases: dict, config: dict = CONFIG) -> None:
    write("evals/chat.evalset.json", {"eval_set_id": "chat", "eval_cases": list(cases)})
    write("evals/test_config.json", config)


def run(*flags: str, runner: tuple[str, ...] | None = None) -> tuple[int, Results | None]:
    runner = runner or ("--agent", str(SUPPORT_AGENT))
    code = main(["run", "evals", *runner, "--out", "results.json", *flags])
    out = Path("results.json")
    return code, Results.from_json(out.read_text()) if out.exists() else None


def texts(results: Results) -> list[tuple[str, str]]:
    """(user, agent) per recorded turn of the first case's first run."""
    return [
        (
            inv.user_content.text(),
            inv.actual.final_response.text() if inv.actual and inv.actual.final_response else "",
        )
        for inv in results.cases[0].runs[0].turns()
    ]


@pytest.mark.adk
def test_the_simulator_plays_the_scenario_with_an_adk_agent(write, fake):
    pytest.importorskip("google.adk")
    suite(write, SCENARIO)
    fake.script("user", "It's order A-1001.", "Thanks, bye! " + STOP_SIGNAL.upper())
    code, results = run()
    assert code == 0 and results is not None
    turns = texts(results)
    # the starting prompt without a call, then one call per turn; the stop signal (any case)
    # ends the conversation and is never sent to the agent
    assert [user for user, _ in turns] == ["My blender is broken.", "It's order A-1001."]
    assert "order number" in turns[0][1]
    case = results.cases[0]
    run1 = case.runs[0]
    assert run1.stop == "stop_signal"
    assert all(
        i.expected.final_response is None and i.expected.tool_uses == [] for i in run1.turns()
    )
    assert run1.turns()[1].actual.tool_uses[0].name == "lookup_order"
    asked = [r for r in fake.requests if r.kind == "user"]
    assert len(asked) == 2 and fake.calls("safety") == 2
    # what the simulator was sent: one user text part, ADK's default generation config, the
    # configured model; the plan and the conversation so far, thoughts left out
    body = asked[1].body
    assert asked[1].model == "gemini-2.5-flash"
    assert [c["role"] for c in body["contents"]] == ["user"] and len(
        body["contents"][0]["parts"]
    ) == 1
    assert body["generationConfig"]["thinkingConfig"] == {
        "include_thoughts": True,
        "thinking_budget": 10240,
    }
    prompt = asked[1].prompt
    assert PLAN in prompt and STOP_SIGNAL in prompt
    history = prompt.split("<<<CONVERSATION>>>")[1].split("<<<END CONVERSATION>>>")[0].strip()
    assert history.split("\n\n") == [
        "user: My blender is broken.",
        f"support_agent: {turns[0][1]}",
        "user: It's order A-1001.",
        f"support_agent: {turns[1][1]}",
    ]
    # the simulator's calls count in usage and cost beside the judge's
    assert case.usage.simulator_calls == 2 and results.usage.simulator_calls == 2
    assert case.usage.simulator_prompt_tokens > 0 and case.usage.cost_usd is not None
    assert case.metrics["safety_v1"].invocations == ((1.0, 1.0),)


def test_the_turn_limit_counts_the_starting_prompt(write, fake):
    config = {**CONFIG, "user_simulator_config": {"max_allowed_invocations": 2}}
    suite(write, SCENARIO, config=config)
    write("table.json", {"refund_chat": {"text": "What is the order number?"}})
    fake.respond("user", lambda prompt: "A-1001, please.")
    code, results = run(runner=("--command", python_command(TABLE_AGENT, "table.json")))
    assert code == 0 and results is not None
    assert [u for u, _ in texts(results)] == ["My blender is broken.", "A-1001, please."]
    assert results.cases[0].runs[0].stop == "turn_limit" and fake.calls("user") == 1
    # the command runner's history has no agent name: "agent"
    assert "agent: What is the order number?" in fake.requests[0].prompt


def test_without_a_key_a_scenario_case_is_not_run_and_never_passes(write, fake, monkeypatch):
    monkeypatch.delenv("GOOGLE_API_KEY")
    suite(write, SCENARIO)
    write("table.json", {})
    code, results = run(runner=("--command", python_command(TABLE_AGENT, "table.json")))
    assert results is not None and code == 1
    case = results.cases[0]
    assert case.status == "not_evaluated" and "API key" in (case.note or "")
    assert case.metrics["safety_v1"].status == "not_evaluated" and fake.calls() == 0


@pytest.mark.parametrize(
    ("reply", "why"),
    [(error(503), "Gemini call failed: 503"), ("", "wrote no message")],
)
def test_a_simulator_failure_errors_the_run_and_names_the_turn(write, fake, reply, why):
    suite(write, SCENARIO)
    write("table.json", {"refund_chat": {"text": "Which order?"}})
    fake.script("user", *([reply] * FAST.attempts))
    code, results = run(runner=("--command", python_command(TABLE_AGENT, "table.json")))
    assert results is not None and code == 1
    case = results.cases[0]
    assert case.status == "errored"
    assert why in case.runs[0].error and "simulated turn 2" in case.runs[0].error
    assert len(case.runs[0].turns()) == 1  # the turn that finished is kept


def test_the_split_stages_record_scenario_cases_as_not_run(write, fake):
    suite(write, SCENARIO)
    write("table.json", {})
    agent = python_command(TABLE_AGENT, "table.json")
    assert main(["run-cases", "evals", "--command", agent, "--traces", "traces.jsonl"]) == 0
    assert main(["score", "evals", "--traces", "traces.jsonl", "--out", "results.json"]) == 1
    case = Results.from_json(Path("results.json").read_text()).cases[0]
    assert case.status == "not_evaluated" and "run-cases" in (case.note or "")
    assert fake.calls() == 0


def test_a_forged_not_run_trace_for_a_static_case_is_refused(write, fake, capsys):
    static = {
        "eval_id": "static",
        "conversation": [
            {"user_content": {"role": "user", "parts": [{"text": "hi"}]}, "final_response": None}
        ],
    }
    suite(write, static)
    write("table.json", {})
    agent = python_command(TABLE_AGENT, "table.json")
    assert main(["run-cases", "evals", "--command", agent, "--traces", "traces.jsonl"]) == 0
    lines = Path("traces.jsonl").read_text().splitlines()
    forged = json.loads(lines[1])
    forged["trace"]["not_run"] = "skip me"
    Path("traces.jsonl").write_text("\n".join([lines[0], json.dumps(forged), *lines[2:]]) + "\n")
    assert main(["score", "evals", "--traces", "traces.jsonl"]) == 2
    assert "marked not run for a case that is no scenario" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("simulator", "message"),
    [
        ({"max_allowed_invocations": -3}, "max_allowed_invocations: must be -1"),
        ({"custom_instructions": "{{ conversation_plan }}"}, "must contain {{ stop_signal }}"),
        ({"type": "llm_audio"}, 'type "llm_audio" is not supported'),
        ({"model_configuration": {"temperature": "hot"}}, "temperature"),
    ],
)
def test_a_bad_simulator_config_is_refused_with_its_line(write, fake, capsys, simulator, message):
    suite(write, SCENARIO, config={**CONFIG, "user_simulator_config": simulator})
    code, _ = run(runner=("--command", "true"))
    err = capsys.readouterr().err
    assert code == 2 and message in err and "evals/test_config.json:" in err
    assert fake.calls() == 0


def test_an_unknown_persona_id_is_refused(write, fake, capsys):
    pytest.importorskip("google.adk")
    case = json.loads(json.dumps(SCENARIO))
    case["conversation_scenario"]["user_persona"] = "NOBODY"
    suite(write, case)
    code, _ = run(runner=("--command", "true"))
    err = capsys.readouterr().err
    assert code == 2 and '"NOBODY" is not one of ADK' in err and "chat.evalset.json:" in err


def test_a_persona_id_and_custom_instructions_shape_the_prompt(write, fake):
    pytest.importorskip("google.adk")
    from google.adk.evaluation.simulation.pre_built_personas import (
        get_default_persona_registry,
    )

    persona = get_default_persona_registry().get_registered_personas()[0]
    case = json.loads(json.dumps(SCENARIO))
    case["conversation_scenario"]["user_persona"] = persona.id
    custom = "PLAN={{ conversation_plan }} END={{ stop_signal }} WHO={{ persona.id }} {{ conversation_history }} You play the user in a conversation"
    suite(write, case, config={**CONFIG, "user_simulator_config": {"custom_instructions": custom}})
    write("table.json", {"refund_chat": {"text": "Which order?"}})
    code, results = run(runner=("--command", python_command(TABLE_AGENT, "table.json")))
    assert code == 0 and results is not None
    prompt = fake.requests[0].prompt
    assert prompt.startswith(f"PLAN={PLAN} END={STOP_SIGNAL} WHO={persona.id} user: My blender")


def test_the_default_prompt_shows_the_persona_with_its_stop_signal_filled(write, fake):
    pytest.importorskip("google.adk")
    from google.adk.evaluation.simulation.pre_built_personas import (
        get_default_persona_registry,
    )

    persona = get_default_persona_registry().get_registered_personas()[0]
    case = json.loads(json.dumps(SCENARIO))
    case["conversation_scenario"]["user_persona"] = persona.model_dump()
    suite(write, case)
    write("table.json", {"refund_chat": {"text": "Which order?"}})
    assert run(runner=("--command", python_command(TABLE_AGENT, "table.json")))[0] == 0
    prompt = fake.requests[0].prompt
    assert persona.description in prompt and "{{" not in prompt
    assert persona.behaviors[0].behavior_instructions[0].split("{{")[0] in prompt


# --- per_turn_user_simulator_quality_v1 and rubric_based_multi_turn_trajectory_quality_v1 ---

QUALITY = "per_turn_user_simulator_quality_v1"
MULTI = "rubric_based_multi_turn_trajectory_quality_v1"


def valid(flag: bool) -> str:
    return json.dumps({"reasoning": "r", "is_valid": flag})


def quality_config(threshold: float = 0.5, samples: int = 3) -> dict:
    return {
        "criteria": {
            QUALITY: {"threshold": threshold, "judge_model_options": {"num_samples": samples}},
            MULTI: {
                "threshold": 0.5,
                "judge_model_options": {"num_samples": 1},
                "rubrics": [
                    {"rubric_id": "r1", "rubric_content": {"text_property": "Looks the order up."}},
                    {
                        "rubric_id": "r2",
                        "rubric_content": {"text_property": "Never refunds twice."},
                    },
                ],
            },
        },
        "user_simulator_config": {"max_allowed_invocations": 5},
    }


def three_turns(write, fake, config: dict) -> tuple[int, Results]:
    suite(write, SCENARIO, config=config)
    write(
        "table.json",
        {"refund_chat": {"text": "Which order?", "tools": [["lookup_order", {"id": 1}]]}},
    )
    fake.script("user", "A-1001.", "Thanks!", STOP_SIGNAL)
    code, results = run(runner=("--command", python_command(TABLE_AGENT, "table.json")))
    assert results is not None
    return code, results


def test_simulator_quality_follows_adks_formula(write, fake):
    # turn 1: the starting prompt, no call, 1. Turn 2: samples valid, invalid, valid -> 1.
    # Turn 3: invalid, valid, invalid -> 0. Stop check: invalid x3 -> 0, replaces turn 3.
    # ADK: passing turns over all turns = (1 + 1 + 0) / 3.
    fake.script(
        "user_turn",
        valid(True),
        valid(False),
        valid(True),
        valid(False),
        valid(True),
        valid(False),
        valid(False),
        valid(False),
        valid(False),
    )
    code, results = three_turns(write, fake, quality_config())
    case = results.cases[0]
    quality = case.informational[QUALITY]
    assert quality.score == pytest.approx(2 / 3) and quality.invocations == ((1.0, 1.0, 0.0),)
    # informational: never on an axis, never the case's status (the rubric metric passes it)
    assert QUALITY not in case.metrics and case.status == "passed" and code == 0
    asked = [r for r in fake.requests if r.kind == "user_turn"]
    assert len(asked) == 9  # 3 samples for turns 2, 3 and the stop check; none for turn 1
    turn2 = asked[0].prompt
    assert "=== THE SIMULATED USER'S NEXT MESSAGE ===\nA-1001." in turn2
    assert "user: My blender is broken.\n\nmodel: Which order?" in turn2 and "Thanks!" not in turn2
    stop_check = asked[-1].prompt
    assert stop_check.rstrip().endswith(STOP_SIGNAL) and "user: Thanks!" in stop_check
    # ADK's judge config (none), with the output cap this tool adds
    assert all(
        r.body.get("generationConfig") == {"maxOutputTokens": MAX_OUTPUT_TOKENS} for r in asked
    )
    record = quality.judge
    assert record is not None and record.prompt_version == f"{QUALITY}@1"
    assert [(v.turn, v.step, v.score) for v in record.verdicts] == [
        (1, None, 1.0),
        (2, None, 0.0),
        (2, 1, 0.0),
    ]


def test_a_passing_stop_check_keeps_the_last_turn(write, fake):
    # threshold 1.0: turn 2 valid (1), turn 3 invalid (0), stop check valid: nothing replaced
    fake.script("user_turn", valid(True), valid(False), valid(True))
    _, results = three_turns(write, fake, quality_config(threshold=1.0, samples=1))
    quality = results.cases[0].informational[QUALITY]
    assert quality.invocations == ((1.0, 1.0, 0.0),) and quality.score == pytest.approx(2 / 3)
    assert quality.status == "failed" and results.cases[0].status == "passed"


def test_a_failed_quality_judging_is_not_evaluated_never_a_score(write, fake):
    fake.script("user_turn", *[error(400)] * 3)
    _, results = three_turns(write, fake, quality_config(samples=1))
    quality = results.cases[0].informational[QUALITY]
    assert quality.score is None and quality.status == "not_evaluated" and quality.error


def test_multi_turn_rubrics_judge_the_whole_conversation_once_on_the_last_turn(write, fake):
    from fakes.gemini import rubric_block

    fake.script(
        "rubrics",
        rubric_block("r1", "Looks the order up.", "yes")
        + "\n"
        + rubric_block("r2", "Never refunds twice.", "no"),
    )
    _, results = three_turns(write, fake, quality_config())
    metric = results.cases[0].metrics[MULTI]
    # ADK: the first N-1 turns not evaluated, the last one the mean of its rubrics
    assert metric.invocations == ((None, None, 0.5),) and metric.score == 0.5
    assert metric.status == "passed" and metric.axis == "trajectory"
    assert metric.judge is not None and metric.judge.rubric_scores == [{"r1": 1.0, "r2": 0.0}]
    asked = [r for r in fake.requests if r.kind == "rubrics"]
    assert len(asked) == 1
    prompt = asked[0].prompt
    for line in (
        "USER TURN 1: My blender is broken.",
        'AGENT (agent) TURN 2 (tool call): lookup_order({"id": 1})',
        "AGENT (agent) TURN 3: Which order?",
        "USER TURN 3: Thanks!",
        "- [id: r1] Looks the order up.",
    ):
        assert line in prompt


# --- comparing simulated conversations (docs/statistics.md, "Simulated conversations") ---

COMPARED = {
    "criteria": {
        "safety_v1": {"threshold": 0.5, "judge_model_options": {"num_samples": 1}},
        MULTI: quality_config()["criteria"][MULTI],
    },
    "user_simulator_config": {"max_allowed_invocations": 5},
}


def conversation(
    write, fake, table: dict, user_turns: list[str], *flags: str
) -> tuple[int, Results]:
    suite(write, SCENARIO, config=COMPARED)
    write("table.json", table)
    fake.script("user", *user_turns, STOP_SIGNAL)
    return run(*flags, runner=("--command", python_command(TABLE_AGENT, "table.json")))  # type: ignore[return-value]


TABLE = {
    "refund_chat/0": {"text": "Which order?"},
    "refund_chat/1": {"text": "Refunded.", "tools": [["issue_refund", {"order": "A-1001"}]]},
}


def test_other_words_same_calls_and_scores_is_the_same_behaviour(write, fake):
    conversation(write, fake, TABLE, ["A-1001."], "--out", "base.json")
    Path("results.json").unlink(missing_ok=True)
    Path("base.json").rename("baseline.json")
    fake.reset()
    code, results = conversation(
        write, fake, TABLE, ["It's A-1001, please."], "--baseline", "baseline.json"
    )
    assert code == 0 and results is not None
    diff = json.loads(Path("diff.json").read_text())
    [case] = diff["cases"]
    assert case["change"] == "unchanged" and not case["flaky"]
    # verdict reuse needs the whole judged input identical: turn 1 (same user message,
    # same reply) reuses the baseline's safety verdict; turn 2 (other words) and the
    # whole-conversation rubric request are judged again
    assert results.usage.judge_reused == 1 and fake.calls("safety") == 1
    assert fake.calls("rubrics") == 1


def test_a_regressed_scenario_shows_its_first_divergent_simulated_turn(write, fake):
    from fakes.gemini import rubric_block

    conversation(write, fake, TABLE, ["A-1001."], "--out", "base.json")
    Path("base.json").rename("baseline.json")
    fake.reset()
    worse = {
        **TABLE,
        "refund_chat/1": {
            "text": "Refunded twice.",
            "tools": [["issue_refund", {}], ["issue_refund", {}]],
        },
    }
    fake.script(
        "rubrics",
        rubric_block("r1", "Looks the order up.", "no")
        + "\n"
        + rubric_block("r2", "Never refunds twice.", "no"),
    )
    code, _ = conversation(
        write, fake, worse, ["Order A-1001!"], "--baseline", "baseline.json", "--confirm-runs", "0"
    )
    assert code == 1
    [case] = json.loads(Path("diff.json").read_text())["cases"]
    assert case["change"] == "new_failure"
    turn = case["divergence"]
    assert turn["simulated"] and turn["turn"] == 1
    assert turn["user_text"] == "Order A-1001!" and turn["baseline_user_text"] == "A-1001."
    assert turn["expected_calls"] == [] and turn["current_calls"] == ["issue_refund({})"] * 2
    code = main(
        [
            "compare",
            "--current",
            "results.json",
            "--baseline",
            "baseline.json",
            "--format",
            "markdown",
            "--report",
            "report.md",
        ]
    )
    report = Path("report.md").read_text()
    assert code == 1 and "simulated, nothing expected" not in report
    assert "baseline's user: A-1001." in report and "expected tool calls" not in report


@pytest.mark.parametrize(("second_run", "varies"), [(None, False), ("lookup_order", True)])
def test_runs_of_a_scenario_behave_alike_by_calls_and_scores_not_words(
    write, fake, second_run, varies
):
    from agent_eval_action.compare.divergence import behaviour_varies

    table = dict(TABLE)
    if second_run:
        table["refund_chat/1/2"] = {
            "text": "Refunded.",
            "tools": [[second_run, {"order": "A-1001"}]],
        }
    suite(write, SCENARIO, config=COMPARED)
    write("table.json", table)
    # two runs, the simulated user words turn 2 differently in each
    fake.script("user", "A-1001.", STOP_SIGNAL, "Order A-1001 please.", STOP_SIGNAL)
    _, results = run(
        "--num-runs",
        "2",
        "--concurrency",
        "1",
        runner=("--command", python_command(TABLE_AGENT, "table.json")),
    )
    assert results is not None
    case = results.cases[0]
    words = [r.turns()[1].user_content.text() for r in case.runs]
    assert words == ["A-1001.", "Order A-1001 please."]
    assert behaviour_varies(case) is varies


# --- ADK's Vertex AI metrics: one policy, our own judge, recorded as not comparable ---

VERTEX_MULTI = (
    "multi_turn_task_success_v1",
    "multi_turn_trajectory_quality_v1",
    "multi_turn_tool_use_quality_v1",
)


@pytest.mark.parametrize("name", VERTEX_MULTI)
def test_vertex_multi_turn_metrics_are_our_own_judge_over_the_conversation(write, fake, name):
    from agent_eval_action.metrics.judge.conversation import listed_rubrics

    listed = listed_rubrics(name)
    assert len(listed) >= 3
    # every fixed rubric but the first is met: share of rubrics met on the last turn
    fake.respond(
        "rubrics",
        lambda prompt: "\n".join(
            rubric_block(rid, text, "no" if rid == listed[0][0] else "yes") for rid, text in listed
        ),
    )
    config = {"criteria": {name: 0.5}, "user_simulator_config": {"max_allowed_invocations": 5}}
    suite(write, SCENARIO, config=config)
    write("table.json", {"refund_chat": {"text": "Which order?"}})
    fake.script("user", "A-1001.", STOP_SIGNAL)
    code, results = run(runner=("--command", python_command(TABLE_AGENT, "table.json")))
    assert results is not None and code == 0
    metric = results.cases[0].metrics[name]
    expected = (len(listed) - 1) / len(listed)
    assert metric.invocations == ((None, pytest.approx(expected)),)
    assert metric.judge is not None and "not comparable with ADK's Vertex score" in (
        metric.judge.note or ""
    )
    assert metric.judge.num_samples == 1 and metric.judge.prompt_version == f"{name}@1"
    [asked] = [r for r in fake.requests if r.kind == "rubrics"]
    assert all(f"[id: {rid}] {text}" in asked.prompt for rid, text in listed)
    assert "USER TURN 2: A-1001." in asked.prompt


def test_response_evaluation_score_rates_coherence_on_adks_scale(write, fake):
    static = {
        "eval_id": "static",
        "conversation": [
            {
                "user_content": {"role": "user", "parts": [{"text": q}]},
                "final_response": {"role": "model", "parts": [{"text": "ok"}]},
            }
            for q in ("first?", "second?")
        ],
    }
    config = {
        "criteria": {
            "response_evaluation_score": {
                "threshold": 3.5,
                "judge_model_options": {"num_samples": 2},
            }
        }
    }
    suite(write, static, config=config)
    write("table.json", {"static/0": {"text": "Fine."}, "static/1": {"text": "Also fine."}})
    coherence = lambda n: json.dumps({"reasoning": "r", "coherence": n})  # noqa: E731
    fake.script("coherence", coherence(4), coherence(5), coherence(2), coherence(3))
    code, results = run(runner=("--command", python_command(TABLE_AGENT, "table.json")))
    assert results is not None
    metric = results.cases[0].metrics["response_evaluation_score"]
    # samples averaged per turn (4.5 and 2.5), the run the mean of its turns: 3.5 >= 3.5
    assert sorted(metric.invocations[0]) == [2.5, 4.5] and metric.score == 3.5
    assert metric.status == "passed" and code == 0
    assert "not comparable" in (metric.judge.note or "") if metric.judge else False


# --- the user-turn relay: the simulator in `serve-users`, the agent stage without the key ---


def _relayed_stages(tmp: Path, fake: FakeGemini, agent_env: dict[str, str]) -> tuple[int, int]:
    """run-cases (no key in its environment) asking serve-users (with the key) over pipes."""
    import os
    import subprocess
    import sys

    to_server_r, to_server_w = os.pipe()
    to_agent_r, to_agent_w = os.pipe()
    stage = [sys.executable, "-m", "agent_eval_action"]
    server = subprocess.Popen(
        [*stage, "serve-users", "evals", "--record", str(tmp / "sim.json")],
        stdin=to_server_r,
        stdout=to_agent_w,
        env={**os.environ, "GOOGLE_API_KEY": "fake", "GOOGLE_GEMINI_BASE_URL": fake.url},
    )
    os.close(to_server_r)
    os.close(to_agent_w)
    agent = subprocess.Popen(
        [
            *stage,
            "run-cases",
            "evals",
            "--command",
            python_command(TABLE_AGENT, "table.json"),
            "--traces",
            str(tmp / "traces.jsonl"),
            "--user-turns",
            f"{to_agent_r},{to_server_w}",
        ],
        pass_fds=(to_agent_r, to_server_w),
        env=agent_env,
    )
    os.close(to_agent_r)
    os.close(to_server_w)
    return agent.wait(timeout=120), server.wait(timeout=60)


def test_the_relay_runs_scenarios_with_the_simulator_on_the_keyed_side(write, fake, tmp_path):
    import os

    suite(write, SCENARIO)
    write("table.json", {"refund_chat": {"text": "Which order?"}})
    fake.script("user", "A-1001.", STOP_SIGNAL)
    agent_env = {
        k: v for k, v in os.environ.items() if k not in ("GOOGLE_API_KEY", "GEMINI_API_KEY")
    }
    assert _relayed_stages(Path.cwd(), fake, agent_env) == (0, 0)
    assert fake.calls("user") == 2
    # the agent stage's traces hold the simulated turns; their stop and cost come from the
    # record serve-users wrote, not from the agent stage
    score = ["score", "evals", "--traces", "traces.jsonl", "--simulations", "sim.json"]
    code = main([*score, "--out", "results.json"])
    results = Results.from_json(Path("results.json").read_text())
    assert code == 0
    assert [u for u, _ in texts(results)] == ["My blender is broken.", "A-1001."]
    assert results.cases[0].runs[0].stop == "stop_signal"
    assert results.usage.simulator_calls == 2


def test_the_relay_asks_for_the_turns_of_concurrent_case_runs_at_once(write, fake, tmp_path):
    import os

    chats = [{**SCENARIO, "eval_id": f"chat_{i}"} for i in range(4)]
    suite(write, *chats)
    write("table.json", {c["eval_id"]: {"text": "Which order?"} for c in chats})
    fake.latency_s = 0.5  # each simulated turn takes a while: they overlap, or wait in line
    agent_env = {
        k: v for k, v in os.environ.items() if k not in ("GOOGLE_API_KEY", "GEMINI_API_KEY")
    }
    assert _relayed_stages(Path.cwd(), fake, agent_env) == (0, 0)
    assert fake.calls("user") == 4  # each chat's second turn, the user stops
    assert fake.max_in_flight > 1  # one request at a time kept this at 1


def test_serve_users_answers_only_scenario_case_runs_of_its_suite(write, fake):
    import subprocess
    import sys

    static = {
        "eval_id": "static",
        "conversation": [{"user_content": {"role": "user", "parts": [{"text": "hi"}]}}],
    }
    suite(write, SCENARIO, static)
    asks = [
        {"relay": 1, "id": 1, "eval_set_id": "chat", "eval_id": "static", "run": 1, "turns": []},
        {
            "relay": 1,
            "id": 2,
            "eval_set_id": "chat",
            "eval_id": "refund_chat",
            "run": 10**6,
            "turns": [],
        },
        {
            "relay": 1,
            "id": 3,
            "eval_set_id": "chat",
            "eval_id": "refund_chat",
            "run": 1,
            "turns": 7,
        },
        "not json",
        {
            "relay": 1,
            "id": 4,
            "eval_set_id": "chat",
            "eval_id": "refund_chat",
            "run": 1,
            "turns": [],
        },
    ]
    done = subprocess.run(
        [sys.executable, "-m", "agent_eval_action", "serve-users", "evals", "--record", "sim.json"],
        input="\n".join(a if isinstance(a, str) else json.dumps(a) for a in asks) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        env={**__import__("os").environ, "GOOGLE_GEMINI_BASE_URL": fake.url},
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0 and len(answers) == 5, answers
    by_id = {a["id"]: a for a in answers if a["id"] is not None}  # answered in any order
    unread = [a["error"] for a in answers if a["id"] is None]
    unplanned = "not a planned scenario case-run"
    assert by_id[1] == {"id": 1, "error": f"refused: chat / static run 1: {unplanned}"}
    assert by_id[2] == {"id": 2, "error": f"refused: chat / refund_chat run 1000000: {unplanned}"}
    assert len(unread) == 2 and all(e.startswith("refused: not a relay request") for e in unread)
    # the starting prompt needs no call, so no key either
    assert by_id[4] == {
        "id": 4,
        "user_content": {"parts": [{"text": "My blender is broken."}], "role": "user"},
    }
    assert fake.calls() == 0
