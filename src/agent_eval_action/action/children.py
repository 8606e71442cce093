"""The action's child processes: started one at a time (launch.py), their output relayed
as text, termination signals forwarded, and the environment they get.

The children get a scrubbed environment (runners/environment.py): the GitHub token and the
Actions runtime tokens never reach a process that runs project code, and the in-process
ADK runner runs in a child, not in the action's own process that holds the token.

In its container the action is the child of PID 1 (init.py), which passes SIGTERM/SIGINT
on to it: `Children` forwards them to the running child (whose `run` writes partial
Results and exits 3) and makes the action itself stop at the next step (`Cancelled`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from .. import launch
from ..runners.environment import scrubbed_environment
from . import outputs
from .sandbox import PrUser


class Cancelled(Exception):
    """SIGTERM or SIGINT arrived: stop, keep what is written, exit 3."""


class Overran(Exception):
    """A child ran past its deadline: it was stopped (SIGTERM, then SIGKILL)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"it ran past its deadline of {seconds:.0f} s and was stopped")
        self.seconds = seconds


# how long a child stopped at its deadline has to write what it finished (SIGTERM), before
# SIGKILL
STOP_GRACE_S = 30.0


class Children:
    """Runs one child process at a time, relays its output, and forwards termination
    signals to it."""

    def __init__(self) -> None:
        self.current: subprocess.Popen[bytes] | None = None
        self.cancelled = False

    def install(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.cancelled = True
        child = self.current
        if child is not None and child.poll() is None:
            child.send_signal(signum)  # the child winds down and writes partial Results
            return
        raise Cancelled(signal.Signals(signum).name)

    def call(
        self,
        kind: launch.Kind,
        argv: Sequence[str],
        env: dict[str, str],
        *,
        user: PrUser | None = None,
        after_cancel: bool = False,
        tail: list[str] | None = None,
        pass_fds: Sequence[int] = (),
        stdin: int | None = None,
        deadline: float | None = None,
        cwd: Path | None = None,
    ) -> int:
        """Run a child (of `kind`: launch.py) to its end, as the PR user when `user` is
        given (then whatever it left running is killed once it exits). Its output is
        relayed to the log as text, never as workflow commands; `tail` keeps its last
        lines; `stdin` is a descriptor it reads (a plan), else nothing; `cwd` its current
        folder (default: this process's). A child still
        running `deadline` seconds after its start is stopped, and `Overran` raised once
        it is gone. Once cancelled, only an `after_cancel` child still starts (one that
        saves what a cancelled run finished)."""
        if self.cancelled and not after_cancel:
            raise Cancelled("cancelled before start")
        options: dict[str, Any] = {
            "env": env,
            "stdin": subprocess.DEVNULL if stdin is None else stdin,
            "stdout": subprocess.PIPE,
            "stderr": subprocess.STDOUT,
            "pass_fds": tuple(pass_fds),
            "cwd": cwd,
        }
        if user is not None and user.switched:
            options.update(
                user=user.uid,
                group=user.gid,
                extra_groups=[],  # none of root's groups (docker's among them)
                umask=0o077,
            )
        child = launch.popen(kind, argv, **options)
        self.current = child
        assert child.stdout is not None
        relay = outputs.Relay(child.stdout, tail)
        relay.start()
        ends = None if deadline is None else time.monotonic() + deadline
        overran = False
        try:
            while True:
                try:
                    left = None if ends is None else max(0.0, ends - time.monotonic())
                    code = child.wait(timeout=left)
                    break
                except Cancelled:  # raised by a second signal while we wait: keep waiting
                    continue
                except subprocess.TimeoutExpired:
                    overran, ends = True, None
                    code = _stop(child)
                    break
        finally:
            self.current = None
            if user is not None:
                user.kill_leftovers()  # daemons too: nothing of the PR's outlives its stage
            relay.finish()
        if overran:
            assert deadline is not None
            raise Overran(deadline)
        return code


def _stop(child: subprocess.Popen[bytes]) -> int:
    """SIGTERM (a stage writes what finished), then SIGKILL after STOP_GRACE_S."""
    child.send_signal(signal.SIGTERM)
    try:
        return child.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        child.kill()
        return child.wait()


# The runner's file commands: the step's outputs, job summary, environment and PATH for
# later steps. Only the action writes them; the PR's code has no business there.
FILE_COMMANDS = (
    "GITHUB_OUTPUT",
    "GITHUB_STEP_SUMMARY",
    "GITHUB_ENV",
    "GITHUB_PATH",
    "GITHUB_STATE",
)


def child_environment() -> dict[str, str]:
    env = scrubbed_environment(os.environ)
    for name in FILE_COMMANDS:
        env.pop(name, None)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env
