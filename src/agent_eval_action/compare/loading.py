"""Reading Results files: the current one strictly, a baseline forgivingly.

A current Results that cannot be read is bad input (exit 2). A baseline that is
missing, unreadable or of a newer schema is "no baseline", said loudly, never a
crash (docs/cli.md): the comparison then falls back to thresholds.

Results are decoded by msgspec straight into their records (results.py), each run's
turns kept as JSON until something reads them; a file it refuses is read again the
slow way (json, then the path msgspec named) only to say what is wrong with it.
Every Results read here is also checked by compare/sanity.py (finite numbers of sensible
size, printable ids and paths): one that fails is refused like one that does not parse.
"""

from __future__ import annotations

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


def _parse(path: Path, display: str, *, turns: bool = True, mapped: bool = False) -> Results:
    # bytes, never a str of the whole as well: each run's turns stay JSON in them (Raw)
    read = read_mapped if mapped else read_bytes
    data = utf8_bytes(read(path, display, MAX_RESULTS_BYTES), display)
    check_text(data, display)
    try:
        results = Results.from_json(data)
    except msgspec.MsgspecError as err:
        raise _explain(decode(bytes(data), display), display, err) from None
    del data
    # each run's turns are checked here (types, then values) and kept again as compact
    # JSON of their own (RunRecord.settle): the file's bytes can then go
    check_results(results, display, turns=turns)
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


_AT = re.compile(r"^(?P<why>.*) - at `\$(?P<path>[^`]*)`$", re.S)


def _explain(text: str, display: str, err: msgspec.MsgspecError) -> Exception:
    """Why a Results that msgspec refused is bad, as before: a JSON error first (at its
    line), then the schema's, then a number beyond a float's range (1e999 reads as
    infinity), then what msgspec named (the slow reading, only for a file the fast one
    refused)."""
    data = jsonpos.loads(text, display)
    _check_schema(data.get("schema") if isinstance(data, dict) else None, display)
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
    path: str | None, *, turns: bool = True, mapped: bool = False
) -> tuple[Results | None, str | None]:
    """(baseline, None), or (None, why there is no usable baseline). `turns` False: an
    older baseline, read for main's record only (compare/sanity.check_results); `mapped`
    as load_results says."""
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
        return None, f"the baseline is unreadable ({err})"
