"""Reading Results files: the current one strictly, a baseline forgivingly.

A current Results that cannot be read is bad input (exit 2). A baseline that is
missing, unreadable or of a newer schema is "no baseline", said loudly, never a
crash (DESIGN.md §2): the comparison then falls back to thresholds.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import ValidationError

from ..errors import InputError
from ..evalset import jsonpos
from ..evalset.files import decode, read_bytes
from ..evalset.jsonpos import one_line
from ..results import SCHEMA, Results

# Results grow with cases x runs x turns: 10,000 cases of 3 runs of 1-3 turns are ~70 MiB,
# over the 64 MiB cap on eval files, so Results have their own, larger one.
MAX_RESULTS_BYTES = 512 * 1024 * 1024
_SCHEMA_VERSION = re.compile(r"^agent-eval-results/(\d{1,18})$")  # int() refuses 4300+ digits
CURRENT_VERSION = int(_SCHEMA_VERSION.match(SCHEMA).group(1))  # type: ignore[union-attr]


class BaselineUnusable(Exception):
    """The reason a baseline cannot be used, in words for the report."""


def _parse(path: Path, display: str) -> Results:
    data = jsonpos.loads(decode(read_bytes(path, display, MAX_RESULTS_BYTES), display), display)
    schema = data.get("schema") if isinstance(data, dict) else None
    match = _SCHEMA_VERSION.match(schema) if isinstance(schema, str) else None
    if match is None:
        raise InputError(
            f'not an agent-eval-action Results file (schema {schema!r}, expected "{SCHEMA}")',
            display,
        )
    if int(match.group(1)) > CURRENT_VERSION:
        raise BaselineUnusable(f"written by a newer agent-eval-action (schema {schema})")
    try:
        return Results.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(one_line(f"invalid Results: {where}: {first['msg']}"), display) from None


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
    except InputError as err:
        return None, f"the baseline is unreadable ({err})"
