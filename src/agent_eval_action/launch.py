"""Every process the tool starts, started here, by kind (docs/security.md).

- `Kind.TOOL`: this tool's own code in a child interpreter. Isolated (`-I`): neither the
  current folder (the checkout, where a PR may commit a folder named like this package),
  nor `PYTHONPATH`, nor any other `PYTHON*` variable, nor the user's site-packages under
  `HOME` decide what it imports; `-u` because it does not read `PYTHONUNBUFFERED` either.
  A stage that runs the PR's agent is given the agent's paths explicitly
  (`AGENT_PATH_ENV`), which it adds to `sys.path` after its own imports.
- `Kind.PYTHON`: a module of the interpreter's own (venv, pip), isolated the same way.
- `Kind.EXTERNAL`: a program of the image (git), with the environment its caller builds.
- `Kind.PR`: the PR's own programs (a `--command` agent, a virtualenv's pip).
- `Kind.KILL`: a fork of this process that takes a user's uid (as its effective uid only)
  and, without running anything else, sends SIGKILL to every process of that user
  (`kill_all_of`).

Each start is announced as the audit event `LAUNCH_EVENT` (kind, argv, uid or None), just
before the interpreter's own `subprocess.Popen` event, so that a test's audit hook can tell
a start made here from any other.
"""

from __future__ import annotations

import ctypes
import enum
import os
import re
import signal
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

PACKAGE = "agent_eval_action"
LAUNCH_EVENT = "agent_eval_action.launch"
# os.pathsep-separated folders a stage that runs the agent in process puts first on sys.path,
# once its own modules are imported: the agent's requirements, the workflow's PYTHONPATH
AGENT_PATH_ENV = "AGENT_EVAL_AGENT_PATH"
# interpreter options of every Python child: isolated mode, unbuffered output
ISOLATED = ("-I", "-u")


class Kind(enum.Enum):
    TOOL = "tool"
    PYTHON = "python"
    EXTERNAL = "external"
    PR = "pr"
    KILL = "kill"  # a fork that takes a user's uid and kills all of that user's processes


def tool(*arguments: str) -> list[str]:
    """The command line of this tool's `arguments` in an isolated child interpreter."""
    return [sys.executable, *ISOLATED, "-m", PACKAGE, *arguments]


def python_module(module: str, *arguments: str) -> list[str]:
    """The command line of one of the interpreter's modules (venv, pip), isolated."""
    return [sys.executable, *ISOLATED, "-m", module, *arguments]


def popen(kind: Kind, argv: Sequence[str], **options: Any) -> subprocess.Popen[bytes]:
    """Start `argv` (of `kind`), announced; `options` as subprocess.Popen takes them."""
    announce(kind, argv, options.get("user"))
    return subprocess.Popen(list(argv), **options)


def run(kind: Kind, argv: Sequence[str], **options: Any) -> subprocess.CompletedProcess[Any]:
    """Run `argv` (of `kind`) to its end, announced; `options` as subprocess.run takes them."""
    announce(kind, argv, options.get("user"))
    return subprocess.run(list(argv), **options)


def announce(kind: Kind, argv: Sequence[str], user: int | None = None) -> None:
    """Say a start is coming (for a start that asyncio or a library makes: the audit hook
    then matches its Popen event with this)."""
    sys.audit(LAUNCH_EVENT, kind.value, tuple(argv), user)


def agent_path(*first: str, moved: tuple[str, str] | None = None) -> str:
    """The value of AGENT_PATH_ENV for an agent stage: the folders `first`, then this
    process's PYTHONPATH (the workflow's or the user's), each made absolute; with `moved`
    (FROM, TO), a folder at or below FROM is taken at the same place below TO (main's code,
    in its worktree, gets main's folders, never the PR's checkout: `moved_folders`)."""
    given = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join([*first, *moved_folders(given, moved).split(os.pathsep)]).strip(
        os.pathsep
    )


