"""Reading files out of a downloaded artifact, which is untrusted input.

An artifact may come from a fork's run, so its zip is checked before anything is taken out:
entry names that could escape a directory, duplicates, too many entries, encrypted entries and
corrupt data are refused, and sizes are counted while decompressing (a zip's headers can lie).
Nothing is written to disk here; callers get the bytes of the files they asked for.

upload-artifact v7 with `archive: false` stores one file as is (docs/security.md, "Artifacts"): bytes
that are not a zip are taken as that single file, `results.json`.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from collections.abc import Callable
from typing import NoReturn

RAW_NAME = "results.json"
MAX_ENTRY_BYTES = 256 * 1024 * 1024
MAX_TOTAL_BYTES = 512 * 1024 * 1024
MAX_ENTRIES = 10_000
_CHUNK = 1 << 16
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header; an empty zip's end record
_DRIVE = re.compile(r"^[A-Za-z]:")


class ArtifactError(Exception):
    """An artifact that cannot be used safely; the message is one line naming its source."""


def _check_name(name: str) -> str | None:
    """Why an entry name is unsafe (could land outside the extraction directory), or None."""
    if not name:
        return "an empty entry name"
    if "\\" in name or "\x00" in name:
        return f"entry name {name!r} has a backslash or NUL"
    if name.startswith("/") or _DRIVE.match(name):
        return f"entry name {name!r} is absolute"
    parts = name.rstrip("/").split("/")
    if any(part in ("", ".", "..") for part in parts):
        return f"entry name {name!r} has an empty, '.' or '..' component"
    return None


def _read_entry(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int, fail: Callable[[str], NoReturn]
) -> bytes:
    """The entry's bytes, stopping as soon as more than `cap` come out."""
    chunks, size = [], 0
    with archive.open(info) as stream:
        while chunk := stream.read(_CHUNK):
            size += len(chunk)
            if size > cap:
                fail(f"{info.filename} decompresses to more than {cap} bytes")
            chunks.append(chunk)
    return b"".join(chunks)


def read_files(
    data: bytes,
    wanted: set[str] | None,
    *,
    source: str,
    max_entry_bytes: int = MAX_ENTRY_BYTES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
    max_entries: int = MAX_ENTRIES,
) -> dict[str, bytes]:
    """The files named in `wanted` (every file when None) that the artifact holds, by name.

    Raises ArtifactError when the archive is unsafe or unreadable, whatever `wanted` is."""

    def fail(why: str) -> NoReturn:
        raise ArtifactError(f"{source}: {why}")

    if not data.startswith(_ZIP_MAGIC):
        if len(data) > max_entry_bytes:
            fail(f"the un-zipped artifact is over {max_entry_bytes} bytes")
        return {RAW_NAME: data} if wanted is None or RAW_NAME in wanted else {}
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError) as exc:
        fail(f"not a readable zip ({exc})")
    with archive:
        infos = archive.infolist()
        if len(infos) > max_entries:
            fail(f"{len(infos)} entries, over the limit of {max_entries}")
        seen: set[str] = set()
        for info in infos:
            unsafe = _check_name(info.filename)
            if unsafe:
                fail(unsafe)
            if info.filename.rstrip("/") in seen:
                fail(f"entry {info.filename!r} appears twice")
            seen.add(info.filename.rstrip("/"))
            if info.flag_bits & 0x1:
                fail(f"entry {info.filename!r} is encrypted")
        files: dict[str, bytes] = {}
        total = 0
        for info in infos:
            if info.is_dir() or (wanted is not None and info.filename not in wanted):
                continue
            if info.file_size > max_entry_bytes:  # declared: a cheap early refusal only
                fail(f"{info.filename} is {info.file_size} bytes, over {max_entry_bytes}")
            try:
                body = _read_entry(archive, info, max_entry_bytes, fail)
            except ArtifactError:
                raise
            except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as exc:
                fail(f"{info.filename} is corrupt ({exc})")
            except NotImplementedError as exc:
                fail(f"{info.filename} uses an unsupported compression ({exc})")
            total += len(body)
            if total > max_total_bytes:
                fail(f"the files decompress to more than {max_total_bytes} bytes in all")
            files[info.filename] = body
        return files


def entry_names(data: bytes) -> list[str]:
    """The file names an artifact holds, for messages (empty when it is not a readable zip)."""
    if not data.startswith(_ZIP_MAGIC):
        return [RAW_NAME]
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return [i.filename for i in archive.infolist() if not i.is_dir()]
    except (zipfile.BadZipFile, ValueError, OSError):
        return []
