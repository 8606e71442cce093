"""rubric_based_final_response_quality_v1 (LLM-judged): does the final answer meet each
rubric of type FINAL_RESPONSE_QUALITY? Judged as metrics/judge/rubrics.py says."""

from ..criteria import RubricsCriterion
from ..judge.metric import JudgedMetric, Request
from ..judge.parsing import parse_rubric_answers
from ..judge.rubrics import RubricJudge
from ..registry import register

RUBRICS = Request(
    name="rubrics",
    template="rubric_based_final_response_quality_v1",
    parse=parse_rubric_answers,
    parser_version="1",
)
_JUDGE = RubricJudge("FINAL_RESPONSE_QUALITY", RUBRICS, final_answer=True)

register(
    JudgedMetric(
        name="rubric_based_final_response_quality_v1",
        kind="response",
        criterion=RubricsCriterion,
        requests=(RUBRICS,),
        evaluate=_JUDGE.evaluate,
        check_turn=_JUDGE.check_turn,
    )
)
