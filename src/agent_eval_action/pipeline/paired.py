"""Paired runs on the merge-base's code (docs/statistics.md, "Paired runs").

Whenever a confirmation round re-runs cases on the PR's code (pipeline/confirm.py), the
same cases run once more on the code the PR branched from: a git worktree of that commit,
made in scratch space, the agent found at the same place inside it, the eval cases the
PR's. Those runs are scored into a Results of their own, `merge-base.json` beside
results.json (its `source` names the commit, each run says what it was paired with), and
that file is one more history entry of main's record: a case that fails as often on
main's code is noise, one that never does is a change. Only an agent the tool starts can
run twice (`--agent`, `--command`); without git, a full history (a shallow clone has no
merge-base) or the commit, paired runs are skipped with a one-line note, never failed.

The CLI (cli/paired.py) and the action (action/merge_base.py) run the agent stage their
own way; what they share is here.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .. import launch
from ..core import CaseKey, Purpose
from ..files.safe import Refused, open_folder
from ..results import PAIRED_RUN, Results, Source

if TYPE_CHECKING:
    from ..metrics.judge import JudgeResults, JudgeSettings
    from .gate import Baseline
    from .job import Job
    from .plan import Plan
    from .score import Scored

FILE_NAME = "merge-base.json"  # beside results.json
TARGETS = ("agent", "command")  # the agents the tool starts, so it can start main's too
GIT_TIMEOUT_S = 300.0
SKIPPED = "paired runs on the merge-base skipped: {why}"
NO_ROUNDS = "they pair confirmation re-runs, and none run here (no baseline, or confirm-runs 0)"
IN_A_SHARD = (
    "not in a shard: the merge job compares the whole suite (run paired evidence unsharded)"
)
STOPPED = (
    "paired runs on the merge-base stopped: its agent stage exited {code} (the confirmation "
    "re-runs on the PR's code went on)"
)
_HEX = re.compile(r"[0-9a-f]{7,64}")
# Paired runs are deprecated (docs/statistics.md, "Paired runs on the merge-base"): measured
# at the default settings, they caught no more than main's record does without them. They
# still run, with this said once (stderr or the action's log, and the Results' warnings).
DEPRECATED = (
    "{what} is deprecated and goes in the next minor release: at the default settings main's "
    "history and its sampling of a first baseline catch what paired runs did "
    "(docs/statistics.md, paired runs)"
)


@dataclass(frozen=True)
class Commit:
    """The checkout (its top folder) and the commit of main's code to pair with."""

    repo: Path
    sha: str


def git(repo: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """git in `repo`, as the action (root in its container) may run it in a checkout the
    runner's user owns and a PR filled: no hooks, no file-system monitor (a program the
    checkout's config names), no system or global configuration, a HOME of its own."""
    argv = ["git", "-c", "safe.directory=*", "-c", "core.hooksPath=/dev/null"]
    argv += ["-c", "core.fsmonitor=false", "-C", str(repo), *arguments]
    return launch.run(
        launch.Kind.EXTERNAL,
        argv,
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT_S,
        check=False,
        stdin=subprocess.DEVNULL,
        env=git_environment(),
    )


def git_environment() -> dict[str, str]:
    """What git gets of the environment: PATH and a locale; its configuration is the
    repository's alone (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL), its HOME an empty folder
    only this process's user may use, so no `~/.gitconfig` or `~/.config/git` that an
    earlier step of the job wrote into the runner's HOME is read."""
    home = _git_home()
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "LC_ALL": "C",
        "HOME": home,
        "XDG_CONFIG_HOME": home,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
    }


@functools.cache
def _git_home() -> str:
    home = tempfile.mkdtemp(prefix="agent-eval-git-home-")  # 0700, this user's
    atexit.register(shutil.rmtree, home, True)
    return home


def find(ref: str, where: Path, target: str | None, *, fork_point: bool = False) -> Commit | str:
    """The commit `ref` names in the checkout around `where`, or the note saying why paired
    runs are skipped. `fork_point`: pair with the merge-base of HEAD and `ref` (the action:
    `ref` is the PR's base; on the merge commit a pull_request checks out, that is the base
    itself, on the PR's head the commit it branched from)."""
    if target not in TARGETS:
        return SKIPPED.format(
            why=f"they need an agent the tool starts (--agent or --command), not {target}"
        )
    if shutil.which("git") is None:
        return SKIPPED.format(why="git is not installed")
    if not ref or ref.startswith("-") or any(c.isspace() for c in ref):
        return SKIPPED.format(why=f"{ref!r} is not a git revision")
    try:
        top = git(where, "rev-parse", "--show-toplevel")
        if top.returncode != 0:
            return SKIPPED.format(why=f"{where} is not in a git checkout")
        repo = Path(top.stdout.strip())
        shallow = git(repo, "rev-parse", "--is-shallow-repository")
        if shallow.stdout.strip() == "true":
            return SKIPPED.format(
                why="the checkout is shallow (set fetch-depth: 0 on actions/checkout)"
            )
        if fork_point:
            base = git(repo, "merge-base", "HEAD", ref)
            if base.returncode != 0:
                return SKIPPED.format(why=f"no merge-base of HEAD and {ref[:12]} in the checkout")
            ref = base.stdout.strip()
        found = git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except (OSError, subprocess.TimeoutExpired) as err:
        return SKIPPED.format(why=f"git failed: {err}")
    sha = found.stdout.strip()
    if found.returncode != 0 or not _HEX.fullmatch(sha):
        return SKIPPED.format(why=f"the merge-base {ref} is not in the checkout")
    return Commit(repo, sha)


