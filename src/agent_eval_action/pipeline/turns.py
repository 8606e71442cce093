"""What a case-run is scored against: a static case's expected turns, or for a scenario
case one empty expected turn per simulated turn (its user message, nothing expected)."""

from __future__ import annotations

from collections.abc import Sequence

from ..evalset.models import Content, EvalCase, Invocation
from ..traces import CaseRunTrace


def expected_turns(case: EvalCase, trace: CaseRunTrace) -> Sequence[Invocation]:
    if case.conversation is not None:
        return case.conversation
    return [
        Invocation(user_content=turn.user_content or Content(role="user", parts=[]))
        for turn in trace.turns
    ]


def finished(case: EvalCase, trace: CaseRunTrace) -> bool:
    """The run ended normally with every turn: a static case's all, a scenario's at least one."""
    if trace.error is not None or trace.not_run is not None:
        return False
    if case.conversation is None:
        return bool(trace.turns)
    return len(trace.turns) == len(case.conversation)
