"""Reading input files: size cap, UTF-8 check, one-line errors naming the file."""

from __future__ import annotations

import codecs
import errno
import hashlib
import itertools
import mmap
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, TypeAlias

from ..errors import InputError
from .safe import Refused, open_beneath

MAX_FILE_BYTES = 64 * 1024 * 1024  # an eval or config file larger than this is refused

Buffer: TypeAlias = bytes | mmap.mmap | memoryview  # a file's bytes, read or mapped


# Set by `read_beneath`: the folder below which no file is read through a link
_beneath: Path | None = None
# where an action tells its children to read as it does (cli/__init__.py)
BENEATH_ENV = "AGENT_EVAL_READ_BENEATH"


def read_beneath(folder: Path | None) -> None:
    """From now on (None: no longer), a file below `folder` (the checkout, in the action)
    is opened one component at a time with no link followed, and only a regular file is
    read: a link the pull request committed can point at a file only root may read, and
    root reads the eval files (docs/security.md). Elsewhere, files open as usual."""
    global _beneath
    _beneath = None if folder is None else Path(os.path.normpath(folder.absolute()))


def _open_beneath(path: Path) -> BinaryIO | None:
    """`path` opened as `read_beneath` says, or None when it is not below that folder."""
    if _beneath is None:
        return None
    full = Path(os.path.normpath(path.absolute()))
    if _beneath not in full.parents:
        return None
    fd = open_beneath(_beneath, full.relative_to(_beneath))
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "a folder")
        raise Refused(errno.EINVAL, "not a regular file")
    return os.fdopen(fd, "rb")


@contextmanager
def _opened(path: Path, display: str) -> Iterator[BinaryIO]:
    """The file open for reading; what the system refuses, as one line naming it."""
    try:
        with _open_beneath(path) or path.open("rb") as handle:
            yield handle
    except FileNotFoundError:
        raise InputError("no such file", display) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", display) from None
    except Refused as err:
        raise InputError(
            f"refused: {str(err.strerror).rsplit(': ', 1)[-1]} (the action does not follow links "
            "or read anything but files in the checkout: docs/security.md)",
            display,
        ) from None
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


def read_lines(path: Path, display: str, limit: int, line_limit: int) -> Iterator[tuple[int, str]]:
    """The file's lines (numbered from 1, without their "\\n"), read one at a time: split
    at "\\n" alone (a line's JSON may hold U+2028 or U+0085 as they are, where splitlines()
    would split it), each checked to be UTF-8 as `decode` checks a whole file. Never more
    than `limit` bytes are read, counted as they are, nor a line of more than `line_limit`:
    past either the file is refused, naming it (and the line), so the reader holds at most
    one line of `line_limit` bytes, never the file."""
    with _opened(path, display) as handle:
        _refuse_over(os.fstat(handle.fileno()).st_size, display, limit)
        total = 0
        for number in itertools.count(1):
            # one byte past the file's limit, or past the line's and its "\n"
            raw = handle.readline(min(limit - total + 1, line_limit + 2))
            if not raw:
                return
            total += len(raw)
            if total > limit:
                raise InputError(f"file is more than {limit} bytes; the limit is {limit}", display)
            raw = raw.removesuffix(b"\n")
            if len(raw) > line_limit:
                why = f"a line of more than {line_limit} bytes; the limit is {line_limit}"
                raise InputError(why, display, number)
            if number == 1:
                yield number, decode(raw, display)
                continue
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as err:
                why = f"not UTF-8 text (byte 0x{raw[err.start]:02x})"
                raise InputError(why, display, number) from None


def read_text(path: Path, display: str, limit: int = MAX_FILE_BYTES) -> str:
    return decode(read_bytes(path, display, limit), display)


def sha256(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()
