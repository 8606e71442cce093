"""Running the PR's code: the eval run as child processes (docs/action.md, Runtime).

The agent stage (`run-cases`) runs as the PR's user and writes its traces into that user's
scratch folder; the score stage (`score`), which runs none of the PR's code, scores a copy
root took of them, by descriptor (files/safe.py). Everything the stages pass each other
otherwise (plans of rounds, copies of traces, the judge's cache, serve-users' records) is in
root's private folder; a round's plan reaches the agent stage on its standard input. The
Results are written into the run folder (action/workdirs.py): a verdict is only ever
computed from what this run's score stage wrote there.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .. import launch
from ..compare.loading import MAX_RESULTS_BYTES, load_results
from ..compare.model import Diff
from ..compare.record import MainRecord
from ..core import CaseKey, RunKey
from ..errors import EXIT_GATE_FAILED, EXIT_INFRASTRUCTURE, EXIT_PASS
from ..files import read_bytes, write_whole
from ..files.safe import Refused
from ..metrics.judge.settings import JUDGE_KEY_ENV
from ..pipeline.ahead import Limits, Rounds, Stages, Taken
from ..pipeline.confirm import Wanted, round_json
from ..pipeline.paired import FILE_NAME, IN_A_SHARD, NO_ROUNDS, SKIPPED
from ..results import Results
from . import outputs
from .children import Children, Overran, child_environment
from .key_meter import KeyMeter, key_arguments
from .merge_base import MainUser, MergeBaseRuns
from .sandbox import PrUser
from .settings import Settings


def score_environment(settings: Settings) -> dict[str, str]:
    """The score stage's environment: the agents', plus the judge-only key (if given), which
    no process the PR's user runs ever holds."""
    env = child_environment()
    if settings.judge_api_key:
        env[JUDGE_KEY_ENV] = settings.judge_api_key
    return env


def agent_environment(
    user: PrUser, added: dict[str, str], moved: tuple[Path, Path] | None = None
) -> dict[str, str]:
    """The agent stage's environment: its user's folders, what its requirements add, and
    the folders its agent is imported with. The stage is an isolated interpreter (launch.py)
    that reads no PYTHONPATH: the workflow's, and the requirements' folder, reach its
    sys.path through launch.AGENT_PATH_ENV, after the tool's own imports. `moved`
    (workspace, worktree): main's stage, whose folders are the worktree's."""
    env = {**user.environment(child_environment()), **added}
    if moved is not None:
        env = moved_environment(env, moved)
    requirements = added.get(launch.AGENT_PATH_ENV)
    env[launch.AGENT_PATH_ENV] = launch.agent_path(
        *([requirements] if requirements else []),
        moved=None if moved is None else (str(moved[0]), str(moved[1])),
    )
    env["AGENT_EVAL_PROGRESS"] = "lines"  # its output is relayed as text
    return env


# the lists of folders in a stage's environment: main's stage gets each entry made absolute
# (from the workspace) and moved by its names or its physical path (launch.moved_folders)
FOLDER_LISTS = ("PATH", "PYTHONPATH")


def base_environment(user: PrUser, moved: tuple[Path, Path] | None = None) -> dict[str, str]:
    """`user`'s environment for a stage (its folders, no credentials); with `moved`
    (workspace, worktree), main's (`moved_environment`)."""
    env = user.environment(child_environment())
    return env if moved is None else moved_environment(env, moved)


def moved_environment(env: dict[str, str], moved: tuple[Path, Path]) -> dict[str, str]:
    """Main's stage's environment: every path at or below the checkout, in any variable and
    by any of its names (launch.spellings), taken at the same place in the worktree, so that
    nothing main's code starts runs or reads the PR's files by a name the workflow gave
    (PATH, PYTHONPATH, GITHUB_WORKSPACE, a config folder, credentials)."""
    workspace, tree = str(moved[0]), str(moved[1])
    names = launch.spellings(workspace)
    return {
        name: launch.moved_folders(value, (workspace, tree))
        if name in FOLDER_LISTS
        else launch.moved_paths(value, names, tree)
        for name, value in env.items()
    }


