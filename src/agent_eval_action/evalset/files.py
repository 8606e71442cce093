"""Reading input files: size cap, UTF-8 check, one-line errors naming the file."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..errors import InputError

MAX_FILE_BYTES = 64 * 1024 * 1024  # an eval or config file larger than this is refused


def read_bytes(path: Path, display: str) -> bytes:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise InputError(f"file is {size} bytes; the limit is {MAX_FILE_BYTES}", display)
        return path.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", display) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", display) from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", display) from None


def decode(raw: bytes, display: str) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise InputError(f"not UTF-8 text (byte 0x{raw[err.start]:02x})", display, line) from None
    return text.removeprefix("\ufeff")


def read_text(path: Path, display: str) -> str:
    return decode(read_bytes(path, display), display)


def sha256(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()
