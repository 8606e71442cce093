"""The container's init, when this tool is its PID 1 (the image's ENTRYPOINT; docs/security.md,
"What PID 1 does").

PID 1 inherits every orphan of its namespace: what the PR's code detached, once killed,
stays a zombie until PID 1 collects it. Collecting them from the tool's own process would
take exit statuses away from the `subprocess` children it waits on (a `waitpid(-1)` does
not ask whose child exited). So PID 1 splits in two, as tini does: the tool runs in a child
of its own, started before anything else (no thread yet, nothing imported that a fork
could leave half-held), and PID 1 does only init's work: it sends the tool every
termination signal it gets (`FORWARDED`), collects every child that ends, and, once the
tool has ended, exits with the tool's exit code. A tool killed by a signal (the kernel's
out-of-memory killer) is no verdict: exit 3, said in one line.

When PID 1 exits, the kernel kills whatever is left in its namespace.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

from .errors import EXIT_INFRASTRUCTURE

# What a runner sends to stop a job (SIGTERM, SIGINT) or a terminal that went away (SIGHUP):
# passed on to the tool, which decides (action/children.py Children.install)
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
WATCHED = (*FORWARDED, signal.SIGCHLD)


def become_init() -> None:
    """Return at once unless this process is PID 1; as PID 1, `split`."""
    if os.getpid() == 1:
        split()


def split() -> None:
    """Fork: the child returns (and runs the tool); this process stays init (`supervise`)
    and never returns. (Tests split a child subreaper, init of its own descendants.)"""
    # blocked before the fork: no signal is lost between it and the first wait
    old = signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED)
    tool = os.fork()
    if tool == 0:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        return
    os._exit(supervise(tool))


def supervise(tool: int) -> int:
    """Init's loop, with WATCHED blocked: pass each FORWARDED signal on to `tool`, collect
    every child that ends; the tool's exit code once it has ended."""
    while True:
        got = signal.sigwaitinfo(WATCHED)
        if got.si_signo != signal.SIGCHLD:
            with contextlib.suppress(ProcessLookupError):  # ending: its SIGCHLD comes next
                os.kill(tool, got.si_signo)
            continue
        status = collect(tool)
        if status is not None:
            return exit_code(status)


def collect(tool: int) -> int | None:
    """Collect every child that has ended (signals of one kind do not queue: one SIGCHLD
    may stand for many); the tool's wait status when it was among them."""
    found = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return found
        if pid == 0:
            return found
        if pid == tool:
            found = status


def exit_code(status: int) -> int:
    """The tool's exit code; a tool killed by a signal is no verdict (exit 3), said."""
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        return code
    name = signal.Signals(-code).name
    print(f"error: the tool was killed by {name}: no verdict", file=sys.stderr, flush=True)
    return EXIT_INFRASTRUCTURE
