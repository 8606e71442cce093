"""response_match_score: per turn, the ROUGE-1 F-measure of the agent's final answer
against the expected one; the run scores the mean (ADK 2.13's semantics, bit for bit:
metrics/rouge.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..criteria import Criterion
from ..registry import Metric, RunScore, mean, register
from ..rouge import rouge1_fmeasure

if TYPE_CHECKING:
    from ...evalset.models import Invocation
    from ...traces import ActualTurn


def score_run(
    criterion: Criterion, expected: Sequence[Invocation], actual: Sequence[ActualTurn]
) -> RunScore:
    scores: list[float | None] = [
        rouge1_fmeasure(
            want.final_response.text() if want.final_response else "",
            turn.final_response.text() if turn.final_response else "",
        )
        for want, turn in zip(expected, actual, strict=True)
    ]
    return RunScore(overall=mean(scores), invocations=scores)


register(
    Metric(
        name="response_match_score",
        kind="response",
        criterion=Criterion,
        score_run=score_run,
        needs_expected=True,
    )
)
