"""Reading Results files: the current one strictly, a baseline forgivingly.

A current Results that cannot be read is bad input (exit 2). A baseline that is
missing, unreadable or of a newer schema is "no baseline", said loudly, never a
crash (docs/cli.md): the comparison then falls back to thresholds; but a baseline path the
user named that is no Results file at all (an eval set, not JSON) is bad input
(`named`, pipeline/gate.read_named).

Results are decoded by msgspec straight into their records (results.py), each run's
turns kept as JSON until something reads them; a file it refuses is read again the
slow way (json, then the path msgspec named) only to say what is wrong with it.
Every Results read here is also checked by compare/sanity.py (finite numbers of sensible
size, printable ids and paths): one that fails is refused like one that does not parse.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import msgspec

from ..errors import InputError
from ..files import decode, jsonpos, read_bytes, read_mapped, utf8_bytes
from ..files.jsonpos import one_line
from ..results import SCHEMA, Results
from .sanity import ResultsRefused, check_results, check_text

# Results grow with cases x runs x turns: 10,000 cases of 3 runs of 1-3 turns are ~70 MiB,
# over the 64 MiB cap on eval files, so Results have their own, larger one.
MAX_RESULTS_BYTES = 512 * 1024 * 1024
_SCHEMA_VERSION = re.compile(r"^agent-eval-results/(\d{1,18})$")  # int() refuses 4300+ digits
CURRENT_VERSION = int(_SCHEMA_VERSION.match(SCHEMA).group(1))  # type: ignore[union-attr]


class BaselineUnusable(Exception):
    """The reason a baseline cannot be used, in words for the report."""


class NotResults(InputError):
    """A file that is no Results file at all: not UTF-8 text, not JSON, or JSON without the
    Results schema. `kind` says what it is instead ("an ADK eval set"), for refusing it as
    a baseline the user named (pipeline/gate.read_named)."""

    def __init__(self, err: InputError, kind: str) -> None:
        super().__init__(err.message, err.file, err.line)
        self.kind = kind


def _parse(path: Path, display: str, *, turns: bool = True, mapped: bool = False) -> Results:
    # bytes, never a str of the whole as well: each run's turns stay JSON in them (Raw)
    read = read_mapped if mapped else read_bytes
    raw = read(path, display, MAX_RESULTS_BYTES)
    try:
        data = utf8_bytes(raw, display)
    except InputError as err:
        raise NotResults(err, err.message) from None
    del raw
    check_text(data, display)
    try:
        results = Results.from_json(data)
    except msgspec.MsgspecError as err:
        raise _explain(decode(bytes(data), display), display, err) from None
    except RecursionError:  # deeper than this stack allows, wherever it is called from
        deep = InputError("invalid JSON: nested too deeply", display)
        raise NotResults(deep, deep.message) from None
    del data
    # each run's turns are checked here (types, then values) and kept again as compact
    # JSON of their own (RunRecord.settle): the file's bytes can then go
    check_results(results, display, turns=turns)
    return results


def _check_schema(data: Any, display: str) -> None:
    schema = data.get("schema") if isinstance(data, dict) else None
    match = _SCHEMA_VERSION.match(schema) if isinstance(schema, str) else None
    if match is None:
        refused = InputError(
            f'not an agent-eval-action Results file (schema {schema!r}, expected "{SCHEMA}")',
            display,
        )
        raise NotResults(refused, _kind(data))
    if int(match.group(1)) > CURRENT_VERSION:
        raise BaselineUnusable(f"written by a newer agent-eval-action (schema {schema})")


_AT = re.compile(r"^(?P<why>.*) - at `\$(?P<path>[^`]*)`$", re.S)


def _explain(text: str, display: str, err: msgspec.MsgspecError) -> Exception:
    """Why a Results that msgspec refused is bad, as before: a JSON error first (at its
    line), then the schema's, then a number beyond a float's range (1e999 reads as
    infinity), then what msgspec named (the slow reading, only for a file the fast one
    refused)."""
    try:
        data = jsonpos.loads(text, display)
    except InputError as bad:
        raise NotResults(bad, _not_json(text, bad)) from None
    _check_schema(data, display)
    infinite = _first_infinite(data)
    if infinite is not None:
        where, value = infinite
        return ResultsRefused(
            one_line(f"refused Results: {where}: {value!r} is not a finite number"), display
        )
    match = _AT.match(str(err))
    why, path = (match["why"], match["path"]) if match else (str(err), "")
    where = path.removeprefix(".") or "the document"
    if "out of range" in why:
        return ResultsRefused(one_line(f"refused Results: {where}: {why}"), display)
    return InputError(one_line(f"invalid Results: {where}: {why}"), display)


def _kind(data: Any) -> str:
    """What a JSON document without the Results schema is, as far as its keys tell."""
    if isinstance(data, dict):
        if {"eval_cases", "evalCases", "eval_set_id", "evalSetId"} & data.keys():
            return "an ADK eval set"
        if "criteria" in data:
            return "a test_config.json"
        if "traces" in data:
            return "a traces file (what run-cases writes)"
        if isinstance(data.get("schema"), str):
            return f"a file of schema {one_line(repr(data['schema']))}"
    rows = isinstance(data, list) and all(isinstance(row, dict) for row in data)
    if rows and any({"query", "data"} & row.keys() for row in data):
        return "a legacy eval file (.test.json rows)"
    return 'JSON without a "schema"'


def _not_json(text: str, err: InputError) -> str:
    """What a file that does not parse as one JSON document is: a traces file (JSON lines,
    a header first), or not JSON."""
    try:
        first = json.loads(text.partition("\n")[0])
    except (ValueError, RecursionError):
        first = None
    if isinstance(first, dict) and "traces" in first:
        return _kind(first)
    return f"not JSON (line {err.line}: {err.message})" if err.line else f"not JSON ({err.message})"


def _first_infinite(data: Any) -> tuple[str, float] | None:
    """Where the first infinite number of a JSON document is, and it."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return where or "the document", item
        if isinstance(item, dict):
            stack.extend((f"{where}.{k}" if where else k, v) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", v) for i, v in reversed(list(enumerate(item))))
    return None


def load_results(path: str, *, mapped: bool = False) -> Results:
    """The current Results: anything wrong with it is bad input. `mapped`: the file is this
    process's own, e.g. taken out of an artifact (files/reading.read_mapped)."""
    try:
        return _parse(Path(path), path, mapped=mapped)
    except BaselineUnusable as err:
        raise InputError(f"{err}; upgrade agent-eval-action to read it", path) from None


def load_baseline(
    path: str | None, *, turns: bool = True, mapped: bool = False, named: bool = False
) -> tuple[Results | None, str | None]:
    """(baseline, None), or (None, why there is no usable baseline). `turns` False: an
    older baseline, read for main's record only (compare/sanity.check_results); `mapped`
    as load_results says; `named`: a path the user named, where a file that is no Results
    at all (NotResults) is raised, not "no baseline"."""
    if path is None:
        return None, "no baseline was given"
    if not Path(path).exists():
        return None, f"the baseline file {path} does not exist"
    try:
        return _parse(Path(path), path, turns=turns, mapped=mapped), None
    except BaselineUnusable as err:
        return None, f"{path} was {err}"
    except ResultsRefused as err:
        return None, f"the baseline is refused ({err})"
    except InputError as err:
        if named and isinstance(err, NotResults):
            raise
        return None, f"the baseline is unreadable ({err})"