@dataclass(frozen=True)
class RunOutcome:
    code: int  # the score stage's exit code
    results_path: Path
    warnings: list[str] = field(default_factory=list)  # for the Results: what was cut short
    paired_note: str | None = None  # why paired runs on the merge-base were skipped or stopped
    merge_base: Path | None = None  # their Results (merge-base.json), when any ran
    # why the suite's agent stage left nothing to score (it died, was killed, planted a
    # link): then there is no verdict, whatever the score stage might have found
    failure: str | None = None


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


def suite_arguments(
    settings: Settings, baseline: Path | None, root: Path | None = None
) -> list[str]:
    """What every stage is told of the suite: the eval paths, runs, limits, config, shard;
    the paths made absolute below `root` when given (a stage that runs in another folder)."""
    at = (lambda path: os.path.join(root, path)) if root is not None else (lambda path: path)
    shared = [at(path) for path in settings.evals]
    shared += ["--num-runs", str(settings.num_runs), "--concurrency", str(settings.concurrency)]
    shared += ["--timeout", repr(settings.timeout)]
    if settings.config:
        shared += ["--config", at(settings.config)]
    if settings.trajectory_policy:
        shared += ["--trajectory-policy", settings.trajectory_policy]
    if settings.initial_session:
        shared += ["--initial-session", at(settings.initial_session)]
    if settings.strip_thoughts:
        shared += ["--strip-thoughts"]
    shared += [arg for name, most in settings.budgets for arg in ("--budget", f"{name}={most!r}")]
    if settings.shard:
        shared += ["--shard", f"{settings.shard[0]}/{settings.shard[1]}"]
    if baseline is not None:
        shared += ["--baseline", str(baseline)]  # the shards' split, the judge's verdicts
    return shared


