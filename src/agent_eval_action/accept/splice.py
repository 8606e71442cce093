"""Edit one value of a JSON file in place, byte for byte elsewhere, in the file's own style.

`span` finds where the value at a path starts and ends in the text (json's own scanner skips
everything it passes over); `replace` puts a new value there, `add` a new key at the end
of an object. The new value is written as the file writes its values (`Style.of`): its
indent unit and the indentation of the line it sits on, its separators, raw UTF-8 or
`\\u` escapes, and CRLF line ends. A byte order mark and the file's last line break stay
where they are, outside every span.
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..files.jsonpos import Path

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
_make_scanner: Callable[[json.JSONDecoder], Any] = json.scanner.make_scanner  # type: ignore[assignment]
_SCAN: Callable[[str, int], tuple[Any, int]] = _make_scanner(json.JSONDecoder())
_INDENTED = re.compile(r"\n([ \t]+)\S")


class NotThere(LookupError):
    """The path leads to no value (a key or an index the document lacks)."""


@dataclass(frozen=True)
class Style:
    """How a file writes its JSON."""

    indent: str | None  # the unit of indentation; None: all on one line
    item: str  # between items: "," or ", "
    key: str  # between a key and its value: ":" or ": "
    ascii: bool  # non-ASCII characters as \\u escapes
    newline: str  # "\n" or "\r\n"

    @classmethod
    def of(cls, text: str) -> Style:
        found = _INDENTED.search(text)
        one_line = "\n" not in text.strip()
        return cls(
            indent=None if one_line or found is None else found.group(1),
            item="," if one_line and "," in text and ", " not in text else ", ",
            key=":" if '":' in text and '": ' not in text else ": ",
            ascii=text.isascii(),
            newline="\r\n" if "\r\n" in text else "\n",
        )

    def dumps(self, value: Any, margin: str) -> str:
        """`value` as this file would write it on a line indented by `margin`."""
        if self.indent is None:
            return json.dumps(value, ensure_ascii=self.ascii, separators=(self.item, self.key))
        text = json.dumps(
            value, ensure_ascii=self.ascii, indent=self.indent, separators=(",", self.key)
        )
        return text.replace("\n", self.newline + margin)


def _skip(text: str, index: int) -> int:
    match = _WHITESPACE.match(text, index)
    assert match is not None  # it matches the empty string
    return match.end()


def _expect(text: str, index: int, char: str) -> int:
    if text[index : index + 1] != char:
        raise NotThere(f"expected {char!r} at {index}")
    return index + 1


def _members(text: str, index: int) -> list[tuple[str, int, int]]:
    """An object's members from its `{`: (key, start of the value, its end)."""
    found: list[tuple[str, int, int]] = []
    index = _skip(text, _expect(text, index, "{"))
    if text[index : index + 1] == "}":
        return found
    while True:
        key, index = _scanstring(text, _expect(text, index, '"'), True)
        index = _skip(text, _expect(text, _skip(text, index), ":"))
        end = _SCAN(text, index)[1]
        found.append((key, index, end))
        index = _skip(text, end)
        if text[index : index + 1] == "}":
            return found
        index = _skip(text, _expect(text, index, ","))


def _items(text: str, index: int) -> list[tuple[int, int]]:
    """An array's items from its `[`: (start, end) of each."""
    found: list[tuple[int, int]] = []
    index = _skip(text, _expect(text, index, "["))
    if text[index : index + 1] == "]":
        return found
    while True:
        end = _SCAN(text, index)[1]
        found.append((index, end))
        index = _skip(text, end)
        if text[index : index + 1] == "]":
            return found
        index = _skip(text, _expect(text, index, ","))


def span(text: str, path: Path) -> tuple[int, int]:
    """Where the value at `path` starts and ends in `text` (NotThere if it does not)."""
    return _walk(text, _skip(text, 1 if text.startswith("\ufeff") else 0), path)


def _walk(text: str, start: int, path: Path) -> tuple[int, int]:
    """Where the value at `path` below the value starting at `start` starts and ends."""
    if not path:
        return start, _SCAN(text, start)[1]
    for step in path:
        spans: dict[str | int, tuple[int, int]] = (
            {key: (s, e) for key, s, e in _members(text, start)}
            if isinstance(step, str)
            else dict(enumerate(_items(text, start)))
        )
        if step not in spans:
            raise NotThere(f"no {step!r}")
        start, end = spans[step]
    return start, end


def _margin(text: str, index: int) -> str:
    """The indentation of the line holding `index`."""
    line = text.rfind("\n", 0, index) + 1
    return text[line : _skip_blank(text, line)]


def _skip_blank(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t":
        index += 1
    return index


def replace(text: str, path: Path, value: Any, style: Style) -> str:
    """`text` with the value at `path` replaced by `value`."""
    doc = Doc(text, style)
    doc.replace(path, value)
    return doc.text


def add(text: str, path: Path, key: str, value: Any, style: Style) -> str:
    """`text` with `key: value` added last to the object at `path` (which lacks the key)."""
    doc = Doc(text, style)
    doc.add(path, key, value)
    return doc.text


def item_spans(text: str, path: Path) -> list[tuple[int, int]]:
    """Where each item of the array at `path` starts and ends, in one pass over it."""
    return _items(text, span(text, path)[0])


@dataclass
class Doc:
    """A JSON text edited value by value, or a piece of one: whole lines around chosen
    values whose starts in it are given (`marks`), each value's path from the document's top
    the key. A path below a marked value is walked from it, so editing each of a file's
    thousands of cases costs the case's size, not the file's. Edit the marked values from
    the last: an edit moves what comes after it, and the marks are not moved."""

    text: str
    style: Style
    marks: dict[Path, int] = field(default_factory=dict)

    def span(self, path: Path) -> tuple[int, int]:
        for cut in range(len(path), 0, -1):
            start = self.marks.get(path[:cut])
            if start is not None:
                return _walk(self.text, start, path[cut:])
        if self.marks:
            raise NotThere(f"{path!r} is below no marked value")
        return span(self.text, path)

    def replace(self, path: Path, value: Any) -> None:
        """The value at `path` replaced by `value`."""
        start, end = self.span(path)
        self._splice(start, end, self.style.dumps(value, _margin(self.text, start)))

    def add(self, path: Path, key: str, value: Any) -> None:
        """`key: value` added last to the object at `path` (which lacks the key)."""
        text, style = self.text, self.style
        start, end = self.span(path)
        members = _members(text, start)
        close = end - 1  # the object's `}`
        name = json.dumps(key, ensure_ascii=style.ascii)
        if style.indent is None or ("\n" not in text[start:end] and members):
            lead = style.item if members else ""
            self._splice(close, close, f"{lead}{name}{style.key}" + style.dumps(value, ""))
            return
        outer = _margin(text, close) if "\n" in text[start:end] else _margin(text, start)
        inner = outer + style.indent
        after = members[-1][2] if members else start + 1
        lead = "," if members else ""
        item = f"{lead}{style.newline}{inner}{name}{style.key}" + style.dumps(value, inner)
        closing = text[after:close]
        if "\n" not in closing:  # `{}` written on one line: its `}` goes on a line of its own
            closing = style.newline + outer
        self._splice(after, close, item + closing)

    def _splice(self, start: int, end: int, new: str) -> None:
        self.text = self.text[:start] + new + self.text[end:]
