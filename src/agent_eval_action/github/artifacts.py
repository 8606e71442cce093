"""Taking files out of a downloaded artifact, which is untrusted input.

An artifact may come from a fork's run, so its zip is checked before anything is taken out:
entry names that could escape a directory (or clash, a file where another entry needs a
folder), duplicates, too many entries, encrypted entries and corrupt data are refused, and
sizes are counted while decompressing (a zip's headers can lie). The zip is read from its
file and each wanted entry streamed to a file of its own: a 100,000-case results.json is
hundreds of MB, never held in memory. A refused artifact leaves nothing it wrote behind.

upload-artifact v7 with `archive: false` stores one file as is (docs/security.md, "Artifacts"): a
download that is not a zip is taken as that single file, `results.json`, and becomes it.
"""

from __future__ import annotations

import re
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from ..compare.loading import MAX_RESULTS_BYTES
from ..files import move, written_behind

RAW_NAME = "results.json"
# an entry as large as a Results file may be (the loader's cap: 100,000 cases of several
# runs), and room for two: the PR run's Results and what comes with them
MAX_ENTRY_BYTES = MAX_RESULTS_BYTES
MAX_TOTAL_BYTES = 2 * MAX_RESULTS_BYTES
MAX_ENTRIES = 10_000
# Bytes inflated at a time: below glibc's mmap threshold (128 KiB), so the buffers are
# reused, where 1 MiB ones were each mapped and unmapped (a 250 MB entry: 60,000 page faults)
_CHUNK = 1 << 16
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header; an empty zip's end record
_DRIVE = re.compile(r"^[A-Za-z]:")
_READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError)


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


def _check_entries(infos: list[zipfile.ZipInfo], fail: Callable[[str], NoReturn]) -> None:
    """Refuse the archive for any unsafe, repeated, clashing or encrypted entry."""
    seen: set[str] = set()
    folders: set[str] = set()  # the folders the entries' names need
    for info in infos:
        unsafe = _check_name(info.filename)
        if unsafe:
            fail(unsafe)
        name = info.filename.rstrip("/")
        if name in seen:
            fail(f"entry {info.filename!r} appears twice")
        seen.add(name)
        parts = name.split("/")
        folders.update("/".join(parts[:end]) for end in range(1, len(parts)))
        if info.flag_bits & 0x1:
            fail(f"entry {info.filename!r} is encrypted")
    for info in infos:
        if not info.is_dir() and info.filename in folders:
            fail(f"entry {info.filename!r} is a file where other entries need a folder")


def is_zip(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(4).startswith(_ZIP_MAGIC)


class _Budget:
    """Counts decompressed bytes against the caps: for one entry, and for all of them."""

    def __init__(self, entry_cap: int, total_cap: int, fail: Callable[[str], NoReturn]):
        self.entry_cap, self.total_cap, self.fail = entry_cap, total_cap, fail
        self.total = 0

    def copy(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path) -> None:
        """Stream the entry to `target`, stopping as soon as a cap is passed."""
        name, size = info.filename, 0
        try:
            stream = archive.open(info)
        except NotImplementedError as exc:
            self.fail(f"{name} uses an unsupported compression ({exc})")
        except _READ_ERRORS as exc:
            self.fail(f"{name} is corrupt ({exc})")
        # written behind: the kernel takes in one block while the next is inflated
        with stream, written_behind(target) as out:
            while True:
                try:
                    chunk = stream.read(_CHUNK)
                except _READ_ERRORS as exc:
                    self.fail(f"{name} is corrupt ({exc})")
                if not chunk:
                    return
                size += len(chunk)
                self.total += len(chunk)
                if size > self.entry_cap:
                    self.fail(f"{name} decompresses to more than {self.entry_cap} bytes")
                if self.total > self.total_cap:
                    self.fail(f"the files decompress to more than {self.total_cap} bytes in all")
                out.write(chunk)


class _Written:
    """The files and folders an extraction made, to remove them all if it is refused."""

    def __init__(self, dest: Path):
        self.dest = dest
        self.paths: list[Path] = []  # the folders made and the files, in that order

    def target(self, name: str) -> Path:
        """Where the entry `name` goes (its folders made); it counts as written from now."""
        target = self.dest / name
        for folder in reversed(target.parents):  # `dest` (its parent must exist), then down
            if folder.is_relative_to(self.dest) and not folder.exists():
                folder.mkdir()
                self.paths.append(folder)
        self.paths.append(target)
        return target

    def remove(self) -> None:
        for path in reversed(self.paths):
            try:
                if path.is_dir():
                    path.rmdir()  # only when empty: a folder of others' files stays
                else:
                    path.unlink(missing_ok=True)
            except OSError:
                pass


def extract_files(
    archive: Path,
    wanted: set[str] | None,
    dest: Path,
    *,
    source: str,
    max_entry_bytes: int = MAX_ENTRY_BYTES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
    max_entries: int = MAX_ENTRIES,
) -> dict[str, Path]:
    """Write the files named in `wanted` (every file when None) that the artifact in the
    file `archive` holds to the folder `dest`, each at its name; returns their paths.

    A download that is not a zip is the single file results.json: it is moved (renamed:
    keep `archive` and `dest` on one file system) to `dest`/results.json when wanted. Raises
    ArtifactError when the archive is unsafe or unreadable, whatever `wanted` is; then
    nothing this call wrote is left."""

    def fail(why: str) -> NoReturn:
        raise ArtifactError(f"{source}: {why}")

    if not is_zip(archive):
        size = archive.stat().st_size
        if size > max_entry_bytes:
            fail(f"the un-zipped artifact is over {max_entry_bytes} bytes")
        if wanted is not None and RAW_NAME not in wanted:
            return {}
        move(archive, dest / RAW_NAME)
        return {RAW_NAME: dest / RAW_NAME}
    try:
        opened = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError) as exc:
        fail(f"not a readable zip ({exc})")
    with opened:
        infos = opened.infolist()
        if len(infos) > max_entries:
            fail(f"{len(infos)} entries, over the limit of {max_entries}")
        _check_entries(infos, fail)
        budget = _Budget(max_entry_bytes, max_total_bytes, fail)
        written = _Written(dest)
        files: dict[str, Path] = {}
        try:
            for info in infos:
                if info.is_dir() or (wanted is not None and info.filename not in wanted):
                    continue
                if info.file_size > max_entry_bytes:  # declared: a cheap early refusal only
                    fail(f"{info.filename} is {info.file_size} bytes, over {max_entry_bytes}")
                target = written.target(info.filename)
                budget.copy(opened, info, target)
                files[info.filename] = target
        except BaseException:
            written.remove()
            raise
        return files


def entry_names(archive: Path) -> list[str]:
    """The file names an artifact holds, for messages (empty when it is not a readable zip)."""
    try:
        if not is_zip(archive):
            return [RAW_NAME]
        with zipfile.ZipFile(archive) as opened:
            return [i.filename for i in opened.infolist() if not i.is_dir()]
    except (zipfile.BadZipFile, ValueError, OSError):
        return []
