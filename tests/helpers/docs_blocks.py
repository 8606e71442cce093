"""The fenced code blocks of docs/**/*.md, each with its page, line and reason (if any).

tests/test_docs_blocks.py runs every block that has no reason, and declares the reasons
(`REASONS`); conftest.py prints the count that `census` gives. A reason comes from the
marker `<!-- block: REASON -->` on the line above the block's opening fence (one blank
line between them is allowed), or, without a marker, from the block's language (`IMPLIED`).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from helpers.paths import ROOT

DOCS = ROOT / "docs"
MARKER = re.compile(r"^\s*<!--\s*block:\s*(?P<reason>\S+)\s*-->\s*$")
# A language whose blocks carry a reason without a marker: every yaml block of the docs is
# a workflow or some of its steps. (docs/workflows.md shows each example workflow right
# after its file name, where test_workflows.py reads it: no marker fits there.)
IMPLIED = {"yaml": "needs-github"}
_OPENING = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")


@dataclass(frozen=True)
class Block:
    file: str  # as "docs/cli.md"
    line: int  # the opening fence's line, counted from 1
    lang: str  # the info string's first word; "" without one
    text: str  # the lines between the fences, without the fence's indent
    marker: str | None  # the marker's reason as written, or None

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def reason(self) -> str | None:
        """Why the block does not run, or None: it runs."""
        return self.marker or IMPLIED.get(self.lang)


def _closing(lines: list[str], start: int, fence: str) -> int | None:
    closing = re.compile(rf"^ *{re.escape(fence[0])}{{{len(fence)},}}\s*$")
    for index in range(start, len(lines)):
        if closing.match(lines[index]):
            return index
    return None


def _marker_above(lines: list[str], opening: int) -> int | None:
    """The index of the marker line that belongs to the fence at `opening`, if any."""
    for index in (opening - 1, opening - 2):
        if index < 0:
            return None
        if MARKER.match(lines[index]):
            return index
        if lines[index].strip():
            return None
    return None


def page_blocks(path: Path) -> tuple[list[Block], list[str]]:
    """One page's blocks, and what is wrong with its markers ("FILE:LINE: why")."""
    file = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    problems: list[str] = []
    used: set[int] = set()
    outside: list[int] = []  # the lines that are not in a block
    index = 0
    while index < len(lines):
        opening = _OPENING.match(lines[index])
        if opening is None:
            outside.append(index)
            index += 1
            continue
        end = _closing(lines, index + 1, opening["fence"])
        if end is None:
            problems.append(f"{file}:{index + 1}: a block that is never closed")
            end = len(lines)
        indent = len(opening["indent"])
        body = [
            line[min(indent, len(line) - len(line.lstrip(" "))) :]
            for line in lines[index + 1 : end]
        ]
        marker_index = _marker_above(lines, index)
        marker = None
        if marker_index is not None:
            used.add(marker_index)
            marker = MARKER.match(lines[marker_index])["reason"]  # type: ignore[index]
        words = opening["info"].split()
        blocks.append(
            Block(
                file=file,
                line=index + 1,
                lang=words[0].lower() if words else "",
                text="".join(f"{line}\n" for line in body),
                marker=marker,
            )
        )
        index = end + 1
    for index in outside:
        line = lines[index]
        if MARKER.match(line) and index not in used:
            problems.append(
                f"{file}:{index + 1}: a marker that is not directly above a block "
                "(one blank line between them at most)"
            )
        elif re.match(r"\s*<!--\s*block\b", line) and not MARKER.match(line):
            problems.append(f"{file}:{index + 1}: not a marker: {line.strip()!r}")
    return blocks, problems


def all_blocks() -> tuple[list[Block], list[str]]:
    """Every page's blocks, in page order, and every page's marker problems."""
    blocks: list[Block] = []
    problems: list[str] = []
    for path in sorted(DOCS.rglob("*.md")):
        found, wrong = page_blocks(path)
        blocks += found
        problems += wrong
    return blocks, problems


def census(blocks: list[Block]) -> str:
    """`docs blocks: R of N run; M carry a reason (REASON COUNT, ...)`."""
    reasons = Counter(block.reason for block in blocks if block.reason is not None)
    run = len(blocks) - sum(reasons.values())
    counts = ", ".join(
        f"{reason} {count}"
        for reason, count in sorted(reasons.items(), key=lambda r: (-r[1], r[0]))
    )
    line = f"docs blocks: {run} of {len(blocks)} run; {sum(reasons.values())} carry a reason"
    return f"{line} ({counts})" if counts else line
