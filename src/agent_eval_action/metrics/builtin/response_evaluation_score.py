"""response_evaluation_score (LLM-judged): how coherent is each answer, on ADK's scale of
1 to 5 (its thresholds too)? This tool's own stand-in for ADK's Vertex AI metric (its
COHERENCE prompt; docs/adk-differences.md, "Vertex AI metrics"): our own rating prompt per
turn with an answer; a turn scores the mean of its samples' ratings (one sample unless
judge_model_options.num_samples is set), the run the mean of its turns. Like ADK's, it
needs the eval file's expected turns. Not comparable with ADK's Vertex score.
"""

from __future__ import annotations

from ...evalset.models import Invocation
from ...traces import ActualTurn
from ..criteria import JudgeCriterion
from ..judge.inputs import content_text
from ..judge.metric import (
    NOTHING_TO_CHECK,
    Evaluation,
    JudgedMetric,
    Request,
    not_comparable,
    one_sample_unless_set,
)
from ..judge.outcome import JudgedRun
from ..judge.parsing import parse_coherence
from ..registry import mean, register

RATING = Request(
    name="coherence",
    template="response_evaluation_score",
    parse=parse_coherence,
    parser_version="1",
)


async def evaluate(ev: Evaluation) -> JudgedRun:
    async def turn(index: int, want: Invocation, got: ActualTurn) -> float | None:
        reply = content_text(got.final_response)
        if not reply:
            return None
        text = RATING.render(user_message=content_text(want.user_content), reply=reply)
        _, score = await ev.judge(
            RATING, text, index, lambda a: mean([RATING.parse(s.text) for s in a.samples])
        )
        return score

    scores = await ev.each_turn(turn)
    return ev.result(mean(scores), list(scores), nothing=NOTHING_TO_CHECK)


register(
    JudgedMetric(
        name="response_evaluation_score",
        kind="response",
        criterion=JudgeCriterion,
        requests=(RATING,),
        evaluate=evaluate,
        num_samples=one_sample_unless_set,
        note=not_comparable("response_evaluation_score", "its own coherence rating, 1 to 5"),
        needs_expected=True,
        score_range=(1.0, 5.0),
    )
)