def hermetic_arguments(settings: Settings, baseline: Path | None, *, gate: bool) -> list[str]:
    """The agent stage's hermetic-tools flags (docs/hermetic-tools.md). Tool calls replay only
    on a run that gates on a baseline (a pull request's): a push run records main's
    baseline, and so runs its tools live, or the recordings would never be renewed."""
    flags = ["--tools-from-eval-file"] if settings.tools_from_eval_file else []
    if settings.replay_tools and gate and baseline is not None:
        flags.append("--replay-tools")
    if settings.replay_strict and flags:
        flags.append("--replay-strict")
    return flags


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
    run_cases += hermetic_arguments(settings, baseline, gate=gate)
    score = ["score", *shared, "--out", str(results), *key_arguments(settings)]
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
    private: Path,
    baseline: Path | None,
    history: Sequence[Path] = (),
    *,
    gate: bool = True,
    agent_env: dict[str, str] | None = None,
    known: MainRecord | None = None,
    paired_base: str | None = None,
    case_runs: int = 1,
    main_user: MainUser | None = None,
    key_calls: int | None = None,
    scenario: frozenset[CaseKey] | None = None,
) -> RunOutcome:
    """Run the eval suite as two children: the agent stage as the PR user (its traces in the
    PR user's scratch folder), then the score stage, which runs none of the PR's code, on a
    copy of those traces in root's `private` folder. When it gates on a baseline,
    confirmation rounds follow, in the order and with the decisions of
    pipeline/ahead.Rounds, which this gives its stages: the regressed cases alone run
    again, as the PR user, and the score stage scores every traces file again, each
    round's against its plan. With `settings.paired`, each round runs the same cases on the code of
    the merge-base of HEAD and `paired_base` too (action/merge_base.py), as a user of its own
    (`main_user`), which the score stage scores into merge-base.json, main's newest history. The Results land in out_dir
    (the run folder). Each agent stage has a deadline (`stage_deadline`: the suite's
    `case_runs`, a round's cases); one that runs past it is stopped, and the suite's stage
    then leaves no verdict. `key_calls`: the most calls the job may make on the judge's key
    (key_meter.plan_job; else `judge-max-calls`), shared out among the processes that hold
    it, one after another. A confirmation round's agent stage with slots to spare also
    runs the later re-runs its cases may need (pipeline/ahead.py), which the later rounds
    take from its traces file without a stage of their own; never a case of `scenario`
    (the scenario cases; None: unknown, so no case runs ahead)."""
    results = out_dir / "results.json"
    meter = KeyMeter(settings.judge_max_calls if key_calls is None else key_calls, private)
    traces = user.scratch / "traces.jsonl"
    agent, score = run_arguments(settings, results, baseline, history, gate=gate)
    env = agent_environment(user, agent_env or {})
    shared = suite_arguments(settings, baseline)
    records: list[Path] = []  # serve-users' records: how each simulated conversation ended
    relayed = False  # a serve-users ran: each scenario case-run must be in a record
    overran: dict[str, str] = {}  # the stages stopped at their deadline, and why
    # why a round's agent stage left nothing to take (it died, was killed, overran, planted a
    # link): the rounds then stop, and no verdict is given on what they had not decided
    round_failed: list[str] = []

    def agent_stage(
        argv: list[str],
        name: str,
        runs: int,
        plan: Path | None = None,
        who: PrUser = user,
        environment: dict[str, str] = env,
        cwd: Path | None = None,
        keep_record: bool = True,
    ) -> int:
        """The agent stage as the PR user (or main's, `who`; `runs` case-runs), scenario
        turns relayed from serve-users, a round's plan on its standard input (and given to
        serve-users, which answers only its case-runs). `keep_record` False: serve-users'
        record is not the PR's (main's paired runs share the PR's round's run numbers)."""
        nonlocal relayed
        budget, spent = meter.arguments(f"serve-{name}")
        key = [*shared, *key_arguments(settings), *budget]
        turns = UserTurns.start(key, score_environment(settings), private, name, plan)
        relayed = relayed or (turns.server is not None and keep_record)
        try:
            with _reading(plan) as stdin:
                return children.call(
                    launch.Kind.TOOL,
                    launch.tool(*argv, *turns.arguments),
                    environment,
                    user=who,
                    pass_fds=turns.fds,
                    stdin=stdin,
                    deadline=stage_deadline(settings, runs),
                    cwd=cwd,
                )
        except Overran as err:
            overran[name] = f"the agent stage ({name}): {err}"
            outputs.say(overran[name])
            return EXIT_INFRASTRUCTURE
        finally:
            record = turns.finish()
            meter.settle(spent, ran=turns.server is not None)
            if record is not None and keep_record:
                records.append(record)

    code = agent_stage([*agent, "--traces", str(traces)], "suite", case_runs)
    copied = private / traces.name
    if "suite" in overran:  # what it finished is no suite to give a verdict on
        return RunOutcome(code, results, failure=overran["suite"])
    if code not in (EXIT_PASS, EXIT_INFRASTRUCTURE):
        return RunOutcome(code, results, failure=stage_failure(code))
    taken = _take_traces(user, traces.name, copied)
    if taken is not None:
        return RunOutcome(code, results, failure=taken)
    files = [copied]  # the traces the score stage reads: the suite's, then each round's
    plans: list[Path] = []  # each round's plan, which the score stage holds its traces to
    # each round's score stage judges only what the earlier ones did not: their verdicts
    # wait in a cache only this process's user can read (the judge is never asked twice)
    cache = ["--judge-cache", str(private / "judge-cache"), "--judge-cache-this-run"]

    def scored(*, after_cancel: bool = False) -> int:
        traces_args = [arg for file in files for arg in ("--traces", str(file))]
        traces_args += [arg for file in plans for arg in ("--round", str(file))]
        traces_args += [arg for file in records for arg in ("--simulations", str(file))]
        traces_args += ["--relayed"] if relayed else []
        traces_args += paired.score_arguments() if paired is not None else []
        budget, spent = meter.arguments(f"score-{len(files)}")  # one per traces file added
        argv = launch.tool(*score, *cache, *traces_args, *budget)
        env = score_environment(settings)
        try:
            return children.call(launch.Kind.TOOL, argv, env, after_cancel=after_cancel)
        finally:
            meter.settle(spent)

    paired: MergeBaseRuns | None = None  # made once confirmation rounds may run
    # after a cancellation too: the score stage turns what finished into partial Results
    code = scored(after_cancel=True)
    main_known = known or MainRecord()  # main's record; the rounds add the merge-base's
    known_now = main_known  # with the merge-base's runs so far
    merge_base: Results | None = None

    def paired_round(wanted: Wanted, run: int) -> None:
        """The round's cases once more, on the merge-base's code, as main's own user."""
        assert paired is not None
        # main's stage runs in its worktree, on the PR's eval files where they are
        # the merge-base's runs answer tool calls as the PR's rounds do
        main_side = [
            *suite_arguments(settings, baseline, Path.cwd()),
            *hermetic_arguments(settings, baseline, gate=True),
        ]
        made = paired.stage(main_side, wanted, run, private)
        if made is None:
            return
        main_env = agent_environment(made.user, made.added, (Path.cwd(), made.tree))
        name = f"merge-base-{run}"
        argv, plan, tree = made.argv, made.plan, made.tree
        stage_code = agent_stage(
            argv, name, len(wanted), plan, made.user, main_env, tree, keep_record=False
        )
        copy = private / made.produced.name
        if stage_code != EXIT_PASS or _take_traces(made.user, made.produced.name, copy):
            paired.stopped(stage_code)
            return
        paired.traces.append(copy)
        paired.plans.append(made.plan)

    def run_round(need: Wanted, run: int, later: int) -> dict[RunKey, Staged] | None:
        """The agent stage of a round (a confirmation, suite or sampling round) as the PR
        user: run `run` of each needed case and its next `later` runs; where each run is
        (root's copy of the stage's traces, and its plan), or None when the stage was
        cancelled or failed."""
        round_number = run - settings.num_runs
        text = round_json(run, need, later)
        plan = private / f"confirm-{round_number}.json"
        write_whole(plan, text)
        produced = user.scratch / f"traces-{round_number}.jsonl"
        argv = [*agent, "--traces", str(produced), "--confirm", "-"]
        runs = len(need) * (later + 1)
        name = f"round-{round_number}"
        stage_code = agent_stage(argv, name, runs, plan)
        if stage_code != EXIT_PASS:
            if not children.cancelled:
                round_failed.append(
                    overran.get(name) or f"round {round_number}: " + stage_failure(stage_code)
                )
            return None
        copy = private / produced.name
        taken = _take_traces(user, produced.name, copy)
        if taken is not None:
            round_failed.append(f"round {round_number}: {taken}")
            return None
        staged = Staged(copy, plan, text, later)
        return {RunKey(*key, run + n): staged for n in range(later + 1) for key, _ in need}

    def record_round(taken: Taken[Staged], run: int, wanted: Wanted) -> Results | None:
        """The score stage over every traces file again, each of this round's with a plan
        that names the runs it takes from it (and, from a stage that ran later rounds' runs
        too, that stage's plan: the others are passed over); with paired runs, main's side
        of the round first. The new Results, or None when cancelled or failed."""
        nonlocal code, merge_base, known_now
        round_number = run - settings.num_runs
        from_stage: dict[Staged, Wanted] = {}
        for key, why, staged in taken:
            from_stage.setdefault(staged, []).append((key, why))
        for number, (staged, cases) in enumerate(from_stage.items()):
            take = staged.plan  # a stage of this round's runs alone: its own plan
            if staged.ahead:
                take = private / f"take-{round_number}-{number}.json"
                write_whole(take, round_json(run, cases, stage=staged.text))
            files.append(staged.traces)
            plans.append(take)
        if paired is not None and paired.on:
            paired_round(wanted, run)
            if children.cancelled:
                return None
        code = scored()
        if code not in (EXIT_PASS, EXIT_GATE_FAILED):
            return None
        if paired is not None and paired.traces:
            merge_base = _grown_merge_base(out_dir)
            known_now = main_known.plus(merge_base)
        return load_results(str(results))

    stages = Stages(run_round, record_round, lambda key: scenario is None or key in scenario)
    limits = Limits(
        settings.num_runs,
        settings.concurrency,
        settings.confirm_runs,
        settings.confirm_limit,
        settings.baseline_runs,
    )
    extra = Rounds(stages, limits)

    warnings: list[str] = []
    confirming = gate and baseline is not None  # a shard its own cases, no suite round
    paired_note: str | None = None
    if confirming and settings.confirm_runs and code in (EXIT_PASS, EXIT_GATE_FAILED):
        if settings.paired and settings.shard is None:
            assert main_user is not None, "paired runs need a user for main's code"
            paired = MergeBaseRuns(
                settings, paired_base or "", Path.cwd(), main_user, within=private.parent
            )
        elif settings.paired:
            paired_note = SKIPPED.format(why=IN_A_SHARD)
        try:
            warnings = extra.confirm(
                _diff(out_dir),
                load_results(str(results)),
                known=lambda: known_now,
                compare=lambda _: _diff(out_dir),  # the score stage's, which ran no PR code
            )
        finally:
            if paired is not None:
                paired_note = paired.note
                paired.close()
    elif settings.paired and gate:
        paired_note = SKIPPED.format(why=NO_ROUNDS)
    if round_failed:  # a pending regression would pass as noise on what was left undecided
        return RunOutcome(code, results, failure=round_failed[0])
    if not gate and settings.baseline_runs > 1 and code in (EXIT_PASS, EXIT_GATE_FAILED):
        # recording main's baseline: main's sampling (pipeline/confirm.py)
        extra.sample(load_results(str(results)), known_now)
        if round_failed:  # main's record keeps the runs sampled so far
            warnings.append(f"main's sampling stopped early: {round_failed[0]}")
    return RunOutcome(
        code=code,
        results_path=results,
        warnings=warnings,
        paired_note=paired_note,
        merge_base=None if merge_base is None else out_dir / FILE_NAME,
    )


