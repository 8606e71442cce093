"""What every stage of an action run shares: the settings, the event, the GitHub client
(None without a token), the run's folders and the child-process runner."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from ..github.client import GitHub
from .children import Children
from .event import Event
from .settings import Settings
from .workdirs import Workdirs


@dataclass
class Context:
    settings: Settings
    event: Event
    gh: GitHub | None
    dirs: Workdirs
    output_dir: Path  # where the run's files are published at the end, as the input named it
    children: Children
    notes: list[str] = field(default_factory=list)  # for the report: what the run could not do

    @property
    def out_dir(self) -> Path:
        """Where the run writes its files (the run folder, root's alone): published into
        output-dir when the action ends (action/workdirs.py)."""
        return self.dirs.run

    def shown(self, name: str) -> Path:
        """The path of the run's file `name` once published, for messages and outputs."""
        return self.output_dir / name

    @property
    def repo(self) -> str:
        if self.settings.github.repository is None:
            raise InputError("GITHUB_REPOSITORY is not set: is this running in GitHub Actions?")
        return self.settings.github.repository

    def require_gh(self, why: str) -> GitHub:
        if self.gh is None:
            raise InputError(f"input github-token: {why} needs a token")
        return self.gh

    @property
    def own_workflow(self) -> str | None:
        """The workflow whose push runs hold the baseline: the input, else this one."""
        return self.settings.baseline_workflow or self.settings.github.workflow_file

    @property
    def default_branch(self) -> str:
        branch = self.settings.baseline_branch or getattr(self.event, "default_branch", None)
        return branch or "main"
