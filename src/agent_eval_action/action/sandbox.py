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

Switching user needs root (as container actions run). Where the action is not root
(rootless runners, Podman, ARC without CAP_SETUID), PR code runs as the action's own user:
`isolation_warning` says so once, in the log and in the report.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..runners.reaper import Proc, kill, processes, real_uid

# Far above the uids of a runner's accounts (GitHub's runner user is 1001) and below the
# overflow uid 65534 ("nobody"), which other software uses.
FIRST_UID = 60001
NAME = "agent-eval-pr"

NOT_ROOT = (
    "the action does not run as root, so the pull request's code cannot run as a user of its "
    "own: it runs as the action's user, and could read the action's environment (which holds "
    "the GitHub token); see docs/security.md"
)


@dataclass(frozen=True)
class PrUser:
    uid: int
    gid: int
    scratch: Path  # 0700, owned by the PR user: its HOME, TMPDIR, caches, and the traces
    gap: str | None = None  # why the PR's code runs as the action's own user, if it does

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
        """SIGKILL every process of this user (daemons included), until none is left."""
        if not self.switched:
            return 0  # they share the action's uid: nothing tells them apart
        killed = 0
        for _ in range(50):
            procs = processes_of(self.uid)
            if not procs:
                return killed
            killed += kill(procs)
            time.sleep(0.02)
            reap()
        return killed

    def remove(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)


def processes_of(uid: int) -> list[Proc]:
    """The live processes whose real uid is `uid` (zombies are already dead)."""
    return [p for p in processes().values() if not p.zombie and real_uid(p.pid) == uid]


def reap() -> None:
    """Collect exited children. As PID 1 of its container, the action inherits the orphans
    it kills (daemons of the PR's), and must collect them, as init does."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


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


def create(protected: Iterable[str | Path | None]) -> PrUser:
    """The PR user: a uid and gid that are neither 0 nor those of any protected path (the
    workspace, the file-command files), with its scratch folder. Where switching is not
    possible, the action's own user, with `gap` saying why."""
    gap = _cannot_switch()
    if gap is not None:
        scratch = Path(tempfile.mkdtemp(prefix=f"{NAME}-"))
        for sub in ("home", "tmp", "cache"):
            (scratch / sub).mkdir(mode=0o700)
        return PrUser(uid=os.getuid(), gid=os.getgid(), scratch=scratch, gap=gap)
    taken = owners(protected) | {0}
    uid = FIRST_UID
    while uid in taken or processes_of(uid):
        uid += 1
    scratch = Path(tempfile.mkdtemp(prefix=f"{NAME}-"))
    for sub in ("home", "tmp", "cache"):
        (scratch / sub).mkdir()
    for path in (scratch, *scratch.iterdir()):
        os.chown(path, uid, uid)
        path.chmod(0o700)
    return PrUser(uid=uid, gid=uid, scratch=scratch)


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
        text = config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    if "extraheader" not in text.lower() and "includeif" not in text.lower():
        return []
    return [
        f"{config} keeps a checkout credential that the agent can read: set "
        "`persist-credentials: false` on actions/checkout (docs/security.md)"
    ]