class Staged(NamedTuple):
    """Where a round's agent stage left its runs: root's copy of its traces file, and its
    plan (the file, and its ROUND_FORMAT text), which ran `ahead` later runs of each case."""

    traces: Path
    plan: Path
    text: str
    ahead: int


# what an agent stage may take beyond its case-runs' own limits: starting, importing ADK
STAGE_SLACK_S = 600.0


def stage_deadline(settings: Settings, case_runs: int) -> float:
    """The longest an agent stage of `case_runs` case-runs may take: each case-run is cut
    at `timeout` (all its turns), `concurrency` at once, plus STAGE_SLACK_S."""
    waves = -(-max(case_runs, 1) // settings.concurrency)
    return STAGE_SLACK_S + settings.timeout * waves


def stage_failure(code: int) -> str:
    """Why an agent stage that exited `code` (not 0, 2 or 3: bad input is said as such by
    the caller) left nothing to score."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the agent stage was killed by {name}: nothing was scored"
    return f"the agent stage exited {code} (its output is above): nothing was scored"


@contextlib.contextmanager
def _reading(path: Path | None) -> Iterator[int | None]:
    """A descriptor of root's file `path` opened for reading (None: none)."""
    if path is None:
        yield None
        return
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


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
    def start(
        cls, shared: list[str], env: dict[str, str], private: Path, name: str, plan: Path | None
    ) -> UserTurns:
        """`plan`: the round's plan (root's file), None for the suite's stage."""
        if not any(env.get(key) for key in (JUDGE_KEY_ENV, "GOOGLE_API_KEY", "GEMINI_API_KEY")):
            return cls(["--user-turns", "no-key"])
        to_server_r, to_server_w = os.pipe()
        to_agent_r, to_agent_w = os.pipe()
        record, log = private / f"simulations-{name}.json", private / f"serve-users-{name}.log"
        argv = ["serve-users", *shared, "--record", str(record)]
        argv += ["--confirm", str(plan)] if plan is not None else []  # a round's case-runs only
        with log.open("wb") as errors:
            server = launch.popen(
                launch.Kind.TOOL,
                launch.tool(*argv),
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
    """The score stage's diff.json (it ran none of the PR's code), capped as Results are."""
    path = out_dir / "diff.json"
    return Diff.from_json(read_bytes(path, str(path), MAX_RESULTS_BYTES))


def _take_traces(user: PrUser, name: str, target: Path) -> str | None:
    """Take the traces file `name` the PR user wrote in its scratch folder to `target`
    (root's), by descriptor, moved and never copied where it can be (PrUser.take): refused
    when it is a link, no regular file, has other names, is not the PR user's, or is larger
    than MAX_TRACES_BYTES. None when it was taken, else why not (said in the log). The
    score stage reads it a line at a time, counted (files.read_lines)."""
    from ..pipeline.run_cases import MAX_TRACES_BYTES

    try:
        user.take(name, target, MAX_TRACES_BYTES)
    except FileNotFoundError:
        why = f"the agent stage wrote no traces ({name})"
    except (Refused, OSError) as err:
        why = f"the agent stage's traces {name} were refused: {err.strerror or err}"
    else:
        return None
    outputs.say(why)
    return why
