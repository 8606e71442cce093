"""tool_trajectory_avg_score: per turn, 1.0 when the agent's tool calls match the expected
ones under the criterion's match_type (and ignore_args), else 0.0; the run scores the mean
(ADK 2.13's semantics; the matching itself is metrics/trajectory.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..criteria import Criterion, TrajectoryCriterion
from ..registry import Metric, RunScore, mean, register
from ..trajectory import calls_match

if TYPE_CHECKING:
    from ...evalset.models import Invocation
    from ...traces import ActualTurn


def score_run(
    criterion: Criterion, expected: Sequence[Invocation], actual: Sequence[ActualTurn]
) -> RunScore:
    assert isinstance(criterion, TrajectoryCriterion)
    scores: list[float | None] = [
        1.0
        if calls_match(
            turn.tool_uses, want.tool_calls(), criterion.match_type, criterion.ignore_args
        )
        else 0.0
        for want, turn in zip(expected, actual, strict=True)
    ]
    return RunScore(overall=mean(scores), invocations=scores)


register(
    Metric(
        name="tool_trajectory_avg_score",
        kind="trajectory",
        criterion=TrajectoryCriterion,
        score_run=score_run,
        needs_expected=True,
    )
)
