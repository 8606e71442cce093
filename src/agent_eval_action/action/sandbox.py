"""A user of its own for the PR's code (docs/security.md).

Everything the pull request controls runs as a dedicated uid and gid with no supplementary
groups: installing its requirements, the agent stage (the agent, ADK's imports, the custom
metrics). That user is neither root nor the owner of the workspace or of the runner's
file-command files, so it cannot read the action's own process (its environment holds the
GitHub token), write the files that set later steps' environment, PATH, outputs or job
summary, rewrite the installed tool or its templates, or use a Docker socket that only
root and the docker group may open. Its HOME, TMPDIR and caches point into a 0700 scratch
folder it owns, where it also writes its traces for the score stage, which reads them as
untrusted input. Whatever it leaves running is killed when each of its case-runs ends (the
agent stage reaps what detaches: runners/reaper.py) and, by uid, when each of its stages
ends: that kill is the one the PR's code cannot dodge.

That kill must hit only this action's PR user, so the uid is the action's alone while it
lives: it holds an advisory lock (flock) on that uid's file in a folder only root may write
(`claims_folder`), and an action starting beside it (a self-hosted runner's host running
several jobs) takes the next uid. The kernel drops the lock when its holder dies, so a
crashed action leaves no stale claim.

Switching user needs root (as container actions run). Where the action is not root
(rootless runners, Podman, ARC without CAP_SETUID), PR code runs as the action's own user:
`isolation_warning` says so once, in the log and in the report.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import resource
import stat
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePath

from .. import launch
from ..errors import InfrastructureError, InputError
from ..files import read_bytes
from ..files.safe import open_folder, remove_entry, remove_tree, take_untrusted
from ..runners.reaper import Proc, processes, real_uid

# Far above the uids of a runner's accounts (GitHub's runner user is 1001) and below the
# overflow uid 65534 ("nobody"), which other software uses.
FIRST_UID = 60001
LAST_UID = 65533
NAME = "agent-eval-pr"
# The folder of the uid claims (one lock file per uid), in /run or the temporary folder.
CLAIMS = "agent-eval-pr-uids"
# The most processes and threads (the kernel counts each task) the PR's user may have at
# once (RLIMIT_NPROC): an agent with its MCP servers, workers and their thread pools uses a
# few hundred at most; a fork bomb stops here (its fork fails with EAGAIN)
MAX_PROCESSES = 1024

NOT_ROOT = (
    "the action does not run as root, so the pull request's code cannot run as a user of its "
    "own: it runs as the action's user, and could read the action's environment (which holds "
    "the GitHub token); see docs/security.md"
)


class Held:
    """An open descriptor, released once: a lock file's (its flock makes a uid this
    action's, and goes with the descriptor), or a folder's."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    @property
    def fd(self) -> int:
        if self._fd is None:
            raise ValueError("released")
        return self._fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # the lock goes with the last descriptor of the open file
            self._fd = None


