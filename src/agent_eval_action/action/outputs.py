"""The runner's file commands: step outputs (`GITHUB_OUTPUT`), the job summary
(`GITHUB_STEP_SUMMARY`), and workflow commands on stdout (docs/action.md, "Outputs"; docs/security.md).

Outputs are written as `name<<DELIMITER` blocks with a fresh random delimiter that the
value cannot contain, so no value (a PR-controlled string, a multi-line path) can end its
block early and set another output.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from ..report.check import escape_data

SUMMARY_LIMIT = 1024 * 1024  # bytes per step; above it the runner drops the whole summary


def _delimiter(value: str) -> str:
    while True:
        delimiter = f"ghadelimiter_{uuid.uuid4()}"
        if delimiter not in value:
            return delimiter


def output_block(name: str, value: str) -> str:
    delimiter = _delimiter(value)
    return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


def write_outputs(path: str | None, values: Mapping[str, str], log: TextIO = sys.stdout) -> None:
    """Append the outputs to `$GITHUB_OUTPUT`; without it (a local run) print them."""
    if path is None:
        for name, value in values.items():
            print(f"output {name}={value}", file=log)
        return
    with open(path, "a", encoding="utf-8") as out:
        out.write("".join(output_block(name, value) for name, value in values.items()))


def append_summary(path: str | None, markdown: str) -> bool:
    """Add `markdown` to the job summary; False when there is none or it would not fit."""
    if path is None:
        return False
    target = Path(path)
    used = target.stat().st_size if target.exists() else 0
    data = markdown.rstrip("\n") + "\n"
    if used + len(data.encode("utf-8")) > SUMMARY_LIMIT:
        return False
    with target.open("a", encoding="utf-8") as out:
        out.write(data)
    return True


def mask(value: str, log: TextIO = sys.stdout) -> None:
    """Ask the runner to hide `value` in every later log line."""
    for line in value.splitlines():
        if line.strip():
            print(f"::add-mask::{line}", file=log)


def command(name: str, message: str, log: TextIO = sys.stdout) -> None:
    """`::error::`, `::warning::` or `::notice::` with an escaped message."""
    print(f"::{name}::{escape_data(message)}", file=log, flush=True)


def group(title: str, log: TextIO = sys.stdout) -> None:
    print(f"::group::{escape_data(title)}", file=log, flush=True)


def endgroup(log: TextIO = sys.stdout) -> None:
    print("::endgroup::", file=log, flush=True)
