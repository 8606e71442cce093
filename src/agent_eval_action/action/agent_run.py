"""Running the PR's code: the agent's requirements and the eval run, in child processes.

The children get a scrubbed environment (runners/environment.py): the GitHub token and the
Actions runtime tokens never reach a process that runs project code, and the in-process
ADK runner runs in the child, not in the action's own process that holds the token.

The action is PID 1 in its container, where SIGTERM has no default effect: `Children`
forwards SIGTERM/SIGINT to the running child (whose `run` writes partial Results and exits
3) and makes the action itself stop at the next step (`Cancelled`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import FrameType

from ..compare.loading import load_results
from ..compare.model import Diff
from ..compare.record import MainRecord
from ..core import CaseKey
from ..errors import EXIT_GATE_FAILED, EXIT_INFRASTRUCTURE, EXIT_PASS, InputError
from ..metrics.judge.settings import JUDGE_KEY_ENV
from ..pipeline.confirm import rounds, sampling_rounds
from ..pipeline.paired import FILE_NAME, IN_A_SHARD, NO_ROUNDS, SKIPPED
from ..results import Results
from ..runners.environment import scrubbed_environment
from . import outputs
from .merge_base import MergeBaseRuns
from .sandbox import PrUser
from .settings import Settings


class Cancelled(Exception):
    """SIGTERM or SIGINT arrived: stop, keep what is written, exit 3."""


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
        argv: Sequence[str],
        env: dict[str, str],
        *,
        user: PrUser | None = None,
        after_cancel: bool = False,
        tail: list[str] | None = None,
        pass_fds: Sequence[int] = (),
    ) -> int:
        """Run a child to its end, as the PR user when `user` is given (then whatever it
        left running is killed once it exits). Its output is relayed to the log as text,
        never as workflow commands; `tail` keeps its last lines. Once cancelled, only an
        `after_cancel` child still starts (one that saves what a cancelled run finished)."""
        if self.cancelled and not after_cancel:
            raise Cancelled("cancelled before start")
        pipe, out = subprocess.PIPE, subprocess.STDOUT
        if user is not None and user.switched:
            child = subprocess.Popen(
                list(argv),
                env=env,
                stdout=pipe,
                stderr=out,
                user=user.uid,
                group=user.gid,
                extra_groups=[],  # none of root's groups (docker's among them)
                umask=0o077,
                pass_fds=tuple(pass_fds),
            )
        else:
            child = subprocess.Popen(
                list(argv), env=env, stdout=pipe, stderr=out, pass_fds=tuple(pass_fds)
            )
        self.current = child
        assert child.stdout is not None
        relay = outputs.Relay(child.stdout, tail)
        relay.start()
        try:
            while True:
                try:
                    code = child.wait()
                    break
                except Cancelled:  # raised by a second signal while we wait: keep waiting
                    continue
        finally:
            self.current = None
            if user is not None:
                user.kill_leftovers()  # daemons too: nothing of the PR's outlives its stage
            relay.finish()
        return code


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


def score_environment(settings: Settings) -> dict[str, str]:
    """The score stage's environment: the agents', plus the judge-only key (if given), which
    no process the PR's user runs ever holds."""
    env = child_environment()
    if settings.judge_api_key:
        env[JUDGE_KEY_ENV] = settings.judge_api_key
    return env


