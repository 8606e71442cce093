"""multi_turn_trajectory_quality_v1 (LLM-judged, trajectory): was the agent's path through the conversation sound? This tool's own stand-in for ADK's
Vertex AI metric (docs/adk-differences.md, "Vertex AI metrics"): the whole conversation
judged at once on the last turn (metrics/judge/conversation.py) against the fixed
rubrics its prompt lists; the run scores the share of rubrics met; one sample unless
judge_model_options.num_samples is set. Not comparable with ADK's Vertex score.
"""

from ..criteria import JudgeCriterion
from ..judge.conversation import ConversationJudge, listed_rubrics
from ..judge.metric import JudgedMetric, Request, not_comparable, one_sample_unless_set
from ..judge.parsing import parse_rubric_answers
from ..registry import register

RUBRICS = Request(
    name="rubrics",
    template="multi_turn_trajectory_quality_v1",
    parse=parse_rubric_answers,
    parser_version="1",
)

register(
    JudgedMetric(
        name="multi_turn_trajectory_quality_v1",
        kind="trajectory",
        criterion=JudgeCriterion,
        requests=(RUBRICS,),
        evaluate=ConversationJudge(RUBRICS, lambda ev: listed_rubrics(RUBRICS.template)).evaluate,
        num_samples=one_sample_unless_set,
        note=not_comparable(
            "multi_turn_trajectory_quality_v1",
            "fixed rubrics of its own over the whole conversation",
        ),
    )
)
