"""`workflow_dispatch` with a `pr-number`: evaluate a PR on demand, and only that PR's code.

The event names a PR but runs on whatever ref was dispatched (main, usually): the code in
the workspace is what the workflow checked out, not necessarily the PR's. Before anything
runs, the commit the evals will run on must be the PR's head, else the step stops (exit 2):
a check run on the PR's head for code that was never run there would be a lie.

A dispatch run has the repository's secrets and a write token. A PR from a fork is refused
unless the input `allow-fork-dispatch` is true: checking out and running a fork's head in
such a run is the pattern docs/workflows.md forbids (docs/security.md).

The checked-out commit is read from the workspace's `.git` (HEAD, loose refs, packed-refs),
without running git: git reads configuration, and this process holds the token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..files import read_bytes
from ..github.client import GitHub

_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_MAX_READ = 1 << 20  # .git/HEAD and friends are tiny; packed-refs may be large-ish
_MAX_PACKED = 64 << 20


@dataclass(frozen=True)
class DispatchedPull:
    """The PR a dispatch names, as GitHub has it now."""

    number: int
    head_sha: str
    base_sha: str
    head_repo: str | None  # None: the fork was deleted


def dispatched_pull(gh: GitHub, repo: str, number: int) -> DispatchedPull:
    data = gh.get(f"/repos/{repo}/pulls/{number}")
    head_repo = (data["head"].get("repo") or {}).get("full_name")
    return DispatchedPull(
        number=int(data["number"]),
        head_sha=str(data["head"]["sha"]),
        base_sha=str(data["base"]["sha"]),
        head_repo=str(head_repo) if head_repo else None,
    )


def _read(path: Path, limit: int = _MAX_READ) -> str | None:
    """The file's text, or None when it cannot be read or is over `limit` bytes."""
    try:
        return read_bytes(path, str(path), limit).decode("utf-8", "replace")
    except InputError:
        return None


def _git_dir(workspace: Path) -> Path | None:
    dot_git = workspace / ".git"
    if dot_git.is_dir():
        return dot_git
    text = _read(dot_git)  # a worktree or submodule: "gitdir: <path>"
    if text is None or not text.startswith("gitdir:"):
        return None
    target = Path(text.removeprefix("gitdir:").strip())
    target = target if target.is_absolute() else workspace / target
    return target if target.is_dir() else None


def _resolve_ref(git_dir: Path, ref: str) -> str | None:
    if not ref.startswith("refs/") or ".." in ref.split("/"):
        return None
    common = git_dir
    shared = _read(git_dir / "commondir")
    if shared is not None:
        common = (git_dir / shared.strip()).resolve()
    for root in dict.fromkeys((git_dir, common)):
        loose = _read(root / ref)
        if loose is not None and _SHA.match(loose.strip()):
            return loose.strip()
    packed = _read(common / "packed-refs", _MAX_PACKED) or ""
    for line in packed.splitlines():
        sha, _, name = line.partition(" ")
        if name.strip() == ref and _SHA.match(sha):
            return sha
    return None


def checked_out_commit(workspace: Path) -> str | None:
    """The commit checked out in `workspace` (HEAD of its `.git`), or None when there is no
    checkout there or its HEAD cannot be read."""
    git_dir = _git_dir(workspace)
    if git_dir is None:
        return None
    head = (_read(git_dir / "HEAD") or "").strip()
    if _SHA.match(head):
        return head  # detached: actions/checkout of a sha or of refs/pull/N/head
    if head.startswith("ref:"):
        return _resolve_ref(git_dir, head.removeprefix("ref:").strip())
    return None


def evaluated_commit(workspace: Path, github_sha: str | None) -> tuple[str | None, str]:
    """(the commit the evals run on, how it was found): the workspace's checkout, else
    GITHUB_SHA (the dispatched ref's commit)."""
    checked_out = checked_out_commit(workspace)
    if checked_out is not None:
        return checked_out, f"the commit checked out in {workspace}"
    return github_sha, "GITHUB_SHA (no checkout found in the workspace)"


def check_dispatch(
    pull: DispatchedPull,
    *,
    repo: str,
    evaluated: str | None,
    how: str,
    allow_fork: bool,
) -> None:
    """Refuse (InputError, exit 2) a dispatch that would evaluate other code than the PR's
    head, or a fork's head without the opt-in."""
    what = f"workflow_dispatch for PR #{pull.number}"
    if pull.head_repo != repo and not allow_fork:
        fork = pull.head_repo or "a deleted fork"
        raise InputError(
            f"{what}: its head is in {fork}, not in {repo}; a dispatch run has secrets and a "
            "write token, so it does not run a fork's code unless the input "
            "allow-fork-dispatch is true (see docs/security.md)"
        )
    if evaluated != pull.head_sha:
        found = evaluated[:12] if evaluated else "unknown"
        raise InputError(
            f"{what}: {how} is {found}, not the PR's head {pull.head_sha[:12]}; check out "
            f"the PR's head (actions/checkout with ref: refs/pull/{pull.number}/head) "
            "or dispatch without pr-number"
        )
