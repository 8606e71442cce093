"""Exit codes (docs/cli.md, "Exit codes") and the one error type that means "bad input"."""

from __future__ import annotations

import errno
from pathlib import Path

EXIT_PASS = 0
EXIT_GATE_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INFRASTRUCTURE = 3


class InputError(Exception):
    """Bad input or usage: reported as one line naming the file (and line), exit 2."""

    def __init__(self, message: str, file: str | Path | None = None, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        return f"{where}{self.message}"


def fault_line(err: BaseException) -> str:
    """An unexpected exception (a fault of the tool: exit 3) in one line."""
    said = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    return f"internal error, {said}"


# a file that could not be written for want of room: no verdict (exit 3), no fault of the tool
DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


def disk_full_line(err: BaseException) -> str | None:
    """A full disk (or quota) met while writing a file, in one line naming the file
    (files/writing.replacing names it); None for any other exception."""
    if not isinstance(err, OSError) or err.errno not in DISK_FULL:
        return None
    where = f"{err.filename}: " if err.filename else ""
    return f"{where}cannot be written: {err.strerror} (free some space, then run again)"


class InfrastructureError(Exception):
    """Something outside the user's input prevented a verdict (exit 3), e.g. a missing shard."""
