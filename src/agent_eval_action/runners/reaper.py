"""What the agent leaves running is killed when its case-run ends (docs/security.md).

While `reaping()` is on, the process is a child subreaper (Linux, `PR_SET_CHILD_SUBREAPER`):
a process of the agent's that detaches (a double fork, `setsid cmd &`, `nohup`) comes back
to it as a child once its parent exits, instead of going to PID 1. Its children are then of
two kinds: those it started itself (the `--command` workers; an in-process agent's MCP
servers and helpers, recorded as Python starts them, see `_Spawns`) and adopted ones, which
detached from something the agent started. An adopted process is killed, with everything
below it, when a case-run ends.

Which case-run an adopted process belongs to is told by a mark: the variable `SCOPE_ENV`,
which each scope's processes carry in their environment and pass on to what they start (a
`--command` worker gets its own; an in-process case-run's mark is added to every process
Python starts while it runs). Closing or sweeping a scope kills every adopted process
except those carrying the mark of another open scope: a process that cleared its
environment, or whose scope is closed, goes at the next sweep of any scope.

When `reaping()` ends (the end of the agent stage), the adopted processes and every process
started while it was on that still runs are killed. Nothing here is a barrier against the
agent's own code: in-process code can unset the subreaper flag, and any process of the
agent's can kill the one that reaps. The action's kill by uid when the stage ends
(action/sandbox.py) is the guarantee; this is what makes each case-run end clean.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import os
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

try:
    import _posixsubprocess
except ImportError:  # Windows: nothing to hook, and no subreaper either
    _posixsubprocess = None  # type: ignore[assignment]

SCOPE_ENV = "AGENT_EVAL_SCOPE"
PR_SET_CHILD_SUBREAPER = 36
# Rounds of a sweep: each kills what it finds, then looks again (a process may fork while
# it is being killed; its children come back to us when it dies).
SWEEP_ROUNDS = 50
ROUND_PAUSE_S = 0.01
ENVIRON_BYTES = 1 << 20  # of /proc/<pid>/environ read to find the mark
STATUS_BYTES = 1 << 16  # of /proc/<pid>/status (a few KiB) read to find its real uid


@dataclass(frozen=True)
class Proc:
    """One process as /proc/<pid>/stat shows it."""

    pid: int
    ppid: int
    state: str  # "R", "S", "Z", ...
    started: int  # clock ticks after boot: with the pid, names the process even after reuse

    @property
    def zombie(self) -> bool:
        return self.state in ("Z", "X")


def processes() -> dict[int, Proc]:
    """Every process in /proc, by pid ({} where there is no /proc)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return {}
    found: dict[int, Proc] = {}
    for name in names:
        if name.isdigit() and (proc := read_proc(int(name))) is not None:
            found[proc.pid] = proc
    return found


def _proc_file(pid: int, name: str, limit: int) -> bytes | None:
    """Up to `limit` bytes of the process's file /proc/<pid>/<name>, or None once it is gone
    (or the file cannot be read). One read: a sweep reads every process, and the kernel
    gives these files whole to one read that has room for them."""
    try:
        handle = os.open(f"/proc/{pid}/{name}", os.O_RDONLY | os.O_CLOEXEC)
        try:
            return os.read(handle, limit)
        finally:
            os.close(handle)
    except OSError:
        return None


def read_proc(pid: int) -> Proc | None:
    """The process `pid`, or None once it is gone."""
    stat = _proc_file(pid, "stat", 4096)
    if stat is None:
        return None
    # the name in parentheses may hold anything, parentheses and spaces included
    fields = stat.rsplit(b")", 1)[-1].split()
    if len(fields) < 20:
        return None
    return Proc(pid, int(fields[1]), fields[0].decode(), int(fields[19]))


def real_uid(pid: int) -> int | None:
    """The process's real uid (from its status: the owner of /proc/<pid> is not it for a
    process that made itself undumpable)."""
    status = _proc_file(pid, "status", STATUS_BYTES)
    if status is None:
        return None
    lines = status.decode(errors="replace").splitlines()
    uid = next((line.split()[1] for line in lines if line.startswith("Uid:")), "")
    return int(uid) if uid.isdigit() else None


