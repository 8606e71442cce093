"""The metric registry: every metric declared once (metrics/builtin/), criterion types per
metric, what Results record of a criterion, and a new metric added in one module."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from agent_eval_action.core import METRIC_KINDS
from agent_eval_action.metrics import catalog, registry
from agent_eval_action.metrics.config import load_config
from agent_eval_action.metrics.criteria import (
    Criterion,
    CustomCriterion,
    HallucinationsCriterion,
    JudgeCriterion,
    RubricsCriterion,
    SimulatorQualityCriterion,
    TrajectoryCriterion,
)
from agent_eval_action.metrics.judge.metric import JudgedMetric
from agent_eval_action.metrics.judge.prompts import template
from agent_eval_action.metrics.registry import Metric, NotScored, RunScore
from agent_eval_action.metrics.simulation import prompt as simulator_prompt
from agent_eval_action.pipeline.plan import plan
from agent_eval_action.pipeline.score import score_plan
from agent_eval_action.pipeline.suite import load_suite
from agent_eval_action.traces import ActualTurn, CaseRunTrace

BUILTIN = {
    "tool_trajectory_avg_score": ("trajectory", TrajectoryCriterion, False),
    "response_match_score": ("response", Criterion, False),
    "final_response_match_v2": ("response", JudgeCriterion, True),
    "rubric_based_final_response_quality_v1": ("response", RubricsCriterion, True),
    "rubric_based_tool_use_quality_v1": ("trajectory", RubricsCriterion, True),
    "hallucinations_v1": ("response", HallucinationsCriterion, True),
    "safety_v1": ("response", JudgeCriterion, True),
    "rubric_based_multi_turn_trajectory_quality_v1": ("trajectory", RubricsCriterion, True),
    "per_turn_user_simulator_quality_v1": ("informational", SimulatorQualityCriterion, True),
    "multi_turn_task_success_v1": ("response", JudgeCriterion, True),
    "multi_turn_trajectory_quality_v1": ("trajectory", JudgeCriterion, True),
    "multi_turn_tool_use_quality_v1": ("trajectory", JudgeCriterion, True),
    "response_evaluation_score": ("response", JudgeCriterion, True),
}


def test_every_builtin_metric_is_declared_once_with_its_kind_and_criterion_type():
    assert catalog.names() == sorted(BUILTIN)
    for metric in catalog.metrics():
        kind, criterion, judged = BUILTIN[metric.name]
        assert (metric.kind, metric.criterion, metric.judged) == (kind, criterion, judged)
        assert metric.kind in METRIC_KINDS
        assert kind == "informational" or metric.axis == kind
        assert isinstance(metric, JudgedMetric) == judged


def test_each_builtin_module_is_named_after_a_metric_it_declares():
    modules = {
        name.removesuffix(".py")
        for name in (
            p.name
            for p in resources.files("agent_eval_action.metrics.builtin").iterdir()
            if p.name.endswith(".py") and not p.name.startswith("_")
        )
    }
    assert modules - {"not_scored"} == set(BUILTIN)


def test_judged_metrics_declare_their_requests_templates_and_parsers():
    prompts = resources.files("agent_eval_action.metrics.judge").joinpath("prompts")
    used = set()
    by_request: dict[str, object] = {}
    for metric in catalog.metrics():
        if not isinstance(metric, JudgedMetric):
            continue
        assert metric.requests, metric.name
        for request in metric.requests:
            template(request.template)  # the file exists and has its version line
            used.add(f"{request.template}.txt")
            assert request.parser_version
            assert by_request.setdefault(request.name, request.parse) is request.parse
    used.add(f"{simulator_prompt.TEMPLATE}.txt")  # the user simulator's, not a metric's
    assert used == {p.name for p in prompts.iterdir() if p.name.endswith(".txt")}


def test_adk_metrics_this_tool_does_not_compute_are_declared_with_why():
    informational = {
        e.name for e in catalog.not_scored_entries() if e.kind == "informational" and not e.reason
    }
    assert informational == {
        "tool_call_count_v1",
        "inference_call_count_v1",
        "token_usage_v1",
        "invocation_duration_v1",
    }
    entry = catalog.not_scored("token_usage_v1")
    assert entry is not None and "added by ADK itself" in entry.error()
    with pytest.raises(ValueError, match="declared twice"):
        registry.register(NotScored(name="tool_call_count_v1", kind="informational"))


def config_of(tmp_path, criteria: dict, **extra):
    path = tmp_path / "test_config.json"
    path.write_text(json.dumps({"criteria": criteria, **extra}, indent=2))
    warnings: list[str] = []
    return load_config(path, "test_config.json", warnings), warnings


def test_each_criterion_is_read_into_its_metrics_type(tmp_path):
    config, warnings = config_of(
        tmp_path,
        {
            "tool_trajectory_avg_score": {"threshold": 1, "matchType": "in-order"},
            "rubric_based_tool_use_quality_v1": {"threshold": 0.5, "rubrics": []},
            "hallucinations_v1": {"threshold": 0.5, "evaluate_intermediate_nl_responses": True},
            "mine": {"threshold": 0.5, "anything": [1]},
        },
        custom_metrics={"mine": {"code_config": {"name": "m.f"}}},
    )
    assert warnings == []
    types = {name: type(c) for name, c in config.criteria.items()}
    assert types == {
        "tool_trajectory_avg_score": TrajectoryCriterion,
        "rubric_based_tool_use_quality_v1": RubricsCriterion,
        "hallucinations_v1": HallucinationsCriterion,
        "mine": CustomCriterion,
    }
    assert config.criteria["mine"].model_extra == {"anything": [1]}


def test_unknown_keys_are_warned_about_from_the_criterion_types_fields(tmp_path):
    criteria = {
        name: {
            "threshold": catalog.find(name).score_range[0],  # type: ignore[union-attr]
            "evaluate_intermediate_nl_responses": True,
        }
        for name in BUILTIN
    }
    _, warnings = config_of(tmp_path, criteria)
    warned = {w.split('"')[1] for w in warnings}
    assert warned == set(BUILTIN) - {"hallucinations_v1"}


# What Results record of a criterion (eval_sets[].criteria): byte for byte what they
# recorded before criteria had a type per metric, so old baselines compare unchanged.
RECORDS = [
    (
        {"response_match_score": 0.8},
        {"threshold": 0.8, "match_type": "EXACT", "ignore_args": False},
    ),
    (
        {"tool_trajectory_avg_score": {"threshold": 1, "ignore_args": True, "match_type": 2}},
        {"threshold": 1.0, "match_type": "ANY_ORDER", "ignore_args": True},
    ),
    (
        {
            "hallucinations_v1": {
                "evaluate_intermediate_nl_responses": True,
                "threshold": 0.5,
                "judgeModelOptions": {"numSamples": 2},
            }
        },
        {
            "threshold": 0.5,
            "match_type": "EXACT",
            "ignore_args": False,
            "judge_model_options": {
                "judge_model": "gemini-2.5-flash",
                "num_samples": 2,
                "parallelism_limit": 1,
            },
            "evaluate_intermediate_nl_responses": True,
        },
    ),
    (
        {"response_match_score": {"threshold": 0.5, "match_type": "in-order", "colour": None}},
        {"threshold": 0.5, "match_type": "IN_ORDER", "ignore_args": False},
    ),
]


@pytest.mark.parametrize(("criteria", "recorded"), RECORDS)
def test_results_record_a_criterion_as_before(tmp_path, criteria, recorded):
    config, _ = config_of(tmp_path, criteria)
    (criterion,) = config.criteria.values()
    assert json.dumps(criterion.record()) == json.dumps(recorded)


def test_a_metric_declared_in_one_module_is_configured_and_scored(tmp_path, monkeypatch):
    class LengthCriterion(Criterion):
        max_words: int = 10

    def score_run(criterion, expected, actual) -> RunScore:
        assert isinstance(criterion, LengthCriterion)
        scores: list[float | None] = [
            1.0 if len(turn.final_response.text().split()) <= criterion.max_words else 0.0
            for turn in actual
        ]
        return RunScore(overall=registry.mean(scores), invocations=scores)

    metric = Metric(
        name="short_v1", kind="response", criterion=LengthCriterion, score_run=score_run
    )
    monkeypatch.setitem(registry._METRICS, metric.name, metric)

    monkeypatch.chdir(tmp_path)
    turn = {"user_content": {"role": "user", "parts": [{"text": "Hi"}]}}
    (tmp_path / "e.evalset.json").write_text(
        json.dumps({"eval_set_id": "e", "eval_cases": [{"eval_id": "c", "conversation": [turn]}]})
    )
    (tmp_path / "test_config.json").write_text(
        json.dumps({"criteria": {"short_v1": {"threshold": 1, "max_words": 2, "maxWord": 1}}})
    )
    suite = load_suite(["e.evalset.json"])
    assert suite.warnings == [
        'test_config.json:1: warning: "short_v1" has no option "maxWord"; ADK ignores it '
        'silently (did you mean "max_words"?)'
    ]
    the_plan = plan(suite, 1)
    answer = ActualTurn.model_validate({"final_response": {"parts": [{"text": "Hello there"}]}})
    trace = CaseRunTrace(eval_set_id="e", eval_id="c", run=1, turns=[answer])
    (case,) = score_plan(the_plan, [trace])
    assert case.metrics["short_v1"].score == 1.0 and case.metrics["short_v1"].axis == "response"
