"""The first divergent turn of a case as a unified-diff-like text.

Tool calls and the answer of the baseline run (or of the eval file's expectation, when
there is no baseline run or the case fails as it did there) against the current run's.
Every text is shortened to `limit` characters before it is placed, so a long answer never
cuts the block mid-line, and every line is wrapped at `WIDTH` characters, so a change is
never off to the right of a scrolled block.

Two long answers that share most of their words are shown word by word, as
`git diff --word-diff` does: `[-removed-]` and `{+added+}` inside the text, each line that
holds a change starting with `!`. The agent's own text can hold neither marker: a `-` or
`+` next to a bracket is written `\\-`, `\\+` (`_literal`). The block is escaped as a whole
by report/escape.py `code_block`, which no text can leave.

On a console (`marks`) the tool calls are not wrapped: each is one line cut to `WIDTH`
with an ellipsis, and under a call that replaced one of the same name, `^` marks the
arguments in which the two differ (`call_lines`).
"""

from __future__ import annotations

import difflib
import json
import re
import textwrap
from collections.abc import Iterator
from typing import Any

from ..compare.model import TurnDiff
from . import escape

WIDTH = 80  # characters of a line after its two-character prefix
WORD_DIFF_RATIO = 0.5  # share of words two answers have in common to be shown word by word
WORD_DIFF_HEADER = "@@ answer, word by word: [-removed-] {+added+} @@"

_WORD = re.compile(r"\n|[^\S\n]+|\S+")
_SIGN = re.compile(r"(?<=[\[{])[-+]|[-+](?=[\]}])")  # a sign that would make a marker
_NEWLINE = "\u21b5"  # ↵: a line break that was added or removed
_MARKS = 5  # what a marked group adds to a line: its two markers, and a space of padding
_SHORT_CHANGE = 30  # characters of a change short enough to keep on one line


def _lines(text: str | None, limit: int) -> list[str]:
    if text is None:
        return ["(no answer)"]
    return escape.truncate(text, limit).splitlines() or [""]


def _wrap(line: str, width: int = WIDTH) -> list[str]:
    """A line as lines of at most `width` characters: broken at spaces, else mid-word."""
    if len(line) <= width:
        return [line]
    return textwrap.wrap(
        line,
        width,
        break_long_words=True,
        break_on_hyphens=False,
        drop_whitespace=True,
        expand_tabs=False,
        replace_whitespace=False,
    ) or [line[:width]]


def _put(prefix: str, line: str, more: str | None = None) -> list[str]:
    """`line` wrapped, its first piece after `prefix`, the rest after `more` (the same
    prefix by default, so a diff's - and + mark every piece)."""
    rest = prefix if more is None else more
    width = max(20, WIDTH + 2 - len(prefix))
    return [(prefix if i == 0 else rest) + p for i, p in enumerate(_wrap(line, width))]


def _diff_lines(before: list[str], after: list[str]) -> list[str]:
    out: list[str] = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out += [w for line in before[i1:i2] for w in _put("  ", line)]
            continue
        out += [w for line in before[i1:i2] for w in _put("- ", line)]
        out += [w for line in after[j1:j2] for w in _put("+ ", line)]
    return out or ["  (none)"]


# ---- word by word -------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    """Words and line breaks; other whitespace only separates."""
    return [t for t in _WORD.findall(text) if t == "\n" or not t.isspace()]


def _literal(text: str) -> str:
    """Agent text that cannot hold a marker: a sign next to a bracket is backslashed."""
    return _SIGN.sub(lambda m: "\\" + m.group(), text)


def _marked(kind: str, words: list[str]) -> str:
    text = " ".join(words)
    if kind == " ":
        return text
    # a bracket at the edge would make a marker with the marker's own sign ("[-]x-]"), a
    # backslash at the end would escape the closing one ("{+x\\+}"): a space between
    if text[:1] in "]}":
        text = " " + text
    if text[-1:] in "[{\\":
        text += " "
    return f"[-{text}-]" if kind == "-" else f"{{+{text}+}}"


Atom = tuple[str, str]  # (kind, word): " " kept, "-" removed, "+" added, "\n" a line break


def _units(before: list[str], after: list[str]) -> Iterator[list[Atom]]:
    """The atoms in reading order, a short change (what was removed and what was added in
    its place) as one unit that the layout keeps on one line."""
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for word in before[i1:i2]:
                yield [("\n", "")] if word == "\n" else [(" ", _literal(word))]
            continue
        change = [
            (kind, _NEWLINE if word == "\n" else _literal(word))
            for kind, words in (("-", before[i1:i2]), ("+", after[j1:j2]))
            for word in words
        ]
        if sum(len(word) + 1 for _, word in change) <= _SHORT_CHANGE:
            yield change
        else:
            yield from ([atom] for atom in change)


def _chunks(word: str, width: int) -> list[str]:
    return [word[i : i + width] for i in range(0, len(word), width)] or [""]


