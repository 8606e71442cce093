"""Fit a report into a byte budget by showing less, never by cutting text mid-markup.

A report is rendered from a `Detail`: how many items of each kind it lists. `fit` lowers
those counts, one kind after the other in the order given (least important first), each
to the largest count that still fits (found by bisection: the size grows with the count),
and re-renders. Every render says itself what it left out, so the note and the counts of
omitted items are part of what is measured.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Detail:
    """How much of the report to show (None: everything)."""

    collapse_rest: bool = False  # non-regression sections inside <details>
    eval_sets: int | None = None  # rows of the per-eval-set table
    others: int | None = None  # cases per non-regression section
    divergences: int | None = None  # first-divergent-turn blocks of regressions
    regressions: int | None = None  # regression cases per axis
    notes: int | None = None  # comparability notes
    text_chars: int = 2_000  # per agent answer, tool call or user text
    minimal: bool = False  # headline, gate and provenance only: the last resort


def size(text: str) -> int:
    """What GitHub measures: UTF-8 bytes."""
    return len(text.encode("utf-8"))


def fit(
    render: Callable[[Detail], str],
    limit: int,
    start: Detail,
    steps: Sequence[tuple[str, int]],
) -> str:
    """The most detailed rendering within `limit` bytes.

    `steps` are (Detail field, how many items there are), reduced in that order; when
    every step is at zero and it still does not fit, the minimal report is returned.
    """
    detail = start
    text = render(detail)
    if size(text) <= limit:
        return text
    for field, total in steps:
        at_zero = render(replace(detail, **{field: 0}))
        if size(at_zero) > limit:  # showing none of these is not enough: on to the next kind
            detail, text = replace(detail, **{field: 0}), at_zero
            continue
        return _largest(render, limit, detail, field, (0, at_zero), (total, size(text)))
    text = render(replace(detail, minimal=True))
    if size(text) > limit:
        raise ValueError(f"even the minimal report is {size(text)} bytes, over {limit}")
    return text


def _largest(
    render: Callable[[Detail], str],
    limit: int,
    detail: Detail,
    field: str,
    fits: tuple[int, str],
    too_big: tuple[int, int],
) -> str:
    """The rendering with the largest count of `field` that fits, between a count that fits
    and one that does not. Sizes grow about linearly with the count, so each guess
    interpolates; a guess that fails to halve the interval is followed by a bisection."""
    (low, best), (high, high_size) = fits, too_big
    low_size, halve = size(best), False
    while high - low > 1:
        if halve:
            guess = (low + high) // 2
        else:
            guess = low + int((limit - low_size) * (high - low) / max(1, high_size - low_size))
            guess = min(max(guess, low + 1), high - 1)
        candidate = render(replace(detail, **{field: guess}))
        width = high - low
        if size(candidate) <= limit:
            low, low_size, best = guess, size(candidate), candidate
        else:
            high, high_size = guess, size(candidate)
        halve = not halve and (high - low) * 2 > width
    return best
