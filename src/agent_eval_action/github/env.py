"""The `GITHUB_*` values the Actions runner sets, read once (docs/action.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import InputError

if TYPE_CHECKING:
    from ..results import Source


@dataclass(frozen=True)
class GitHubEnv:
    """The `GITHUB_*` values of a workflow run; nothing else in the package reads them."""

    api_url: str = "https://api.github.com"
    server_url: str = "https://github.com"
    repository: str | None = None
    repository_id: int | None = None
    sha: str | None = None
    ref: str | None = None
    event_name: str | None = None
    event_path: str | None = None
    run_id: str | None = None
    workflow_ref: str | None = None
    output: str | None = None
    step_summary: str | None = None
    workspace: str | None = None

    @property
    def workflow_file(self) -> str | None:
        """This workflow's file name, from `owner/repo/.github/workflows/FILE@ref`."""
        if not self.workflow_ref:
            return None
        return self.workflow_ref.split("@", 1)[0].rsplit("/", 1)[-1] or None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> GitHubEnv:
        def get(name: str) -> str | None:
            return env.get(f"GITHUB_{name.upper()}", "").strip() or None

        repository = get("repository")
        if repository is not None and repository.count("/") != 1:
            raise InputError(f"GITHUB_REPOSITORY: expected owner/name, got {repository!r}")
        return cls(
            api_url=(get("api_url") or cls.api_url).rstrip("/"),
            server_url=(get("server_url") or cls.server_url).rstrip("/"),
            repository=repository,
            repository_id=int(rid) if (rid := get("repository_id") or "").isdecimal() else None,
            sha=get("sha"),
            ref=get("ref"),
            event_name=get("event_name"),
            event_path=get("event_path"),
            run_id=get("run_id"),
            workflow_ref=get("workflow_ref"),
            output=get("output"),
            step_summary=get("step_summary"),
            workspace=get("workspace"),
        )

    def source(self) -> Source:
        """Where a run happened, for its Results."""
        from ..results import Source

        return Source(
            repo=self.repository,
            sha=self.sha,
            ref=self.ref,
            run_id=self.run_id,
            event=self.event_name,
        )
