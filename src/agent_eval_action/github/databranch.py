"""Branch mode: Results kept as `results/<sha>.json` on a data branch, which keeps history.

Unlike artifacts, nothing expires, so older Results stay available for trends. Writing uses
the Git Data API (blob, tree on top of the current tree, commit, ref update), so no checkout
is needed; the branch starts as an orphan commit, unrelated to the code. `index.json` at the
branch root lists the stored commits newest first: it orders them for pruning to `keep` and
for trends. Two writers racing (two pushes in quick succession) are resolved by the ref's
fast-forward check: the loser re-reads the branch and tries again, a bounded number of times.

Reading walks the same ancestors as artifact mode (commits.py) and checks each file as a
baseline (compare/loading.py); anything unusable is skipped with its reason kept.

Anyone whose workflow run may write contents (a same-repository PR's run included) can
commit to the branch, and every such commit comes from `github-actions[bot]`. So a file
counts only when the run it records (`source.run_id`, its `source.sha` and `source.repo`)
is, asked of the API, a successful push run of the baseline workflow on the baseline
branch, of this repository, for that very commit: as artifact mode demands of its runs.
Other files are refused, and said so (docs/action.md, "The baseline").
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..compare.sanity import Bounded
from ..files import write_whole
from ..results import Results
from .baseline import (
    HISTORY,
    MAX_COMMITS,
    SKIPPED,
    BaselineFound,
    NoBaseline,
    Older,
    baseline_path,
    cannot_see,
    commits_to_try,
    describe,
    install,
    keep_older,
    none_found,
    push_run_problem,
    short,
)
from .client import GitHub, GitHubError

DATA_BRANCH = "agent-eval-data"
RESULTS_DIR = "results"
INDEX = "index.json"
INDEX_SCHEMA = "agent-eval-data/1"
KEEP = 500  # Results files kept in the branch's tree (older ones stay in its git history)
MAX_WRITE_TRIES = 5  # ref updates attempted when other writers keep moving the branch
MAX_RESULTS_BYTES = 100 * 1024 * 1024  # GitHub's blob API limit
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_RETRIED_CREATES = 2  # git objects are content-addressed: creating one twice is harmless


class DataBranchError(Exception):
    """The data branch could not be written (e.g. other writers kept winning the race)."""


def results_path(sha: str) -> str:
    if not _SHA.fullmatch(sha):
        raise ValueError(f"not a full commit sha: {sha!r}")
    return f"{RESULTS_DIR}/{sha}.json"


def _ref(branch: str) -> str:
    return "heads/" + quote(branch, safe="/")


def _head(gh: GitHub, repo: str, branch: str) -> str | None:
    """The branch's commit, or None when the branch does not exist."""
    try:
        return gh.get(f"/repos/{repo}/git/ref/{_ref(branch)}")["object"]["sha"]
    except GitHubError as exc:
        if exc.status == 404:
            return None
        raise


def _tree_of(gh: GitHub, repo: str, commit: str) -> str:
    return gh.get(f"/repos/{repo}/git/commits/{commit}")["tree"]["sha"]


def _entries(gh: GitHub, repo: str, tree: str, *, recursive: bool = False) -> dict[str, Any]:
    """A tree's entries by path (with `truncated` stored under the key None when set)."""
    params = {"recursive": "1"} if recursive else None
    data = gh.get(f"/repos/{repo}/git/trees/{tree}", params=params)
    entries: dict[Any, Any] = {e["path"]: e for e in data.get("tree", [])}
    if data.get("truncated"):
        entries[None] = True
    return entries


def _blob(gh: GitHub, repo: str, sha: str) -> bytes:
    data = gh.get(f"/repos/{repo}/git/blobs/{sha}")
    if data.get("encoding") == "base64":
        return base64.b64decode(data.get("content", ""))
    return str(data.get("content", "")).encode()


