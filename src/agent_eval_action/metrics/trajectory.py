"""Tool-trajectory matching with the semantics of ADK's `tool_trajectory_avg_score`.

An invocation scores 1.0 when the tool calls the agent made match the expected
ones under the configured match type, else 0.0. Two calls are the same call when
their names are equal and, unless arguments are ignored, their argument values
compare equal with Python's ``==`` (so key order does not matter, ``1 == 1.0 ==
True``, and ``None`` differs from ``{}``). Call ids and every other field are
ignored.

Match types:

* ``EXACT``: the two lists have the same length and agree position by position.
* ``IN_ORDER``: the expected calls occur in the actual calls in the same order,
  possibly with other calls in between. Each actual call is compared against the
  next expected call that has not been found yet (greedy, left to right).
* ``ANY_ORDER``: every expected call is found among the actual calls, each one
  taking the earliest matching actual call not already taken.

For both lenient types an empty expected list always matches.

Any object exposing ``.name`` and ``.args`` can be passed as a call, so this works
with this package's models and with google-genai's ``FunctionCall`` alike.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, Protocol

__all__ = ["CallLike", "MatchType", "calls_match", "invocation_score"]


class CallLike(Protocol):
    @property
    def name(self) -> Any: ...

    @property
    def args(self) -> Any: ...


class MatchType(enum.IntEnum):
    """How the actual tool calls are compared with the expected ones."""

    EXACT = 0
    IN_ORDER = 1
    ANY_ORDER = 2

    @classmethod
    def parse(cls, value: object) -> MatchType:
        """Reads a match type the way an ADK eval config spells it.

        Accepts a member, one of the integers 0, 1, 2 (an integral float such as
        ``1.0`` too, as ADK's pydantic criterion does), or a name, which is
        stripped, upper-cased and has ``-`` and spaces turned into ``_``: ``"exact"``,
        ``"in-order"``, ``"Any Order"``. Booleans and numeric strings are rejected.
        """
        if isinstance(value, cls):
            return value
        if isinstance(value, enum.Enum) and value.name in cls.__members__:
            # Another enum with the same member names, e.g. ADK's own MatchType.
            return cls[value.name]
        if isinstance(value, str):
            key = value.strip().upper().replace("-", "_").replace(" ", "_")
            if key in cls.__members__:
                return cls[key]
        elif isinstance(value, int | float) and not isinstance(value, bool) and value in (0, 1, 2):
            return cls(int(value))
        raise ValueError(f"invalid match type {value!r}; expected one of {_valid_spellings()}")


def _valid_spellings() -> str:
    parts = [f"{m.name} ({m.value})" for m in MatchType]
    return ", ".join(parts) + " (names are case-insensitive; '-' or ' ' may replace '_')"


def _same_call(actual: CallLike, expected: CallLike, ignore_args: bool) -> bool:
    return actual.name == expected.name and (ignore_args or actual.args == expected.args)


def _exact(actual: Sequence[CallLike], expected: Sequence[CallLike], ignore_args: bool) -> bool:
    if len(actual) != len(expected):
        return False
    for call, want in zip(actual, expected, strict=True):
        if call.name != want.name or (not ignore_args and call.args != want.args):
            return False
    return True


def _in_order(actual: Sequence[CallLike], expected: Sequence[CallLike], ignore_args: bool) -> bool:
    wanted = len(expected)
    if wanted == 0:
        return True
    found = 0
    for call in actual:
        if _same_call(call, expected[found], ignore_args):
            found += 1
            if found == wanted:
                return True
    return False


def _any_order(actual: Sequence[CallLike], expected: Sequence[CallLike], ignore_args: bool) -> bool:
    if not expected:
        return True
    remaining = list(actual)
    for want in expected:
        for index, call in enumerate(remaining):
            if _same_call(call, want, ignore_args):
                del remaining[index]
                break
        else:
            return False
    return True


_MATCHERS = {
    MatchType.EXACT: _exact,
    MatchType.IN_ORDER: _in_order,
    MatchType.ANY_ORDER: _any_order,
}


def calls_match(
    actual: Sequence[CallLike],
    expected: Sequence[CallLike],
    match_type: MatchType,
    ignore_args: bool = False,
) -> bool:
    """Whether the actual tool calls satisfy the expected ones under ``match_type``.

    ``match_type`` may also be any spelling :meth:`MatchType.parse` accepts.
    """
    if type(match_type) is not MatchType:
        match_type = MatchType.parse(match_type)
    return _MATCHERS[match_type](actual, expected, ignore_args)


def invocation_score(
    actual: Sequence[CallLike],
    expected: Sequence[CallLike],
    match_type: MatchType = MatchType.EXACT,
    ignore_args: bool = False,
) -> float:
    """ADK's per-invocation trajectory score: 1.0 on a match, else 0.0."""
    return 1.0 if calls_match(actual, expected, match_type, ignore_args) else 0.0
