"""rubric_based_tool_use_quality_v1 (LLM-judged): do the agent's tool calls meet each
rubric of type TOOL_USE_QUALITY? Judged as metrics/judge/rubrics.py says."""

from ..criteria import RubricsCriterion
from ..judge.metric import JudgedMetric, Request
from ..judge.parsing import parse_rubric_answers
from ..judge.rubrics import RubricJudge
from ..registry import register

RUBRICS = Request(
    name="rubrics",
    template="rubric_based_tool_use_quality_v1",
    parse=parse_rubric_answers,
    parser_version="1",
)
_JUDGE = RubricJudge("TOOL_USE_QUALITY", RUBRICS, final_answer=False)

register(
    JudgedMetric(
        name="rubric_based_tool_use_quality_v1",
        kind="trajectory",
        criterion=RubricsCriterion,
        requests=(RUBRICS,),
        evaluate=_JUDGE.evaluate,
        check_turn=_JUDGE.check_turn,
    )
)
