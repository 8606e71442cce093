"""The pull requests of a merge group, for the accept label (docs/action.md, "Merge groups").

GitHub's merge queue tests each queued PR on a branch of its own,
`gh-readonly-queue/<base>/pr-<N>-<sha>`, whose commit holds the base branch, the PRs queued
ahead of it and PR N. The PRs of a group are therefore:

- N, from the group's own branch (the event's `merge_group.head_ref`);
- every PR M that has a queue branch for the same base whose commit this group's head
  contains (the compare API says `ahead` or `identical`): M is queued ahead of N, and its
  changes are in what this run evaluated.

Their labels are read as they are now (GET /pulls/N). A PR whose labels cannot be read
(no `pull-requests: read`) does not count, said as a warning; so does a queue that cannot be
listed (then only N counts).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from ..github.client import GitHub, GitHubError
from ..github.pulls import get_pull
from . import outputs
from .event import QUEUE_PREFIX, MergeGroupEvent, queue_pr_number


@dataclass(frozen=True)
class GroupPull:
    number: int
    labels: tuple[str, ...]


def _warn(what: str, err: GitHubError) -> None:
    outputs.command(
        "warning",
        f"merge group: cannot read {what} ({err.status}); give the job `pull-requests: read` "
        "and `contents: read`",
    )


def group_numbers(gh: GitHub, repo: str, event: MergeGroupEvent) -> list[int]:
    """The PRs of the group: its own (from its branch) first, then those queued ahead."""
    own = event.pr_number
    numbers = [own] if own is not None else []
    base = event.base_ref.removeprefix("refs/heads/")
    prefix = f"heads/{QUEUE_PREFIX}{base}/pr-"  # the refs that start with it
    try:
        refs = gh.get(f"/repos/{repo}/git/matching-refs/{quote(prefix)}")
    except GitHubError as err:
        if err.status not in (403, 404, 409):
            raise
        _warn("the merge queue's branches", err)
        return numbers
    for ref in refs if isinstance(refs, list) else []:
        name = str(ref.get("ref", "")) if isinstance(ref, dict) else ""
        sha = str((ref.get("object") or {}).get("sha", "")) if isinstance(ref, dict) else ""
        number = queue_pr_number(name)
        if number is None or number in numbers or not sha:
            continue
        try:
            status = gh.get(f"/repos/{repo}/compare/{sha}...{event.head_sha}").get("status")
        except GitHubError as err:
            if err.status not in (403, 404):
                raise
            continue  # unrelated histories (GitHub answers 404): not in this group
        if status in ("ahead", "identical"):
            numbers.append(number)
    return numbers


def group_pulls(gh: GitHub, repo: str, event: MergeGroupEvent) -> list[GroupPull]:
    """The group's PRs with their labels as of now (those that can be read)."""
    pulls = []
    for number in group_numbers(gh, repo, event):
        try:
            pull = get_pull(gh, repo, number)
        except GitHubError as err:
            if err.status not in (403, 404):
                raise
            _warn(f"PR #{number}", err)
            continue
        pulls.append(GroupPull(pull.number, pull.labels))
    return pulls