def _cost(line: list[Atom], kind: str, word: str) -> int:
    """What placing a word after `line` adds to it: a space, and markers when it opens a
    marked group."""
    opens = kind != " " and (not line or line[-1][0] != kind)
    return len(word) + (1 if line else 0) + (_MARKS if opens else 0)


def _layout(units: Iterator[list[Atom]], width: int) -> list[list[Atom]]:
    """The units as lines of at most `width` characters, markers counted; a word longer
    than a line is broken over lines of its own."""
    lines: list[list[Atom]] = [[]]
    used = 0
    for unit in units:
        if unit[0][0] == "\n":
            lines.append([])
            used = 0
            continue
        if len(unit) > 1 and lines[-1]:  # a short change: on the next line if not on this one
            trial: list[Atom] = list(lines[-1])
            cost = 0
            for kind, word in unit:
                cost += _cost(trial, kind, word)
                trial.append((kind, word))
            if used + cost > width:
                lines.append([])
                used = 0
        for kind, word in unit:
            for piece in _chunks(word, max(1, width - _MARKS)):
                cost = _cost(lines[-1], kind, piece)
                if lines[-1] and used + cost > width:
                    lines.append([])
                    used = 0
                    cost = _cost(lines[-1], kind, piece)
                used += cost
                lines[-1].append((kind, piece))
    return lines


def _render(line: list[Atom]) -> str:
    groups: list[tuple[str, list[str]]] = []
    for kind, word in line:
        if groups and groups[-1][0] == kind:
            groups[-1][1].append(word)
        else:
            groups.append((kind, [word]))
    text = " ".join(_marked(kind, words) for kind, words in groups)
    changed = any(kind != " " for kind, _ in groups)
    return ("! " if changed else "  ") + text


def word_diff(before: str, after: str, width: int = WIDTH) -> list[str]:
    """The two texts as one, word by word: `[-removed-]`, `{+added+}`, wrapped at `width`;
    a line holding a change starts with `! `, any other with two spaces."""
    units = _units(_words(before), _words(after))
    return [_render(line) for line in _layout(units, width)]


def _similar(before: str, after: str) -> bool:
    a, b = _words(before), _words(after)
    return difflib.SequenceMatcher(a=a, b=b, autojunk=False).ratio() >= WORD_DIFF_RATIO


def answer_lines(before: str | None, after: str | None, limit: int) -> list[str]:
    """The answer section: word by word when both answers are long (over a line, or of
    several lines), differ and share most of their words; else line by line."""
    if before is not None and after is not None and before != after:
        old, new = escape.truncate(before, limit), escape.truncate(after, limit)
        long = max(len(old), len(new)) > WIDTH or "\n" in old + new
        if long and _similar(old, new):
            return [WORD_DIFF_HEADER, *word_diff(old, new)]
    return ["@@ answer @@", *_diff_lines(_lines(before, limit), _lines(after, limit))]


# ---- tool calls on a console: one line each, the differing arguments marked ---------------

VALUE_CHARS = 40  # of one argument's value in a call on a console line
_ELLIPSIS = "…"


def call_parts(text: str) -> tuple[str, dict[str, Any] | None] | None:
    """A call as compare/divergence.py `call_text` writes it, read back: (name, args; None
    when the call had none); None when the text is not one (an older Diff's, cut short)."""
    name, paren, rest = text.partition("(")
    if not paren or not rest.endswith(")"):
        return None
    if rest == ")":
        return name, None
    try:
        args = json.loads(rest[:-1])
    except ValueError:
        return None
    return (name, args) if isinstance(args, dict) else None


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + _ELLIPSIS


def _differing(args: dict[str, Any] | None, other: dict[str, Any] | None) -> set[str]:
    """The keys of `args` whose value `other` does not have."""
    theirs = other or {}
    return {k for k, v in (args or {}).items() if k not in theirs or theirs[k] != v}


def _pieces(args: dict[str, Any], value_chars: int | None) -> list[tuple[str, str]]:
    """(key, `"key": value`) per argument in call_text's order, each value cut to
    `value_chars` when given."""
    return [
        (k, json.dumps(k, ensure_ascii=False) + ": " + _short(_json(args[k]), value_chars))
        for k in sorted(args)
    ]


def _short(text: str, chars: int | None) -> str:
    return text if chars is None else _cut(text, chars)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _elided(pieces: list[tuple[str, str]], marked: set[str]) -> list[tuple[str, str]]:
    """The marked pieces, each run of the others in between as one `…`."""
    kept: list[tuple[str, str]] = []
    for key, piece in pieces:
        if key in marked:
            kept.append((key, piece))
        elif not kept or kept[-1][1] != _ELLIPSIS:
            kept.append(("", _ELLIPSIS))
    return kept


def _call_line(name: str, pieces: list[tuple[str, str]], marked: set[str]) -> tuple[str, str]:
    """`name({pieces})`, and `^` under the marked pieces."""
    line, marks = f"{name}({{", " " * (len(name) + 2)
    for i, (key, piece) in enumerate(pieces):
        if i:
            line, marks = line + ", ", marks + "  "
        line += piece
        marks += ("^" if key in marked else " ") * len(piece)
    return line + "})", marks


