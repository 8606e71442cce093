"""The deterministic metrics ADK computes without a model, with ADK 2.13's semantics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .registry import BASE_CRITERION_KEYS, JUDGE_CRITERION_KEYS, Metric, RunScore, mean, register
from .rouge import rouge1_fmeasure
from .trajectory import calls_match

if TYPE_CHECKING:
    from ..evalset.config import Criterion
    from ..evalset.models import Invocation
    from ..traces import ActualTurn


def _per_turn(scores: list[float | None]) -> RunScore:
    return RunScore(overall=mean(scores), invocations=scores)


def tool_trajectory(
    criterion: Criterion, expected: Sequence[Invocation], actual: Sequence[ActualTurn]
) -> RunScore:
    """1.0 per turn whose tool calls match the expectation (match_type, ignore_args)."""
    return _per_turn(
        [
            1.0
            if calls_match(
                turn.tool_uses, want.tool_calls(), criterion.match_type, criterion.ignore_args
            )
            else 0.0
            for want, turn in zip(expected, actual, strict=True)
        ]
    )


def response_match(
    criterion: Criterion, expected: Sequence[Invocation], actual: Sequence[ActualTurn]
) -> RunScore:
    """ROUGE-1 F-measure of each final answer against the expected one."""
    return _per_turn(
        [
            rouge1_fmeasure(
                want.final_response.text() if want.final_response else "",
                turn.final_response.text() if turn.final_response else "",
            )
            for want, turn in zip(expected, actual, strict=True)
        ]
    )


register(
    Metric(
        "tool_trajectory_avg_score",
        "trajectory",
        tool_trajectory,
        BASE_CRITERION_KEYS | {"match_type", "ignore_args"},
    )
)
register(Metric("response_match_score", "response", response_match))


JUDGE_NOT_RUN = "the LLM judge did not run for this metric"


def judge_not_run(
    criterion: Criterion, expected: Sequence[Invocation], actual: Sequence[ActualTurn]
) -> RunScore:
    """Judged metrics are scored from the judge stage's verdicts; without them, not evaluated."""
    return RunScore(overall=None, error=JUDGE_NOT_RUN)


# ADK's LLM-judged metrics: judged by metrics/judge (the judge stage, which calls
# Gemini) and scored from its verdicts. safety_v1 is our own Gemini judge (ADK's
# calls Vertex AI), so it also takes judge_model_options.
for _name, _axis, _keys in (
    ("final_response_match_v2", "response", JUDGE_CRITERION_KEYS),
    ("rubric_based_final_response_quality_v1", "response", JUDGE_CRITERION_KEYS | {"rubrics"}),
    ("rubric_based_tool_use_quality_v1", "trajectory", JUDGE_CRITERION_KEYS | {"rubrics"}),
    (
        "hallucinations_v1",
        "response",
        JUDGE_CRITERION_KEYS | {"evaluate_intermediate_nl_responses"},
    ),
    ("safety_v1", "response", JUDGE_CRITERION_KEYS),
):
    register(Metric(_name, _axis, judge_not_run, _keys, judged=True))
