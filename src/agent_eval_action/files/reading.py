"""Reading input files: size cap, UTF-8 check, one-line errors naming the file."""

from __future__ import annotations

import codecs
import hashlib
import mmap
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, TypeAlias

from ..errors import InputError

MAX_FILE_BYTES = 64 * 1024 * 1024  # an eval or config file larger than this is refused

Buffer: TypeAlias = bytes | mmap.mmap | memoryview  # a file's bytes, read or mapped


@contextmanager
def _opened(path: Path, display: str) -> Iterator[BinaryIO]:
    """The file open for reading; what the system refuses, as one line naming it."""
    try:
        with path.open("rb") as handle:
            yield handle
    except FileNotFoundError:
        raise InputError("no such file", display) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", display) from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", display) from None


def read_bytes(path: Path, display: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The file's bytes, at most `limit` of them. The size a file reports is checked first
    (a quick refusal), but not trusted: a device, a pipe or `/proc` file (or a symlink to
    one, e.g. to /dev/zero) reports 0, so the read itself stops one byte past the limit."""
    with _opened(path, display) as handle:
        return _read_capped(handle, os.fstat(handle.fileno()).st_size, display, limit)


def read_mapped(path: Path, display: str, limit: int = MAX_FILE_BYTES) -> Buffer:
    """The file's bytes, mapped into memory rather than copied into it: a large file read
    this way costs no memory of its own (its pages are the page cache's). Only for a file
    this process wrote and no other process writes while it is read, e.g. one taken out of
    an artifact: a file cut shorter under the mapping kills the reader (SIGBUS). What
    cannot be mapped (empty, or not a regular file) is read as read_bytes reads it.

    The mapping stays for as long as anything holds on to it, e.g. msgspec.Raw values
    decoded from it, and goes with the last of them."""
    with _opened(path, display) as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
            return _read_capped(handle, info.st_size, display, limit)
        _refuse_over(info.st_size, display, limit)
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


def _read_capped(handle: BinaryIO, size: int, display: str, limit: int) -> bytes:
    """What is left to read of the open file whose reported size is `size` (0 for a device
    or a pipe, so the read itself stops one byte past the limit)."""
    _refuse_over(size, display, limit)
    raw = handle.read(limit + 1)
    if len(raw) > limit:
        raise InputError(f"file is more than {limit} bytes; the limit is {limit}", display)
    return raw


def _refuse_over(size: int, display: str, limit: int) -> None:
    if size > limit:
        raise InputError(f"file is {size} bytes; the limit is {limit}", display)


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


_CHUNK = 1 << 16  # bytes checked at a time by utf8_bytes (copies this small are reused)


def utf8_bytes(raw: Buffer, display: str) -> Buffer:
    """The bytes of UTF-8 text as `decode` would accept it, without its byte order mark,
    checked without making a str of the whole (a large file, held twice, is twice the
    memory): for readers that parse bytes. Refused as `decode` refuses it."""
    view = memoryview(raw)
    if bytes(view[:2]) in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        decode(bytes(raw), display)  # raises
    checker = codecs.getincrementaldecoder("utf-8")()
    try:
        for start in range(0, len(view), _CHUNK):
            chunk, final = view[start : start + _CHUNK], start + _CHUNK >= len(view)
            # an ASCII chunk needs no decoding, unless a character began before it
            if final or checker.getstate()[0] or not bytes(chunk).isascii():
                checker.decode(chunk, final=final)
    except UnicodeDecodeError:
        decode(bytes(raw), display)  # raises, naming the line
    if bytes(view[:3]) == codecs.BOM_UTF8:
        return view[3:]
    return raw


def read_text(path: Path, display: str) -> str:
    return decode(read_bytes(path, display), display)


def sha256(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()
