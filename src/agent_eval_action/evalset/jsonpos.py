"""Parse JSON and remember where each value starts, for errors and annotations.

`json.loads` does the parsing (and reports syntax errors with line and column);
a light token scan of the same, already valid, text then maps every path such
as ("eval_cases", 3, "conversation", 0) to the line its value starts on.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')

Path = tuple[str | int, ...]


@dataclass
class Located:
    """A parsed JSON document plus the line where each value starts."""

    data: Any
    _lines: dict[Path, int] = field(repr=False)

    def line(self, path: Path) -> int:
        """Line of the value at `path`, or of its deepest existing ancestor."""
        path = tuple(path)
        while path not in self._lines:
            path = path[:-1]
        return self._lines[path]


def loads(text: str, file: str) -> Any:
    """json.loads, with a syntax error as a one-line InputError at its line and column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(
            f"invalid JSON (column {err.colno}): {err.msg}", file, err.lineno
        ) from None
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply", file) from None


def parse(text: str, file: str) -> Located:
    """Parse, and map every value's path to the line it starts on."""
    return Located(loads(text, file), _value_lines(text))


def _value_lines(text: str) -> dict[Path, int]:
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    lines: dict[Path, int] = {}
    # Each frame: [path, is_object, current key or next index]
    stack: list[list[Any]] = []
    expect_key = False
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in ",:":
            if token == "," and stack and stack[-1][1]:
                expect_key = True
            continue
        if token in "}]":
            stack.pop()
            expect_key = False
            continue
        if expect_key:  # an object key
            stack[-1][2] = json.loads(token)
            expect_key = False
            continue
        if stack:
            frame = stack[-1]
            path = (*frame[0], frame[2])
            if not frame[1]:
                frame[2] += 1
        else:
            path = ()
        lines[path] = bisect.bisect_right(line_starts, match.start())
        if token == "{":
            stack.append([path, True, None])
            expect_key = True
        elif token == "[":
            stack.append([path, False, 0])
    return lines


class FileReader:
    """Base for readers of one parsed file: errors and warnings at the line of a path."""

    def __init__(self, located: Located, file: str, warnings: list[str]):
        self.located = located
        self.file = file
        self.warnings = warnings

    def error(self, message: str, path: Path = ()) -> InputError:
        return InputError(message, self.file, self.located.line(path))

    def warn(self, message: str, path: Path = ()) -> None:
        self.warnings.append(f"{self.file}:{self.located.line(path)}: warning: {message}")
