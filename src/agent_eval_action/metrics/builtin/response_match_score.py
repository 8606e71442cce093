"""response_match_score: per turn, the ROUGE-1 F-measure of the agent's final answer
against the expected one; the run scores the mean (ADK 2.13's semantics, bit for bit:
metrics/rouge.py).

An answer's text is ADK's: every non-empty text part, the model's thought parts included.
With --strip-thoughts, parts marked `thought` are left out on both sides (what some
ADK-based tools do, and what a pending ADK change would make the default)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..criteria import Criterion
from ..registry import Metric, RunScore, mean, register
from ..rouge import rouge1_fmeasure

if TYPE_CHECKING:
    from ...evalset.models import Content, Invocation
    from ...traces import ActualTurn


def _text(content: Content | None, thoughts: bool) -> str:
    if content is None:
        return ""
    if thoughts:
        return content.text()
    return "\n".join(p.text for p in content.parts or () if p.text and not p.thought)


def _scores(
    expected: Sequence[Invocation], actual: Sequence[ActualTurn], *, thoughts: bool
) -> RunScore:
    scores: list[float | None] = [
        rouge1_fmeasure(_text(want.final_response, thoughts), _text(turn.final_response, thoughts))
        for want, turn in zip(expected, actual, strict=True)
    ]
    return RunScore(overall=mean(scores), invocations=scores)


def score_run(
    criterion: Criterion, expected: Sequence[Invocation], actual: Sequence[ActualTurn]
) -> RunScore:
    return _scores(expected, actual, thoughts=True)


def score_run_without_thoughts(
    criterion: Criterion, expected: Sequence[Invocation], actual: Sequence[ActualTurn]
) -> RunScore:
    return _scores(expected, actual, thoughts=False)


register(
    Metric(
        name="response_match_score",
        kind="response",
        criterion=Criterion,
        score_run=score_run,
        needs_expected=True,
        thoughtless=score_run_without_thoughts,
    )
)