def install_requirements(settings: Settings, children: Children, user: PrUser) -> dict[str, str]:
    """Install the agent's requirements as the PR user, into its scratch folder, before
    anything runs; return what the agent stage's environment adds to find them.

    A `--command` agent gets a virtualenv of its own, with whatever pins it asks for (its
    `python` on PATH is the venv's). Any other agent runs in the tool's own interpreter, so
    its requirements go to a folder on PYTHONPATH, constrained to the versions the tool
    runs with (google-adk excepted): a pin that would replace one of the tool's own
    dependencies is bad input naming the package. A pyproject.toml installs its
    [project.dependencies]."""
    if settings.requirements is None:
        return {}
    path = Path(settings.requirements)
    if not path.is_file():
        raise InputError("input requirements: no such file", file=path)
    requirements = _requirements_file(path, user)
    env = user.environment(child_environment())
    outputs.say(f"installing the agent's requirements from {path} as the PR's user")
    tail: list[str] = []
    if settings.agent_input == "command":
        venv = user.scratch / "venv"
        code = children.call([sys.executable, "-m", "venv", str(venv)], env, user=user)
        if code == 0:
            pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-r", str(requirements)]
            code = children.call(pip, env, user=user, tail=tail)
        added = {
            "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
            "VIRTUAL_ENV": str(venv),
        }
    else:
        target, constraints = user.scratch / "site", _constraints(user)
        argv = [sys.executable, "-m", "pip", "install", "--target", str(target)]
        argv += ["--constraint", str(constraints), "-r", str(requirements)]
        code = children.call(argv, env, user=user, tail=tail)
        added = {"PYTHONPATH": str(target)}
    if children.cancelled:
        raise Cancelled("cancelled while installing requirements")
    if code != 0:
        raise InputError(f"input requirements: {_why_pip_failed(tail, code)}", file=path)
    return added


def _requirements_file(path: Path, user: PrUser) -> Path:
    """The requirements as a pip requirements file (a pyproject.toml's dependencies)."""
    if path.name != "pyproject.toml":
        return path.resolve()
    try:
        project = tomllib.loads(path.read_text(encoding="utf-8")).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise InputError(f"input requirements: cannot read it: {err}", file=path) from None
    dependencies = project.get("dependencies") if isinstance(project, dict) else None
    if not isinstance(dependencies, list) or not all(isinstance(d, str) for d in dependencies):
        raise InputError("input requirements: no [project] dependencies list", file=path)
    out = user.scratch / "requirements.txt"
    out.write_text("".join(f"{d}\n" for d in dependencies), encoding="utf-8")
    return out


def _constraints(user: PrUser) -> Path:
    """Every distribution the tool runs with, pinned, except google-adk (an agent may need
    another release of it)."""
    pins = sorted(
        {
            f"{d.metadata['Name']}=={d.version}"
            for d in metadata.distributions()
            if d.metadata["Name"] and d.metadata["Name"].lower().replace("_", "-") != "google-adk"
        }
    )
    out = user.scratch / "constraints.txt"
    out.write_text("".join(f"{pin}\n" for pin in pins), encoding="utf-8")
    return out


_CONFLICT = re.compile(r"The user requested \(constraint\) ([A-Za-z0-9_.\-]+)")


def _why_pip_failed(tail: list[str], code: int) -> str:
    """One line: which of the tool's own packages a pin conflicts with, else pip's error."""
    conflicts = sorted({m.group(1) for line in tail for m in [_CONFLICT.search(line)] if m})
    if conflicts:
        return (
            f"it pins {', '.join(conflicts)} to another version than the tool runs with "
            "(give the agent those versions, or run it as a --command agent with a venv of its own)"
        )
    errors = [line.strip() for line in tail if line.strip().startswith("ERROR:")]
    return f"pip install failed (exit {code}){': ' + errors[-1] if errors else ''}"


@dataclass(frozen=True)
class RunOutcome:
    code: int  # the score stage's exit code
    results_path: Path
    warnings: list[str] = field(default_factory=list)  # for the Results: what was cut short
    paired_note: str | None = None  # why paired runs on the merge-base were skipped or stopped
    merge_base: Path | None = None  # their Results (merge-base.json), when any ran


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
            return [arg for path in settings.adk_history or () for arg in ("--adk-history", path)]


