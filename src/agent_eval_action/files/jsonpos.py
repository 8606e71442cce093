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

# What str.splitlines() splits on, and other control characters: escaped in messages.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(message: str) -> str:
    """A message quoting the user's keys or ids, kept on one line (control characters escaped)."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), message)


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
    """json.loads, with a syntax error as a one-line InputError at its line and column.

    NaN and Infinity, which Python's json reads but JSON does not have, are refused too.
    """
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as err:
        raise InputError(
            f"invalid JSON (column {err.colno}): {err.msg}", file, err.lineno
        ) from None
    except _NotJson as err:
        name = str(err)
        raise InputError(
            f"invalid JSON: {name} is not a JSON number", file, _line_of_token(text, {name})
        ) from None
    except ValueError as err:  # an integer longer than Python converts (sys.get_int_max_str_digits)
        raise InputError(
            "invalid JSON: a number has too many digits",
            file,
            _line_of_token(text, lambda t: len(t) > 1000),
        ) from err
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply", file) from None


class _NotJson(ValueError):
    """NaN, Infinity or -Infinity in the text."""


def _refuse_constant(name: str) -> Any:
    raise _NotJson(name)


def _line_of_token(text: str, match: Any) -> int | None:
    """The line of the first bare token (outside strings) that `match` accepts."""
    for found in _TOKEN.finditer(text):
        token = found.group()
        if not token.startswith('"') and (
            token in match if isinstance(match, set) else match(token)
        ):
            return 1 + text.count("\n", 0, found.start())
    return None


def parse(text: str, file: str) -> Located:
    """Parse, and map every value's path to the line it starts on (duplicate keys refused)."""
    return Located(loads(text, file), _value_lines(text, file))


def _value_lines(text: str, file: str) -> dict[Path, int]:
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    lines: dict[Path, int] = {}
    # Each frame: [path, is_object, current key or next index, {key: line} of an object]
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
            key = json.loads(token)
            line = bisect.bisect_right(line_starts, match.start())
            seen = stack[-1][3]
            if key in seen:  # json.loads (and ADK) silently keep the last value: refuse it
                raise InputError(
                    one_line(f'duplicate key "{key}" (first at line {seen[key]})'), file, line
                )
            seen[key] = line
            stack[-1][2] = key
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
            stack.append([path, True, None, {}])
            expect_key = True
        elif token == "[":
            stack.append([path, False, 0, None])
    return lines


class FileReader:
    """Base for readers of one parsed file: errors and warnings at the line of a path."""

    def __init__(self, located: Located, file: str, warnings: list[str]):
        self.located = located
        self.file = file
        self.warnings = warnings

    def error(self, message: str, path: Path = ()) -> InputError:
        return InputError(one_line(message), self.file, self.located.line(path))

    def warn(self, message: str, path: Path = ()) -> None:
        self.warnings.append(f"{self.file}:{self.located.line(path)}: warning: {one_line(message)}")
