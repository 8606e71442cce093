"""response_evaluation_score (LLM-judged): how coherent is each answer, on ADK's scale of
1 to 5 (its thresholds too)? This tool's own stand-in for ADK's Vertex AI metric (its
COHERENCE prompt; docs/adk-differences.md, "Vertex AI metrics"): our own rating prompt per
turn with an answer; a turn scores the mean of its samples' ratings (one sample unless
judge_model_options.num_samples is set), the run the mean of its turns. Like ADK's, it
needs the eval file's expected turns. Not comparable with ADK's Vertex score.
"""

from __future__ import annotations

from ..criteria import JudgeCriterion
from ..judge.metric import (
    JudgedMetric,
    Request,
    not_comparable,
    one_sample_unless_set,
    reply_judge,
)
from ..judge.parsing import parse_coherence
from ..registry import mean, register

RATING = Request(
    name="coherence",
    template="response_evaluation_score",
    parse=parse_coherence,
    parser_version="1",
)


register(
    JudgedMetric(
        name="response_evaluation_score",
        kind="response",
        criterion=JudgeCriterion,
        requests=(RATING,),
        evaluate=reply_judge(RATING, mean),
        num_samples=one_sample_unless_set,
        note=not_comparable("response_evaluation_score", "its own coherence rating, 1 to 5"),
        needs_expected=True,
        score_range=(1.0, 5.0),
    )
)
