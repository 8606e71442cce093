"""A unified diff of an edited eval file that `git apply` takes, from the regions edited.

The edit knows which whole lines it changed (`Region`: the lines around each edited case),
so only those are compared, line by line (difflib), and the lines between them are equal
by construction: the diff of a file of thousands of cases costs its size, where comparing
the whole texts costs about its square. Lines break at "\\n" alone (U+2028 or U+0085 inside
a JSON string is no line break to git), and a last line without one is marked as git
marks it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

NO_NEWLINE = "\n\\ No newline at end of file\n"
CONTEXT = 3  # lines of context around each change, as git's


class Region(NamedTuple):
    """Whole lines of the text before, `before[start:end]`, and what they became."""

    start: int
    end: int
    new: str


def applied(before: str, regions: Sequence[Region]) -> str:
    """The text after: `before` with each region (in order, apart) replaced."""
    pieces, last = [], 0
    for region in regions:
        pieces += [before[last : region.start], region.new]
        last = region.end
    pieces.append(before[last:])
    return "".join(pieces)


def unified(file: str, before: str, regions: Sequence[Region]) -> str:
    """The change of `file` as a unified diff (a/ and b/ prefixes, as git writes them)."""
    old, new = lines(before), lines(applied(before, regions))
    codes: list[tuple[str, int, int, int, int]] = []
    at_old = at_new = position = 0
    budget = [MAX_COMPARED]  # line pairs left to compare, over the whole file
    for region in regions:
        gap = before.count("\n", position, region.start)
        _equal(codes, at_old, at_old + gap, at_new, at_new + gap)
        at_old, at_new = at_old + gap, at_new + gap
        count_old, count_new = _count(before[region.start : region.end]), _count(region.new)
        lines_old, lines_new = old[at_old : at_old + count_old], new[at_new : at_new + count_new]
        for tag, i1, i2, j1, j2 in _opcodes(lines_old, lines_new, budget):
            if tag == "equal":
                _equal(codes, at_old + i1, at_old + i2, at_new + j1, at_new + j2)
            else:
                codes.append((tag, at_old + i1, at_old + i2, at_new + j1, at_new + j2))
        at_old, at_new, position = at_old + count_old, at_new + count_new, region.end
    _equal(codes, at_old, len(old), at_new, len(new))
    if all(tag == "equal" for tag, *_ in codes):
        return ""
    grouper: difflib.SequenceMatcher[str] = difflib.SequenceMatcher(None, (), ())
    grouper.opcodes = codes  # type: ignore[attr-defined]  # what get_opcodes returns when set
    return "".join(_formatted(file, old, new, grouper.get_grouped_opcodes(CONTEXT)))


MAX_COMPARED = 5_000_000  # line pairs a file's regions are compared by, at most, in all


def _opcodes(
    old: list[str], new: list[str], budget: list[int]
) -> list[tuple[str, int, int, int, int]]:
    """How a region's lines changed: difflib's opcodes, with the lines both ends share left
    out; past what is left of the file's `budget` of line pairs (difflib's cost grows with
    their product: thousands of like lines, one more), the lines between as one
    replacement, a patch as valid."""
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    middle_old, middle_new = old[head : len(old) - tail], new[head : len(new) - tail]
    codes = [("equal", 0, head, 0, head)] if head else []
    middle: list[tuple[str, int, int, int, int]] = [
        ("replace", 0, len(middle_old), 0, len(middle_new))
    ]
    pairs = len(middle_old) * len(middle_new)
    if pairs <= budget[0]:
        budget[0] -= pairs
        middle = list(difflib.SequenceMatcher(None, middle_old, middle_new, False).get_opcodes())
    codes += [(t, i1 + head, i2 + head, j1 + head, j2 + head) for t, i1, i2, j1, j2 in middle]
    if tail:
        codes.append(("equal", len(old) - tail, len(old), len(new) - tail, len(new)))
    return [code for code in codes if code[0] != "equal" or code[2] > code[1]]


def lines(text: str) -> list[str]:
    """`text` as a patch's lines."""
    split = [line + "\n" for line in text.split("\n")]
    split[-1] = split[-1][:-1]
    if split[-1]:
        split[-1] += NO_NEWLINE
    else:
        split.pop()
    return split


def _count(text: str) -> int:
    """How many of a patch's lines `text` (whole lines) is."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _equal(codes: list[tuple[str, int, int, int, int]], i1: int, i2: int, j1: int, j2: int) -> None:
    """An equal stretch, joined to the one before it when they meet."""
    if i2 <= i1:
        return
    if codes and codes[-1][0] == "equal" and codes[-1][2] == i1:
        _, start_old, _, start_new, _ = codes.pop()
        i1, j1 = start_old, start_new
    codes.append(("equal", i1, i2, j1, j2))


def _formatted(
    file: str,
    old: list[str],
    new: list[str],
    groups: Iterable[list[tuple[str, int, int, int, int]]],
) -> Iterator[str]:
    yield f"--- a/{file}\n+++ b/{file}\n"
    for group in groups:
        first, last = group[0], group[-1]
        yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in old[i1:i2])
                continue
            yield from ("-" + line for line in old[i1:i2])
            yield from ("+" + line for line in new[j1:j2])


def _range(start: int, stop: int) -> str:
    """A hunk's line range as unified diffs write it: `first,count` (1-based), `first`
    alone for one line, and the line before for none."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"
