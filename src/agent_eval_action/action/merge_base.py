"""The action's paired runs on the merge-base's code (input `paired`, pipeline/paired.py).

The commit is the merge-base of the checkout's HEAD and the PR's base (the event's base
sha; else `origin/<default branch>`): on the merge commit a `pull_request` checks out,
that is the base itself, on the PR's head the commit it branched from. The action (root)
makes its worktree in a folder of its own, which the PR's user may read but never write
(so nothing of the PR's can wait there for git to follow, and main's code stays as it
was); each round's agent stage there runs as a user of its own, not the PR's (whose code
could have left anything in its HOME, caches or requirements for main's code to run), with
main's requirements installed for it (the requirements file at the same path in the
worktree) and the same scrubbed environment as the PR's (never the token, never the
judge's key). The score stage scores its traces into merge-base.json beside results.json.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core import CaseKey, Purpose
from ..errors import InputError
from ..files import write_whole
from ..pipeline import paired as pairing
from ..pipeline.confirm import round_json
from .event import Event, MergeGroupEvent, PullRequestEvent
from .sandbox import PrUser
from .settings import Settings

# main's user for a worktree: (the user, what its environment adds for its requirements)
MainUser = Callable[[Path], tuple[PrUser, dict[str, str]]]


@dataclass(frozen=True)
class MainStage:
    """A round's agent stage on the merge-base's code: its command line, the traces file it
    writes (in its user's scratch folder), its plan (root's), and the user it runs as."""

    argv: list[str]
    produced: Path
    plan: Path
    user: PrUser
    added: dict[str, str]
    tree: Path  # the worktree: the stage's current folder, so nothing of the PR's is imported


def base_of(event: Event, default_branch: str) -> str:
    """What the PR's code is paired with: the event's base commit, else the default
    branch as the checkout fetched it."""
    if isinstance(event, PullRequestEvent | MergeGroupEvent):
        return event.base_sha
    return f"origin/{default_branch}"


class MergeBaseRuns:
    """The merge-base's worktree and the traces its rounds wrote (copied for the score
    stage); `note` says why paired runs were skipped or stopped. The worktree's folder is
    made in `within`, the run's own folder (root's, 0711), not in /tmp."""

    def __init__(
        self, settings: Settings, base: str, workspace: Path, main_user: MainUser, within: Path
    ) -> None:
        self.settings, self.workspace = settings, workspace
        self.main_user = main_user
        self.side: tuple[PrUser, dict[str, str]] | None = None  # made at the first round
        self.note: str | None = None
        self.traces: list[Path] = []
        self.plans: list[Path] = []  # each traces file's round plan, for the score stage
        self.scratch: Path | None = None
        self.worktree: pairing.Worktree | None = None
        found = pairing.find(base, workspace, settings.agent_input, fork_point=True)
        if isinstance(found, str):
            self.note = found
            return
        self.scratch = Path(tempfile.mkdtemp(prefix="merge-base-", dir=within))
        self.scratch.chmod(0o755)  # the PR's user reads main's code there, and writes nothing
        self.worktree = pairing.Worktree(found, self.scratch)
        print(f"paired runs on the merge-base {found.sha[:12]}")

    @property
    def on(self) -> bool:
        return self.note is None and self.worktree is not None

    def stage(
        self,
        shared: Sequence[str],
        wanted: Sequence[tuple[CaseKey, Purpose]],
        run: int,
        private: Path,
    ) -> MainStage | None:
        """A round's agent stage on the merge-base's code, its plan written in root's
        `private` folder (the stage reads it on its standard input); None when paired runs
        stop here (`note` says why)."""
        if not self.on:
            return None
        assert self.worktree is not None
        tree = self.worktree.open()
        if isinstance(tree, str):
            self.note = tree
            return None
        value = self.settings.agent if self.settings.agent_input == "agent" else None
        value = value or self.settings.command
        there = pairing.agent_there(
            str(self.settings.agent_input), str(value), self.workspace, self.worktree.commit, tree
        )
        if isinstance(there, str):
            self.note = there
            return None
        if self.side is None:
            try:
                self.side = self.main_user(tree)
            except InputError as err:
                self.note = pairing.SKIPPED.format(why=f"main's requirements: {err}")
                return None
        user, added = self.side
        flags, start = there
        plan = private / f"merge-base-{run}.json"
        write_whole(plan, round_json(run, pairing.paired(wanted, self.worktree.commit.sha)))
        produced = user.scratch / f"merge-base-traces-{run}.jsonl"
        argv = ["run-cases", *shared, *flags, "--agent-cwd", str(start)]
        argv += ["--traces", str(produced), "--confirm", "-"]
        return MainStage(argv, produced, plan, user, added, tree)

    def stopped(self, code: int) -> None:
        self.note = pairing.STOPPED.format(code=code)

    def score_arguments(self) -> list[str]:
        """What the score stage is told of the merge-base's runs so far."""
        if not self.traces or self.worktree is None:
            return []
        argv = ["--merge-base", self.worktree.commit.sha]
        for file, plan in zip(self.traces, self.plans, strict=True):
            argv += ["--merge-base-traces", str(file), "--merge-base-round", str(plan)]
        return argv

    def close(self) -> None:
        if self.side is not None:
            self.side[0].kill_leftovers()
            self.side[0].remove()
            self.side = None
        if self.worktree is not None:
            self.worktree.close()
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
