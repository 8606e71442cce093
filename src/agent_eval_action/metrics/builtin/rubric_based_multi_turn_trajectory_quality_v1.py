"""rubric_based_multi_turn_trajectory_quality_v1 (LLM-judged): does the agent's behaviour
over the whole conversation meet each rubric of type TRAJECTORY_QUALITY? ADK 2.13's
semantics (RubricBasedMultiTurnTrajectoryEvaluator), as metrics/judge/conversation.py
judges a conversation; its rubrics as for the single-turn rubric metrics
(metrics/judge/rubrics.py): the criterion's, then the case's and the last expected turn's
of this type.
"""

from __future__ import annotations

from ..criteria import RubricsCriterion
from ..judge.conversation import ConversationJudge
from ..judge.metric import Evaluation, JudgedMetric, Request
from ..judge.parsing import parse_rubric_answers
from ..judge.rubrics import RubricJudge, effective_rubrics
from ..registry import register

RUBRIC_TYPE = "TRAJECTORY_QUALITY"
RUBRICS = Request(
    name="rubrics",
    template="rubric_based_multi_turn_trajectory_quality_v1",
    parse=parse_rubric_answers,
    parser_version="1",
)


def rubrics(ev: Evaluation) -> list[tuple[str, str]]:
    found = effective_rubrics(
        ev.metric.name, RUBRIC_TYPE, ev.criterion, ev.case, ev.expected[len(ev.turns) - 1]
    )
    return [(r.rubric_id, r.rubric_content.text_property or "") for r in found]


register(
    JudgedMetric(
        name="rubric_based_multi_turn_trajectory_quality_v1",
        kind="trajectory",
        criterion=RubricsCriterion,
        requests=(RUBRICS,),
        evaluate=ConversationJudge(RUBRICS, rubrics).evaluate,
        check_turn=RubricJudge(RUBRIC_TYPE, RUBRICS, final_answer=False).check_turn,
    )
)
