"""Where an action run keeps its files, and how they reach output-dir (docs/security.md).

The action is root; the checkout (output-dir is in it) is what the PR committed, links
included, and the PR's user owns its scratch folder. So:

- every file of the run (Results, Diff, reports, the downloaded baselines) is written into
  the run folder, root's (0711: others may open a file there by name, as the agent stage
  reads the baseline, and list or change nothing), and the score stage's Results are read
  back from there only: a `results.json` the PR committed under output-dir is never this
  run's;
- the PR user's scratch folder lives in a folder of root's (0711) that its user can enter
  but not change, so it cannot be renamed and replaced by a link;
- what root gives the PR's user to read (its requirements as a file, the constraints) is in
  a folder root owns (0755);
- output-dir is opened once, at the start, one component at a time with no link followed
  (made when missing); at the end the run folder's files are put into it through that
  descriptor, each made exclusively and renamed into place, and the names of the action's
  files (`NAMES`) that this run did not write are removed. Nothing else in it is ever
  touched: a folder holding anything else, or the workspace itself, is refused.
"""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePath

from ..errors import DISK_FULL, InputError
from ..files.safe import (
    TEMPORARY,
    Refused,
    open_folder,
    open_folder_at,
    put,
    remove_entry,
    remove_tree,
)

# What the action writes into output-dir (docs/action.md, "Files in output-dir")
FILES = frozenset(
    {
        "results.json",
        "diff.json",
        "report.md",
        "summary.md",
        "report.html",
        "pr.json",
        "main-record.msgpack",
        "merge-base.json",
        # what `accept` would change in the eval files (accept/offer.py PATCHES)
        "accept.patch",
        "accept-trajectory.patch",
        "accept-response.patch",
    }
)
FOLDERS = frozenset({"baseline", "shards"})  # wholly the action's, and what is in them
NAMES = FILES | FOLDERS


def private_parent(candidate: Path = Path("/run")) -> str | None:
    """Where the run's folders are made: `candidate` when this process (root) may write it
    and it and every folder above it are root's and writable by no one else, so that no
    other user can have left anything in them for a program that looks upwards from its
    folder (python-dotenv's `find_dotenv`, a tool's config search); else None, the
    temporary folder, where what the stages' users left is removed as each ends
    (sandbox.remove_left_in)."""
    if os.geteuid() != 0 or not os.access(candidate, os.W_OK):
        return None
    for folder in (candidate, *candidate.parents):
        try:
            info = folder.lstat()
        except OSError:
            return None
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
            return None
    return str(candidate)


@dataclass
class Workdirs:
    base: Path  # root's, 0711: the PR user's scratch folder is made in it
    # root's, 0711: every file of this run until it is published; the agent stage reads the
    # baseline there by name (a shard's split), and may list or change nothing
    run: Path
    given: Path  # root's, 0755: files root gives the PR's user to read
    private: Path  # root's, 0700: what the stages pass each other (traces, plans, caches)

    @classmethod
    def make(cls) -> Workdirs:
        base = Path(tempfile.mkdtemp(prefix="agent-eval-", dir=private_parent()))
        base.chmod(0o711)
        folders = {"run": 0o711, "given": 0o755, "private": 0o700}
        for name, mode in folders.items():
            (base / name).mkdir(mode=mode)
            (base / name).chmod(mode)
        return cls(base, base / "run", base / "given", base / "private")

    def remove(self) -> None:
        remove_tree(self.base)


@dataclass
class OutputDir:
    path: Path  # as the input named it, for messages and outputs
    fd: int  # the folder itself, opened without following a link

    @classmethod
    def open(cls, value: str, workspace: Path) -> OutputDir:
        """output-dir, opened (made when missing), checked to be the action's to fill."""
        given = Path(value)
        full = Path(os.path.normpath(given if given.is_absolute() else workspace / given))
        root = Path(os.path.normpath(workspace.absolute()))
        if full == root or full in root.parents:
            raise InputError(
                "input output-dir: the workspace (or a folder above it), where the action "
                "would mix its files with the checkout's: name a folder of its own",
                given,
            )
        start, relative = (
            (root, full.relative_to(root)) if root in full.parents else (Path("/"), _below(full))
        )
        try:
            fd = open_folder(start, relative, create=True)
        except Refused:
            raise InputError(
                "input output-dir: the path passes through a symbolic link, which the action "
                "does not follow (remove it from the checkout)",
                given,
            ) from None
        except (NotADirectoryError, FileExistsError):
            raise InputError("input output-dir: a file stands in its place", given) from None
        except OSError as err:
            raise InputError(f"input output-dir: cannot open it ({err.strerror})", given) from None
        folder = cls(given, fd)
        foreign = sorted(n for n in os.listdir(fd) if n not in NAMES and not TEMPORARY.match(n))
        if foreign:
            folder.close()
            raise InputError(
                f"input output-dir: it holds {foreign[0]!r}, which is not one of the action's "
                "files (docs/action.md, Files in output-dir): give the action a folder of its own",
                given,
            )
        return folder

    def publish(self, run: Path) -> None:
        """Put the run folder's files in place (each whole), remove the action's other
        names and any leftover of an earlier copy. A full disk is raised naming the file
        (for errors.disk_full_line's one line): a copy's failed write names none."""
        written = {n for n in os.listdir(run) if n in NAMES}
        for name in os.listdir(self.fd):
            if name not in written and (name in NAMES or TEMPORARY.match(name)):
                remove_entry(self.fd, name)
        for name in sorted(written):
            source = run / name
            try:
                if name in FOLDERS:
                    self._publish_folder(source, name)
                elif source.is_file():
                    put(source, self.fd, name)
            except OSError as err:
                if err.errno not in DISK_FULL:
                    raise
                raise OSError(err.errno, err.strerror, str(self.path / name)) from err

    def _publish_folder(self, source: Path, name: str) -> None:
        remove_entry(self.fd, name)  # a link, a file, or an earlier run's folder
        inner = open_folder_at(self.fd, name, create=True)
        try:
            for entry in sorted(os.listdir(source)):
                if (source / entry).is_file() and not entry.startswith("."):
                    put(source / entry, inner, entry)
        finally:
            os.close(inner)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _below(path: Path) -> PurePath:
    return PurePath(*path.parts[1:])
