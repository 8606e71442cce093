"""The sticky PR comment: one comment per check name, found by its hidden marker and author.

Update it when it exists, else create it; after creating, re-list and delete the duplicate a
racing run may have created at the same moment, keeping the oldest (docs/action.md, "Publishing").
"""

from __future__ import annotations

from typing import Any

from agent_eval_action.github.client import GitHub, GitHubError

BOT_LOGIN = "github-actions[bot]"  # the author of comments posted with GITHUB_TOKEN


def _comments_path(repo: str, issue: int) -> str:
    return f"/repos/{repo}/issues/{issue}/comments"


def _comment_path(repo: str, comment_id: int) -> str:
    return f"/repos/{repo}/issues/comments/{comment_id}"


def find_sticky(
    gh: GitHub, repo: str, issue: int, marker: str, author: str = BOT_LOGIN
) -> list[dict[str, Any]]:
    """Every comment on the PR carrying `marker` by `author`, across all pages, oldest first."""
    found = [
        c
        for c in gh.paginate(_comments_path(repo, issue))
        if marker in (c.get("body") or "") and (c.get("user") or {}).get("login") == author
    ]
    return sorted(found, key=lambda c: c["id"])


def _delete_quietly(gh: GitHub, repo: str, comment_id: int) -> None:
    try:
        gh.delete(_comment_path(repo, comment_id))
    except GitHubError as exc:
        if exc.status != 404:  # a racing run deleted it first
            raise


def _keep_oldest(
    gh: GitHub, repo: str, found: list[dict[str, Any]], mine: dict[str, Any], body: str
) -> dict[str, Any]:
    oldest = found[0]
    if oldest["id"] != mine["id"]:
        oldest = gh.patch(_comment_path(repo, oldest["id"]), {"body": body})
    for duplicate in found[1:]:
        _delete_quietly(gh, repo, duplicate["id"])
    return oldest


def upsert_sticky(
    gh: GitHub, repo: str, issue: int, body: str, marker: str, author: str = BOT_LOGIN
) -> dict[str, Any]:
    """Post `body` as the PR's one sticky comment and return that comment."""
    if marker not in body:
        raise ValueError(f"the comment body lacks its marker {marker!r}")
    found = find_sticky(gh, repo, issue, marker, author)
    if found:
        mine = gh.patch(_comment_path(repo, found[0]["id"]), {"body": body})
        return _keep_oldest(gh, repo, found, mine, body)
    try:
        mine = gh.post(_comments_path(repo, issue), {"body": body})
    except GitHubError as exc:
        if exc.status is not None and exc.status < 500:
            raise
        # The POST may have been performed: look before posting again, never blindly.
        found = find_sticky(gh, repo, issue, marker, author)
        if found:
            return _keep_oldest(gh, repo, found, found[-1], body)
        mine = gh.post(_comments_path(repo, issue), {"body": body})
    found = find_sticky(gh, repo, issue, marker, author)
    if not any(c["id"] == mine["id"] for c in found):
        found = sorted([*found, mine], key=lambda c: c["id"])
    return _keep_oldest(gh, repo, found, mine, body)
