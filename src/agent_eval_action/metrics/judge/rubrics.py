"""The rubric-based metrics' judging, shared by rubric_based_final_response_quality_v1 and
rubric_based_tool_use_quality_v1 (declared in metrics/builtin/): which rubrics a turn is
judged on, the check that every turn has some, and the evaluator.

A turn's rubrics, as ADK merges them: the criterion's (all of them), then the case's and
then the expected turn's, those two keeping only the metric's type (FINAL_RESPONSE_QUALITY
or TOOL_USE_QUALITY). An id defined twice, or no rubric at all, is an error, as in ADK.
Per rubric the samples vote; the run scores every rubric of every turn, pooled.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...evalset.models import EvalCase, Invocation, Rubric
from ...traces import ActualTurn
from ..criteria import Criterion, RubricsCriterion
from ..registry import mean
from .aggregate import pooled_rubric_score, rubric_means, vote_rubrics
from .inputs import (
    answer_text,
    content_text,
    developer_instructions,
    grounding_metadata,
    tool_declarations,
    tool_steps,
)
from .metric import Evaluation, NoVerdict, Request
from .outcome import JudgedRun
from .parsing import RubricAnswer, normalize_property
from .prompts import properties_text
from .service import Answer


class RubricError(ValueError):
    pass


def effective_rubrics(
    metric: str, rubric_type: str, criterion: Criterion, case: EvalCase, expected: Invocation
) -> list[Rubric]:
    by_id: dict[str, Rubric] = {}
    sources = (
        ("the criterion", criterion.rubrics if isinstance(criterion, RubricsCriterion) else []),
        ("the case", [r for r in case.rubrics or () if r.type == rubric_type]),
        ("the turn", [r for r in expected.rubrics or () if r.type == rubric_type]),
    )
    for where, rubrics in sources:
        for rubric in rubrics:
            if rubric.rubric_id in by_id:
                raise RubricError(f'rubric id "{rubric.rubric_id}" in {where} is already defined')
            by_id[rubric.rubric_id] = rubric
    if not by_id:
        raise RubricError(
            f"{metric} needs rubrics: none in its criterion, and none of type "
            f"{rubric_type} on the case or this turn"
        )
    return list(by_id.values())


@dataclass(frozen=True)
class RubricJudge:
    """Judges a metric's rubrics of `rubric_type` with `request`; `final_answer`: the prompt
    also shows the final answer, the developer instructions and grounding metadata."""

    rubric_type: str
    request: Request[list[RubricAnswer]]
    final_answer: bool

    def check_turn(
        self, metric: str, criterion: Criterion, case: EvalCase, turn: Invocation
    ) -> str | None:
        try:
            effective_rubrics(metric, self.rubric_type, criterion, case, turn)
        except RubricError as err:
            return str(err)
        return None

    async def evaluate(self, ev: Evaluation) -> JudgedRun:
        """Per rubric a majority vote, pooled over the turns."""
        include = ev.criterion.include_intermediate_responses_in_final

        async def turn(index: int, want: Invocation, got: ActualTurn) -> dict[str, float | None]:
            rubrics = effective_rubrics(
                ev.metric.name, self.rubric_type, ev.criterion, ev.case, want
            )
            listed = [(r.rubric_id, r.rubric_content.text_property or "") for r in rubrics]
            values = {
                "tool_declarations": tool_declarations(got),
                "user_message": content_text(want.user_content),
                "tool_steps": tool_steps(got),
                "properties": properties_text(listed),
            }
            if self.final_answer:
                values |= {
                    "developer_instructions": developer_instructions(got),
                    "grounding_metadata": grounding_metadata(got),
                    "final_answer": answer_text(got, include),
                }
            ids = [rid for rid, _ in listed]
            by_text = {normalize_property(text): rid for rid, text in listed}
            votes: dict[str, float | None] = {}

            def read(answer: Answer) -> float | None:
                votes.update(self.votes(answer, ids, by_text))
                missing = [rid for rid, score in votes.items() if score is None]
                if missing and len(missing) < len(ids):  # stricter than ADK, which drops them
                    raise NoVerdict(f"the judge gave no verdict for rubric {', '.join(missing)}")
                return None if missing else mean(list(votes.values()))

            await ev.judge(self.request, self.request.render(**values), index, read)
            return votes

        turns = await ev.each_turn(turn)
        per_turn = [mean(list(votes.values())) for votes in turns]
        return ev.result(pooled_rubric_score(turns), per_turn, rubric_means(turns))

    def votes(
        self, answer: Answer, rubric_ids: list[str], by_text: dict[str, str]
    ) -> dict[str, float | None]:
        samples = []
        for sample in answer.samples:
            scores: dict[str, float | None] = {}
            for found in self.request.parse(sample.text):
                rid = found.rubric_id if found.rubric_id in rubric_ids else None
                rid = rid or by_text.get(normalize_property(found.property_text))
                if rid is not None and rid not in scores:
                    scores[rid] = found.score
            samples.append(scores)
        return vote_rubrics(rubric_ids, samples)