def kill(targets: Iterable[Proc]) -> int:
    """SIGKILL each process that is still the one seen (a reused pid is left alone); how
    many were signalled."""
    killed = 0
    for proc in targets:
        try:
            handle = os.pidfd_open(proc.pid)
        except ProcessLookupError:
            continue
        except (AttributeError, OSError):  # no pidfd (an old kernel): check, then kill
            handle = None
        try:
            now = read_proc(proc.pid)
            if now is None or now.started != proc.started:
                continue
            if handle is None:
                os.kill(proc.pid, signal.SIGKILL)
            else:
                signal.pidfd_send_signal(handle, signal.SIGKILL)
            killed += 1
        except (ProcessLookupError, PermissionError):
            continue
        finally:
            if handle is not None:
                os.close(handle)
    return killed


def below(roots: Iterable[Proc], table: Mapping[int, Proc]) -> list[Proc]:
    """The roots and all their descendants in `table`."""
    children: dict[int, list[Proc]] = {}
    for proc in table.values():
        children.setdefault(proc.ppid, []).append(proc)
    found, todo, seen = [], list(roots), set()
    while todo:
        proc = todo.pop()
        if proc.pid in seen:
            continue
        seen.add(proc.pid)
        found.append(proc)
        todo.extend(children.get(proc.pid, ()))
    return found


def mark_of(pid: int) -> str | None:
    """The scope mark in the process's environment (as it was at its exec), if readable."""
    environ = _proc_file(pid, "environ", ENVIRON_BYTES)
    if environ is None:
        return None
    prefix = SCOPE_ENV.encode() + b"="
    for item in environ.split(b"\0"):
        if item.startswith(prefix):
            return item[len(prefix) :].decode(errors="replace")
    return None


def set_subreaper(on: bool) -> bool:
    """Make this process a child subreaper (or stop); False where that is not possible."""
    from ..launch import prctl

    return prctl(PR_SET_CHILD_SUBREAPER, int(on))


class Reaper:
    """The scopes of one agent stage, and the sweeps that kill what they leave behind."""

    def __init__(self, spawns: _Spawns | None = None) -> None:
        self._spawns = spawns  # None: not reaping, every sweep is a no-op
        self._open: set[str] = set()

    @property
    def active(self) -> bool:
        return self._spawns is not None

    def open(self) -> str:
        """A new scope's mark; its processes carry it as SCOPE_ENV."""
        mark = secrets.token_hex(8)
        self._open.add(mark)
        return mark

    def close(self, mark: str) -> int:
        """The scope has ended: kill what it left (and what nobody's open scope claims)."""
        self._open.discard(mark)
        return self.sweep(mark)

    def sweep(self, mark: str | None = None) -> int:
        """Kill every adopted process (and what it started) that carries `mark`, or no
        open scope's mark at all; `None` kills every adopted process. Returns how many."""
        if self._spawns is None:
            return 0
        spawns = self._spawns
        return _sweep(spawns, lambda proc: spawns.adopted(proc) and self._claims(proc, mark))

    def _claims(self, proc: Proc, mark: str | None) -> bool:
        if mark is None:
            return True
        found = mark_of(proc.pid)
        return found == mark or found not in self._open

    @contextlib.contextmanager
    def case(self) -> Iterator[str]:
        """An in-process case-run's scope: every process Python starts in this context
        carries its mark. What it leaves is killed on the way out."""
        mark = self.open()
        token = _CASE_MARK.set(mark)
        try:
            yield mark
        finally:
            _CASE_MARK.reset(token)
            self.close(mark)

    def finish(self) -> int:
        """The end of the stage: kill every adopted process and every process started
        while reaping that still runs."""
        if self._spawns is None:
            return 0
        spawns = self._spawns
        return _sweep(spawns, lambda proc: spawns.adopted(proc) or spawns.started(proc))


def _sweep(spawns: _Spawns, doomed: Callable[[Proc], bool]) -> int:
    """Rounds of: kill our doomed children with everything below them, collect adopted
    children that have exited; until no doomed child is left."""
    me, killed = os.getpid(), 0
    for _ in range(SWEEP_ROUNDS):
        with _SPAWNING:  # a child being started now is not yet known: wait for it
            table = processes()
            ours = [proc for proc in table.values() if proc.ppid == me]
            roots = [proc for proc in ours if not proc.zombie and doomed(proc)]
            killed += kill(proc for proc in below(roots, table) if not proc.zombie)
        # an adopted child that has exited is ours to collect (those we started, their owners')
        for proc in ours:
            if proc.zombie and spawns.adopted(proc):
                _collect(proc.pid)
        if not roots:
            return killed
        time.sleep(ROUND_PAUSE_S)
    return killed


