"""Criterion types: what test_config.json may set for a metric, one type per kind of metric.

They mirror ADK's (google.adk.evaluation.eval_metrics): a base criterion with the
threshold, and a subclass per metric family with its own options. A metric names its
criterion type where it is declared (metrics/builtin/); the config reader warns about a
key the type does not declare (ADK ignores such keys silently) and keeps it, as ADK's
BaseCriterion does. Custom metrics take a free-form criterion: every key is theirs.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import AliasGenerator, BaseModel, ConfigDict, Field, field_serializer
from pydantic.alias_generators import to_camel

from ..evalset.models import Rubric
from .trajectory import MatchType

DEFAULT_JUDGE_MODEL = "gemini-2.5-flash"
# Judge calls per answer: ADK sets no bound; ours keeps a config from multiplying the judge's
# cost and time without limit (docs/security.md, "Bounds").
MAX_NUM_SAMPLES = 20


class JudgeModelOptions(BaseModel):
    """ADK's judge options for LLM-judged metrics (camelCase accepted)."""

    model_config = ConfigDict(
        alias_generator=AliasGenerator(validation_alias=to_camel),
        populate_by_name=True,
        extra="forbid",
    )

    judge_model: str = DEFAULT_JUDGE_MODEL
    judge_model_config: dict[str, Any] | None = None
    num_samples: int = Field(5, ge=1, le=MAX_NUM_SAMPLES)
    parallelism_limit: int = Field(1, ge=1)


class Criterion(BaseModel):
    """ADK's BaseCriterion: every metric's criterion has a threshold (a bare number in
    test_config.json is one). Keys the metric's type does not declare are kept."""

    model_config = ConfigDict(extra="allow")

    # True: any key is the metric's own (custom metrics), so none is warned about.
    free_form: ClassVar[bool] = False

    threshold: float
    include_intermediate_responses_in_final: bool = False

    def record(self) -> dict[str, Any]:
        """The criterion as Results record it (`eval_sets[].criteria`, compared between a
        baseline and the current run): threshold, match_type and ignore_args always (every
        criterion carried those two before criteria had a type per metric, so Results stay
        comparable with older baselines), then judge_model_options and rubrics, then every
        other option given, as given."""
        data = self.model_dump(mode="json", exclude_none=True)
        given = self.model_fields_set | set(self.model_extra or {})
        recorded: dict[str, Any] = {
            "threshold": data["threshold"],
            "match_type": MatchType.parse(getattr(self, "match_type", MatchType.EXACT)).name,
            "ignore_args": data.get("ignore_args", False),
        }
        for key in ("judge_model_options", "rubrics", *data):
            if key in given and key in data and key not in recorded:
                recorded[key] = data[key]
        return recorded


class TrajectoryCriterion(Criterion):
    """ADK's ToolTrajectoryCriterion."""

    match_type: MatchType = MatchType.EXACT
    ignore_args: bool = False

    @field_serializer("match_type")
    def _match_type_name(self, value: MatchType) -> str:
        return value.name


class JudgeCriterion(Criterion):
    """ADK's LlmAsAJudgeCriterion: an LLM-judged metric's."""

    judge_model_options: JudgeModelOptions = Field(default_factory=JudgeModelOptions)


class RubricsCriterion(JudgeCriterion):
    """ADK's RubricsBasedCriterion: the rubrics every turn is judged on (the case's and the
    turn's own rubrics of the metric's type are added to them)."""

    rubrics: list[Rubric] = Field(default_factory=list)


class SimulatorQualityCriterion(JudgeCriterion):
    """per_turn_user_simulator_quality_v1 (ADK's LlmBackedUserSimulatorCriterion)."""

    stop_signal: str = "</finished>"  # should match the user simulator's


class HallucinationsCriterion(JudgeCriterion):
    """ADK's HallucinationsCriterion."""

    evaluate_intermediate_nl_responses: bool = False


class CustomCriterion(Criterion):
    """A custom metric's criterion: free-form, every key is kept for the metric to read."""

    free_form: ClassVar[bool] = True


def judge_options(criterion: Criterion) -> JudgeModelOptions:
    """The judge options of a criterion (ADK's defaults when it has none)."""
    if isinstance(criterion, JudgeCriterion):
        return criterion.judge_model_options
    return JudgeModelOptions()
