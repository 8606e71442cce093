"""Running the PR's code: the agent's requirements and the eval run, in child processes.

The children get a scrubbed environment (runners/environment.py): the GitHub token and the
Actions runtime tokens never reach a process that runs project code, and the in-process
ADK runner runs in the child, not in the action's own process that holds the token.

The action is PID 1 in its container, where SIGTERM has no default effect: `Children`
forwards SIGTERM/SIGINT to the running child (whose `run` writes partial Results and exits
3) and makes the action itself stop at the next step (`Cancelled`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from ..errors import InputError
from ..runners.environment import scrubbed_environment
from .settings import Settings


class Cancelled(Exception):
    """SIGTERM or SIGINT arrived: stop, keep what is written, exit 3."""


class Children:
    """Runs one child process at a time and forwards termination signals to it."""

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

    def call(self, argv: Sequence[str], env: dict[str, str]) -> int:
        if self.cancelled:
            raise Cancelled("cancelled before start")
        self.current = subprocess.Popen(list(argv), env=env)
        try:
            while True:
                try:
                    return self.current.wait()
                except Cancelled:  # raised by a second signal while we wait: keep waiting
                    continue
        finally:
            self.current = None


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


def install_requirements(settings: Settings, children: Children) -> None:
    """`pip install -r` the agent's requirements file, before anything runs."""
    if settings.requirements is None:
        return
    path = Path(settings.requirements)
    if not path.is_file():
        raise InputError("input requirements: no such file", file=path)
    print(f"installing the agent's requirements from {path}", flush=True)
    argv = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-r", str(path)]
    code = children.call(argv, child_environment())
    if children.cancelled:
        raise Cancelled("cancelled while installing requirements")
    if code != 0:
        raise InputError(f"input requirements: pip install -r failed (exit {code})", file=path)


@dataclass(frozen=True)
class RunOutcome:
    code: int  # the `run` command's exit code
    results_path: Path


def agent_arguments(settings: Settings) -> list[str]:
    match settings.require_agent():
        case "agent":
            return ["--agent", str(settings.agent)]
        case "command":
            return ["--command", str(settings.command)]
        case "adk-api":
            assert settings.adk_api is not None
            return ["--adk-api", settings.adk_api.url, "--adk-app", settings.adk_api.app]
        case _:
            return ["--adk-history", *(settings.adk_history or ())]


def run_arguments(
    settings: Settings,
    results: Path,
    baseline: Path | None,
    history: Sequence[Path] = (),
    *,
    gate: bool = True,
) -> list[str]:
    """The `agent-eval-action run` command line for these settings. With a baseline, `run`
    reuses its judge verdicts and case durations and compares as the action will (its exit
    code tells a Gemini outage apart from a failed gate); the action compares again with
    what only it knows (the accept label). `gate=False` (recording a baseline): the previous
    baseline only lends its verdicts and durations, and nothing fails on it."""
    argv = ["run", *settings.evals, *agent_arguments(settings)]
    argv += ["--num-runs", str(settings.num_runs), "--concurrency", str(settings.concurrency)]
    argv += ["--timeout", repr(settings.timeout), "--out", str(results)]
    if settings.config:
        argv += ["--config", settings.config]
    if settings.trajectory_policy:
        argv += ["--trajectory-policy", settings.trajectory_policy]
    if settings.judge_model:
        argv += ["--judge-model", settings.judge_model]
    if settings.shard:
        argv += ["--shard", f"{settings.shard[0]}/{settings.shard[1]}"]
    argv += ["--fail-on", ",".join(settings.fail_on) if gate else "never"]
    for axis, value in settings.min_delta:
        argv += ["--min-delta", f"{axis}={value!r}" if axis else repr(value)]
    if baseline is not None:
        argv += ["--baseline", str(baseline)]
        if history:
            argv += ["--history", *map(str, history)]
    return argv


def run_evals(
    settings: Settings,
    children: Children,
    out_dir: Path,
    baseline: Path | None,
    history: Sequence[Path] = (),
    *,
    gate: bool = True,
) -> RunOutcome:
    """Run the eval suite in a child `agent-eval-action run`; its Results land in out_dir."""
    results = out_dir / "results.json"
    arguments = run_arguments(settings, results, baseline, history, gate=gate)
    argv = [sys.executable, "-m", "agent_eval_action", *arguments]
    code = children.call(argv, child_environment())
    return RunOutcome(code=code, results_path=results)
