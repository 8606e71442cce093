"""Reading Results files: the current one strictly, a baseline forgivingly.

A current Results that cannot be read is bad input (exit 2). A baseline that is
missing, unreadable or of a newer schema is "no baseline", said loudly, never a
crash (docs/cli.md): the comparison then falls back to thresholds.

Every Results read here is also checked by compare/sanity.py (finite numbers of sensible
size, printable ids and paths): one that fails is refused like one that does not parse.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import InputError
from ..files import decode, jsonpos, read_bytes
from ..files.jsonpos import one_line
from ..results import SCHEMA, CaseResult, Results
from .sanity import ResultsRefused, check_results, check_text

# Results grow with cases x runs x turns: 10,000 cases of 3 runs of 1-3 turns are ~70 MiB,
# over the 64 MiB cap on eval files, so Results have their own, larger one.
MAX_RESULTS_BYTES = 512 * 1024 * 1024
_SCHEMA_VERSION = re.compile(r"^agent-eval-results/(\d{1,18})$")  # int() refuses 4300+ digits
CURRENT_VERSION = int(_SCHEMA_VERSION.match(SCHEMA).group(1))  # type: ignore[union-attr]


class BaselineUnusable(Exception):
    """The reason a baseline cannot be used, in words for the report."""


def _parse(path: Path, display: str) -> Results:
    text = decode(read_bytes(path, display, MAX_RESULTS_BYTES), display)
    check_text(text, display)
    results = _parse_lean(text, display)
    if results is None:
        results = _parse_whole(text, display)
    check_results(results, display)
    return results


def _check_schema(schema: Any, display: str) -> None:
    match = _SCHEMA_VERSION.match(schema) if isinstance(schema, str) else None
    if match is None:
        raise InputError(
            f'not an agent-eval-action Results file (schema {schema!r}, expected "{SCHEMA}")',
            display,
        )
    if int(match.group(1)) > CURRENT_VERSION:
        raise BaselineUnusable(f"written by a newer agent-eval-action (schema {schema})")


def _parse_whole(text: str, display: str) -> Results:
    """The reference reading: the whole document as Python objects, then validated."""
    data = jsonpos.loads(text, display)
    _check_schema(data.get("schema") if isinstance(data, dict) else None, display)
    try:
        return Results.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(one_line(f"invalid Results: {where}: {first['msg']}"), display) from None


class _NotJson(ValueError):
    """NaN, Infinity or -Infinity: jsonpos.loads refuses them."""


def _refuse_constant(name: str) -> Any:
    raise _NotJson(name)


_SPACE = re.compile(r"[ \t\n\r]*")  # json's whitespace


def _decoder() -> json.JSONDecoder:
    """json.loads' own scanner (jsonpos.loads uses it, with the same refusal of NaN and
    Infinity), keeping one copy of each short string: json shares an object's keys only
    within one document, and here each case is one (10 MB of copies per 10,000 cases)."""
    memo: dict[str, str] = {}
    share = memo.setdefault

    def shared(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        return {
            share(k, k): share(v, v) if type(v) is str and len(v) <= 64 else v for k, v in pairs
        }

    return json.JSONDecoder(parse_constant=_refuse_constant, object_pairs_hook=shared)


def _parse_lean(text: str, display: str) -> Results | None:
    """The Results read one case at a time, never holding the whole document as Python
    objects (for 10,000 cases those are 4 times the file's size), or None when anything
    is unusual: then _parse_whole reads it, and says what is wrong, as before.

    json.loads' scanner reads each value; this walks the top-level object and its "cases"
    array, validating each case as it is read. "schema" must come before "cases" (as
    Results.write puts it): under a schema this cannot read, the cases are only scanned.
    The outcome is _parse_whole's: a JSON error first (None), then the schema's, then
    validation's (None).
    """
    scan = _decoder().raw_decode
    try:
        at = _skip(text, 0)
        if not text.startswith("{", at):
            return None
        top: dict[str, Any] = {}
        at = _skip(text, at + 1)
        while text.startswith('"', at):
            key, at = scan(text, at)
            at = _skip(text, at)
            if key in top or not text.startswith(":", at):
                return None  # json.loads keeps the last of duplicate keys: let it
            at = _skip(text, at + 1)
            if key != "cases":
                top[key], at = scan(text, at)
            elif "schema" not in top or not text.startswith("[", at):
                return None
            else:
                top[key], at = _scan_cases(scan, text, at + 1, _readable(top["schema"]))
            at = _skip(text, at)
            if text.startswith(",", at):
                at = _skip(text, at + 1)
            elif text.startswith("}", at) and _skip(text, at + 1) == len(text):
                if "cases" not in top:
                    return None
                _check_schema(top["schema"], display)
                return Results.model_validate(top)
            else:
                return None
        return None
    except (ValueError, RecursionError):  # a JSONDecodeError or a ValidationError among them
        return None


def _skip(text: str, at: int) -> int:
    """Where the JSON white space starting at `at` ends."""
    end = _SPACE.match(text, at)
    assert end is not None  # the pattern matches the empty string too
    return end.end()


def _readable(schema: Any) -> bool:
    match = _SCHEMA_VERSION.match(schema) if isinstance(schema, str) else None
    return match is not None and int(match.group(1)) <= CURRENT_VERSION


def _scan_cases(
    scan: Callable[[str, int], tuple[Any, int]], text: str, at: int, validate: bool
) -> tuple[list[CaseResult], int]:
    """The cases of the array whose "[" ends at `at`, validated (else only scanned: then
    none are kept), and where the array ends."""
    cases: list[CaseResult] = []
    at = _skip(text, at)
    if text.startswith("]", at):
        return cases, at + 1
    while True:
        case, at = scan(text, at)
        if validate:
            cases.append(CaseResult.model_validate(case))
        del case
        at = _skip(text, at)
        if text.startswith("]", at):
            return cases, at + 1
        if not text.startswith(",", at):
            raise ValueError("not a JSON array")
        at = _skip(text, at + 1)


def load_results(path: str) -> Results:
    """The current Results: anything wrong with it is bad input."""
    try:
        return _parse(Path(path), path)
    except BaselineUnusable as err:
        raise InputError(f"{err}; upgrade agent-eval-action to read it", path) from None


def load_baseline(path: str | None) -> tuple[Results | None, str | None]:
    """(baseline, None), or (None, why there is no usable baseline)."""
    if path is None:
        return None, "no baseline was given"
    if not Path(path).exists():
        return None, f"the baseline file {path} does not exist"
    try:
        return _parse(Path(path), path), None
    except BaselineUnusable as err:
        return None, f"{path} was {err}"
    except ResultsRefused as err:
        return None, f"the baseline is refused ({err})"
    except InputError as err:
        return None, f"the baseline is unreadable ({err})"
