"""Parse JSON and remember where each value starts, for errors and annotations.

json.loads reads the document (and reports syntax errors with line and column). A walk
over the text's top two levels (an EvalSet's keys and its cases; a legacy file's entries
and their keys) then records where each of their values starts, passing over each deeper
value with json's C scanner. A deeper value's line is found only when an error or a
warning asks for it, by a token scan of the one entry that holds it, so a large file
costs little more than json.loads. Duplicate keys, which json (and ADK) silently resolve
to the last value, are refused with their line: the keys json kept are counted against
the key ends in the text, and only when the two differ is the text checked key by key.
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import re
from collections.abc import Callable
from typing import Any

from ..errors import InputError

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')
_WHITESPACE = re.compile(r"[ \t\n\r]*")  # what JSON allows between tokens
# json's string reader (its C one where built): (text, index after the quote, strict) -> (str, end)
_scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
# json's C scanner for a decoder: (text, index) -> (value, end of it)
_make_scanner: Callable[[json.JSONDecoder], Any] = json.scanner.make_scanner  # type: ignore[assignment]
_SHALLOW = 2  # containers above this depth are walked here; deeper values are scanned whole

Path = tuple[str | int, ...]

# What str.splitlines() splits on, and other control characters: escaped in messages.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(message: str) -> str:
    """A message quoting the user's keys or ids, kept on one line (control characters escaped)."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), message)


class Located:
    """A parsed JSON document plus the line where each value starts.

    The lines of the top two levels are known from parsing; a deeper value's line is
    found by scanning the top-level entry that holds it, the first time one is asked for.
    """

    def __init__(
        self,
        data: Any,
        text: str,
        file: str,
        starts: dict[Path, tuple[int, int]],
        *,
        whole: bool = True,
    ):
        self.data = data
        self._text = text
        self._file = file
        self._starts = starts  # path -> (offset, line) of each value parse() met
        self._whole = whole  # values below the top levels were parsed whole (not in starts)
        self._deep: dict[Path, int] = {}  # lines found by scanning such a value
        self._scanned: set[Path] = set()

    def may_have_key(self, *keys: str) -> bool:
        """False when none of these keys is anywhere in the document: none is written in
        the text, and no key is written with a \\u escape (which could spell one)."""
        return "\\u" in self._text or any(f'"{key}"' in self._text for key in keys)

    def line(self, path: Path) -> int:
        """Line of the value at `path`, or of its deepest existing ancestor."""
        path = tuple(path)
        base = path
        while base not in self._starts:
            base = base[:-1]
        if base == path or not self._whole or len(base) < _SHALLOW:
            return self._starts[base][1]  # (a walked container has all its values in starts)
        if base not in self._scanned:
            offset, line = self._starts[base]
            self._deep.update(_value_lines(self._text, self._file, offset, line, base))
            self._scanned.add(base)
        while path not in self._deep:
            path = path[:-1]
        return self._deep[path]


def loads(text: str, file: str, object_hook: Callable[[dict[str, Any]], Any] | None = None) -> Any:
    """json.loads, with a syntax error as a one-line InputError at its line and column.

    NaN and Infinity, which Python's json reads but JSON does not have, are refused too.
    """
    try:
        return json.loads(text, parse_constant=_refuse_constant, object_hook=object_hook)
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
    """Parse, remembering where the values of the top two levels start; a duplicate key is
    an InputError at its line (after any syntax error, as json.loads finds those first)."""
    counted = _KeyCount()
    data = loads(text, file, counted)
    if _key_ends(text) != counted.keys:  # perhaps a key twice: json kept only the last value
        _refuse_duplicates(text, file)
    try:
        starts = _Walker(text).document()
    except (ValueError, StopIteration, RecursionError):  # not expected of text json read
        lines = _value_lines(text, file, 0, 1, ())
        return Located(data, text, file, {p: (0, n) for p, n in lines.items()}, whole=False)
    return Located(data, text, file, starts)


