"""Reading input files: size cap, UTF-8 check, one-line errors naming the file."""

from __future__ import annotations

import codecs
import hashlib
from pathlib import Path

from ..errors import InputError

MAX_FILE_BYTES = 64 * 1024 * 1024  # an eval or config file larger than this is refused


def read_bytes(path: Path, display: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The file's bytes, at most `limit` of them. The size a file reports is checked first
    (a quick refusal), but not trusted: a device, a pipe or `/proc` file (or a symlink to
    one, e.g. to /dev/zero) reports 0, so the read itself stops one byte past the limit."""
    try:
        size = path.stat().st_size
        if size > limit:
            raise InputError(f"file is {size} bytes; the limit is {limit}", display)
        with path.open("rb") as handle:
            raw = handle.read(limit + 1)
        if len(raw) > limit:
            raise InputError(f"file is more than {limit} bytes; the limit is {limit}", display)
        return raw
    except FileNotFoundError:
        raise InputError("no such file", display) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", display) from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", display) from None


def decode(raw: bytes, display: str) -> str:
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):  # e.g. PowerShell's `>`
        raise InputError(
            "UTF-16 text (it starts with a UTF-16 byte order mark); save it as UTF-8", display, 1
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise InputError(f"not UTF-8 text (byte 0x{raw[err.start]:02x})", display, line) from None
    return text.removeprefix("\ufeff")


_CHUNK = 1 << 22  # bytes checked at a time by utf8_bytes


def utf8_bytes(raw: bytes, display: str) -> bytes:
    """The bytes of UTF-8 text as `decode` would accept it, without its byte order mark,
    checked without making a str of the whole (a large file, held twice, is twice the
    memory): for readers that parse bytes. Refused as `decode` refuses it."""
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        decode(raw, display)  # raises
    if not raw.isascii():
        checker = codecs.getincrementaldecoder("utf-8")()
        view = memoryview(raw)
        try:
            for start in range(0, len(raw), _CHUNK):
                checker.decode(view[start : start + _CHUNK], final=start + _CHUNK >= len(raw))
        except UnicodeDecodeError:
            decode(raw, display)  # raises, naming the line
    return raw[3:] if raw.startswith(codecs.BOM_UTF8) else raw


def read_text(path: Path, display: str) -> str:
    return decode(read_bytes(path, display), display)


def sha256(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()
