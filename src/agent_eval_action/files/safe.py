"""Files where another user may have a hand in the path (docs/security.md).

The action runs as root beside the pull request's code: the checkout is the PR's to fill
(a committed symbolic link is a link), and the PR's user owns its scratch folder. So what
root opens there is opened by descriptor, one component at a time, never through a link;
what root makes there is made exclusively (`O_EXCL`) in a folder it holds open, and put in
place by a rename inside that folder, which replaces a link rather than following it.

Nothing here follows a link, anywhere in a path below the folder it starts from: a link is
refused with `Refused`, whose message says so.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path, PurePath

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# a FIFO would block an open for reading until a writer came: never wait for one
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_COPY_CHUNK = 1 << 20
# a file made to be renamed over NAME: `.NAME.<12 hex digits>.tmp`, beside it
TEMPORARY = re.compile(r"\..+\.[0-9a-f]{12}\.tmp")


def temporary_name(name: str) -> str:
    """A name (TEMPORARY) for a file to be renamed over `name`, random so that no link
    someone left there can be the one opened."""
    return f".{name}.{secrets.token_hex(6)}.tmp"


class Refused(OSError):
    """A path that passes through a link, or names something it must not."""


def _parts(relative: PurePath) -> tuple[str, ...]:
    parts = relative.parts
    if relative.is_absolute() or any(part in ("..", ".") for part in parts):
        raise Refused(errno.EINVAL, f"{relative}: not a plain path below its folder")
    return parts


def _link_or(err: OSError, where: str, parent: int | None = None) -> OSError:
    """ELOOP, or ENOTDIR where a folder was asked for (`parent` holds `where`), as the
    refusal it is when a link stands there."""
    link = err.errno in (errno.ELOOP, errno.EMLINK)
    if err.errno == errno.ENOTDIR and parent is not None:
        try:
            link = stat.S_ISLNK(os.stat(where, dir_fd=parent, follow_symlinks=False).st_mode)
        except OSError:
            link = False
    if link:
        return Refused(err.errno, f"{where}: a symbolic link, which is not followed")
    return err


def open_folder_at(parent: int, name: str, *, create: bool = False, mode: int = 0o755) -> int:
    """The folder `name` in the folder open as `parent`, not through a link; made (with
    `mode`, which the umask may narrow) when `create` and it is missing."""
    try:
        return os.open(name, _FOLDER, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    except OSError as err:
        raise _link_or(err, name, parent) from None
    with suppress(FileExistsError):  # made meanwhile: opened, and checked, below
        os.mkdir(name, mode, dir_fd=parent)  # never through a link: EEXIST for one
    try:
        return os.open(name, _FOLDER, dir_fd=parent)
    except OSError as err:
        raise _link_or(err, name, parent) from None


def open_folder(start: Path, relative: PurePath, *, create: bool = False) -> int:
    """The folder `relative` below `start` (itself opened as it is: the caller trusts it),
    walked one component at a time with no link followed; missing ones made when `create`."""
    fd = os.open(start, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in _parts(relative):
            inner = open_folder_at(fd, part, create=create)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_beneath(start: Path, relative: PurePath) -> int:
    """A file below `start`, opened for reading with no link followed on the way, never
    waiting on a FIFO. What it is (a regular file?) is the caller's to check with fstat."""
    parts = _parts(relative)
    if not parts:
        raise Refused(errno.EISDIR, f"{start}: a folder, not a file")
    folder = open_folder(start, PurePath(*parts[:-1]))
    try:
        return os.open(parts[-1], _READ, dir_fd=folder)
    except OSError as err:
        raise _link_or(err, str(relative)) from None
    finally:
        os.close(folder)


def open_untrusted(folder: int, name: str, owner: int | None = None) -> int:
    """A regular file that another user wrote, in a folder held open as `folder`: not a
    link, not a FIFO or device, with one name only (a hard link to a file the caller may
    read and its writer may not is refused), owned by `owner` when given."""
    try:
        fd = os.open(name, _READ, dir_fd=folder)
    except OSError as err:
        raise _link_or(err, name) from None
    info = os.fstat(fd)
    why = None
    if not stat.S_ISREG(info.st_mode):
        why = "not a regular file"
    elif info.st_nlink != 1:
        why = f"a file with {info.st_nlink} names (a hard link)"
    elif owner is not None and info.st_uid != owner:
        why = f"owned by uid {info.st_uid}, not its writer's"
    if why is not None:
        os.close(fd)
        raise Refused(errno.EPERM, f"{name}: {why}")
    return fd


