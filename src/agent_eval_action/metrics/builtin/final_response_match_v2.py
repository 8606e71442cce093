"""final_response_match_v2 (LLM-judged): is the agent's answer as correct as the reference
answer? Per turn the samples vote (a tie fails); the run scores the mean over turns."""

from __future__ import annotations

from ...evalset.models import Invocation
from ...traces import ActualTurn
from ..criteria import JudgeCriterion
from ..judge.aggregate import majority
from ..judge.inputs import answer_text, content_text, reference_text
from ..judge.metric import Evaluation, JudgedMetric, Request
from ..judge.outcome import JudgedRun
from ..judge.parsing import parse_validity
from ..registry import mean, register

VERDICT = Request(
    name="verdict",
    template="final_response_match_v2",
    parse=parse_validity,
    parser_version="1",
)


async def evaluate(ev: Evaluation) -> JudgedRun:
    include = ev.criterion.include_intermediate_responses_in_final

    async def turn(index: int, want: Invocation, got: ActualTurn) -> float | None:
        text = VERDICT.render(
            user_message=content_text(want.user_content),
            agent_answer=answer_text(got, include),
            reference_answer=reference_text(want, include),
        )
        _, score = await ev.judge(
            VERDICT, text, index, lambda a: majority(VERDICT.parse(s.text) for s in a.samples)
        )
        return score

    scores = await ev.each_turn(turn)
    return ev.result(mean(scores), list(scores))


register(
    JudgedMetric(
        name="final_response_match_v2",
        kind="response",
        criterion=JudgeCriterion,
        requests=(VERDICT,),
        evaluate=evaluate,
        needs_expected=True,
    )
)
