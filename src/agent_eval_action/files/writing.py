"""Writing a file whole or not at all."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

# Results and Diffs are written a few cases at a time, KBs each: in writes of 1 MB, not
# Python's default 8 KB (a 250 MB file took a third less time)
_BUFFER = 1 << 20


@contextmanager
def replacing(path: Path) -> Iterator[BinaryIO]:
    """A file to write `path` through: `.NAME.tmp` beside it, renamed over it once written,
    removed if anything fails, so that no reader ever sees half a file. Missing folders are
    made. A path that is there and is not a regular file (`/dev/null`, `/dev/stdout`, a
    pipe) is written into, never replaced: renaming a file over /dev/null as root would
    turn the device into a file for every process on the machine."""
    if path.exists() and not path.is_file():
        with path.open("wb") as out:
            yield out
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with tmp.open("wb", buffering=_BUFFER) as out:
            yield out
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_whole(path: Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` whole or not at all (`replacing`)."""
    with replacing(path) as out:
        out.write(text.encode("utf-8"))
