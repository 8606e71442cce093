"""A pull request as the action needs it now (not as the event saw it): its head, for the
outdated-head re-check, and its labels, for the accept label."""

from __future__ import annotations

from dataclasses import dataclass

from .client import GitHub


@dataclass(frozen=True)
class PullRequest:
    number: int
    head_sha: str
    base_sha: str
    base_ref: str
    state: str
    labels: tuple[str, ...]


def get_pull(gh: GitHub, repo: str, number: int) -> PullRequest:
    data = gh.get(f"/repos/{repo}/pulls/{number}")
    return PullRequest(
        number=int(data["number"]),
        head_sha=str(data["head"]["sha"]),
        base_sha=str(data["base"]["sha"]),
        base_ref=str(data["base"]["ref"]),
        state=str(data.get("state") or "open"),
        labels=tuple(
            str(label["name"])
            for label in data.get("labels") or []
            if isinstance(label, dict) and label.get("name")
        ),
    )
