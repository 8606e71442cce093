"""Metrics by name: what each one scores, on which axis, and which criterion keys it takes.

A metric scores one case-run: the expected invocations from the eval file and
the agent's actual turns. Built-in metrics register themselves here; custom
metrics (test_config.json `custom_metrics`) are built per config.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from ..evalset.config import Criterion
    from ..evalset.models import Invocation
    from ..traces import ActualTurn

Axis = Literal["trajectory", "response"]
AXES: tuple[Axis, ...] = ("trajectory", "response")

# Keys every criterion object may carry (ADK's BaseCriterion), and the LLM judge's.
BASE_CRITERION_KEYS = frozenset({"threshold", "include_intermediate_responses_in_final"})
JUDGE_CRITERION_KEYS = BASE_CRITERION_KEYS | {"judge_model_options"}


@dataclass(frozen=True)
class RunScore:
    """One case-run's score: overall (None = could not be computed) and per turn."""

    overall: float | None
    invocations: list[float | None] = field(default_factory=list)
    error: str | None = None  # why the score could not be computed


ScoreRun = Callable[["Criterion", "Sequence[Invocation]", "Sequence[ActualTurn]"], RunScore]


@dataclass(frozen=True)
class Metric:
    name: str
    axis: Axis
    score_run: ScoreRun
    criterion_keys: frozenset[str] = BASE_CRITERION_KEYS
    accepts_any_keys: bool = False  # custom metrics: their criteria are free-form
    # LLM-judged: scored from the judge stage's verdicts (metrics/judge), not by score_run,
    # which then only says why there is no verdict.
    judged: bool = False


_BUILTIN: dict[str, Metric] = {}

# Metrics ADK knows that this tool cannot compute (yet), and why: naming one is an error.
NOT_SUPPORTED: dict[str, str] = {
    "response_evaluation_score": "it needs Vertex AI's evaluation service",
    "per_turn_user_simulator_quality_v1": "conversation scenarios are not supported yet",
    "multi_turn_task_success_v1": "multi-turn judged metrics are not supported yet",
    "multi_turn_trajectory_quality_v1": "multi-turn judged metrics are not supported yet",
    "multi_turn_tool_use_quality_v1": "multi-turn judged metrics are not supported yet",
    "rubric_based_multi_turn_trajectory_quality_v1": "multi-turn judged metrics are not supported yet",
}

# ADK appends these informational metrics itself; naming one in criteria is an error there too.
INFORMATIONAL = frozenset(
    {"tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1"}
)


def register(metric: Metric) -> Metric:
    if metric.name in _BUILTIN:
        raise ValueError(f"metric {metric.name!r} is registered twice")
    _BUILTIN[metric.name] = metric
    return metric


def builtin(name: str) -> Metric | None:
    return _BUILTIN.get(name)


def builtin_names() -> list[str]:
    return sorted(_BUILTIN)


def mean(values: Sequence[float | None]) -> float | None:
    """Mean of the values that could be computed; None when none could.

    Added one by one, as ADK's evaluators do: `sum()` compensates rounding since
    Python 3.12 and could then differ from ADK in the last bit.
    """
    known = [v for v in values if v is not None]
    if not known:
        return None
    total = 0.0
    for value in known:
        total += value
    return total / len(known)