class _KeyCount:
    """json's object_hook: counts the keys of the objects it builds (a duplicate key is
    counted once, as the object keeps it once)."""

    def __init__(self) -> None:
        self.keys = 0

    def __call__(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.keys += len(obj)
        return obj


_QUOTE_SPACE_COLON = re.compile(r'"[ \t\n\r]+:')
_ESCAPED_QUOTE_COLON = re.compile(r'(\\+)"[ \t\n\r]*:')


def _key_ends(text: str) -> int:
    """How many places in the text read as the end of a key (a quote, then a colon): every
    key's end, and a string that starts with a colon (its opening quote); an escaped quote
    inside a string (an odd run of backslashes before it) is not one. No fewer than the keys."""
    ends = text.count('":') + sum(1 for _ in _QUOTE_SPACE_COLON.finditer(text))
    if "\\" in text:
        ends -= sum(len(m.group(1)) % 2 for m in _ESCAPED_QUOTE_COLON.finditer(text))
    return ends


def _refuse_duplicates(text: str, file: str) -> None:
    """An InputError at the first duplicate key, if the text has one."""
    try:
        json.loads(text, object_pairs_hook=_unique)
    except _Duplicate:
        _value_lines(text, file, 0, 1, ())  # raises at the duplicate, with its line
        raise AssertionError("a duplicate key the token scan did not find") from None


class _Duplicate(ValueError):
    """An object with a key twice, seen by json."""


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Duplicate
    return obj


class _Walker:
    """Walks the top levels of a JSON text json has already read, recording where each
    value starts (offset and line); a value below them is passed over by json's C scanner
    (parsed and dropped at once, which costs little: the collector never sees it grow)."""

    def __init__(self, text: str):
        self.text = text
        self.scan: Callable[[str, int], tuple[Any, int]] = _make_scanner(json.JSONDecoder())
        self.starts: dict[Path, tuple[int, int]] = {}
        self._offset = 0  # the last offset whose line is known, and that line
        self._line = 1

    def document(self) -> dict[Path, tuple[int, int]]:
        self.value(self.skip(0), (), 0)
        return self.starts

    def skip(self, index: int) -> int:
        return _WHITESPACE.match(self.text, index).end()  # type: ignore[union-attr]  # * always matches

    def line_at(self, offset: int) -> int:
        """Line of an offset at or after the last one asked for."""
        self._line += self.text.count("\n", self._offset, offset)
        self._offset = offset
        return self._line

    def value(self, index: int, path: Path, depth: int) -> int:
        """Record the value at `index` (and those in it, down to _SHALLOW); its end."""
        self.starts[path] = (index, self.line_at(index))
        char = self.text[index]
        if depth < _SHALLOW and char == "{":
            return self.object(self.skip(index + 1), path, depth + 1)
        if depth < _SHALLOW and char == "[":
            return self.array(self.skip(index + 1), path, depth + 1)
        return self.scan(self.text, index)[1]

    def object(self, index: int, path: Path, depth: int) -> int:
        while self.text[index] != "}":
            key, index = _scanstring(self.text, index + 1, True)
            index = self.skip(self.skip(index) + 1)  # past the colon
            index = self.skip(self.value(index, (*path, key), depth))
            if self.text[index] == ",":
                index = self.skip(index + 1)
        return index + 1

    def array(self, index: int, path: Path, depth: int) -> int:
        count = 0
        while self.text[index] != "]":
            index = self.skip(self.value(index, (*path, count), depth))
            count += 1
            if self.text[index] == ",":
                index = self.skip(index + 1)
        return index + 1


def _value_lines(text: str, file: str, start: int, line: int, prefix: Path) -> dict[Path, int]:
    """The line of every value inside the one starting at `start` (on `line`, at `prefix`),
    from a token scan of its text; a duplicate key in it is an InputError at its line."""
    lines: dict[Path, int] = {}
    # Each frame: [path, is_object, current key or next index, {key: line} of an object]
    stack: list[list[Any]] = []
    expect_key = False
    offset = start
    for match in _TOKEN.finditer(text, start):
        token = match.group()
        line += text.count("\n", offset, match.start())
        offset = match.start()
        if token in ",:":
            if token == "," and stack and stack[-1][1]:
                expect_key = True
            continue
        if token in "}]":
            stack.pop()
            expect_key = False
            if not stack:
                break
            continue
        if expect_key:  # an object key
            key = json.loads(token)
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
            path = prefix
        lines[path] = line
        if token == "{":
            stack.append([path, True, None, {}])
            expect_key = True
        elif token == "[":
            stack.append([path, False, 0, None])
        elif not stack:
            break  # a scalar: the value is this one token
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