class Worktree:
    """A worktree of the commit in a folder of its own, made at first use and removed at
    the end. `scratch` is made by the caller and not writable by the PR's code, so
    nothing can wait there for git to follow."""

    def __init__(self, commit: Commit, scratch: Path) -> None:
        self.commit = commit
        self.scratch = scratch
        self.path: Path | None = None

    def open(self) -> Path | str:
        """The worktree's folder, or the note saying why it could not be made."""
        if self.path is not None:
            return self.path
        path = self.scratch / "merge-base"
        try:
            made = git(self.commit.repo, "worktree", "add", "--detach", str(path), self.commit.sha)
        except (OSError, subprocess.TimeoutExpired) as err:
            return SKIPPED.format(why=f"git worktree add failed: {err}")
        if made.returncode != 0:
            said = (made.stderr.strip().splitlines() or ["?"])[-1]
            return SKIPPED.format(why=f"git worktree add failed: {said}")
        self.path = path
        return path

    def close(self) -> None:
        if self.path is None:
            return
        try:
            git(self.commit.repo, "worktree", "remove", "--force", str(self.path))
            git(self.commit.repo, "worktree", "prune")
        except (OSError, subprocess.TimeoutExpired):
            pass
        shutil.rmtree(self.path, ignore_errors=True)
        self.path = None


def agent_there(
    flag: str, value: str, cwd: Path, commit: Commit, tree: Path
) -> tuple[list[str], Path] | str:
    """The agent flags for the merge-base's code and the folder its stage starts in (the
    worktree's counterpart of `cwd`): `--agent`'s folder at the same place inside the
    worktree (by name, no link followed), `--command` with every path of the checkout in
    it taken in the worktree, started there. Else the note why not."""
    try:
        start = tree / cwd.resolve().relative_to(commit.repo.resolve())
    except ValueError:
        return SKIPPED.format(why=f"{cwd} is outside the checkout {commit.repo}")
    if flag == "command":  # a path of the checkout's in it is taken in the worktree
        return [
            "--command",
            launch.moved_paths(value, launch.spellings(str(commit.repo)), str(tree)),
        ], start
    # by its name, never through a link: the PR's checkout may make the agent's folder a
    # link to another of main's agents, and the worktree holds main's own at that name
    try:
        inside = Path(os.path.normpath(cwd.resolve() / value)).relative_to(commit.repo.resolve())
    except ValueError:
        return SKIPPED.format(why=f"the agent {value} is outside the checkout")
    there = tree / inside
    try:
        os.close(open_folder(tree, inside))
    except Refused:
        return SKIPPED.format(
            why=f"the agent {value} is a link in the merge-base {commit.sha[:12]}"
        )
    except OSError:
        return SKIPPED.format(
            why=f"the agent {value} is not in the merge-base {commit.sha[:12]} (a new agent?)"
        )
    return ["--agent", str(there)], start


def paired(wanted: Sequence[tuple[CaseKey, Purpose]], sha: str) -> list[tuple[CaseKey, Purpose]]:
    """The round's cases for the merge-base, each run saying what it is paired with."""
    return [
        (key, Purpose("paired", f"{PAIRED_RUN} {sha[:12]}: {why.text}", why.kind))
        for key, why in wanted
    ]


def score_merge_base(
    job: Job,
    traces: Sequence[tuple[Path, Plan]],
    sha: str,
    *,
    target: str | None,
    judge: JudgeSettings | None,
    judged_before: JudgeResults | None = None,
    source: Source | None = None,
) -> Scored:
    """The merge-base's runs so far (every round's traces file, with the round's plan: the
    only case-runs read from it) as Results of the cases they ran; its `source` is the
    merge-base commit, its target the PR's (the worktree is gone after the run)."""
    from .plan import restrict
    from .run_cases import read_round_traces
    from .score import score

    runs = read_round_traces(traces, job.plan)
    runs = replace(runs, target=target)
    keys = {trace.key for trace in runs.traces}
    plan = replace(restrict(job.plan, keys), requests=[])
    where = source or Source()
    return score(
        plan,
        runs,
        job.options,
        judge=judge,
        baseline=job.baseline.results,
        source=where.replace(sha=sha, ref=None),
        judged_before=judged_before,
    )


def summary(merge_base: Results) -> str:
    """What ran on the merge-base's code, in one line (the report, stderr)."""
    runs = sum(len(case.runs) for case in merge_base.cases)
    sha = (merge_base.source.sha or "?")[:7]
    return (
        f"Paired runs: {len(merge_base.cases)} re-run case(s) ran {runs} time(s) on the "
        f"merge-base {sha}'s code too ({FILE_NAME}), main's record of them"
    )


def with_merge_base(baseline: Baseline, merge_base: Results | None) -> Baseline:
    """The baseline with the merge-base's Results in main's record (its newest history)."""
    if merge_base is None:
        return baseline
    return replace(baseline, history=baseline.history.plus(merge_base))
