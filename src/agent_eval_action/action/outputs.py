"""The runner's file commands: step outputs (`GITHUB_OUTPUT`), the job summary
(`GITHUB_STEP_SUMMARY`), and workflow commands on stdout (docs/action.md, "Outputs"; docs/security.md).

Outputs are written as `name<<DELIMITER` blocks with a fresh random delimiter that the
value cannot contain, so no value (a PR-controlled string, a multi-line path) can end its
block early and set another output.
"""

from __future__ import annotations

import secrets
import sys
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TextIO

from ..files import append_text
from ..report.check import escape_data
from ..report.markdown import SUMMARY_LIMIT  # above it the runner drops the whole summary


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
    append_text(Path(path), "".join(output_block(name, value) for name, value in values.items()))


def summary_room(path: str | None) -> int:
    """The bytes the job summary has left (what this step wrote to it already counts)."""
    target = Path(path) if path is not None else None
    used = target.stat().st_size if target is not None and target.exists() else 0
    return max(SUMMARY_LIMIT - used, 0)


def append_summary(path: str | None, markdown: str) -> bool:
    """Add `markdown` to the job summary; False when there is none or it would not fit."""
    if path is None:
        return False
    target = Path(path)
    data = markdown.rstrip("\n") + "\n"
    if len(data.encode("utf-8")) > summary_room(path):
        return False
    append_text(target, data)
    return True


def mask(value: str, log: TextIO = sys.stdout) -> None:
    """Ask the runner to hide `value` in every later log line."""
    for line in value.splitlines():
        if line.strip():
            print(f"::add-mask::{line}", file=log)


def plain(text: str) -> str:
    """Text the runner reads as nothing but text, on one line: no `::command::` at its start,
    no legacy `##[command]` anywhere (the runner honours those in any line)."""
    line = " ⏎ ".join(text.splitlines()) if "\n" in text or "\r" in text else text
    line = line.replace("##[", "#\u2060#[")
    return ": :" + line[2:] if line.startswith("::") else line


def say(text: str, log: TextIO = sys.stdout) -> None:
    """A line of the action's own log that may quote untrusted text (ids, reasons)."""
    print(plain(text), file=log, flush=True)


def command(name: str, message: str, log: TextIO = sys.stdout) -> None:
    """`::error::`, `::warning::` or `::notice::` with an escaped message."""
    print(f"::{name}::{escape_data(plain(message))}", file=log, flush=True)


def group(title: str, log: TextIO = sys.stdout) -> None:
    print(f"::group::{escape_data(plain(title))}", file=log, flush=True)


def endgroup(log: TextIO = sys.stdout) -> None:
    print("::endgroup::", file=log, flush=True)


MAX_RELAYED_LINE = 8 * 1024  # characters of one relayed line; the rest is cut, and said so
TAIL_LINES = 50


class Relay:
    """Copies a child's output to the log inside a `::stop-commands::` block whose token the
    child cannot know, so that no line it prints is taken as a workflow command (it runs the
    PR's code, or prints what the PR's files say). A line is cut at MAX_RELAYED_LINE
    characters, and legacy `##[` commands are broken up. `tail` keeps the last lines."""

    def __init__(
        self, stream: IO[bytes], tail: list[str] | None = None, log: TextIO = sys.stdout
    ) -> None:
        self._stream, self._tail, self._log = stream, tail, log
        self._token = secrets.token_hex(16)
        self._lock = threading.Lock()
        self._open = False
        self._thread = threading.Thread(target=self._copy, daemon=True)

    def start(self) -> None:
        print(f"::stop-commands::{self._token}", file=self._log, flush=True)
        self._open = True
        self._thread.start()

    def _copy(self) -> None:
        for raw in self._stream:
            text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if len(text) > MAX_RELAYED_LINE:
                cut = len(text) - MAX_RELAYED_LINE
                text = f"{text[:MAX_RELAYED_LINE]}… ({cut} characters cut)"
            with self._lock:
                if not self._open:
                    return
                print(text.replace("##[", "#\u2060#["), file=self._log, flush=True)
            if self._tail is not None:
                self._tail.append(text)
                del self._tail[:-TAIL_LINES]

    def finish(self, wait_s: float = 5.0) -> None:
        """End the block once the output is drained (or after `wait_s`: a process that
        keeps the pipe open cannot hold the log in a block)."""
        self._thread.join(wait_s)
        with self._lock:
            self._open = False
            print(f"::{self._token}::", file=self._log, flush=True)