def marked_call(text: str, other: str | None, width: int = WIDTH) -> tuple[str, str]:
    """A call on one line of at most `width` characters, and the line under it: `^` under
    each argument that differs from `other` (the call of the same name it replaces, or is
    replaced by), else empty. When the call is too long, its values are cut to
    `VALUE_CHARS`, then the arguments that do not differ give way to `…`."""
    parts = call_parts(text)
    theirs = None if other is None else call_parts(other)
    if parts is None or theirs is None or theirs[0] != parts[0]:
        return _cut(text, width), ""
    name, args = parts
    marked = _differing(args, theirs[1])
    if args is None or not marked:
        return _cut(text, width), ""
    line, marks = _call_line(name, _pieces(args, None), marked)
    if len(line) > width:
        line, marks = _call_line(name, _pieces(args, VALUE_CHARS), marked)
    if len(line) > width:
        line, marks = _call_line(name, _elided(_pieces(args, VALUE_CHARS), marked), marked)
    return _cut(line, width), marks[: width - 1].rstrip()


def call_lines(before: list[str], after: list[str], width: int = WIDTH) -> list[str]:
    """The tool calls, before → after, as the block's diff (`- `, `+ `, two spaces), each
    call on one line of at most `width` characters; under a call that replaced one of the
    same name (or was replaced by one), a line that marks their differing arguments."""
    out: list[str] = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out += ["  " + _cut(c, width) for c in before[i1:i2]]
            continue
        olds, news = before[i1:i2], after[j1:j2]
        partner = _partners(olds, news)
        for prefix, calls, other in (("- ", olds, 0), ("+ ", news, 1)):
            for index, call in enumerate(calls):
                found = partner[other].get(index)
                line, marks = marked_call(call, None if found is None else found, width)
                out.append(prefix + line)
                if marks:
                    out.append("  " + marks)
    return out or ["  (none)"]


def _partners(olds: list[str], news: list[str]) -> tuple[dict[int, str], dict[int, str]]:
    """Each changed call's counterpart: the first unpaired call of the same name on the
    other side, in order; ({old index: new call}, {new index: old call})."""
    of_old: dict[int, str] = {}
    of_new: dict[int, str] = {}
    names = [(call_parts(c) or ("",))[0] for c in olds]
    for j, call in enumerate(news):
        name = (call_parts(call) or ("",))[0]
        i = next((i for i, n in enumerate(names) if n and n == name and i not in of_old), None)
        if i is not None:
            of_old[i], of_new[j] = call, olds[i]
    return of_old, of_new


# ---- the block ----------------------------------------------------------------------------


def divergence_text(turn: TurnDiff, limit: int, *, marks: bool = False) -> str:
    """Tool calls and answers of the first divergent turn, baseline (or expected) → current.
    `marks`: the tool calls as a console shows them (`call_lines`), not wrapped."""

    def listed(calls: list[str]) -> list[str]:
        return calls if marks else [escape.truncate(c, limit) for c in calls]

    calls = listed(turn.current_calls)
    expected = listed(turn.expected_calls)
    if turn.baseline_calls is None:
        before_calls, before_answer = expected, turn.expected_answer
        what = "simulated, nothing expected" if turn.simulated else "expected"
        header = f"@@ turn {turn.turn + 1}: {what} → current run {turn.current_run} @@"
    else:
        before_calls = listed(turn.baseline_calls)
        before_answer = turn.baseline_answer
        header = (
            f"@@ turn {turn.turn + 1}: baseline run {turn.baseline_run} → "
            f"current run {turn.current_run} @@"
        )
    lines = [header]
    if turn.baseline_user_text is not None:  # the simulated user said something else before
        said = _lines(turn.baseline_user_text, limit)
        lines += _put("  baseline's user: ", said[0], " " * 19)
        lines += [w for line in said[1:] for w in _put(" " * 19, line)]
    user = _lines(turn.user_text, limit)
    lines += _put("  user: ", user[0], " " * 8)
    lines += [w for line in user[1:] for w in _put(" " * 8, line)]
    if turn.baseline_calls is not None and not turn.simulated:
        lines.append("  expected tool calls:")
        if marks:
            lines += ["    " + _cut(c, WIDTH - 2) for c in expected or ["(none)"]]
        else:
            lines += [w for c in expected or ["(none)"] for w in _put("    ", c)]
    lines.append("@@ tool calls @@")
    lines += call_lines(before_calls, calls) if marks else _diff_lines(before_calls, calls)
    lines += answer_lines(before_answer, turn.current_answer, limit)
    if (
        turn.baseline_calls is not None
        and not turn.simulated
        and turn.expected_answer != before_answer
    ):
        lines.append("  expected answer:")
        lines += [w for a in _lines(turn.expected_answer, limit) for w in _put("    ", a)]
    return "\n".join(lines)