def suite_arguments(settings: Settings, baseline: Path | None) -> list[str]:
    """What every stage is told of the suite: the eval paths, runs, limits, config, shard."""
    shared = [*settings.evals]
    shared += ["--num-runs", str(settings.num_runs), "--concurrency", str(settings.concurrency)]
    shared += ["--timeout", repr(settings.timeout)]
    if settings.config:
        shared += ["--config", settings.config]
    if settings.trajectory_policy:
        shared += ["--trajectory-policy", settings.trajectory_policy]
    if settings.initial_session:
        shared += ["--initial-session", settings.initial_session]
    if settings.strip_thoughts:
        shared += ["--strip-thoughts"]
    shared += [arg for name, most in settings.budgets for arg in ("--budget", f"{name}={most!r}")]
    if settings.shard:
        shared += ["--shard", f"{settings.shard[0]}/{settings.shard[1]}"]
    if baseline is not None:
        shared += ["--baseline", str(baseline)]  # the shards' split, the judge's verdicts
    return shared


def run_arguments(
    settings: Settings,
    results: Path,
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
    shared = suite_arguments(settings, baseline)
    run_cases = ["run-cases", *shared, *agent_arguments(settings)]
    score = ["score", *shared, "--out", str(results)]
    if settings.judge_model:
        score += ["--judge-model", settings.judge_model]
    score += ["--fail-on", ",".join(settings.fail_on) if gate else "never"]
    score += ["--confirm-runs", str(settings.confirm_runs)]
    for axis, value in settings.min_delta:
        score += ["--min-delta", f"{axis}={value!r}" if axis else repr(value)]
    if baseline is not None and history:
        score += [arg for path in history for arg in ("--history", str(path))]
    return run_cases, score


def run_evals(
    settings: Settings,
    children: Children,
    user: PrUser,
    out_dir: Path,
    baseline: Path | None,
    history: Sequence[Path] = (),
    *,
    gate: bool = True,
    agent_env: dict[str, str] | None = None,
    known: MainRecord | None = None,
    paired_base: str | None = None,
) -> RunOutcome:
    """Run the eval suite as two children: the agent stage as the PR user (its traces in the
    PR user's scratch folder), then the score stage, which runs none of the PR's code, on a
    copy of those traces. When it gates on a baseline, confirmation rounds follow
    (pipeline/confirm.py): the regressed cases alone run again, as the PR user, and the score
    stage scores every traces file again. With `settings.paired`, each round runs the same
    cases on the code of the merge-base of HEAD and `paired_base` too (action/merge_base.py),
    which the score stage scores into merge-base.json, main's newest history. The Results
    land in out_dir."""
    results = out_dir / "results.json"
    (out_dir / FILE_NAME).unlink(missing_ok=True)  # only this run's paired runs
    with tempfile.TemporaryDirectory(prefix="agent-eval-score-") as private:
        traces, copied = user.scratch / "traces.jsonl", Path(private) / "traces.jsonl"
        agent, score = run_arguments(settings, results, baseline, history, gate=gate)
        env = {**user.environment(child_environment()), **(agent_env or {})}
        env["AGENT_EVAL_PROGRESS"] = "lines"  # its output is relayed as text
        shared = suite_arguments(settings, baseline)
        records: list[Path] = []  # serve-users' records: how each simulated conversation ended

        def agent_stage(argv: list[str], name: str) -> int:
            """The agent stage as the PR user, scenario turns relayed from serve-users."""
            turns = UserTurns.start(shared, score_environment(settings), Path(private), name)
            try:
                return children.call(
                    _module([*argv, *turns.arguments]), env, user=user, pass_fds=turns.fds
                )
            finally:
                record = turns.finish()
                if record is not None:
                    records.append(record)

        code = agent_stage([*agent, "--traces", str(traces)], "suite")
        if code not in (EXIT_PASS, EXIT_INFRASTRUCTURE) or not _copy_untrusted(traces, copied):
            return RunOutcome(code=code, results_path=results)
        files = [copied]  # the traces the score stage reads: the suite's, then each round's
        # each round's score stage judges only what the earlier ones did not: their verdicts
        # wait in a cache only this process's user can read (the judge is never asked twice)
        cache = ["--judge-cache", str(Path(private) / "judge-cache"), "--judge-cache-this-run"]

        def scored(*, after_cancel: bool = False) -> int:
            traces_args = [arg for file in files for arg in ("--traces", str(file))]
            traces_args += [arg for file in records for arg in ("--simulations", str(file))]
            traces_args += paired.score_arguments() if paired is not None else []
            argv = _module([*score, *cache, *traces_args])
            return children.call(argv, score_environment(settings), after_cancel=after_cancel)

        paired: MergeBaseRuns | None = None  # made once confirmation rounds may run
        # after a cancellation too: the score stage turns what finished into partial Results
        code = scored(after_cancel=True)
        main_known = known or MainRecord()  # main's record; the rounds add the merge-base's
        known_now = main_known  # with the merge-base's runs so far
        merge_base: Results | None = None

        def paired_round(wanted: list[tuple[CaseKey, str]], run: int) -> None:
            """The round's cases once more, on the merge-base's code, as the PR user."""
            assert paired is not None
            made = paired.stage_arguments(shared, wanted, run, user.scratch)
            if made is None:
                return
            argv, produced = made
            stage_code = agent_stage(argv, f"merge-base-{run}")
            copy = Path(private) / produced.name
            if stage_code != EXIT_PASS or not _copy_untrusted(produced, copy):
                paired.stopped(stage_code)
                return
            paired.traces.append(copy)

        def extra_round(wanted: list[tuple[CaseKey, str]], round_number: int) -> Results | None:
            """The wanted cases once more (a confirmation, suite or sampling round) as the
            PR user, every traces file scored again: the new Results, or None when the round
            was cancelled or failed."""
            nonlocal code
            plan = user.scratch / f"confirm-{round_number}.json"
            run = settings.num_runs + round_number
            plan.write_text(json.dumps({"run": run, "cases": [[*k, w] for k, w in wanted]}))
            plan.chmod(0o644)
            produced = user.scratch / f"traces-{round_number}.jsonl"
            argv = [*agent, "--traces", str(produced), "--confirm", str(plan)]
            if agent_stage(argv, f"round-{round_number}") != EXIT_PASS:
                return None
            files.append(Path(private) / produced.name)
            if not _copy_untrusted(produced, files[-1]):
                return None
            if paired is not None and paired.on:
                paired_round(wanted, run)
                if children.cancelled:
                    return None
            code = scored()
            if code not in (EXIT_PASS, EXIT_GATE_FAILED):
                return None
            if paired is not None and paired.traces:
                nonlocal merge_base, known_now
                merge_base = _grown_merge_base(out_dir)
                known_now = main_known.plus(merge_base)
            return load_results(str(results))

        def confirm(
            wanted: list[tuple[CaseKey, str]], round_number: int
        ) -> tuple[Diff, Results] | None:
            new = extra_round(wanted, round_number)
            return None if new is None else (_diff(out_dir), new)

        warnings: list[str] = []
        confirming = gate and baseline is not None  # a shard its own cases, no suite round
        paired_note: str | None = None
        if confirming and settings.confirm_runs and code in (EXIT_PASS, EXIT_GATE_FAILED):
            if settings.paired and settings.shard is None:
                paired = MergeBaseRuns(settings, paired_base or "", Path.cwd())
            elif settings.paired:
                paired_note = SKIPPED.format(why=IN_A_SHARD)
            try:
                _, warnings = rounds(
                    _diff(out_dir),
                    load_results(str(results)),
                    known=lambda: known_now,
                    runs=settings.confirm_runs,
                    limit=settings.confirm_limit,
                    confirm=confirm,
                )
            finally:
                if paired is not None:
                    paired_note = paired.note
                    paired.close()
        elif settings.paired and gate:
            paired_note = SKIPPED.format(why=NO_ROUNDS)
        if not gate and settings.baseline_runs > 1 and code in (EXIT_PASS, EXIT_GATE_FAILED):
            # recording main's baseline: main's sampling (pipeline/confirm.py)
            sampling_rounds(
                load_results(str(results)),
                known=known_now,
                runs=settings.baseline_runs,
                sample=extra_round,
            )
    return RunOutcome(
        code=code,
        results_path=results,
        warnings=warnings,
        paired_note=paired_note,
        merge_base=None if merge_base is None else out_dir / FILE_NAME,
    )


def _grown_merge_base(out_dir: Path) -> Results:
    """The merge-base's Results the score stage just wrote (all its paired runs so far),
    within their metrics' ranges."""
    from ..pipeline.bounds import check_scores

    path = out_dir / FILE_NAME
    grown = load_results(str(path))
    check_scores(grown, str(path))
    return grown


@dataclass
class UserTurns:
    """The user-turn relay of one agent stage (pipeline/user_relay.py): `serve-users` runs
    the user simulator with the score stage's environment (the judge's key), the agent
    stage (the PR's user, no key) asks it over two pipes. Without a key there is no server,
    and scenario cases are recorded as not run."""

    arguments: list[str]
    fds: tuple[int, ...] = ()
    server: subprocess.Popen[bytes] | None = None
    record: Path | None = None
    log: Path | None = None

    @classmethod
    def start(cls, shared: list[str], env: dict[str, str], private: Path, name: str) -> UserTurns:
        if not any(env.get(key) for key in (JUDGE_KEY_ENV, "GOOGLE_API_KEY", "GEMINI_API_KEY")):
            return cls(["--user-turns", "no-key"])
        to_server_r, to_server_w = os.pipe()
        to_agent_r, to_agent_w = os.pipe()
        record, log = private / f"simulations-{name}.json", private / f"serve-users-{name}.log"
        with log.open("wb") as errors:
            server = subprocess.Popen(
                _module(["serve-users", *shared, "--record", str(record)]),
                stdin=to_server_r,
                stdout=to_agent_w,
                stderr=errors,
                env=env,
            )
        os.close(to_server_r)
        os.close(to_agent_w)
        fds = (to_agent_r, to_server_w)
        return cls(["--user-turns", f"{fds[0]},{fds[1]}"], fds, server, record, log)

    def finish(self) -> Path | None:
        """Close the agent stage's ends (the server then writes its record and exits), relay
        what the server said, and return its record (None: no server, or it wrote none)."""
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.server is None:
            return None
        try:
            self.server.wait(timeout=SERVER_WAIT_S)
        except subprocess.TimeoutExpired:
            self.server.kill()
            self.server.wait()
        if self.log is not None and self.log.stat().st_size:
            with self.log.open("rb") as said:
                relay = outputs.Relay(said)
                relay.start()
                relay.finish()
        return self.record if self.record is not None and self.record.exists() else None


SERVER_WAIT_S = 60.0  # for serve-users to write its record once the agent stage is done


def _diff(out_dir: Path) -> Diff:
    """The score stage's diff.json (it ran none of the PR's code)."""
    return Diff.from_json((out_dir / "diff.json").read_bytes())


MAX_TRACES_BYTES = 4 * 1024**3


def _copy_untrusted(source: Path, target: Path) -> bool:
    """Copy a file the PR user wrote, refusing a link (it could point at a file only root
    may read); False when there is none."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as src, target.open("wb") as out:
        if not stat.S_ISREG(os.fstat(src.fileno()).st_mode):
            return False
        shutil.copyfileobj(src, out)
        if out.tell() > MAX_TRACES_BYTES:
            return False
    return True


def _module(arguments: list[str]) -> list[str]:
    return [sys.executable, "-m", "agent_eval_action", *arguments]
