"""Commit ancestry through the REST API: where a PR branched off, and the history before it.

A baseline must come from the commit a PR branched from (or an older one), never from a newer
commit of the base branch, which would blame the PR for changes it does not contain.
"""

from __future__ import annotations

from urllib.parse import quote

from .client import GitHub

PAGE_SIZE = 100
EXTRA_PAGES = 3  # for merged side branches that sit between first parents in the list


def merge_base(gh: GitHub, repo: str, base_sha: str, head_sha: str) -> str:
    """The best common ancestor of two commits (compare API `BASE...HEAD`)."""
    basehead = quote(f"{base_sha}...{head_sha}", safe=".")
    data = gh.get(f"/repos/{repo}/compare/{basehead}", params={"per_page": 1})
    return data["merge_base_commit"]["sha"]


def ancestors(gh: GitHub, repo: str, sha: str, limit: int) -> list[str]:
    """`sha` and its first-parent ancestors, nearest first, at most `limit` of them.

    The commits list is in date order and also holds the commits of merged side branches;
    following first parents keeps the walk on the branch's own history (where push runs
    are). Pages are bounded, so a very long side branch may cut the walk short."""
    if limit <= 1:
        return [sha][:limit]
    parents: dict[str, str | None] = {}
    chain = [sha]
    max_pages = -(-limit // PAGE_SIZE) + EXTRA_PAGES
    params = {"sha": sha, "per_page": PAGE_SIZE}
    pages = gh.paginate(f"/repos/{repo}/commits", params)
    seen_pages = 0
    for index, commit in enumerate(pages):
        if index % PAGE_SIZE == 0:
            seen_pages += 1
            if seen_pages > max_pages:
                break
        first = commit.get("parents") or []
        parents[commit["sha"]] = first[0]["sha"] if first else None
        while len(chain) < limit and chain[-1] in parents:
            nxt = parents[chain[-1]]
            if nxt is None:
                return chain
            chain.append(nxt)
        if len(chain) >= limit:
            break
    return chain