def _create(gh: GitHub, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST a git object, repeated once after an outage (it is content-addressed)."""
    for attempt in range(_RETRIED_CREATES):
        try:
            return gh.post(path, body)
        except GitHubError as exc:
            outage = exc.status is None or exc.status >= 500
            if not outage or attempt + 1 == _RETRIED_CREATES:
                raise
    raise AssertionError("unreachable")


def _read_index(gh: GitHub, repo: str, entries: dict[str, Any]) -> list[dict[str, Any]]:
    """The stored commits, newest first; an unreadable index counts as empty."""
    entry = entries.get(INDEX)
    if entry is None:
        return []
    try:
        data = json.loads(_blob(gh, repo, entry["sha"]))
    except (ValueError, binascii.Error):
        return []
    listed = data.get("results") if isinstance(data, dict) else None
    if not isinstance(listed, list):
        return []
    return [e for e in listed if isinstance(e, dict) and isinstance(e.get("sha"), str)]


def store_results(
    gh: GitHub,
    repo: str,
    *,
    data_branch: str = DATA_BRANCH,
    sha: str,
    data: bytes,
    keep: int = KEEP,
    now: datetime | None = None,
) -> str:
    """Commit `data` as results/<sha>.json on the data branch; returns the new commit.

    Creates the branch (an orphan commit) when it does not exist, replaces an earlier file
    for the same sha, and drops the oldest files beyond `keep` from the tree. Raises
    GitHubError when GitHub fails, DataBranchError when racing writers win every try."""
    path = results_path(sha)
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    blob = _create(
        gh,
        f"/repos/{repo}/git/blobs",
        {"content": base64.b64encode(data).decode(), "encoding": "base64"},
    )["sha"]
    last = ""
    for _ in range(MAX_WRITE_TRIES):
        head = _head(gh, repo, data_branch)
        base_tree = _tree_of(gh, repo, head) if head else None
        entries = _entries(gh, repo, base_tree, recursive=True) if base_tree else {}
        index = [e for e in _read_index(gh, repo, entries) if e["sha"] != sha]
        index.insert(0, {"sha": sha, "stored_at": stamp})
        kept, dropped = index[: max(keep, 1)], index[max(keep, 1) :]
        changes: list[dict[str, Any]] = [
            {"path": path, "mode": "100644", "type": "blob", "sha": blob},
            {
                "path": INDEX,
                "mode": "100644",
                "type": "blob",
                "content": json.dumps({"schema": INDEX_SCHEMA, "results": kept}, indent=1),
            },
        ]
        for old in dropped:
            old_path = f"{RESULTS_DIR}/{old['sha']}.json"
            if old_path in entries and None not in entries:  # delete only what is there
                changes.append({"path": old_path, "mode": "100644", "type": "blob", "sha": None})
        body: dict[str, Any] = {"tree": changes}
        if base_tree:
            body["base_tree"] = base_tree
        tree = _create(gh, f"/repos/{repo}/git/trees", body)["sha"]
        commit = _create(
            gh,
            f"/repos/{repo}/git/commits",
            {"message": f"agent-eval results for {sha}", "tree": tree,
             "parents": [head] if head else []},
        )["sha"]  # fmt: skip
        try:
            if head:
                gh.patch(f"/repos/{repo}/git/refs/{_ref(data_branch)}", {"sha": commit})
            else:
                gh.post(
                    f"/repos/{repo}/git/refs", {"ref": f"refs/heads/{data_branch}", "sha": commit}
                )
            return commit
        except GitHubError as exc:
            if exc.status != 422:  # 422: not a fast forward, or created meanwhile
                raise
            last = exc.message
    raise DataBranchError(
        f"could not update {data_branch} in {MAX_WRITE_TRIES} tries (last: {last})"
    )


def _stored(gh: GitHub, repo: str, data_branch: str) -> tuple[dict[str, Any] | None, str]:
    """The data branch's results/ entries by file name, or (None, why there are none)."""
    try:
        head = _head(gh, repo, data_branch)
        if head is None:
            return None, f"the data branch {data_branch} does not exist yet"
        root = _entries(gh, repo, _tree_of(gh, repo, head))
        folder = root.get(RESULTS_DIR)
        if folder is None or folder.get("type") != "tree":
            return None, f"the data branch {data_branch} holds no {RESULTS_DIR}/ folder"
        return _entries(gh, repo, folder["sha"]), ""
    except GitHubError as exc:
        if cannot_see(exc):
            return (
                None,
                f"the data branch {data_branch} could not be read ({exc.status}: {exc.message})",
            )
        raise


class _Runs:
    """Vouches for stored Results: the run they record must be a successful push run of
    `workflow` on `branch` of this repository, for the commit they are stored under."""

    def __init__(
        self, gh: GitHub, repo: str, branch: str, workflow: str | None, repository_id: int | None
    ):
        self.gh, self.repo, self.branch = gh, repo, branch
        self.workflow, self.repository_id = workflow, repository_id
        self._runs: dict[str, dict[str, Any] | str] = {}

    def _run(self, run_id: str) -> dict[str, Any] | str:
        """The run, or why it cannot be read; raises when GitHub fails."""
        if run_id not in self._runs:
            try:
                self._runs[run_id] = self.gh.get(f"/repos/{self.repo}/actions/runs/{run_id}")
            except GitHubError as exc:
                if not cannot_see(exc):
                    raise
                if exc.status == 404:
                    self._runs[run_id] = f"it names run {run_id}, which {self.repo} does not have"
                else:
                    self._runs[run_id] = (
                        f"its run {run_id} could not be read ({exc.status}: {exc.message}); "
                        "checking it needs `permissions: actions: read`"
                    )
        return self._runs[run_id]

    def problem(self, sha: str, results: Results) -> str | None:
        """Why the Results stored for `sha` are not vouched for, or None."""
        source = results.source
        if source.sha != sha:
            return f"it holds the results of {short(str(source.sha))}, not of {short(sha)}"
        if source.repo is not None and source.repo.lower() != self.repo.lower():
            return f"it holds results from {source.repo}"
        run_id = (source.run_id or "").strip()
        if not run_id.isdecimal() or not run_id.isascii():
            return "it names no run (source.run_id) that wrote it"
        run = self._run(run_id)
        if isinstance(run, str):
            return run
        problem = push_run_problem(
            run, repo=self.repo, sha=sha, branch=self.branch, workflow=self.workflow,
            repository_id=self.repository_id,
        )  # fmt: skip
        return None if problem is None else f"its {problem}"


def find_branch_baseline(
    gh: GitHub,
    repo: str,
    *,
    start_sha: str,
    head_sha: str | None = None,
    branch: str,
    workflow: str | None,
    repository_id: int | None = None,
    data_branch: str = DATA_BRANCH,
    dest: Path,
    max_commits: int = MAX_COMMITS,
    history: int = HISTORY,
    bounded: Bounded | None = None,
) -> BaselineFound | NoBaseline:
    """The baseline stored on the data branch for the merge-base of `start_sha` and
    `head_sha` (a PR), or for `start_sha` itself, else for the nearest ancestor that has one.

    Only Results whose recorded run is a successful push run of `workflow` (file name or id;
    None: any) on `branch` of this repository (`repository_id`, else by name) for that
    commit count; the others are refused (`refused`, and the reasons). Writes the baseline
    to `dest`/results.json and up to `history` older ones beside it (as
    find_artifact_baseline). Raises GitHubError only when GitHub fails."""
    stored, why = _stored(gh, repo, data_branch)
    if stored is None:
        return NoBaseline(why)
    walk_from = commits_to_try(gh, repo, start_sha, head_sha, max_commits)
    if isinstance(walk_from, NoBaseline):
        return walk_from
    anchor, chain = walk_from
    pull = head_sha is not None
    skipped: list[str] = []
    refused: list[str] = []
    runs = _Runs(gh, repo, branch, workflow, repository_id)
    found: tuple[int, str, Results] | None = None
    older = Older()
    tries = 0
    for distance, sha in enumerate(chain):
        entry = stored.get(f"{sha}.json")
        if entry is None:
            continue
        if (found is not None and len(older.paths) >= history) or tries >= history + 1 + SKIPPED:
            break
        tries += 1
        what = f"{data_branch}:{RESULTS_DIR}/{short(sha)}….json"
        size = entry.get("size") or 0
        if size > MAX_RESULTS_BYTES:
            skipped.append(f"{what} is {size} bytes, over the {MAX_RESULTS_BYTES}-byte cap")
            continue
        try:
            data = _blob(gh, repo, entry["sha"])
        except GitHubError as exc:
            if not cannot_see(exc):
                raise
            skipped.append(f"{what} could not be read ({exc.status}: {exc.message})")
            continue
        except binascii.Error:
            skipped.append(f"{what} is not valid base64")
            continue
        path = baseline_path(dest, 0 if found is None else len(older.paths) + 1)
        write_whole(path, data)
        del data
        results, unusable = install(path, what, older=found is not None)
        problem = None if results is None else runs.problem(sha, results)
        if problem is not None:
            path.unlink(missing_ok=True)
            refused.append(f"{what} was refused: {problem}")
            skipped.append(refused[-1])
        elif results is None:
            skipped.append(str(unusable))
        elif found is None:
            found = (distance, sha, results)
        elif keep_older(older, path, results, what, bounded, skipped):
            del results  # folded: let go before the next one is read
    if found is not None:
        distance, sha, results = found
        return BaselineFound(
            path=baseline_path(dest),
            sha=sha,
            distance=distance,
            results=results,
            relation=describe(sha, anchor, distance, pull=pull, what="stored results"),
            history=older.paths,
            older=older.record,
            refused=refused,
        )
    none = none_found(
        anchor, pull, chain, skipped, f"the data branch {data_branch} has no results for {{scope}}"
    )
    return NoBaseline(none.reason, refused)
