"""The first divergent turn of a regressed case as a unified-diff-like text.

Tool calls and the answer of the baseline run (or of the eval file's expectation, when
the baseline has none) against the current run's. Every text is shortened to `limit`
characters before it is placed, so a long answer never cuts the block mid-line.
"""

from __future__ import annotations

import difflib

from ..compare.model import TurnDiff
from . import escape


def _lines(text: str | None, limit: int) -> list[str]:
    if text is None:
        return ["(no answer)"]
    return escape.truncate(text, limit).splitlines() or [""]


def _diff_lines(before: list[str], after: list[str]) -> list[str]:
    out = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out += [f"  {line}" for line in before[i1:i2]]
            continue
        out += [f"- {line}" for line in before[i1:i2]]
        out += [f"+ {line}" for line in after[j1:j2]]
    return out or ["  (none)"]


def divergence_text(turn: TurnDiff, limit: int) -> str:
    """Tool calls and answers of the first divergent turn, baseline (or expected) → current."""
    calls = [escape.truncate(c, limit) for c in turn.current_calls]
    expected = [escape.truncate(c, limit) for c in turn.expected_calls]
    if turn.baseline_calls is None:
        before_calls, before_answer = expected, turn.expected_answer
        header = f"@@ turn {turn.turn + 1}: expected → current run {turn.current_run} @@"
    else:
        before_calls = [escape.truncate(c, limit) for c in turn.baseline_calls]
        before_answer = turn.baseline_answer
        header = (
            f"@@ turn {turn.turn + 1}: baseline run {turn.baseline_run} → "
            f"current run {turn.current_run} @@"
        )
    lines = [header]
    user = _lines(turn.user_text, limit)
    lines += [f"  user: {user[0]}", *(f"        {line}" for line in user[1:])]
    if turn.baseline_calls is not None:
        lines += ["  expected tool calls:", *(f"    {c}" for c in expected or ["(none)"])]
    lines.append("@@ tool calls @@")
    lines += _diff_lines(before_calls, calls)
    lines.append("@@ answer @@")
    lines += _diff_lines(_lines(before_answer, limit), _lines(turn.current_answer, limit))
    if turn.baseline_calls is not None and turn.expected_answer != before_answer:
        lines += ["  expected answer:", *(f"    {a}" for a in _lines(turn.expected_answer, limit))]
    return "\n".join(lines)