def copy_capped(source: int, target: Path, limit: int) -> int:
    """Copy what the descriptor `source` reads into a new file `target` (created
    exclusively), refusing more than `limit` bytes while copying (the target is then
    removed); the bytes copied. A file whose size says it is larger is refused before a
    byte is copied (a sparse file costs its writer nothing, and a copy of it root's disk)."""
    _refuse_larger(source, target.name, limit)
    copied = 0
    try:
        with open(os.open(target, CREATE, 0o600), "wb") as out:
            while chunk := os.read(source, _COPY_CHUNK):
                copied += len(chunk)
                if copied > limit:
                    raise Refused(errno.EFBIG, f"{target.name}: more than {limit} bytes")
                out.write(chunk)
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return copied


def take_untrusted(folder: int, name: str, owner: int | None, target: Path, limit: int) -> int:
    """The file `name` that another user wrote in the folder held open as `folder` (checked
    as open_untrusted checks it), made the caller's own at `target`, a path in a folder no
    one else may write: renamed there when both are on one file system (not a byte
    copied or written, however large the file says it is), else copied (`copy_capped`).
    Refused when its size is past `limit`. Only once nothing of its writer's runs any more:
    a process that held it open could write on. The bytes it holds."""
    fd = open_untrusted(folder, name, owner)
    try:
        size = _refuse_larger(fd, name, limit)
        into = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            try:
                os.rename(name, target.name, src_dir_fd=folder, dst_dir_fd=into)
            except OSError as err:
                if err.errno != errno.EXDEV:
                    raise
                return copy_capped(fd, target, limit)
            there, taken = os.stat(target.name, dir_fd=into, follow_symlinks=False), os.fstat(fd)
            if (there.st_dev, there.st_ino) != (taken.st_dev, taken.st_ino):
                os.unlink(target.name, dir_fd=into)  # not the file checked: never read
                raise Refused(errno.EPERM, f"{name}: replaced while it was taken")
            os.fchown(fd, os.getuid(), os.getgid())
            os.fchmod(fd, 0o600)
            return size
        finally:
            os.close(into)
    finally:
        os.close(fd)


def _refuse_larger(fd: int, name: str, limit: int) -> int:
    """The size the open file reports (Refused past `limit`)."""
    size = os.fstat(fd).st_size
    if size > limit:
        raise Refused(errno.EFBIG, f"{name}: {size} bytes, more than {limit}")
    return size


@contextmanager
def created(folder: int, name: str, mode: int = 0o644) -> Iterator[int]:
    """A new file to write `name` through, in the folder held open as `folder`: made with
    a random name exclusively (no link of anyone's is followed or reused), renamed over
    `name` once the block ends (a link standing there is replaced, not followed), removed
    if anything fails."""
    temporary = temporary_name(name)
    fd = os.open(temporary, CREATE, mode, dir_fd=folder)
    try:
        try:
            os.fchmod(fd, mode)  # the umask's narrowing undone: readers of output-dir
            yield fd
        finally:
            os.close(fd)
        os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temporary, dir_fd=folder)
        raise


def remove_entry(folder: int, name: str) -> None:
    """Remove `name` from the folder held open as `folder`: a file or link (never
    followed), or a folder and all below it, each opened as this module opens folders."""
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=folder)
        return
    inner = open_folder_at(folder, name)
    try:
        for entry in os.listdir(inner):
            remove_entry(inner, entry)
    finally:
        os.close(inner)
    os.rmdir(name, dir_fd=folder)


def remove_tree(path: Path) -> None:
    """Remove the folder `path` (whose own place the caller trusts) and all below it, by
    descriptor: a link inside is removed, never followed."""
    parent = open_folder(path.parent, PurePath())
    try:
        remove_entry(parent, path.name)
    except FileNotFoundError:
        pass
    finally:
        os.close(parent)


def put(source: Path, folder: int, name: str, mode: int = 0o644) -> None:
    """The file `source` (the caller's own) as `name` in the folder held open as `folder`:
    moved when both are on one file system (a large file is not copied), else copied
    (`created`); either way a link standing at `name` is replaced, never written through."""
    try:
        os.rename(source, name, dst_dir_fd=folder)
        return
    except OSError as err:
        if err.errno != errno.EXDEV:
            raise
    with created(folder, name, mode) as fd, source.open("rb") as src:
        while chunk := src.read(_COPY_CHUNK):
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]
