"""Which rubrics a turn is judged on, as ADK merges them, and the checks done before any
agent runs (so a suite that cannot be judged fails with exit 2, not after paying for it).

A turn's rubrics: the criterion's (all of them), then the case's and then the expected
turn's, those two keeping only the metric's type (FINAL_RESPONSE_QUALITY or
TOOL_USE_QUALITY). An id defined twice, or no rubric at all, is an error, as in ADK.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import InputError
from ...evalset.config import Criterion
from ...evalset.loader import LoadedEvalSet
from ...evalset.models import EvalCase, Invocation, Rubric
from ..registry import Metric

RUBRIC_TYPES = {
    "rubric_based_final_response_quality_v1": "FINAL_RESPONSE_QUALITY",
    "rubric_based_tool_use_quality_v1": "TOOL_USE_QUALITY",
}


class RubricError(ValueError):
    pass


def effective_rubrics(
    metric: str, criterion: Criterion, case: EvalCase, expected: Invocation
) -> list[Rubric]:
    rubric_type = RUBRIC_TYPES[metric]
    by_id: dict[str, Rubric] = {}
    sources = (
        ("the criterion", criterion.rubrics or [], False),
        ("the case", case.rubrics or [], True),
        ("the turn", expected.rubrics or [], True),
    )
    for where, rubrics, filtered in sources:
        for rubric in rubrics:
            if filtered and rubric.type != rubric_type:
                continue
            if rubric.rubric_id in by_id:
                raise RubricError(f'rubric id "{rubric.rubric_id}" in {where} is already defined')
            by_id[rubric.rubric_id] = rubric
    if not by_id:
        raise RubricError(
            f"{metric} needs rubrics: none in its criterion, and none of type "
            f"{rubric_type} on the case or this turn"
        )
    return list(by_id.values())


def check_judge_inputs(
    eval_set: LoadedEvalSet, metrics: Mapping[str, Metric], criteria: Mapping[str, Criterion]
) -> None:
    """Raise InputError (file and line) for judged metrics that could not be judged at all."""
    config = eval_set.config
    for name, metric in metrics.items():
        if not metric.judged:
            continue
        options = criteria[name].judge_model_options
        if options is not None and options.judge_model_config is not None:
            from .settings import generation_config

            try:
                generation_config(options.judge_model_config)
            except ValueError as err:
                raise InputError(
                    f'criterion "{name}": judge_model_config: {err}',
                    config.source,
                    config.lines.get(name),
                ) from None
        if name not in RUBRIC_TYPES:
            continue
        for case in eval_set.cases:
            for number, turn in enumerate(case.conversation or (), start=1):
                try:
                    effective_rubrics(name, criteria[name], case, turn)
                except RubricError as err:
                    raise InputError(
                        f'case "{case.eval_id}", turn {number}: {err}',
                        eval_set.file,
                        eval_set.case_lines.get(case.eval_id),
                    ) from None
