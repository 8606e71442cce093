"""ADK's efficiency metrics (metrics/efficiency.py): computed as ADK 2.13's evaluators compute
them, recorded per case, reported (suite line, notable changes), and budgets that fail the
gate only when set and exceeded."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest
from helpers.factory import case, results
from helpers.paths import ROOT, WORKERS, python_command

from agent_eval_action.cli import main
from agent_eval_action.compare import compare
from agent_eval_action.compare.efficiency import efficiency_diff, notable
from agent_eval_action.errors import InputError
from agent_eval_action.evalset.models import Content, FunctionCall, InvocationEvent, SessionInput
from agent_eval_action.metrics.efficiency import BY_NAME, EFFICIENCY, measure, parse_budget
from agent_eval_action.pipeline.gate import threshold_code
from agent_eval_action.pipeline.score import efficiency
from agent_eval_action.report import markdown
from agent_eval_action.report.diff_console import table as diff_table
from agent_eval_action.report.efficiency import change_text
from agent_eval_action.results import EfficiencyResult, Results
from agent_eval_action.traces import ActualTurn, CaseRunRequest, CaseRunTrace, TokenUsage

EXAMPLE = ROOT / "examples" / "customer_support"
TABLE_AGENT = WORKERS / "table_agent.py"


def event(usage: dict | None = None, model: str | None = None, calls: int = 0) -> InvocationEvent:
    parts = [{"function_call": {"name": f"tool{i}", "args": {}}} for i in range(calls)]
    return InvocationEvent(
        author="agent",
        content=Content.model_validate({"role": "model", "parts": parts}) if parts else None,
        usage_metadata=usage,
        model_version=model,
    )


def turn(calls: int = 0, events=None, seconds: float = 1.0, usage: TokenUsage | None = None):
    return ActualTurn(
        tool_uses=[FunctionCall(name=f"tool{i}") for i in range(calls)],
        invocation_events=events,
        duration_s=seconds,
        usage=usage,
    )


# --- the values, against hand-computed ones and ADK's own evaluators --------------------


def test_per_turn_values_and_adk_aggregation_by_hand():
    tokens = {"prompt_token_count": 100, "candidates_token_count": 20, "thoughts_token_count": 5}
    one = [
        turn(2, [event(tokens, "m", 2), event(None, "m")], seconds=1.5),
        turn(0, [event(None, None)], seconds=0.0),  # no usage reported, not timed
    ]
    got = {m.name: measure(m, [one]) for m in EFFICIENCY}
    assert got["tool_call_count_v1"].invocations == [[2.0, 0.0]]
    assert got["tool_call_count_v1"].score == 1.0 and got["tool_call_count_v1"].total == 2.0
    assert got["inference_call_count_v1"].invocations == [[2.0, 0.0]]
    # tokens: 125 in turn 1, n/a in turn 2; ADK's mean counts the turn without usage as 0
    assert got["token_usage_v1"].invocations == [[125.0, None]]
    assert got["token_usage_v1"].score == 62.5 and got["token_usage_v1"].total == 125.0
    # seconds: an untimed turn is n/a, not instant, and left out of the mean
    assert got["invocation_duration_v1"].invocations == [[1.5, None]]
    assert got["invocation_duration_v1"].score == 1.5


def test_several_runs_pool_their_turns_and_total_per_run():
    runs = [[turn(1), turn(3)], [turn(0), turn(2)]]
    got = measure(BY_NAME["tool_call_count_v1"], runs)
    assert got.runs == [2.0, 1.0]
    assert got.score == 1.5  # the mean of every turn of every run (AgentEvaluator)
    assert got.total == 3.0  # (4 + 2) / 2: each run's turns summed, the mean over the runs


def test_a_command_agent_without_events_reports_its_usage_and_no_model_calls():
    runs = [
        [turn(1, None, usage=TokenUsage(prompt_tokens=800, output_tokens=40, thinking_tokens=7))]
    ]
    assert measure(BY_NAME["token_usage_v1"], runs).total == 847.0
    assert measure(BY_NAME["inference_call_count_v1"], runs).total is None
    assert measure(BY_NAME["token_usage_v1"], [[turn(1, None)]]).total is None


@pytest.mark.adk
def test_the_values_equal_adk_evaluators_on_a_real_adk_run():
    from google.adk.evaluation import _efficiency_evaluators as adk
    from google.adk.evaluation.eval_case import Invocation

    from agent_eval_action.runners.adk import run_adk_suite

    request = CaseRunRequest(
        eval_set_id="s",
        eval_id="refund",
        run=1,
        session_input=SessionInput(
            app_name="customer_support", user_id="u", state={"authenticated": True}
        ),
        user_contents=[
            Content.from_text(text, "user")
            for text in ("My order arrived damaged.", "It is A-1001.", "Thanks!")
        ],
    )
    [trace] = asyncio.run(run_adk_suite([request], EXAMPLE))
    assert trace.error is None
    invocations = [
        Invocation(
            user_content=user.model_dump(mode="json"),
            final_response=t.final_response.model_dump(mode="json") if t.final_response else None,
            intermediate_data={
                "invocation_events": [e.model_dump(mode="json") for e in t.invocation_events or ()]
            },
            duration=round(t.duration_s, 3),
        )
        for user, t in zip(request.user_contents, trace.turns, strict=True)
    ]
    evaluators = {
        "tool_call_count_v1": adk._ToolCallCountV1Evaluator(),
        "inference_call_count_v1": adk._InferenceCallCountV1Evaluator(),
        "token_usage_v1": adk._TokenUsageV1Evaluator(),
        "invocation_duration_v1": adk._InvocationDurationV1Evaluator(),
    }
    for name, evaluator in evaluators.items():
        theirs = evaluator.evaluate_invocations(invocations)
        ours = measure(BY_NAME[name], [trace.turns])
        assert ours.invocations[0] == [r.score for r in theirs.per_invocation_results], name
        assert math.isclose(ours.score, theirs.overall_score, rel_tol=1e-12), name
    assert measure(BY_NAME["tool_call_count_v1"], [trace.turns]).total >= 1


# --- budgets: never a failure unless set and exceeded ------------------------------------


def trace(calls: list[int], run: int = 1) -> CaseRunTrace:
    return CaseRunTrace(eval_set_id="s", eval_id="a", run=run, turns=[turn(c) for c in calls])


def test_budgets_mark_a_case_over_only_above_its_total():
    assert not efficiency([trace([2, 1])], {})["tool_call_count_v1"].over_budget
    at = efficiency([trace([2, 1])], {"tool_call_count_v1": 3})["tool_call_count_v1"]
    assert (at.total, at.budget, at.over_budget) == (3.0, 3, False)
    over = efficiency([trace([2, 2])], {"tool_call_count_v1": 3})["tool_call_count_v1"]
    assert over.over_budget
    # with several runs, the mean of the runs' totals: (4 + 2) / 2 = 3 is within 3
    runs = [trace([2, 2]), trace([1, 1], run=2)]
    assert not efficiency(runs, {"tool_call_count_v1": 3})["tool_call_count_v1"].over_budget
    assert efficiency([], {"tool_call_count_v1": 3}) == {}  # no finished run: nothing measured


def with_efficiency(result, **totals: float) -> None:
    for name, total in totals.items():
        result.efficiency[name] = EfficiencyResult(score=total, total=total)


def test_an_exceeded_budget_fails_every_policy_but_never_and_says_why():
    passing = case("a", {"tool_trajectory_avg_score": [1.0]})
    with_efficiency(passing, tool_call_count_v1=9)
    current = results(passing)
    assert threshold_code(current) == 0
    assert compare(current, current).verdict.passed
    passing.efficiency["tool_call_count_v1"].budget = 8
    passing.efficiency["tool_call_count_v1"].over_budget = True
    assert threshold_code(current) == 1
    for fail_on in (["regression"], ["trajectory"], ["threshold"]):
        verdict = compare(current, current, fail_on=fail_on).verdict
        assert not verdict.passed
        assert "1 case is over its efficiency budget (tool_call_count_v1)" in verdict.reasons
    never = compare(current, current, fail_on=["never"]).verdict
    assert never.passed and never.reasons  # reported, not failed


def test_parse_budget_takes_adk_names_and_refuses_the_rest():
    assert parse_budget("token_usage_v1=2e4") == ("token_usage_v1", 20000.0)
    assert parse_budget("tool_call_count_v1=0") == ("tool_call_count_v1", 0.0)
    for bad, why in [
        ("tokens=5", "METRIC one of tool_call_count_v1"),
        ("token_usage_v1", "is not METRIC=MAX"),
        ("token_usage_v1=-1", "at least 0"),
        ("token_usage_v1=inf", "at least 0"),
        ("token_usage_v1=many", "'many' is not a number"),
    ]:
        with pytest.raises(ValueError, match=why):
            parse_budget(bad)


def test_the_cli_records_reports_and_gates_on_a_budget(write, capsys):
    write("evals/s.evalset.json", EVALSET)
    table = write("table.json", {"a": {"text": "done", "tools": [["lookup", {}], ["lookup", {}]]}})
    agent = ["--command", python_command(TABLE_AGENT, str(table))]
    assert main(["run", "evals", *agent, "--out", "plain.json"]) == 0
    plain = Results.from_json(Path("plain.json").read_text())
    assert plain.cases[0].efficiency["tool_call_count_v1"].total == 2.0
    assert plain.cases[0].efficiency["inference_call_count_v1"].total is None
    assert plain.cases[0].efficiency["token_usage_v1"].total == 12.0  # the usage it reports
    assert plain.run_config.budgets == {}
    capsys.readouterr()
    argv = ["run", "evals", *agent, "--budget", "tool_call_count_v1=1", "--budget"]
    code = main([*argv, "inference_call_count_v1=5", "--out", "over.json"])
    out, err = capsys.readouterr()
    assert code == 1
    assert "over budget: s / a: tool calls 2, over its budget of 1" in out
    # a command agent reports no model calls: that budget could not be checked, and says so
    assert "--budget inference_call_count_v1: 1 case(s) report no such figure" in err
    over = Results.from_json(Path("over.json").read_text())
    assert over.run_config.budgets == {"tool_call_count_v1": 1.0, "inference_call_count_v1": 5.0}
    assert over.cases[0].status == "passed"  # the scores still pass: only the gate fails
    assert any("inference_call_count_v1" in w for w in over.warnings)
    # against a baseline: the gate's reason and the report's line
    assert (
        main(
            [*argv, "inference_call_count_v1=5", "--baseline", "plain.json", "--format", "markdown"]
        )
        == 1
    )
    report = capsys.readouterr().out
    assert "1 case is over its efficiency budget (tool\\_call\\_count\\_v1)" in report
    assert "⛔ <code>s / a</code>: tool calls 2, over its budget of 1" in report


@pytest.mark.parametrize(
    "flag", ["bogus=1", "tool_call_count_v1", "tool_call_count_v1=-2", "tool_call_count_v1=x"]
)
def test_a_bad_budget_is_one_line_exit_2(write, capsys, flag):
    write("evals/s.evalset.json", EVALSET)
    with pytest.raises(SystemExit) as exited:
        main(["run", "evals", "--command", "true", "--budget", flag])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: argument --budget:") and err.count("\n") == 1


def test_naming_an_efficiency_metric_in_criteria_is_refused_as_adk_raises(write, capsys):
    write("evals/s.evalset.json", EVALSET)
    write("evals/test_config.json", {"criteria": {"tool_call_count_v1": 5}})
    assert main(["run", "evals", "--command", "true"]) == 2
    assert "tool_call_count_v1" in capsys.readouterr().err


EVALSET = {
    "eval_set_id": "s",
    "eval_cases": [
        {
            "eval_id": "a",
            "conversation": [
                {
                    "user_content": {"role": "user", "parts": [{"text": "go"}]},
                    "final_response": {"role": "model", "parts": [{"text": "done"}]},
                    "intermediate_data": {"tool_uses": [{"name": "lookup", "args": {}}] * 2},
                }
            ],
        }
    ],
}


# --- the report: the suite line and the notable changes ----------------------------------


def test_notable_changes_need_a_factor_and_a_floor():
    assert notable("tool_call_count_v1", 3, 7)
    assert not notable("tool_call_count_v1", 3, 4)  # a factor of 1.33
    assert not notable("tool_call_count_v1", 1, 2)  # twice, but one call
    assert notable("token_usage_v1", 1000, 2400)
    assert not notable("token_usage_v1", 100, 600)  # six times, but 500 tokens
    assert notable("invocation_duration_v1", 20, 8)  # shrank a lot too
    assert not notable("tool_call_count_v1", None, 7)


def test_the_diff_and_report_say_what_changed_a_lot(tmp_path):
    def side(tools: float, tokens: float, sha: str) -> Results:
        a = case("a", {"tool_trajectory_avg_score": [1.0]})
        b = case("b", {"tool_trajectory_avg_score": [1.0]})
        with_efficiency(a, tool_call_count_v1=tools, token_usage_v1=tokens)
        with_efficiency(b, tool_call_count_v1=2, token_usage_v1=1000)
        return results(a, b, sha=sha)

    baseline, current = side(3, 1000, "base"), side(7, 2400, "head")
    diff = efficiency_diff(current, baseline)
    assert diff is not None
    [note] = diff.cases
    assert note.eval_id == "a"
    assert [change_text(c) for c in note.changed] == [
        "tool calls 3 → 7",
        "tokens \u00d72.4 (1.0k → 2.4k)",
    ]
    figures = {f.metric: (f.baseline, f.current, f.cases) for f in diff.suite}
    assert figures["tool_call_count_v1"] == (2.5, 4.5, 2)
    text = markdown.comment(compare(current, baseline), current, markdown.Options())
    assert (
        "**Efficiency** (mean per case, over the cases both runs measured): tool calls 4.5 (baseline 2.5)"
        in text
    )
    assert "<code>s / a</code>: tool calls 3 → 7; tokens \u00d72.4 (1.0k → 2.4k)" in text
    assert (
        json.loads(compare(current, baseline).dump_json())["efficiency"]["cases"][0]["eval_id"]
        == "a"
    )
    console = diff_table(compare(current, baseline))
    assert "efficiency (mean per case): tool calls 4.5 (baseline 2.5)" in console
    assert "  s / a: tool calls 3 → 7; tokens \u00d72.4 (1.0k → 2.4k)" in console
    # Results recorded before efficiency: no section, no field
    plain = results(case("a", {"tool_trajectory_avg_score": [1.0]}))
    assert efficiency_diff(plain, None) is None
    assert "Efficiency" not in markdown.comment(compare(plain, None), plain, markdown.Options())


def test_results_with_absurd_efficiency_figures_are_refused(tmp_path):
    from agent_eval_action.compare.loading import load_results

    good = results(case("a", {"tool_trajectory_avg_score": [1.0]}))
    with_efficiency(good.cases[0], token_usage_v1=1200)

    def load(change) -> None:
        data = json.loads(good.dump_json())
        change(data)
        path = tmp_path / "r.json"
        path.write_text(json.dumps(data))
        load_results(str(path))

    load(lambda data: None)  # the good one loads
    efficiency = lambda data: data["cases"][0]["efficiency"]  # noqa: E731
    with pytest.raises(InputError, match=r"refused Results.*efficiency token_usage_v1"):
        load(lambda data: efficiency(data)["token_usage_v1"].update(total=1e300))
    with pytest.raises(InputError, match=r"refused Results.*efficiency name"):
        load(lambda data: efficiency(data).update({"rtl\u202eoverride": {"score": 1, "total": 1}}))
    with pytest.raises(InputError, match="run_config"):
        load(lambda data: data["run_config"].update(budgets={"token_usage_v1": -5}))
    with pytest.raises(InputError):
        load(lambda data: efficiency(data)["token_usage_v1"].update(runs=[-1.0]))