def _collect(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


# --- the processes Python starts while reaping ---------------------------------------------

_CASE_MARK: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "agent_eval_case_mark", default=None
)
# Held while a child is started and recorded, and while a sweep looks. Reentrant: Popen may
# call two of the hooked functions; a forked child releases its copy as the hook returns.
_SPAWNING = threading.RLock()
_INSTALLED: _Spawns | None = None
_CURRENT = Reaper()


class _Spawns:
    """The children this process started itself, known by pid and start time: the ones
    it had when reaping began, and every one Python starts while reaping (subprocess,
    asyncio and multiprocessing through `_posixsubprocess.fork_exec`; `os.fork`,
    `os.posix_spawn[p]`). A child that is none of them was adopted."""

    def __init__(self) -> None:
        me = os.getpid()
        # zombies included: their owners will collect them
        self._before = {(p.pid, p.started) for p in processes().values() if p.ppid == me}
        self._since: set[tuple[int, int]] = set()

    def record(self, pid: int) -> None:
        proc = read_proc(pid)
        if proc is not None:
            self._since.add((proc.pid, proc.started))

    def adopted(self, proc: Proc) -> bool:
        key = (proc.pid, proc.started)
        return key not in self._before and key not in self._since

    def started(self, proc: Proc) -> bool:
        return (proc.pid, proc.started) in self._since


def _recording(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def start(*args: Any, **kwargs: Any) -> Any:
        with _SPAWNING:
            pid = original(*args, **kwargs)
            if isinstance(pid, int) and pid > 0 and _INSTALLED is not None:
                _INSTALLED.record(pid)
        return pid

    return start


_POPEN_INIT = subprocess.Popen.__init__
_POPEN_SIGNATURE = inspect.signature(_POPEN_INIT)


def _popen_init(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
    """Popen, with the running case-run's mark added to the child's environment (unless
    the environment given has one)."""
    mark = _CASE_MARK.get()
    if mark is not None:
        bound = _POPEN_SIGNATURE.bind(self, *args, **kwargs)
        env = bound.arguments.get("env")
        base: Mapping[Any, Any] = os.environ if env is None else env
        key: str | bytes = SCOPE_ENV
        if any(isinstance(name, bytes) for name in base):
            key, mark = SCOPE_ENV.encode(), mark.encode()  # type: ignore[assignment]
        bound.arguments["env"] = {key: mark, **base}  # a mark given explicitly stays
        args, kwargs = bound.args[1:], bound.kwargs
    _POPEN_INIT(self, *args, **kwargs)


_HOOKS: tuple[tuple[Any, str], ...] = (
    (_posixsubprocess, "fork_exec"),
    (subprocess, "_fork_exec"),  # subprocess's own reference to it (Python 3.11 and later)
    (os, "fork"),
    (os, "posix_spawn"),
    (os, "posix_spawnp"),
)


def current() -> Reaper:
    """The reaper of the running agent stage (one that does nothing when none runs)."""
    return _CURRENT


@contextlib.contextmanager
def reaping() -> Iterator[Reaper]:
    """Reap for the duration: become a child subreaper, know the children we start, and on
    the way out kill every process started or adopted meanwhile. Nested uses share the
    outer one. Off Linux (no subreaper, no /proc) the reaper does nothing."""
    global _CURRENT, _INSTALLED
    if _INSTALLED is not None or not set_subreaper(True):
        yield _CURRENT
        return
    originals = [
        (owner, name, getattr(owner, name)) for owner, name in _HOOKS if hasattr(owner, name)
    ]
    spawns = _INSTALLED = _Spawns()
    _CURRENT = Reaper(spawns)
    for owner, name, original in originals:
        setattr(owner, name, _recording(original))
    subprocess.Popen.__init__ = _popen_init  # type: ignore[method-assign]
    try:
        yield _CURRENT
    finally:
        try:
            _CURRENT.finish()
        finally:
            subprocess.Popen.__init__ = _POPEN_INIT  # type: ignore[method-assign]
            for owner, name, original in originals:
                setattr(owner, name, original)
            _INSTALLED, _CURRENT = None, Reaper()
            set_subreaper(False)
