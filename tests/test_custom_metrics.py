"""Custom metrics from test_config.json, called as ADK calls them."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from helpers.paths import WORKERS, python_command

from agent_eval_action.cli import main
from agent_eval_action.results import Results

EVALS = {
    "eval_set_id": "s",
    "eval_cases": [
        {
            "eval_id": "c",
            "conversation": [
                {
                    "user_content": {"role": "user", "parts": [{"text": "hi"}]},
                    "final_response": {"role": "model", "parts": [{"text": "hello there"}]},
                    "intermediate_data": {"tool_uses": [{"name": "greet", "args": {}}]},
                },
                {
                    "user_content": {"role": "user", "parts": [{"text": "bye"}]},
                    "final_response": {"role": "model", "parts": [{"text": "goodbye"}]},
                },
            ],
        }
    ],
}

METRICS = textwrap.dedent(
    '''
    from google.adk.evaluation.eval_case import Invocation
    from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult
    from google.adk.evaluation.eval_metrics import EvalStatus


    def short_answers(eval_metric, actual, expected, scenario):
        """1.0 per turn whose answer has at most three words; ADK's own types in and out."""
        assert all(isinstance(i, Invocation) for i in actual + expected)
        assert eval_metric.metric_name == "short_answers" and scenario is None
        scores = [1.0 if len(i.final_response.parts[0].text.split()) <= 3 else 0.0 for i in actual]
        return EvaluationResult(
            overall_score=sum(scores) / len(scores),
            overall_eval_status=EvalStatus.PASSED,
            per_invocation_results=[
                PerInvocationResult(actual_invocation=a, expected_invocation=e, score=s)
                for a, e, s in zip(actual, expected, scores)
            ],
        )


    async def used_tools(eval_metric, actual, expected, scenario):
        return float(sum(len(i.intermediate_data.tool_uses) for i in actual) >= 1)


    def broken(eval_metric, actual, expected, scenario):
        raise RuntimeError("metric bug")
    '''
)


def run(write, criteria: dict, custom: dict) -> tuple[int, Results]:
    write("evals/s.evalset.json", EVALS)
    write("evals/test_config.json", {"criteria": criteria, "custom_metrics": custom})
    write("my_metrics.py", METRICS)
    write(
        "table.json",
        {
            "c/0": {"text": "hello there", "tools": [["greet", {}]]},
            "c/1": {"text": "goodbye and see you soon"},
        },
    )
    code = main(
        ["run", "evals", "--command", python_command(WORKERS / "table_agent.py", "table.json")]
    )
    return code, Results.from_json(Path("results.json").read_text())


def spec(function: str, **extra) -> dict:
    return {"code_config": {"name": f"my_metrics.{function}"}, **extra}


@pytest.mark.adk
def test_custom_metric_gets_adk_types_and_scores_per_turn(write):
    code, results = run(write, {"short_answers": 0.5}, {"short_answers": spec("short_answers")})
    metric = results.cases[0].metrics["short_answers"]
    assert (metric.score, metric.invocations, metric.status, metric.axis) == (
        0.5,
        ((1.0, 0.0),),
        "passed",
        "response",
    )
    assert code == 0


@pytest.mark.adk
def test_async_custom_metric_with_declared_axis(write):
    code, results = run(
        write, {"used_tools": 1.0}, {"used_tools": spec("used_tools", axis="trajectory")}
    )
    metric = results.cases[0].metrics["used_tools"]
    assert (metric.score, metric.axis, metric.status) == (1.0, "trajectory", "passed")
    assert code == 0


@pytest.mark.adk
def test_a_failing_custom_metric_is_not_evaluated_and_never_passes(write):
    code, results = run(
        write,
        {"broken": 0.0, "short_answers": 0.5},
        {"broken": spec("broken"), "short_answers": spec("short_answers")},
    )
    case = results.cases[0]
    assert (
        case.metrics["broken"].status == "not_evaluated"
        and "metric bug" in case.metrics["broken"].error
    )
    assert case.status == "not_evaluated" and code == 1


@pytest.mark.adk
def test_custom_metric_mixed_with_builtins(write):
    _, results = run(
        write,
        {
            "tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "ANY_ORDER"},
            "short_answers": 0.9,
        },
        {"short_answers": spec("short_answers")},
    )
    case = results.cases[0]
    assert case.metrics["tool_trajectory_avg_score"].score == 1.0
    assert case.metrics["short_answers"].status == "failed" and case.status == "failed"


EVENTS_METRIC = textwrap.dedent(
    '''
    from google.adk.evaluation.eval_case import InvocationEvents, get_all_tool_calls


    def saw_events(eval_metric, actual, expected, scenario):
        """1.0 when every actual turn carries ADK's recorded events and app details."""
        ok = all(
            isinstance(i.intermediate_data, InvocationEvents)
            and i.intermediate_data.invocation_events
            and i.app_details is not None
            for i in actual
        )
        calls = [c.name for i in actual for c in get_all_tool_calls(i.intermediate_data)]
        return 1.0 if ok and "lookup_order" in calls else 0.0
    '''
)


@pytest.mark.adk
def test_with_an_adk_runner_custom_metrics_get_the_recorded_events(write):
    """As ADK's own inference gives them: intermediate data as the turn's events."""
    from helpers.paths import ROOT

    write("events_metric.py", EVENTS_METRIC)
    write(
        "config.json",
        {
            "criteria": {"saw_events": 1.0},
            "custom_metrics": {"saw_events": {"code_config": {"name": "events_metric.saw_events"}}},
        },
    )
    evals = ROOT / "examples/customer_support/evals/refund_flow.evalset.json"
    agent = ROOT / "examples/customer_support"
    code = main(
        ["run", f"{evals}:damaged_item_refund", "--agent", str(agent), "--config", "config.json"]
    )
    results = Results.from_json(Path("results.json").read_text())
    metric = results.cases[0].metrics["saw_events"]
    assert (metric.score, metric.status) == (1.0, "passed"), metric
    assert code == 0


@pytest.mark.adk
def test_custom_metrics_run_in_the_agent_stage_and_the_score_stage_imports_none(write):
    code, one = run(write, {"short_answers": 0.5}, {"short_answers": spec("short_answers")})
    agent = ["--command", python_command(WORKERS / "table_agent.py", "table.json")]
    assert main(["run-cases", "evals", *agent, "--traces", "t.jsonl"]) == 0
    # the score stage runs no project code: a metric module that would explode on import
    Path("my_metrics.py").write_text("raise SystemExit('the score stage imported project code')")
    assert main(["score", "evals", "--traces", "t.jsonl", "--out", "two.json"]) == code == 0
    two = Results.from_json(Path("two.json").read_text())
    first, second = one.cases[0].metrics["short_answers"], two.cases[0].metrics["short_answers"]
    assert (second.score, second.invocations, second.status) == (0.5, ((1.0, 0.0),), "passed")
    assert (first.score, first.invocations) == (second.score, second.invocations)


@pytest.mark.adk
def test_a_custom_metric_the_agent_stage_did_not_score_is_not_evaluated(write):
    run(write, {"short_answers": 0.5}, {"short_answers": spec("short_answers")})
    agent = ["--command", python_command(WORKERS / "table_agent.py", "table.json")]
    main(["run-cases", "evals", *agent, "--traces", "t.jsonl"])
    lines = Path("t.jsonl").read_text().splitlines()
    stripped = [
        json.dumps(
            {"trace": {k: v for k, v in json.loads(x)["trace"].items() if k != "custom_scores"}}
        )
        if '"trace"' in x
        else x
        for x in lines
    ]
    Path("t.jsonl").write_text("\n".join(stripped) + "\n")
    assert main(["score", "evals", "--traces", "t.jsonl"]) == 1
    metric = Results.from_json(Path("results.json").read_text()).cases[0].metrics["short_answers"]
    assert metric.status == "not_evaluated" and "recorded no score" in (metric.error or "")
