"""`agent-eval-action run` end to end: real worker processes, scores, Results file, exit codes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import msgspec
import pytest
from helpers.paths import ROOT, WORKERS, python_command

from agent_eval_action.cli import main
from agent_eval_action.results import Results

TABLE_AGENT = WORKERS / "table_agent.py"


def turn(user: str, answer: str | None, tools=()):
    data = {
        "user_content": {"role": "user", "parts": [{"text": user}]},
        "intermediate_data": {"tool_uses": [{"name": n, "args": a} for n, a in tools]},
    }
    if answer is not None:
        data["final_response"] = {"role": "model", "parts": [{"text": answer}]}
    return data


WEATHER = {
    "eval_set_id": "weather",
    "eval_cases": [
        {
            "eval_id": "paris",
            "conversation": [
                turn(
                    "Weather in Paris?",
                    "It is 18 degrees in Paris.",
                    [("get_weather", {"city": "Paris"})],
                )
            ],
        },
        {
            "eval_id": "two_cities",
            "conversation": [
                turn(
                    "Weather in Paris?",
                    "It is 18 degrees in Paris.",
                    [("get_weather", {"city": "Paris"})],
                ),
                turn(
                    "And Tokyo?", "It is 25 degrees in Tokyo.", [("get_weather", {"city": "Tokyo"})]
                ),
            ],
        },
    ],
}

GOOD = {
    "paris": {"text": "It is 18 degrees in Paris.", "tools": [["get_weather", {"city": "Paris"}]]},
    "two_cities/0": {
        "text": "It is 18 degrees in Paris.",
        "tools": [["get_weather", {"city": "Paris"}]],
    },
    "two_cities/1": {
        "text": "It is 25 degrees in Tokyo.",
        "tools": [["get_weather", {"city": "Tokyo"}]],
    },
}


def run(
    write, table: dict, *flags: str, evals: dict = WEATHER, config: dict | None = None
) -> tuple[int, Results]:
    write("evals/weather.evalset.json", evals)
    if config is not None:
        write("evals/test_config.json", config)
    write("table.json", table)
    code = main(
        [
            "run",
            "evals",
            "--command",
            python_command(TABLE_AGENT, "table.json"),
            "--out",
            "results.json",
            *flags,
        ]
    )
    out = flags[flags.index("--out") + 1] if "--out" in flags else "results.json"
    return code, Results.from_json(Path(out).read_text())


def case_of(results: Results, eval_id: str):
    return next(c for c in results.cases if c.eval_id == eval_id)


def test_all_pass_exit_0_and_results_match_the_schema(write, capsys):
    code, results = run(write, GOOD)
    assert code == 0
    schema = json.loads((ROOT / "schemas" / "results.schema.json").read_text())
    jsonschema.validate(json.loads(Path("results.json").read_text()), schema)
    assert results.schema_ == "agent-eval-results/1"
    paris = case_of(results, "paris")
    assert (
        paris.status == "passed" and paris.file == "evals/weather.evalset.json" and paris.line == 4
    )
    trajectory = msgspec.structs.asdict(paris.metrics["tool_trajectory_avg_score"])
    assert {
        k: trajectory[k] for k in ("axis", "score", "threshold", "status", "runs", "invocations")
    } == {
        "axis": "trajectory",
        "score": 1.0,
        "threshold": 1.0,
        "status": "passed",
        "runs": (1.0,),
        "invocations": ((1.0,),),
    }
    assert paris.metrics["response_match_score"].axis == "response"
    record = paris.runs[0].turns()[0]
    assert record.actual.tool_uses[0].args == {"city": "Paris"}
    assert record.expected.final_response.text() == "It is 18 degrees in Paris."
    assert results.eval_sets[0].config == "ADK defaults"
    assert results.usage.prompt_tokens == 30  # three turns of 10
    out = capsys.readouterr().out
    assert "2 cases: 2 passed" in out and "tool_trajectory_avg_score" in out


def test_a_failing_turn_fails_the_case_with_adk_scores(write):
    table = {
        **GOOD,
        "two_cities/1": {
            "text": "Tokyo is sunny and warm today.",
            "tools": [["get_weather", {"city": "Kyoto"}]],
        },
    }
    code, results = run(write, table)
    assert code == 1
    two = case_of(results, "two_cities")
    assert two.status == "failed"
    assert two.metrics["tool_trajectory_avg_score"].invocations == ((1.0, 0.0),)
    assert two.metrics["tool_trajectory_avg_score"].score == 0.5
    rouge = two.metrics["response_match_score"]
    assert rouge.invocations[0][0] == 1.0 and rouge.invocations[0][1] == pytest.approx(1 / 3)
    assert rouge.score == pytest.approx((1 + 1 / 3) / 2)
    assert case_of(results, "paris").status == "passed"


def test_several_runs_pool_every_turn(write):
    table = {**GOOD, "paris/0/2": {"text": "No idea.", "tools": []}}
    code, results = run(write, table, "--num-runs", "3")
    trajectory = case_of(results, "paris").metrics["tool_trajectory_avg_score"]
    assert trajectory.runs == (1.0, 0.0, 1.0) and trajectory.invocations == ((1.0,), (0.0,), (1.0,))
    assert trajectory.score == pytest.approx(2 / 3) and trajectory.status == "failed"
    assert [r.run for r in case_of(results, "paris").runs] == [1, 2, 3]
    assert results.run_config.num_runs == 3 and code == 1


def test_an_errored_run_keeps_its_finished_turns_and_never_passes(write):
    table = {**GOOD, "two_cities/1": {"error": "model overloaded"}}
    code, results = run(write, table)
    two = case_of(results, "two_cities")
    assert code == 1 and two.status == "errored"
    assert "model overloaded" in two.runs[0].error and "model overloaded" in two.note
    first, second = two.runs[0].turns()
    assert (
        first.actual.final_response.text() == "It is 18 degrees in Paris." and second.actual is None
    )
    assert all(m.status == "not_evaluated" and m.score is None for m in two.metrics.values())


def test_a_timed_out_run_is_errored(write):
    table = {**GOOD, "paris": {"sleep": 5}}
    code, results = run(write, table, "--timeout", "1")
    paris = case_of(results, "paris")
    assert code == 1 and paris.status == "errored" and "timed out" in paris.runs[0].error
    assert case_of(results, "two_cities").status == "passed"


def test_a_crashing_agent_errors_only_its_case(write):
    table = {**GOOD, "paris": {"exit": 3}}
    code, results = run(write, table, "--concurrency", "1")
    assert case_of(results, "paris").status == "errored" and code == 1
    assert case_of(results, "two_cities").status == "passed"


def test_trajectory_policy_overrides_match_type(write):
    table = {
        **GOOD,
        "paris": {
            "text": "It is 18 degrees in Paris.",
            "tools": [["auth", {}], ["get_weather", {"city": "Paris"}]],
        },
    }
    _, business = run(write, table, "--trajectory-policy", "business")
    assert case_of(business, "paris").metrics["tool_trajectory_avg_score"].score == 1.0
    assert business.eval_sets[0].criteria["tool_trajectory_avg_score"]["match_type"] == "IN_ORDER"
    _, strict = run(write, table, "--trajectory-policy", "strict")
    assert case_of(strict, "paris").metrics["tool_trajectory_avg_score"].score == 0.0
    assert strict.run_config.trajectory_policy == "strict"
    _, adk_name = run(write, table, "--trajectory-policy", "ANY_ORDER")  # ADK's name
    assert adk_name.run_config.trajectory_policy == "any_order"
    assert adk_name.eval_sets[0].criteria["tool_trajectory_avg_score"]["match_type"] == "ANY_ORDER"


def test_missing_expected_answer_scores_zero_as_in_adk(write):
    evals = {
        "eval_set_id": "weather",
        "eval_cases": [
            {
                "eval_id": "paris",
                "conversation": [
                    turn("Weather in Paris?", None, [("get_weather", {"city": "Paris"})])
                ],
            }
        ],
    }
    _, results = run(write, GOOD, evals=evals)
    assert case_of(results, "paris").metrics["response_match_score"].score == 0.0


def test_a_scenario_case_with_a_metric_that_needs_expected_turns_is_refused(write, capsys):
    evals = {
        "eval_set_id": "weather",
        "eval_cases": [
            *WEATHER["eval_cases"],
            {
                "eval_id": "sim",
                "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "ask"},
            },
        ],
    }
    write("evals/weather.evalset.json", evals)
    write("table.json", GOOD)
    assert main(["run", "evals", "--command", python_command(TABLE_AGENT, "table.json")]) == 2
    err = capsys.readouterr().err
    assert 'case "sim" is a conversation_scenario' in err and "tool_trajectory_avg_score" in err


def test_json_format_prints_the_results(write, capsys):
    run(write, GOOD, "--format", "json")
    out = capsys.readouterr().out
    printed = json.loads(out)
    assert printed["schema"] == "agent-eval-results/1" and len(printed["cases"]) == 2
    assert out == Path("results.json").read_text(encoding="utf-8") + "\n"  # as written


def test_case_hash_tracks_expectations_not_timestamps(write):
    _, first = run(write, GOOD)
    changed = json.loads(json.dumps(WEATHER))
    changed["eval_cases"][0]["conversation"][0]["creation_timestamp"] = 123.0
    _, same = run(write, GOOD, evals=changed)
    assert case_of(first, "paris").case_sha256 == case_of(same, "paris").case_sha256
    changed["eval_cases"][0]["conversation"][0]["final_response"]["parts"][0]["text"] = "Eighteen."
    _, other = run(write, GOOD, evals=changed)
    assert case_of(first, "paris").case_sha256 != case_of(other, "paris").case_sha256


def test_github_source_is_recorded(write, monkeypatch):
    monkeypatch.setenv("GITHUB_SHA", "abc123")
    monkeypatch.setenv("GITHUB_EVENT_NAME", "pull_request")
    _, results = run(write, GOOD)
    assert (results.source.sha, results.source.event) == ("abc123", "pull_request")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_cancellation_writes_partial_results_and_exits_3(write, signum):
    write("evals/weather.evalset.json", WEATHER)
    write("table.json", {**GOOD, "two_cities/0": {"sleep": 60}})
    command = python_command(TABLE_AGENT, "table.json")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agent_eval_action",
            "run",
            "evals",
            "--command",
            command,
            "--out",
            "results.json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    stderr = ""
    while "paris run 1: ok" not in stderr and time.monotonic() < deadline:
        stderr += process.stderr.readline()
    os.kill(process.pid, signum)
    out, rest = process.communicate(timeout=20)
    assert process.returncode == 3, stderr + rest
    results = Results.from_json(Path("results.json").read_text())
    assert results.partial is True
    assert case_of(results, "paris").status == "passed"
    two = case_of(results, "two_cities")
    assert two.status == "errored" and "cancelled" in two.runs[0].error
    assert "PARTIAL" in out


def test_judged_metrics_without_a_key_are_not_evaluated_and_fail_the_run(write):
    config = {
        "criteria": {
            "tool_trajectory_avg_score": 1.0,
            "final_response_match_v2": {
                "threshold": 0.8,
                "judgeModelOptions": {"judgeModel": "gemini-2.5-pro", "numSamples": 3},
            },
        }
    }
    code, results = run(write, GOOD, config=config)
    paris = case_of(results, "paris")
    judged = paris.metrics["final_response_match_v2"]
    assert (
        judged.status == "not_evaluated"
        and judged.score is None
        and "no GOOGLE_API_KEY/GEMINI_API_KEY" in judged.error
    )
    assert judged.judge.model == "gemini-2.5-pro" and judged.judge.num_samples == 3
    assert paris.metrics["tool_trajectory_avg_score"].status == "passed"
    assert paris.status == "not_evaluated" and code == 1
    options = results.eval_sets[0].criteria["final_response_match_v2"]["judge_model_options"]
    assert options == {"judge_model": "gemini-2.5-pro", "num_samples": 3, "parallelism_limit": 1}


def test_run_with_a_baseline_compares_and_gates_on_regressions(write, capsys):
    code, _ = run(write, GOOD, "--out", "base.json")
    assert code == 0
    capsys.readouterr()
    slipped = {**GOOD, "paris": {"text": "It is 18 degrees in Paris.", "tools": []}}
    code, results = run(write, slipped, "--baseline", "base.json")
    assert code == 1
    out = capsys.readouterr().out
    assert "FAIL (fail-on regression): 1 trajectory regression ·" in out and "lucky answer" in out
    diff = json.loads(Path("diff.json").read_text())
    assert diff["verdict"]["trajectory_regressions"] == 1
    assert case_of(results, "paris").status == "failed"


def test_run_with_an_unchanged_agent_and_a_still_failing_case_passes_the_regression_gate(write):
    failing = {**GOOD, "two_cities/1": {"text": "No idea.", "tools": []}}
    run(write, failing, "--out", "base.json")
    code, _ = run(write, failing, "--baseline", "base.json")
    assert code == 0
    code, _ = run(write, failing, "--baseline", "base.json", "--fail-on", "threshold")
    assert code == 1


def test_run_with_a_missing_baseline_file_is_bad_input(write, capsys):
    write("evals/weather.evalset.json", WEATHER)
    write("table.json", GOOD)
    agent = ["--command", python_command(TABLE_AGENT, "table.json")]
    assert main(["run", "evals", *agent, "--baseline", "nowhere.json"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        "error: nowhere.json: --baseline: no such file (leave it out to judge by thresholds)"
    )
    assert not Path("results.json").exists()  # refused before any agent ran


def test_run_says_which_config_each_eval_file_uses(write, capsys):
    run(write, GOOD)
    assert (
        "config: 1 eval file uses ADK's defaults (no test_config.json beside evals/weather.evalset.json)"
        in capsys.readouterr().err
    )
    run(write, GOOD, config={"criteria": {"response_match_score": 0.5}})
    assert "config: 1 eval file uses evals/test_config.json" in capsys.readouterr().err
