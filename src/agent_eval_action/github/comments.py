"""The sticky PR comment: one comment per check name, which this action wrote and can tell.

Every workflow of a repository comments as `github-actions[bot]`, and other bots quote PR
text, which anyone can fill with our marker. So a comment counts as ours only when all of
these hold (docs/action.md, "Publishing"):

- its body *starts* with the marker line, `<!-- agent-eval-action:NAME -->`; a marker
  anywhere else (a quote) does not count;
- its second line is `<!-- agent-eval-action:comment-id:ID -->` with the comment's own id.
  GitHub gives a comment its id when it is created, so the action writes this line just
  after: text posted by someone else (a bot echoing the PR description) cannot carry the id
  of the comment it ends up in;
- its author is the token's account: for a user's token (a personal access token, an OAuth
  or GitHub App user token) the login `GET /user` names; for an installation token
  (`GITHUB_TOKEN`, a GitHub App's), to which `GET /user` answers 403, a bot account, and
  once this run has posted, exactly the account its comment was posted as. A person cannot
  make their own comment pass for ours.

Only such comments are updated, and only such duplicates deleted: update the oldest when
there is one, else create it; after creating, re-list and delete the duplicate a racing run
may have created at the same moment, keeping the oldest. `update_sticky` only updates: the
all-clear line of a quiet `comment` setting edits a comment posted before, never creates one.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from agent_eval_action.github.client import GitHub, GitHubError

ID_LINE = "<!-- agent-eval-action:comment-id:{id} -->"  # the second line of our comment
PENDING_LINE = "<!-- agent-eval-action:pending:{nonce} -->"  # until its id is written
STAMP_RESERVE = 80  # characters the second line adds to a body (ids are < 2**63)


@dataclass(frozen=True)
class Author:
    """Whom our comments are posted as: `login`, or any bot account when it is not known
    (an installation token, before this run has posted)."""

    login: str | None = None

    def wrote(self, comment: dict[str, Any]) -> bool:
        user = comment.get("user") or {}
        login = str(user.get("login") or "")
        if self.login is not None:
            return login.lower() == self.login.lower()
        return user.get("type") == "Bot" and login.endswith("[bot]")


def token_author(gh: GitHub) -> Author:
    """The account the token posts as: `GET /user` for a user's token; an installation
    token (GITHUB_TOKEN, a GitHub App's) gets 403 there and posts as a bot."""
    try:
        login = gh.get("/user").get("login")
    except GitHubError as exc:
        if exc.status == 403 and "rate limit" not in exc.message.lower():
            return Author(None)
        raise
    if not isinstance(login, str) or not login:
        raise GitHubError(200, "GET /user named no login", gh.url("/user"))
    return Author(login)


def _comments_path(repo: str, issue: int) -> str:
    return f"/repos/{repo}/issues/{issue}/comments"


def _comment_path(repo: str, comment_id: int) -> str:
    return f"/repos/{repo}/issues/comments/{comment_id}"


def stamped(body: str, marker: str, line: str) -> str:
    """`body` (which starts with `marker`) with `line` as its second line."""
    if not body.startswith(marker):
        raise ValueError(f"the comment body does not start with its marker {marker!r}")
    return f"{marker}\n{line}{body[len(marker) :]}"


def _second_line(comment: dict[str, Any], marker: str) -> str | None:
    """The line after the marker when the body starts with the marker line, else None."""
    lines = str(comment.get("body") or "").split("\n", 2)
    if len(lines) < 2 or lines[0].rstrip("\r") != marker:
        return None
    return lines[1].rstrip("\r")


def is_ours(comment: dict[str, Any], marker: str, author: Author) -> bool:
    """Written by this action: the marker first, its own id second, by the token's account."""
    line = _second_line(comment, marker)
    return line == ID_LINE.format(id=comment.get("id")) and author.wrote(comment)


def _ours(comments: list[dict[str, Any]], marker: str, author: Author) -> list[dict[str, Any]]:
    return sorted((c for c in comments if is_ours(c, marker, author)), key=lambda c: c["id"])


def find_sticky(
    gh: GitHub, repo: str, issue: int, marker: str, author: Author
) -> list[dict[str, Any]]:
    """Every comment on the PR this action wrote for `marker`, across all pages, oldest first."""
    return _ours(list(gh.paginate(_comments_path(repo, issue))), marker, author)


def _delete_quietly(gh: GitHub, repo: str, comment_id: int) -> None:
    try:
        gh.delete(_comment_path(repo, comment_id))
    except GitHubError as exc:
        if exc.status != 404:  # a racing run deleted it first
            raise


def _write(gh: GitHub, repo: str, comment: dict[str, Any], body: str, marker: str) -> Any:
    """Give `comment` the report `body`, stamped with its id (no call when it has it)."""
    want = stamped(body, marker, ID_LINE.format(id=comment["id"]))
    if comment.get("body") == want:
        return comment
    return gh.patch(_comment_path(repo, comment["id"]), {"body": want})


def _keep_oldest(
    gh: GitHub, repo: str, found: list[dict[str, Any]], body: str, marker: str
) -> dict[str, Any]:
    """The oldest of our comments carries the report; the other ones are removed."""
    kept = _write(gh, repo, found[0], body, marker)
    for duplicate in found[1:]:
        _delete_quietly(gh, repo, duplicate["id"])
    return kept


def update_sticky(
    gh: GitHub,
    repo: str,
    issue: int,
    body: str,
    marker: str,
    author: Author | None = None,
) -> dict[str, Any] | None:
    """Give the PR's sticky comment `body` (which starts with `marker`) when it has one,
    and return it; None, creating nothing, when it has none."""
    author = _checked(body, marker, author, gh)
    found = find_sticky(gh, repo, issue, marker, author)
    return _keep_oldest(gh, repo, found, body, marker) if found else None


def _checked(body: str, marker: str, author: Author | None, gh: GitHub) -> Author:
    if not body.startswith(marker):
        raise ValueError(f"the comment body does not start with its marker {marker!r}")
    return author or token_author(gh)


def upsert_sticky(
    gh: GitHub,
    repo: str,
    issue: int,
    body: str,
    marker: str,
    author: Author | None = None,
) -> dict[str, Any]:
    """Post `body` (which starts with `marker`) as the PR's one sticky comment and return it.

    `author`: whom the token posts as (default: asked of GitHub, `token_author`)."""
    author = _checked(body, marker, author, gh)
    found = find_sticky(gh, repo, issue, marker, author)
    if found:
        return _keep_oldest(gh, repo, found, body, marker)
    pending = stamped(body, marker, PENDING_LINE.format(nonce=secrets.token_hex(16)))
    try:
        mine = gh.post(_comments_path(repo, issue), {"body": pending})
    except GitHubError as exc:
        if exc.status is not None and exc.status < 500:
            raise
        # The POST may have been performed: look before posting again, never blindly. This
        # run's comment is the one with its random pending line.
        listed = list(gh.paginate(_comments_path(repo, issue)))
        posted = [c for c in listed if c.get("body") == pending and author.wrote(c)]
        if posted:
            mine = posted[0]
        elif found := _ours(listed, marker, author):  # a racing run's
            return _keep_oldest(gh, repo, found, body, marker)
        else:
            mine = gh.post(_comments_path(repo, issue), {"body": pending})
    # Now this run knows the account it posts as exactly.
    login = (mine.get("user") or {}).get("login")
    author = Author(login) if isinstance(login, str) and login else author
    mine = _write(gh, repo, mine, body, marker)
    found = find_sticky(gh, repo, issue, marker, author)
    if not any(c["id"] == mine["id"] for c in found):  # a list that lags behind
        found = sorted([*found, mine], key=lambda c: c["id"])
    return _keep_oldest(gh, repo, found, body, marker)