def moved_folders(value: str, moved: tuple[str, str] | None) -> str:
    """A list of folders (PATH, PYTHONPATH), each made absolute; with `moved` (FROM, TO),
    one at or below FROM, by any of its names (`spellings`, a leading `//` too) or by its
    physical path, is taken at the same place below TO."""
    folders = [os.path.abspath(p) for p in value.split(os.pathsep) if p]
    if moved is None:
        return os.pathsep.join(folders)
    old, new = moved
    names = [*spellings(old)]
    real = os.path.realpath(old)
    made = []
    for folder in folders:
        plain = "/" + folder.lstrip("/")  # POSIX keeps a leading "//": the same folder
        name = next((n for n in names if _below(plain, n)), None)
        if name is not None:
            folder = os.path.join(new, os.path.relpath(plain, name))
        elif _below(os.path.realpath(folder), real):
            folder = os.path.join(new, os.path.relpath(os.path.realpath(folder), real))
        made.append(folder)
    return os.pathsep.join(made)


def moved_paths(value: str, old: Sequence[str], new: str) -> str:
    """`value` (any text: a variable, a command line) with every absolute path that begins
    a word and is at or below one of the spellings `old` of a folder (however many slashes
    lead it) written at the same place below `new`: main's code on the merge-base runs and
    reads nothing of the checkout's by a name the workflow gave."""
    names = sorted({o.strip("/") for o in old if o.strip("/")}, key=len, reverse=True)
    if not names:
        return value
    pattern = "|".join(re.escape(name) for name in names)
    found = re.compile(rf"(?<![\w.~/-])(/+)(?:{pattern})(?=$|/|[^\w.~-])")
    return found.sub(lambda m: m.group(1) + new.lstrip("/"), value)


def spellings(folder: str) -> list[str]:
    """The names a folder goes by here: as given, its physical path, and GITHUB_WORKSPACE
    and the current folder when they are the same folder by another name."""
    real = os.path.realpath(folder)
    names = [os.path.normpath(folder), real]
    for other in (os.environ.get("GITHUB_WORKSPACE"), os.getcwd()):
        if other and os.path.realpath(other) == real:
            names.append(os.path.normpath(other))
    return names


def _below(path: str, folder: str) -> bool:
    return os.path.commonpath([path, folder]) == folder


PR_SET_DUMPABLE = 4  # prctl(2): 0 keeps processes of the same uid from reading this one


def prctl(option: int, value: int) -> bool:
    """Linux's prctl(option, value); False where there is none or it failed."""
    if sys.platform != "linux":
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(option, value, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def not_dumpable() -> bool:
    """Keep the PR's other processes out of this one (the agent stage, which holds the
    user-turn relay's pipes): not dumpable, a process of the same uid may not ptrace it, read
    its memory or take its file descriptors (`pidfd_getfd`), as a `--command` worker of the
    PR's could otherwise do to its parent. Children that `exec` are dumpable again: their own
    business. In-process agent code runs in this process and could set it back; it then
    holds the pipes anyway, and serve-users answers it no more than the plan allows."""
    return prctl(PR_SET_DUMPABLE, 0)


def add_agent_paths() -> None:
    """Put the folders AGENT_PATH_ENV names first on sys.path (the agent stage, once the
    tool's own modules are imported): what PYTHONPATH would have done, had the stage read it."""
    folders = [f for f in os.environ.get(AGENT_PATH_ENV, "").split(os.pathsep) if f]
    sys.path[:0] = [f for f in folders if f not in sys.path]


def kill_all_of(uid: int, killer: int) -> bool:
    """SIGKILL every process whose uid is `uid`, from a fork of this process whose
    effective uid is `uid` and whose real and saved uids (and gids) are `killer`'s, a uid
    no process has: `kill(-1)` reaches every process its uids may signal (those of `uid`,
    by the effective uid), in one pass of the kernel's that no fork escapes, and no process
    of `uid` may signal it back (the kernel compares their uid with its real and saved
    ones), so none can stop or kill it first. Needs root. True when the fork did its kill."""
    announce(Kind.KILL, ("kill", "-KILL", "-1"), uid)
    pid = os.fork()
    if pid == 0:  # the child: system calls only, then out
        code = 1
        try:
            os.setgroups([])
            os.setresgid(killer, killer, killer)
            os.setresuid(killer, uid, killer)
            for _ in range(3):
                os.kill(-1, signal.SIGKILL)
            code = 0
        except ProcessLookupError:
            code = 0  # nobody was left to signal
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0
