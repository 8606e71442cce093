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
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from ..errors import EXIT_INFRASTRUCTURE, EXIT_PASS, InputError
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

    def call(self, argv: Sequence[str], env: dict[str, str], *, after_cancel: bool = False) -> int:
        """Run a child to its end. Once cancelled, only an `after_cancel` child still starts
        (one that saves what a cancelled run finished)."""
        if self.cancelled and not after_cancel:
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
    traces: Path,
    baseline: Path | None,
    history: Sequence[Path] = (),
    *,
    gate: bool = True,
) -> tuple[list[str], list[str]]:
    """The command lines of the two stages for these settings: `run-cases` (the agent, and
    nothing else) and `score` (the judge, the scores, the gate). With a baseline, `score`
    reuses its judge verdicts and compares as the action will (its exit code tells a
    Gemini outage apart from a failed gate); the action compares again with what only it
    knows (the accept label). `gate=False` (recording a baseline): the previous baseline
    only lends its verdicts and durations, and nothing fails on it."""
    shared = [*settings.evals]
    shared += ["--num-runs", str(settings.num_runs), "--concurrency", str(settings.concurrency)]
    shared += ["--timeout", repr(settings.timeout)]
    if settings.config:
        shared += ["--config", settings.config]
    if settings.trajectory_policy:
        shared += ["--trajectory-policy", settings.trajectory_policy]
    if settings.shard:
        shared += ["--shard", f"{settings.shard[0]}/{settings.shard[1]}"]
    if baseline is not None:
        shared += ["--baseline", str(baseline)]  # the shards' split, the judge's verdicts
    run_cases = ["run-cases", *shared, *agent_arguments(settings), "--traces", str(traces)]
    score = ["score", *shared, "--traces", str(traces), "--out", str(results)]
    if settings.judge_model:
        score += ["--judge-model", settings.judge_model]
    score += ["--fail-on", ",".join(settings.fail_on) if gate else "never"]
    for axis, value in settings.min_delta:
        score += ["--min-delta", f"{axis}={value!r}" if axis else repr(value)]
    if baseline is not None and history:
        score += ["--history", *map(str, history)]
    return run_cases, score


def run_evals(
    settings: Settings,
    children: Children,
    out_dir: Path,
    baseline: Path | None,
    history: Sequence[Path] = (),
    *,
    gate: bool = True,
) -> RunOutcome:
    """Run the eval suite as two children, the agent stage then the score stage, each with
    a scrubbed environment; the Results land in out_dir. The traces between them stay in
    a scratch folder, not in out_dir (which is uploaded)."""
    results = out_dir / "results.json"
    with tempfile.TemporaryDirectory(prefix="agent-eval-") as scratch:
        traces = Path(scratch) / "traces.jsonl"
        run_cases, score = run_arguments(settings, results, traces, baseline, history, gate=gate)
        code = children.call(_module(run_cases), child_environment())
        if code not in (EXIT_PASS, EXIT_INFRASTRUCTURE) or not traces.exists():
            return RunOutcome(code=code, results_path=results)
        # after a cancellation too: the score stage turns what finished into partial Results
        code = children.call(_module(score), child_environment(), after_cancel=True)
    return RunOutcome(code=code, results_path=results)


def _module(arguments: list[str]) -> list[str]:
    return [sys.executable, "-m", "agent_eval_action", *arguments]
