"""A pull request as the action needs it now (not as the event saw it): its head (commit,
branch and repository), for the outdated-head re-check and for tying a `workflow_run`'s
artifact to it, and its labels, for the accept label."""

from __future__ import annotations

from dataclasses import dataclass

from .client import GitHub


@dataclass(frozen=True)
class PullRequest:
    number: int
    head_sha: str
    head_ref: str  # the head branch's name, in the head repository
    head_repo_id: int | None  # None: the head repository is gone (a deleted fork)
    base_sha: str
    base_ref: str
    state: str
    labels: tuple[str, ...]


def get_pull(gh: GitHub, repo: str, number: int) -> PullRequest:
    data = gh.get(f"/repos/{repo}/pulls/{number}")
    head_repo = data["head"].get("repo")  # null when the fork was deleted
    repo_id = head_repo.get("id") if isinstance(head_repo, dict) else None
    return PullRequest(
        number=int(data["number"]),
        head_sha=str(data["head"]["sha"]),
        head_ref=str(data["head"]["ref"]),
        head_repo_id=repo_id
        if isinstance(repo_id, int) and not isinstance(repo_id, bool)
        else None,
        base_sha=str(data["base"]["sha"]),
        base_ref=str(data["base"]["ref"]),
        state=str(data.get("state") or "open"),
        labels=tuple(
            str(label["name"])
            for label in data.get("labels") or []
            if isinstance(label, dict) and label.get("name")
        ),
    )