@dataclass(frozen=True)
class PrUser:
    uid: int
    gid: int
    scratch: Path  # 0700, owned by the PR user: its HOME, TMPDIR, caches, and the traces
    gap: str | None = None  # why the PR's code runs as the action's own user, if it does
    # the scratch folder, held open from its making: root reads the PR user's files there
    # by this descriptor (files/safe.py), whatever the PR's code does to names meanwhile
    folder: Held | None = field(default=None, compare=False, repr=False)
    # holds the uid until remove() (or the action's exit): no other action picks it
    claim: Held | None = field(default=None, compare=False, repr=False)
    # a second uid of the action's alone, claimed as the first: the real and saved uid of
    # the process that kills this user's (launch.kill_all_of), which they cannot signal
    killer: int = -1
    killer_claim: Held | None = field(default=None, compare=False, repr=False)

    @property
    def switched(self) -> bool:
        return self.gap is None

    @property
    def home(self) -> Path:
        return self.scratch / "home"

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` with the home, temporary and cache folders in the scratch folder."""
        tmp = self.scratch / "tmp"
        return {
            **env,
            "HOME": str(self.home),
            "TMPDIR": str(tmp),
            "XDG_CACHE_HOME": str(self.scratch / "cache"),
            "PIP_CACHE_DIR": str(self.scratch / "cache" / "pip"),
            "USER": NAME,
            "LOGNAME": NAME,
        }

    def kill_leftovers(self) -> int:
        """SIGKILL every process of this user (daemons included); the rounds it took.

        Killing the pids a look at /proc found misses a process that forks and exits in a
        loop: by the time the signal goes it has another pid, and a look can miss it
        altogether (its old pid exited, its new one came after the listing). So each round
        is a `kill(-1)` from a process whose effective uid is this user's and whose real
        and saved uid are `killer`'s (launch.kill_all_of): the kernel delivers it to every
        process of this uid in one pass that no fork slips past (a process with a SIGKILL
        pending cannot fork), and none of them may signal the killer (a SIGSTOP or SIGKILL
        of theirs is refused). Then a look, to go again if anything is left. Last, what
        the user left in the machine's shared folders (`remove_left_in`) is removed."""
        if not self.switched:
            return 0  # they share the action's uid: nothing tells them apart
        try:
            for rounds in range(1, KILL_ROUNDS + 1):
                launch.kill_all_of(self.uid, self.killer)
                if not processes_of(self.uid):
                    return rounds
                time.sleep(0.01)  # a process with SIGKILL pending may still be listed
            return KILL_ROUNDS
        finally:
            remove_left_in(self.uid, shared_folders())

    def take(self, name: str, target: Path, limit: int) -> int:
        """The file `name` the PR user wrote in its scratch folder, made root's at `target`
        (in root's folder on the same file system: moved, not copied), once its stage has
        ended (nothing of the user's runs): a regular file of the PR user's with no other
        name, not reached through a link, at most `limit` bytes by its size
        (files.safe.take_untrusted; Refused, or FileNotFoundError). Its bytes."""
        owner = self.uid if self.switched else None
        assert self.folder is not None, "a PR user is made with its folder open"
        return take_untrusted(self.folder.fd, name, owner, target, limit)

    def remove(self) -> None:
        """Delete the scratch folder and give up the uid (the stage-end kill has run)."""
        with contextlib.suppress(OSError):
            remove_tree(self.scratch)  # by descriptors: no link of the PR's followed
        if self.folder is not None:
            self.folder.release()
        for claim in (self.claim, self.killer_claim):
            if claim is not None:
                claim.release()


KILL_ROUNDS = 50


def processes_of(uid: int) -> list[Proc]:
    """The live processes whose real uid is `uid` (zombies are already dead)."""
    return [p for p in processes().values() if not p.zombie and real_uid(p.pid) == uid]


def owners(paths: Iterable[str | Path | None]) -> set[int]:
    """The owners (uid and gid) of the paths that exist."""
    found: set[int] = set()
    for path in paths:
        if not path:
            continue
        try:
            info = os.stat(path)
        except OSError:
            continue
        found |= {info.st_uid, info.st_gid}
    return found


def create(
    protected: Iterable[str | Path | None], within: Path, claims: Path | None = None
) -> PrUser:
    """The PR user: a uid and gid that are neither 0 nor those of any protected path (the
    workspace, the file-command files), that no live process has and that no other action
    holds (its lock in `claims`, by default `claims_folder()`), with its scratch folder in
    `within`, a folder of root's that the PR user may enter and not change (so the scratch
    folder cannot be renamed and a link put in its place). Where switching is not
    possible, the action's own user, with `gap` saying why."""
    gap = _cannot_switch()
    if gap is not None:
        scratch = Path(tempfile.mkdtemp(prefix="pr-", dir=within))
        for sub in ("home", "tmp", "cache"):
            (scratch / sub).mkdir(mode=0o700)
        folder = Held(open_folder(scratch, PurePath()))
        return PrUser(uid=os.getuid(), gid=os.getgid(), scratch=scratch, gap=gap, folder=folder)
    taken = owners(protected) | {0}
    uid, claim = _claim_uid(taken, claims or claims_folder())
    try:
        killer, killer_claim = _claim_uid(taken | {uid}, claims or claims_folder())
    except BaseException:
        claim.release()
        raise
    try:
        scratch = Path(tempfile.mkdtemp(prefix="pr-", dir=within))
        for sub in ("home", "tmp", "cache"):
            (scratch / sub).mkdir()
        for path in (scratch, *scratch.iterdir()):
            os.chown(path, uid, uid)
            path.chmod(0o700)
        folder = Held(open_folder(scratch, PurePath()))  # before any of the PR's code runs
    except BaseException:
        claim.release()
        killer_claim.release()
        raise
    limit_processes()
    return PrUser(
        uid=uid,
        gid=uid,
        scratch=scratch,
        claim=claim,
        folder=folder,
        killer=killer,
        killer_claim=killer_claim,
    )


def limit_processes() -> None:
    """Lower this process's RLIMIT_NPROC (soft and hard) to MAX_PROCESSES, for every child
    it starts from now on. The kernel counts a limit against the real uid of the process
    that forks, and never holds root to it: root's stages go on as before, while the PR's
    user, whose processes are started from here and inherit it, can neither pass it nor
    raise it (only root may raise a hard limit). A uid switched to by a start (Popen's
    `user`) that already has that many processes cannot run a program at all."""
    soft, hard = (
        MAX_PROCESSES if now == resource.RLIM_INFINITY else min(now, MAX_PROCESSES)
        for now in resource.getrlimit(resource.RLIMIT_NPROC)
    )
    resource.setrlimit(resource.RLIMIT_NPROC, (soft, hard))


# The machine's folders anyone may write (and the temporary folder): what a stage's user
# left there goes when the stage ends, so that nothing of the PR's waits there for a later
# stage (a `.env` or config that main's code, walking up from its folder, would read)
SHARED_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock", "/dev/mqueue")


def shared_folders() -> list[str]:
    return list(dict.fromkeys([*SHARED_FOLDERS, tempfile.gettempdir()]))


def remove_left_in(uid: int, folders: Iterable[str]) -> int:
    """Remove every entry owned by `uid` at the top of each folder (files, links never
    followed, folders with all below them, by descriptor); how many."""
    removed = 0
    for folder in folders:
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue  # absent, or a link: not a shared folder of this machine's
        try:
            for name in os.listdir(fd):
                with contextlib.suppress(OSError):
                    if os.stat(name, dir_fd=fd, follow_symlinks=False).st_uid == uid:
                        remove_entry(fd, name)
                        removed += 1
        finally:
            os.close(fd)
    return removed


def claims_folder() -> Path:
    """Where the uid claims live: in /run (root's alone) where the action may write there,
    else in the temporary folder, where `_open_claims` refuses a folder another user made."""
    run = Path("/run")
    base = run if run.is_dir() and os.access(run, os.W_OK) else Path(tempfile.gettempdir())
    return base / CLAIMS


def _claim_uid(taken: set[int], folder: Path) -> tuple[int, Held]:
    """The first free uid from FIRST_UID, claimed: locked first, so that two actions
    starting at once never both pass the check for live processes."""
    folder_fd = _open_claims(folder)
    try:
        for uid in range(FIRST_UID, LAST_UID + 1):
            if uid in taken:
                continue
            claim = _lock(folder, folder_fd, uid)
            if claim is None:
                continue  # another live action's PR user
            if processes_of(uid):
                claim.release()  # someone's processes: a crashed action's, or a user's
                continue
            return uid, claim
    finally:
        os.close(folder_fd)
    raise InfrastructureError(
        f"no uid from {FIRST_UID} to {LAST_UID} is free for the pull request's user: each "
        f"owns a protected path, has processes, or is held by another action ({folder})"
    )


def _open_claims(folder: Path) -> int:
    """The claims folder, opened (made root's, 0700, when absent). One that is a link, not
    a folder, not root's, or writable by group or others is refused: the PR's code, another
    user on this machine, may have planted it to redirect root's writes or hold every uid."""
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass  # checked below, as it is opened
    except OSError as err:
        raise InfrastructureError(
            f"{folder}: cannot make the folder of the PR users' uid claims ({err.strerror})"
        ) from None
    refused = f"{folder}: refusing it as the folder of the PR users' uid claims"
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as err:
        why = "a symbolic link" if os.path.islink(folder) else err.strerror
        raise InfrastructureError(f"{refused}: {why}; remove it (docs/security.md)") from None
    info = os.fstat(fd)
    why = None
    if info.st_uid != 0:
        why = f"owned by uid {info.st_uid}, not root"
    elif info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        why = f"writable by group or others (mode {stat.S_IMODE(info.st_mode):o})"
    if why is not None:
        os.close(fd)
        raise InfrastructureError(f"{refused}: {why}; remove it (docs/security.md)")
    return fd


def _lock(folder: Path, folder_fd: int, uid: int) -> Held | None:
    """The claim on `uid`, or None when another open lock file holds it. The file is never
    truncated or followed through a link."""
    name = f"{uid}.lock"
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, 0o600, dir_fd=folder_fd)
    except OSError as err:
        raise InfrastructureError(
            f"{folder / name}: cannot open the PR user's uid claim ({err.strerror})"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return Held(fd)


def _cannot_switch() -> str | None:
    if os.geteuid() != 0:
        return NOT_ROOT
    for path in (Path(sys.executable).resolve(), *_interpreter_folders()):
        if not open_to_others(path):
            return (
                f"{path} cannot be read by another user, so the pull request's code cannot "
                "run as a user of its own: it runs as the action's user (see docs/security.md)"
            )
    return None


def _interpreter_folders() -> list[Path]:
    """Where the tool's interpreter reads its code from: the standard library, the tool."""
    paths = sysconfig.get_paths()
    return [Path(paths["stdlib"]), Path(paths["purelib"]), Path(__file__).resolve().parent]


def open_to_others(path: Path) -> bool:
    """Whether a user with no relation to the owners can read `path` (and reach it)."""
    try:
        if not os.stat(path).st_mode & stat.S_IROTH:
            return False
        return all(os.stat(folder).st_mode & stat.S_IXOTH for folder in path.parents)
    except OSError:
        return False


def kept_credentials(workspace: Path) -> list[str]:
    """What a checkout step left that the PR's code could read: a token in the workspace's
    git config (actions/checkout with persist-credentials, the default)."""
    config = workspace / ".git" / "config"
    try:
        text = read_bytes(config, str(config)).decode("utf-8", "replace")
    except InputError:
        return []
    if "extraheader" not in text.lower() and "includeif" not in text.lower():
        return []
    return [
        f"{config} keeps a checkout credential that the agent can read: set "
        "`persist-credentials: false` on actions/checkout (docs/security.md)"
    ]
