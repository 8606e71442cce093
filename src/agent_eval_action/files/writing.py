"""Writing a file whole or not at all, the kernel's share of a large write done beside the
caller's next work; moving a file into place; files that grow as they are read (a line at a
time, or appended to)."""

from __future__ import annotations

import os
import queue
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol, TextIO

from ..errors import DISK_FULL
from .reading import Buffer
from .safe import CREATE, temporary_name

# Results and Diffs are written a few cases at a time, KBs each: in writes of 1 MB, not
# Python's default 8 KB (a 250 MB file took a third less time)
_BUFFER = 1 << 20
# Buffers in flight: one being filled, one being written, one spare for an uneven pace
_BUFFERS = 3


class Sink(Protocol):
    """What a record is streamed into: a binary file, or a `Behind`."""

    def write(self, data: Buffer, /) -> int: ...


class Behind:
    """Writes to `raw` (an unbuffered binary file) from a thread of its own, in blocks of
    _BUFFER bytes.

    Taking a page of the page cache for each 4 KiB written is most of writing a large file
    (on a VM, the first touch of memory it has not used lately): about as long as encoding
    what is written. The kernel releases Python's lock while it copies, so a thread that
    does the writing lets the caller encode the next block meanwhile, on another core. A
    file that fits in one block is written by the caller at `close`, no thread started.

    `write` copies what it is given (the caller may reuse it); an error of the thread's
    (a full disk) is raised by the next `write` or by `close`. Used as a context manager:
    closed when the block ends, or only stopped (nothing more written, the thread waited
    for) when it ends by an exception."""

    def __init__(self, raw: Sink) -> None:
        self._raw = raw
        self._free: queue.SimpleQueue[bytearray] = queue.SimpleQueue()
        self._full: queue.SimpleQueue[tuple[bytearray, int] | None] = queue.SimpleQueue()
        self._block, self._used = bytearray(_BUFFER), 0
        self._made = 1  # blocks made so far, at most _BUFFERS
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def __enter__(self) -> Behind:
        return self

    def __exit__(self, kind: object, *_: object) -> None:
        if kind is None:
            self.close()
        else:
            self._stop()

    def write(self, data: Buffer, /) -> int:
        view = memoryview(data).cast("B")
        size = len(view)
        while view:
            taken = view[: _BUFFER - self._used]
            self._block[self._used : self._used + len(taken)] = taken
            self._used += len(taken)
            view = view[len(taken) :]
            if self._used == _BUFFER:
                self._hand_over()
        return size

    def close(self) -> None:
        """Write what is left and wait for the thread; raise its error, if it had one."""
        if self._thread is None:  # one block or less: no thread was needed
            _write_all(self._raw, memoryview(self._block)[: self._used])
            return
        if self._used:
            self._full.put((self._block, self._used))
        self._stop()
        if self._error is not None:
            raise self._error

    def _hand_over(self) -> None:
        if self._error is not None:
            raise self._error
        if self._thread is None:
            self._thread = threading.Thread(target=self._drain, name="write-behind", daemon=True)
            self._thread.start()
        self._full.put((self._block, self._used))
        if self._made < _BUFFERS:
            self._block, self._made = bytearray(_BUFFER), self._made + 1
        else:
            self._block = self._free.get()  # one the thread has written
        self._used = 0

    def _stop(self) -> None:
        if self._thread is not None:
            self._full.put(None)
            self._thread.join()

    def _drain(self) -> None:
        while (item := self._full.get()) is not None:
            block, used = item
            if self._error is None:
                try:
                    _write_all(self._raw, memoryview(block)[:used])
                except BaseException as err:  # raised in the caller's thread
                    self._error = err
            self._free.put(block)


def _write_all(raw: Sink, view: memoryview) -> None:
    while view:  # a regular file takes it all at once
        view = view[raw.write(view) :]


@contextmanager
def written_behind(path: Path) -> Iterator[Sink]:
    """`path` opened for writing (made, or emptied), written `Behind`: unbuffered, since
    Behind gathers the blocks itself."""
    with path.open("wb", buffering=0) as raw, Behind(raw) as out:
        yield out


@contextmanager
def replacing(path: Path) -> Iterator[Sink]:
    """A file to write `path` through: a temporary file beside it, made exclusively under a
    random name (no link standing there is followed or reused) and written `Behind`, renamed
    over `path` once written (a link standing at `path` is replaced, not written through),
    removed if anything fails, so that no reader ever sees half a file. Missing folders are
    made. A device or a pipe (`/dev/null`, `/dev/stdout`, a FIFO) is written into, never
    replaced: renaming a file over /dev/null as root would turn the device into a file for
    every process on the machine. A full disk is raised as the OSError it is, but naming
    `path` (a failed write names no file, a failed open the temporary one): for the one
    line that errors.disk_full_line makes of it."""
    try:
        if _device(path):
            with path.open("wb") as out:
                yield out
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(temporary_name(path.name))
        fd = os.open(tmp, CREATE, 0o666)  # the umask narrows it, as for any new file
        try:
            with open(fd, "wb", buffering=0) as raw, Behind(raw) as out:
                yield out
            tmp.replace(path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    except OSError as err:
        if err.errno not in DISK_FULL:
            raise
        raise OSError(err.errno, err.strerror, str(path)) from err


def _device(path: Path) -> bool:
    """Whether `path` is a character device or a FIFO to write into. A link is followed
    only in /dev (`/dev/stdout` is one, into /proc): a link elsewhere is replaced."""
    try:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            if Path(os.path.normpath(path.absolute())).parts[1:2] != ("dev",):
                return False
            info = os.stat(path)
    except OSError:
        return False
    return stat.S_ISCHR(info.st_mode) or stat.S_ISFIFO(info.st_mode)


def write_whole(path: Path, data: str | bytes) -> None:
    """Write `data` (a str as UTF-8) to `path` whole or not at all (`replacing`)."""
    with replacing(path) as out:
        out.write(data.encode("utf-8") if isinstance(data, str) else data)


def move(source: Path, target: Path) -> None:
    """Put the file `source` (this job's own) at `target` by a rename: whole at once, and a
    link standing at `target` is replaced, not written through. Missing folders are made;
    both must be on one file system."""
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(source, target)


def line_by_line(path: Path) -> TextIO:
    """`path` made (or emptied; missing folders made) for UTF-8 text written a line at a
    time: each line is in the file once the caller flushes it, so a reader of a writer that
    died (the agent stage's traces) finds the lines so far. The caller closes it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.open("w", encoding="utf-8")


def append_text(path: Path, text: str) -> None:
    """Add `text` (UTF-8) at the end of `path`, made when missing: a file that others read
    as it grows (the runner's file commands: the step's outputs, the job summary)."""
    with path.open("a", encoding="utf-8") as out:
        out.write(text)
