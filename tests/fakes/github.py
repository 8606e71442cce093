"""A fake GitHub REST API on 127.0.0.1 (shapes from GitHub's REST docs and OpenAPI description), one per test.

It keeps issue comments, check runs, workflow runs, artifacts, pull requests and a small git
object store (commits with parents and dates, blobs, trees, refs: enough for compare, the
commits list and the Git Data API of a data branch) for one repository, pages
lists with `Link` headers (the next URLs use the `/repositories/{id}/…` form, as GitHub's do),
answers GitHub's 422 shapes, serves artifact zips through a 302 to a second port that rejects
any `Authorization` header (400, as Azure blob storage does), and takes injected faults.
With an `OpenAPI` it also checks every JSON request body and its own JSON responses against
GitHub's description; violations are kept in `schema_errors` (and a bad request gets 422).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import re
import threading
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from fakes.openapi import OpenAPI

OWNER, NAME, REPO_ID = "octo", "demo", 1
REPO = f"{OWNER}/{NAME}"
FORK, FORK_ID = "forker/demo", 2  # a fork's repository, unless a test names another
BOT = "github-actions[bot]"
NOW = "2026-11-30T12:00:00Z"

_R = r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"
# (method, regex, route name, OpenAPI path template)
ROUTES = [
    ("GET", _R + r"/issues/(?P<n>\d+)/comments", "list_comments",
     "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("GET", r"/repositories/(?P<repo_id>\d+)/issues/(?P<n>\d+)/comments", "list_comments",
     "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("POST", _R + r"/issues/(?P<n>\d+)/comments", "create_comment",
     "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("PATCH", _R + r"/issues/comments/(?P<id>\d+)", "update_comment",
     "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("DELETE", _R + r"/issues/comments/(?P<id>\d+)", "delete_comment",
     "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("POST", _R + r"/check-runs", "create_check_run", "/repos/{owner}/{repo}/check-runs"),
    ("PATCH", _R + r"/check-runs/(?P<id>\d+)", "update_check_run",
     "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
    ("GET", _R + r"/actions/runs", "list_workflow_runs", "/repos/{owner}/{repo}/actions/runs"),
    ("GET", _R + r"/actions/runs/(?P<run_id>\d+)", "get_workflow_run",
     "/repos/{owner}/{repo}/actions/runs/{run_id}"),
    ("GET", _R + r"/actions/artifacts", "list_artifacts", "/repos/{owner}/{repo}/actions/artifacts"),
    ("GET", _R + r"/actions/artifacts/(?P<id>\d+)/zip", "download_artifact",
     "/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}"),
    ("GET", _R + r"/actions/runs/(?P<run_id>\d+)/artifacts", "list_run_artifacts",
     "/repos/{owner}/{repo}/actions/runs/{run_id}/artifacts"),
    ("GET", _R + r"/actions/workflows/(?P<workflow>[^/]+)/runs", "list_workflow_runs_for",
     "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs"),
    ("GET", r"/user", "get_user", "/user"),
    ("GET", _R + r"/pulls/(?P<n>\d+)", "get_pull", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("GET", _R + r"/compare/(?P<basehead>.+)", "compare",
     "/repos/{owner}/{repo}/compare/{basehead}"),
    ("GET", _R + r"/commits", "list_commits", "/repos/{owner}/{repo}/commits"),
    ("GET", _R + r"/git/ref/(?P<ref>.+)", "get_ref", "/repos/{owner}/{repo}/git/ref/{ref}"),
    ("GET", _R + r"/git/matching-refs/(?P<ref>.+)", "matching_refs",
     "/repos/{owner}/{repo}/git/matching-refs/{ref}"),
    ("POST", _R + r"/git/refs", "create_ref", "/repos/{owner}/{repo}/git/refs"),
    ("PATCH", _R + r"/git/refs/(?P<ref>.+)", "update_ref", "/repos/{owner}/{repo}/git/refs/{ref}"),
    ("POST", _R + r"/git/blobs", "create_blob", "/repos/{owner}/{repo}/git/blobs"),
    ("GET", _R + r"/git/blobs/(?P<sha>[0-9a-f]+)", "get_blob",
     "/repos/{owner}/{repo}/git/blobs/{file_sha}"),
    ("POST", _R + r"/git/trees", "create_tree", "/repos/{owner}/{repo}/git/trees"),
    ("GET", _R + r"/git/trees/(?P<sha>[0-9a-f]+)", "get_tree",
     "/repos/{owner}/{repo}/git/trees/{tree_sha}"),
    ("POST", _R + r"/git/commits", "create_git_commit", "/repos/{owner}/{repo}/git/commits"),
    ("GET", _R + r"/git/commits/(?P<sha>[0-9a-f]+)", "get_git_commit",
     "/repos/{owner}/{repo}/git/commits/{commit_sha}"),
]  # fmt: skip

USER_URLS = [
    "avatar_url",
    "events_url",
    "followers_url",
    "following_url",
    "gists_url",
    "html_url",
    "organizations_url",
    "received_events_url",
    "repos_url",
    "starred_url",
    "subscriptions_url",
    "url",
]
REPO_URLS = [
    "archive_url",
    "assignees_url",
    "blobs_url",
    "branches_url",
    "collaborators_url",
    "comments_url",
    "commits_url",
    "compare_url",
    "contents_url",
    "contributors_url",
    "deployments_url",
    "downloads_url",
    "events_url",
    "forks_url",
    "git_commits_url",
    "git_refs_url",
    "git_tags_url",
    "hooks_url",
    "html_url",
    "issue_comment_url",
    "issue_events_url",
    "issues_url",
    "keys_url",
    "labels_url",
    "languages_url",
    "merges_url",
    "milestones_url",
    "notifications_url",
    "pulls_url",
    "releases_url",
    "stargazers_url",
    "statuses_url",
    "subscribers_url",
    "subscription_url",
    "tags_url",
    "teams_url",
    "trees_url",
    "url",
]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that gave up waiting
            super().handle_error(request, client_address)


@dataclass
class Fault:
    """One injected answer: a status, its headers and a JSON body."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None


def secondary_rate_limit(retry_after: int | None = None, status: int = 403) -> Fault:
    headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
    message = "You have exceeded a secondary rate limit. Please wait a few minutes."
    return Fault(status, headers, {"message": message})


def primary_rate_limit(reset_epoch: int, status: int = 429) -> Fault:
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset_epoch)}
    return Fault(status, headers, {"message": "API rate limit exceeded for installation."})


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    route: str | None
    status: int = 0


def _validation_failed(resource: str, field_: str, code: str, message: str, doc: str) -> Fault:
    return Fault(
        422,
        body={
            "message": "Validation Failed",
            "errors": [{"resource": resource, "code": code, "field": field_, "message": message}],
            "documentation_url": f"https://docs.github.com/rest/{doc}",
            "status": "422",
        },
    )


def _deleted_fork(route: str, error: str) -> bool:
    """A PR whose fork was deleted: GitHub answers `head.repo: null`, as its description of
    the PR in webhooks allows (`nullable`), though not its description of this response."""
    return route == "get_pull" and error.endswith(": head/repo: None is not of type 'object'")


def _not_found() -> Fault:
    return Fault(404, body={"message": "Not Found", "documentation_url": "https://docs.github.com"})


class FakeGitHub:
    def __init__(self, openapi: OpenAPI | None = None):
        self.openapi = openapi
        self.comments: dict[int, dict[str, Any]] = {}
        self.check_runs: dict[int, dict[str, Any]] = {}
        self.workflow_runs: list[dict[str, Any]] = []
        self.artifacts: dict[int, dict[str, Any]] = {}
        self.blobs: dict[int, bytes] = {}
        self.pulls: dict[int, dict[str, Any]] = {}
        # Whom a token acts as (`add_token`); any other token is GITHUB_TOKEN: github-actions[bot].
        self.accounts: dict[str, str] = {}
        # Git objects: commits (history and data-branch commits alike), blobs, flat trees.
        self.commits: dict[str, dict[str, Any]] = {}
        self.git_blobs: dict[str, bytes] = {}
        self.trees: dict[str, dict[str, str]] = {}  # tree sha -> {relative path: blob sha}
        self.refs: dict[str, str] = {}  # "heads/main" -> commit sha
        self._commit_clock = itertools.count(0)
        self.faults: dict[str, deque[Fault]] = defaultdict(deque)
        self.before: dict[str, list[Callable[[], None]]] = defaultdict(list)
        self.log: list[Request] = []
        self.blob_log: list[Request] = []
        self.schema_errors: list[str] = []
        self._ids = itertools.count(1000)
        self._lock = threading.RLock()
        self._api = _Server(("127.0.0.1", 0), self._handler(self._serve_api))
        self._blob = _Server(("127.0.0.1", 0), self._handler(self._serve_blob))
        self._threads = [
            threading.Thread(target=s.serve_forever, args=(0.05,), daemon=True)
            for s in (self._api, self._blob)
        ]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._api.server_address[1]}"

    @property
    def blob_url(self) -> str:
        return f"http://127.0.0.1:{self._blob.server_address[1]}"

    def start(self) -> FakeGitHub:
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        for server in (self._api, self._blob):
            server.shutdown()
            server.server_close()

    # ---- test set-up ------------------------------------------------------------------
    def inject(self, route: str, *faults: int | Fault) -> None:
        """Answer the next calls of `route` with these faults, in order, then normally."""
        for f in faults:
            self.faults[route].append(
                f if isinstance(f, Fault) else Fault(f, body={"message": "x"})
            )

    def add_token(self, token: str, login: str) -> None:
        """Requests with `token` act as `login`: a user (a PAT) or, ending in `[bot]`, an app
        installation (GET /user then answers 403, as GitHub does to installation tokens)."""
        self.accounts[token] = login

    def account(self, req: Request) -> str:
        """The login a request acts as, from its Authorization header."""
        auth = next((v for k, v in req.headers.items() if k.lower() == "authorization"), "")
        return self.accounts.get(auth.partition(" ")[2], BOT)

    def _user(self, login: str) -> dict[str, Any]:
        bot = login.endswith("[bot]")
        uid = 41898282 if login == BOT else int(hashlib.sha1(login.encode()).hexdigest()[:7], 16)
        user = {k: f"https://api.github.com/users/{login}/{k}" for k in USER_URLS}
        user.update(login=login, id=uid, node_id=f"U_{uid}", gravatar_id="")
        user.update(type="Bot" if bot else "User", site_admin=False)
        return user

    def _repo(self, full_name: str = REPO, repo_id: int | None = None) -> dict[str, Any]:
        """A minimal-repository object; another `full_name` is a fork (FORK_ID unless given)."""
        owner, name = full_name.split("/")
        repo_id = repo_id if repo_id is not None else (REPO_ID if full_name == REPO else FORK_ID)
        repo = {k: f"https://api.github.com/repos/{full_name}/{k}" for k in REPO_URLS}
        repo.update(id=repo_id, node_id=f"R_{repo_id}", name=name, full_name=full_name)
        repo.update(owner=self._user(owner), description=None, fork=full_name != REPO)
        repo.update(private=False)
        return repo

    def fork_repo(self, full_name: str = FORK, repo_id: int = FORK_ID) -> dict[str, Any]:
        """A fork's repository object, e.g. for `add_workflow_run(head_repository=...)`."""
        return self._repo(full_name, repo_id)

    def _full_repo(self, full_name: str, repo_id: int | None = None) -> dict[str, Any]:
        repo = self._repo(full_name, repo_id)
        repo.update(
            default_branch="main", forks=0, forks_count=0, has_downloads=True, has_issues=True,
            has_projects=True, has_wiki=True, has_pages=False, homepage=None, language=None,
            archived=False, disabled=False, open_issues=0, open_issues_count=0, license=None,
            pushed_at=NOW, size=1, stargazers_count=0, watchers=0, watchers_count=0,
            created_at=NOW, updated_at=NOW, mirror_url=None,
            clone_url=f"https://github.com/{full_name}.git",
            git_url=f"git://github.com/{full_name}.git",
            ssh_url=f"git@github.com:{full_name}.git", svn_url=f"https://github.com/{full_name}",
        )  # fmt: skip
        return repo

    def add_comment(self, issue: int, body: str, login: str = BOT) -> dict[str, Any]:
        with self._lock:
            cid = next(self._ids)
            comment = {
                "id": cid,
                "node_id": f"IC_{cid}",
                "url": f"{self.url}/repos/{REPO}/issues/comments/{cid}",
                "html_url": f"https://github.com/{REPO}/pull/{issue}#issuecomment-{cid}",
                "issue_url": f"{self.url}/repos/{REPO}/issues/{issue}",
                "body": body,
                "user": self._user(login),
                "created_at": NOW,
                "updated_at": NOW,
                "author_association": "NONE",
                "_issue": issue,
            }
            self.comments[cid] = comment
            return comment

    def add_workflow_run(self, **fields: Any) -> dict[str, Any]:
        rid = next(self._ids)
        base = f"{self.url}/repos/{REPO}/actions/runs/{rid}"
        run = {
            "id": rid, "node_id": f"WFR_{rid}", "name": "agent-eval", "display_title": "x",
            "head_branch": "main", "head_sha": "0" * 39 + "1", "path": ".github/workflows/e.yml",
            "run_number": 1, "run_attempt": 1, "event": "push", "status": "completed",
            "conclusion": "success", "workflow_id": 7, "url": base,
            "html_url": f"https://github.com/{REPO}/actions/runs/{rid}",
            "created_at": NOW, "updated_at": NOW, "head_commit": None,
            "head_repository": self._repo(), "repository": self._repo(), "pull_requests": [],
            "jobs_url": f"{base}/jobs", "logs_url": f"{base}/logs",
            "check_suite_url": f"{base}/suite", "cancel_url": f"{base}/cancel",
            "rerun_url": f"{base}/rerun", "artifacts_url": f"{base}/artifacts",
            "workflow_url": f"{self.url}/repos/{REPO}/actions/workflows/7",
        }  # fmt: skip
        run.update(fields)
        self.workflow_runs.append(run)
        return run

    def add_artifact(
        self,
        name: str,
        data: bytes,
        *,
        expired: bool = False,
        run_id: int | None = None,
        digest: str | bool | None = None,
    ) -> dict[str, Any]:
        """An artifact (of run `run_id` when given); `digest=True` lists its real sha256."""
        aid = next(self._ids)
        artifact = {
            "id": aid,
            "node_id": f"A_{aid}",
            "name": name,
            "size_in_bytes": len(data),
            "url": f"{self.url}/repos/{REPO}/actions/artifacts/{aid}",
            "archive_download_url": f"{self.url}/repos/{REPO}/actions/artifacts/{aid}/zip",
            "expired": expired,
            "created_at": NOW,
            "expires_at": NOW,
            "updated_at": NOW,
            "workflow_run": None
            if run_id is None
            else {"id": run_id, "repository_id": REPO_ID, "head_repository_id": REPO_ID},
        }
        run = next((r for r in self.workflow_runs if r["id"] == run_id), None)
        if run is not None:
            artifact["workflow_run"].update(
                head_repository_id=run["head_repository"]["id"],
                head_branch=run["head_branch"],
                head_sha=run["head_sha"],
            )
        if digest is True:
            artifact["digest"] = "sha256:" + hashlib.sha256(data).hexdigest()
        elif isinstance(digest, str):
            artifact["digest"] = digest
        self.artifacts[aid] = artifact
        self.blobs[aid] = data
        return artifact

    def add_pull(
        self,
        number: int,
        head_sha: str,
        base_sha: str,
        *,
        head_ref: str = "feature",
        base_ref: str = "main",
        labels: tuple[str, ...] | list[str] = (),
        head_repo: str = REPO,
        head_repo_id: int | None = None,
        state: str = "open",
    ) -> dict[str, Any]:
        """A pull request; change `pulls[n]["head"]["sha"]` or `pulls[n]["labels"]` (names or
        label objects) later and GET shows it. `head_repo_id`: its head repository's id (else
        REPO_ID for REPO, FORK_ID for another); `pulls[n]["head"]["repo"] = None`: a PR whose
        fork was deleted."""
        url = f"{self.url}/repos/{REPO}/pulls/{number}"
        html = f"https://github.com/{REPO}/pull/{number}"
        issue = f"{self.url}/repos/{REPO}/issues/{number}"

        def side(ref: str, sha: str, repo: str, repo_id: int | None = None) -> dict[str, Any]:
            owner = repo.split("/")[0]
            return {"label": f"{owner}:{ref}", "ref": ref, "sha": sha,
                    "repo": self._full_repo(repo, repo_id), "user": self._user(owner)}  # fmt: skip

        links = {k: {"href": f"{url}/{k}"} for k in ("comments", "commits", "statuses")}
        links.update(html={"href": html}, issue={"href": issue}, self={"href": url})
        links.update(review_comments={"href": f"{url}/comments"})
        links.update(review_comment={"href": f"{self.url}/repos/{REPO}/pulls/comments{{/number}}"})
        pull = {
            "url": url, "id": 5000 + number, "node_id": f"PR_{number}", "html_url": html,
            "diff_url": f"{html}.diff", "patch_url": f"{html}.patch", "issue_url": issue,
            "commits_url": f"{url}/commits", "review_comments_url": f"{url}/comments",
            "review_comment_url": f"{self.url}/repos/{REPO}/pulls/comments{{/number}}",
            "comments_url": f"{issue}/comments",
            "statuses_url": f"{self.url}/repos/{REPO}/statuses/{head_sha}",
            "number": number, "state": state, "locked": False, "title": f"PR {number}",
            "user": self._user(head_repo.split("/")[0]), "body": None, "labels": list(labels),
            "milestone": None, "created_at": NOW, "updated_at": NOW,
            "closed_at": None if state == "open" else NOW, "merged_at": None,
            "merge_commit_sha": None, "assignee": None,
            "head": side(head_ref, head_sha, head_repo, head_repo_id),
            "base": side(base_ref, base_sha, REPO),
            "_links": links, "author_association": "CONTRIBUTOR", "auto_merge": None,
            "merged": False, "mergeable": True, "mergeable_state": "clean", "merged_by": None,
            "comments": 0, "review_comments": 0, "maintainer_can_modify": False, "commits": 1,
            "additions": 1, "deletions": 0, "changed_files": 1,
        }  # fmt: skip
        self.pulls[number] = pull
        return pull

    def _label(self, label: str | dict[str, Any]) -> dict[str, Any]:
        if isinstance(label, dict):
            return label
        lid = abs(hash(label)) % 10**9
        return {"id": lid, "node_id": f"LA_{lid}", "name": label, "description": None,
                "color": "ededed", "default": False,
                "url": f"{self.url}/repos/{REPO}/labels/{label}"}  # fmt: skip

    # ---- commit graph -----------------------------------------------------------------
    def add_commit(
        self,
        sha: str,
        parents: list[str] | tuple[str, ...] = (),
        *,
        date: str | None = None,
        message: str = "change",
    ) -> str:
        """A commit of the repository's history (its tree is empty); dates rise by default."""
        if date is None:
            tick = next(self._commit_clock)
            date = (datetime(2026, 10, 1, tzinfo=UTC) + timedelta(hours=tick)).strftime(
                "%Y-%m-%dT%H:%M:%SZ"
            )
        with self._lock:
            self.commits[sha] = {"sha": sha, "parents": list(parents), "date": date,
                                 "message": message, "tree": self._store_tree({})}  # fmt: skip
        return sha

    def linear_history(
        self,
        count: int,
        *,
        parent: str | None = None,
        prefix: str = "main",
        branch: str | None = "main",
    ) -> list[str]:
        """`count` commits in a line (oldest first) on top of `parent`; moves `heads/branch`."""
        shas = []
        for i in range(count):
            sha = hashlib.sha1(f"{prefix}-{i}-{parent}".encode()).hexdigest()
            self.add_commit(sha, [parent] if parent else [], message=f"{prefix} {i}")
            shas.append(sha)
            parent = sha
        if branch and shas:
            self.refs[f"heads/{branch}"] = shas[-1]
        return shas

    def _resolve(self, name: str) -> str | None:
        if name in self.commits:
            return name
        return self.refs.get(f"heads/{name}") or self.refs.get(name.removeprefix("refs/"))

    def _log(self, sha: str) -> list[str]:
        """Commits reachable from `sha`, newest first (as `git log`: by date, then walk)."""
        seen, out = {sha}, []
        frontier = [sha]
        while frontier:
            frontier.sort(key=lambda s: self.commits[s]["date"])
            current = frontier.pop()
            out.append(current)
            for parent in self.commits[current]["parents"]:
                if parent in self.commits and parent not in seen:
                    seen.add(parent)
                    frontier.append(parent)
        return out

    def _commit_json(self, sha: str) -> dict[str, Any]:
        c = self.commits[sha]
        api = f"{self.url}/repos/{REPO}"
        who = {"name": "Dev", "email": "dev@example.com", "date": c["date"]}
        return {
            "url": f"{api}/commits/{sha}", "sha": sha, "node_id": f"C_{sha[:8]}",
            "html_url": f"https://github.com/{REPO}/commit/{sha}",
            "comments_url": f"{api}/commits/{sha}/comments",
            "commit": {"url": f"{api}/git/commits/{sha}", "author": who, "committer": who,
                       "message": c["message"], "comment_count": 0,
                       "tree": {"sha": c["tree"], "url": f"{api}/git/trees/{c['tree']}"}},
            "author": None, "committer": None,
            "parents": [{"sha": p, "url": f"{api}/commits/{p}",
                         "html_url": f"https://github.com/{REPO}/commit/{p}"}
                        for p in c["parents"]],
        }  # fmt: skip

    # ---- git objects --------------------------------------------------------------------
    def _store_blob(self, data: bytes) -> str:
        sha = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        self.git_blobs[sha] = data
        return sha

    def _store_tree(self, files: dict[str, str]) -> str:
        """A tree from {path: blob sha}; its subdirectories are stored as trees too."""
        sha = hashlib.sha1(json.dumps(sorted(files.items())).encode()).hexdigest()
        self.trees[sha] = dict(files)
        dirs = {path.split("/")[0] for path in files if "/" in path}
        for d in dirs:
            self._store_tree(
                {p[len(d) + 1 :]: b for p, b in files.items() if p.startswith(d + "/")}
            )
        return sha

    def _subtree_sha(self, files: dict[str, str], d: str) -> str:
        sub = {p[len(d) + 1 :]: b for p, b in files.items() if p.startswith(d + "/")}
        return hashlib.sha1(json.dumps(sorted(sub.items())).encode()).hexdigest()

    def branch_files(self, branch: str) -> dict[str, bytes]:
        """The files at the tip of `branch` (for asserting on a data branch)."""
        head = self.refs.get(f"heads/{branch}")
        if head is None:
            return {}
        return {p: self.git_blobs[b] for p, b in self.trees[self.commits[head]["tree"]].items()}

    def branch_log(self, branch: str) -> list[str]:
        """The commits of `branch`, newest first."""
        head = self.refs.get(f"heads/{branch}")
        return [] if head is None else self._log(head)

    def commit_files(self, branch: str, files: dict[str, bytes], message: str = "data") -> str:
        """Commit `files` (added/replaced) on top of `branch` (created as an orphan)."""
        with self._lock:
            head = self.refs.get(f"heads/{branch}")
            tree = dict(self.trees[self.commits[head]["tree"]]) if head else {}
            tree.update({p: self._store_blob(d) for p, d in files.items()})
            sha = self._new_git_commit(self._store_tree(tree), [head] if head else [], message)
            self.refs[f"heads/{branch}"] = sha
            return sha

    def _new_git_commit(self, tree: str, parents: list[str], message: str) -> str:
        tick = next(self._commit_clock)
        date = (datetime(2026, 10, 1, tzinfo=UTC) + timedelta(hours=tick)).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
        sha = hashlib.sha1(f"{tree}{parents}{message}{tick}".encode()).hexdigest()
        self.commits[sha] = {"sha": sha, "parents": parents, "date": date, "message": message,
                             "tree": tree}  # fmt: skip
        return sha

    def comments_on(self, issue: int) -> list[dict[str, Any]]:
        return [c for c in self.comments.values() if c["_issue"] == issue]

    def calls(self, route: str) -> list[Request]:
        return [r for r in self.log if r.route == route]

    # ---- HTTP plumbing ----------------------------------------------------------------
    def _handler(self, serve: Callable[[BaseHTTPRequestHandler, str], None]) -> type:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                serve(self, self.command)

            do_POST = do_PATCH = do_DELETE = do_PUT = do_GET

        return Handler

    def _send(self, h: BaseHTTPRequestHandler, status: int, body: Any = None, headers=None):
        if isinstance(body, bytes):
            raw = body
        else:
            raw = b"" if body is None else json.dumps(body).encode()
        h.send_response(status)
        for k, v in {
            "x-ratelimit-limit": "1000",
            "x-ratelimit-remaining": "999",
            "x-ratelimit-reset": "1890000000",
            "x-github-api-version-selected": "2022-11-28",
            **({"Content-Type": "application/json"} if raw and not isinstance(body, bytes) else {}),
            **(headers or {}),
        }.items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(raw)))
        h.end_headers()
        h.wfile.write(raw)

    def _read(self, h: BaseHTTPRequestHandler) -> Request:
        parts = urlsplit(h.path)
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        return Request(
            h.command, parts.path, parse_qs(parts.query), dict(h.headers.items()), body, None
        )

    def _serve_blob(self, h: BaseHTTPRequestHandler, method: str) -> None:
        req = self._read(h)
        self.blob_log.append(req)
        if any(k.lower() == "authorization" for k in req.headers):
            xml = (
                b'<?xml version="1.0" encoding="utf-8"?><Error><Code>InvalidAuthenticationInfo'
                b"</Code><Message>Authentication information is not given in the correct format."
                b"</Message></Error>"
            )
            req.status = 400
            return self._send(h, 400, xml, {"Content-Type": "application/xml"})
        match = re.fullmatch(r"/blob/(\d+)", req.path)
        if method != "GET" or not match or int(match[1]) not in self.blobs:
            req.status = 404
            return self._send(h, 404, b"", {})
        req.status = 200
        self._send(h, 200, self.blobs[int(match[1])], {"Content-Type": "application/zip"})

    def _serve_api(self, h: BaseHTTPRequestHandler, method: str) -> None:
        req = self._read(h)
        with self._lock:
            self.log.append(req)
            status, body, headers = self._dispatch(req, method, h.headers.get("Host", ""))
            req.status = status
        self._send(h, status, body, headers)

    def _dispatch(self, req: Request, method: str, host: str) -> tuple[int, Any, dict]:
        for m, pattern, name, path_template in ROUTES:
            match = re.fullmatch(pattern, req.path)
            if m == method and match:
                route, template = name, path_template
                break
        else:
            return 404, _not_found().body, {}
        req.route = route
        for hook in self.before.pop(route, []):
            hook()
        if self.faults[route]:
            fault = self.faults[route].popleft()
            return fault.status, fault.body, fault.headers
        params = match.groupdict()
        if params.get("owner") is not None and f"{params['owner']}/{params['repo']}" != REPO:
            return 404, _not_found().body, {}
        # GitHub's own 422s (limits the description does not state in full) come first.
        limit = self._limit_error(route, req.body)
        if limit is not None:
            return limit.status, limit.body, {}
        if isinstance(req.body, dict) and self.openapi is not None:
            errors = self.openapi.request_errors(method, template, req.body)
            if errors:
                self.schema_errors.extend(errors)
                return 422, {"message": "Invalid request.\n\n" + "\n".join(errors)}, {}
        result = getattr(self, "_" + route)(req, params, host)
        status, body = result[0], result[1]
        headers = result[2] if len(result) > 2 else {}
        if isinstance(body, Fault):
            status, body = body.status, body.body
        elif self.openapi is not None and status < 300:
            body = _public(body)
            errors = self.openapi.response_errors(method, template, status, body)
            self.schema_errors.extend(e for e in errors if not _deleted_fork(route, e))
        return status, _public(body), headers

    def _limit_error(self, route: str, body: Any) -> Fault | None:
        if route in ("create_comment", "update_comment"):
            return self._body_error(body)
        if route in ("create_check_run", "update_check_run"):
            return self._check_run_error(body, creating=route == "create_check_run")
        return None

    def _page(self, req: Request, items: list[Any], host: str, path: str) -> tuple[list, dict]:
        per_page = min(int(req.query.get("per_page", ["30"])[0]), 100)
        page = int(req.query.get("page", ["1"])[0])
        last = max(1, -(-len(items) // per_page))
        links = []
        extra = {k: v[0] for k, v in req.query.items() if k not in ("page", "per_page")}
        for rel, n in (("prev", page - 1), ("next", page + 1), ("first", 1), ("last", last)):
            if 1 <= n <= last and n != page and not (rel in ("first", "last") and last == 1):
                query = urlencode({**extra, "per_page": per_page, "page": n})
                links.append(f'<http://{host}{path}?{query}>; rel="{rel}"')
        chunk = items[(page - 1) * per_page : page * per_page]
        return chunk, ({"Link": ", ".join(links)} if links else {})

    # ---- routes -------------------------------------------------------------------------
    def _list_comments(self, req: Request, p: dict, host: str):
        comments = sorted(self.comments_on(int(p["n"])), key=lambda c: c["id"])
        chunk, headers = self._page(
            req, comments, host, f"/repositories/{REPO_ID}/issues/{p['n']}/comments"
        )
        return 200, chunk, headers

    def _body_error(self, body: Any) -> Fault | None:
        if not isinstance(body, dict) or not isinstance(body.get("body"), str):
            return _validation_failed(
                "IssueComment", "body", "missing_field", "body is missing", "issues/comments"
            )
        if len(body["body"]) > 65536:
            return _validation_failed(
                "IssueComment",
                "data",
                "unprocessable",
                "Body is too long (maximum is 65536 characters)",
                "issues/comments#create-an-issue-comment",
            )
        return None

    def _create_comment(self, req: Request, p: dict, host: str):
        comment = self.add_comment(int(p["n"]), req.body["body"], login=self.account(req))
        return 201, comment, {"Location": comment["url"]}

    def _update_comment(self, req: Request, p: dict, host: str):
        comment = self.comments.get(int(p["id"]))
        if comment is None:
            return 404, _not_found()
        comment.update(body=req.body["body"], updated_at=NOW)
        return 200, comment

    def _delete_comment(self, req: Request, p: dict, host: str):
        if self.comments.pop(int(p["id"]), None) is None:
            return 404, _not_found()
        return 204, None

    def _check_run_error(self, body: Any, creating: bool) -> Fault | None:
        doc = "checks/runs#" + ("create-a-check-run" if creating else "update-a-check-run")
        if not isinstance(body, dict) or (creating and not {"name", "head_sha"} <= body.keys()):
            return _validation_failed(
                "CheckRun", "name", "missing_field", "name and head_sha are required", doc
            )
        output = body.get("output") or {}
        if len(output.get("annotations") or []) > 50:
            return _validation_failed(
                "CheckRun", "annotations", "custom", "maximum 50 annotations per request", doc
            )
        for key in ("summary", "text"):
            if len((output.get(key) or "").encode()) > 65535:
                return _validation_failed(
                    "CheckRun", key, "custom", f"{key} exceeds a maximum bytesize of 65535", doc
                )
        return None

    def _apply_check_run(self, run: dict[str, Any], body: dict[str, Any]) -> None:
        for key in ("name", "details_url", "external_id", "started_at", "completed_at"):
            if key in body:
                run[key] = body[key]
        if body.get("conclusion"):
            run.update(conclusion=body["conclusion"], status="completed")
        elif body.get("status"):
            run["status"] = body["status"]
        if "output" in body:
            out = body["output"]
            kept = run["output"]
            kept.update({k: out.get(k) for k in ("title", "summary", "text") if k in out})
            kept["annotations_count"] += len(out.get("annotations") or [])  # appended
            run.setdefault("_annotations", []).extend(out.get("annotations") or [])

    def _create_check_run(self, req: Request, p: dict, host: str):
        rid = next(self._ids)
        run = {
            "id": rid, "node_id": f"CR_{rid}", "head_sha": req.body["head_sha"], "name": "",
            "url": f"{self.url}/repos/{REPO}/check-runs/{rid}",
            "html_url": f"https://github.com/{REPO}/runs/{rid}", "details_url": None,
            "external_id": None, "status": "queued", "conclusion": None, "started_at": NOW,
            "completed_at": None, "check_suite": {"id": 5}, "app": None, "pull_requests": [],
            "output": {
                "title": None, "summary": None, "text": None, "annotations_count": 0,
                "annotations_url": f"{self.url}/repos/{REPO}/check-runs/{rid}/annotations",
            },
        }  # fmt: skip
        self._apply_check_run(run, req.body)
        self.check_runs[rid] = run
        return 201, run

    def _update_check_run(self, req: Request, p: dict, host: str):
        run = self.check_runs.get(int(p["id"]))
        if run is None:
            return 404, _not_found()
        self._apply_check_run(run, req.body)
        return 200, run

    def _filter_runs(self, req: Request, runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for key in ("branch", "event", "head_sha"):
            if key in req.query:
                runs = [
                    r
                    for r in runs
                    if r["head_branch" if key == "branch" else key] == req.query[key][0]
                ]
        if "status" in req.query:
            want = req.query["status"][0]
            runs = [r for r in runs if want in (r["status"], r["conclusion"])]
        if "created" in req.query:
            runs = [r for r in runs if _date_matches(r["created_at"], req.query["created"][0])]
        return runs

    def _get_workflow_run(self, req: Request, p: dict, host: str):
        run = next((r for r in self.workflow_runs if r["id"] == int(p["run_id"])), None)
        if run is None:
            return 404, _not_found()
        return 200, run

    def _get_user(self, req: Request, p: dict, host: str):
        login = self.account(req)
        if login.endswith("[bot]"):  # an installation token (GITHUB_TOKEN, a GitHub App's)
            doc = "https://docs.github.com/rest/users/users#get-the-authenticated-user"
            body = {"message": "Resource not accessible by integration", "status": "403",
                    "documentation_url": doc}  # fmt: skip
            return 403, Fault(403, body=body)
        user = self._user(login)
        user.update(
            name=None, company=None, blog="", location=None, email=None, hireable=None,
            bio=None, twitter_username=None, public_repos=1, public_gists=0, followers=0,
            following=0, created_at=NOW, updated_at=NOW, private_gists=0,
            total_private_repos=0, owned_private_repos=0, disk_usage=1, collaborators=0,
            two_factor_authentication=True, user_view_type="private",
        )  # fmt: skip
        return 200, user

    def _list_workflow_runs(self, req: Request, p: dict, host: str):
        runs = self._filter_runs(req, self.workflow_runs)
        chunk, headers = self._page(req, runs, host, req.path)
        return 200, {"total_count": len(runs), "workflow_runs": chunk}, headers

    def _list_workflow_runs_for(self, req: Request, p: dict, host: str):
        wanted = p["workflow"]

        def of_workflow(run: dict[str, Any]) -> bool:
            if wanted.isdigit():
                return run["workflow_id"] == int(wanted)
            return run["path"].split("@")[0].rsplit("/", 1)[-1] == wanted

        runs = self._filter_runs(req, [r for r in self.workflow_runs if of_workflow(r)])
        runs = sorted(runs, key=lambda r: (r["created_at"], r["id"]), reverse=True)  # newest first
        chunk, headers = self._page(req, runs, host, req.path)
        return 200, {"total_count": len(runs), "workflow_runs": chunk}, headers

    def _list_run_artifacts(self, req: Request, p: dict, host: str):
        run_id = int(p["run_id"])
        artifacts = [
            a for a in self.artifacts.values() if (a["workflow_run"] or {}).get("id") == run_id
        ]
        if "name" in req.query:
            artifacts = [a for a in artifacts if a["name"] == req.query["name"][0]]
        artifacts.sort(key=lambda a: a["id"], reverse=True)
        chunk, headers = self._page(req, artifacts, host, req.path)
        return 200, {"total_count": len(artifacts), "artifacts": chunk}, headers

    def _get_pull(self, req: Request, p: dict, host: str):
        pull = self.pulls.get(int(p["n"]))
        if pull is None:
            return 404, _not_found()
        shown = dict(pull, labels=[self._label(x) for x in pull["labels"]])
        shown["statuses_url"] = f"{self.url}/repos/{REPO}/statuses/{pull['head']['sha']}"
        return 200, shown

    def _compare(self, req: Request, p: dict, host: str):
        base_name, sep, head_name = p["basehead"].partition("...")
        base, head = self._resolve(base_name), self._resolve(head_name)
        if not sep or base is None or head is None:
            return 404, _not_found()
        base_log, head_log = self._log(base), self._log(head)
        in_base = set(base_log)
        merge_base = next(s for s in head_log if s in in_base) if in_base & set(head_log) else None
        if merge_base is None:  # unrelated histories: GitHub answers 404
            return 404, _not_found()
        below = set(self._log(merge_base))
        ahead = [s for s in head_log if s not in below]
        behind = [s for s in base_log if s not in below]
        status = (
            "identical" if not ahead and not behind
            else "ahead" if not behind
            else "behind" if not ahead
            else "diverged"
        )  # fmt: skip
        api = f"{self.url}/repos/{REPO}"
        html = f"https://github.com/{REPO}/compare/{p['basehead']}"
        return 200, {
            "url": f"{api}/compare/{p['basehead']}", "html_url": html,
            "permalink_url": f"https://github.com/{REPO}/compare/{base}...{head}",
            "diff_url": f"{html}.diff", "patch_url": f"{html}.patch",
            "base_commit": self._commit_json(base),
            "merge_base_commit": self._commit_json(merge_base),
            "status": status, "ahead_by": len(ahead), "behind_by": len(behind),
            "total_commits": len(ahead),
            "commits": [self._commit_json(s) for s in reversed(ahead[:250])], "files": [],
        }  # fmt: skip

    def _list_commits(self, req: Request, p: dict, host: str):
        start = self._resolve(req.query.get("sha", ["main"])[0])
        if start is None:
            return 404, Fault(
                404, body={"message": "No commit found for SHA", "documentation_url": "x"}
            )
        commits = [self._commit_json(s) for s in self._log(start)]
        chunk, headers = self._page(req, commits, host, req.path)
        return 200, chunk, headers

    # -- git data ---------------------------------------------------------------------------
    def _ref_json(self, name: str) -> dict[str, Any]:
        sha = self.refs[name]
        api = f"{self.url}/repos/{REPO}/git"
        return {"ref": f"refs/{name}", "node_id": f"REF_{name}", "url": f"{api}/refs/{name}",
                "object": {"type": "commit", "sha": sha, "url": f"{api}/commits/{sha}"}}  # fmt: skip

    def _get_ref(self, req: Request, p: dict, host: str):
        if p["ref"] not in self.refs:
            return 404, _not_found()
        return 200, self._ref_json(p["ref"])

    def _matching_refs(self, req: Request, p: dict, host: str):
        """Every ref whose name (below refs/) starts with the given one, as GitHub answers."""
        names = [name for name in sorted(self.refs) if name.startswith(p["ref"])]
        return 200, [self._ref_json(name) for name in names]

    def _create_ref(self, req: Request, p: dict, host: str):
        ref, sha = req.body["ref"], req.body["sha"]
        if not ref.startswith("refs/") or ref.count("/") < 2:
            return 422, _validation_failed(
                "Reference", "ref", "invalid", "bad ref", "git/refs"
            ).body
        name = ref.removeprefix("refs/")
        if name in self.refs:
            return 422, _unprocessable("Reference already exists", "git/refs#create-a-reference")
        if sha not in self.commits:
            return 422, _unprocessable("Object does not exist", "git/refs#create-a-reference")
        self.refs[name] = sha
        return 201, self._ref_json(name), {"Location": self._ref_json(name)["url"]}

    def _update_ref(self, req: Request, p: dict, host: str):
        name, sha = p["ref"], req.body["sha"]
        doc = "git/refs#update-a-reference"
        if name not in self.refs:
            return 422, _unprocessable("Reference does not exist", doc)
        if sha not in self.commits:
            return 422, _unprocessable("Object does not exist", doc)
        if not req.body.get("force") and self.refs[name] not in self._log(sha):
            return 422, _unprocessable("Update is not a fast forward", doc)
        self.refs[name] = sha
        return 200, self._ref_json(name)

    def _create_blob(self, req: Request, p: dict, host: str):
        content = req.body["content"]
        if req.body.get("encoding", "utf-8") == "base64":
            data = base64.b64decode(content)
        else:
            data = content.encode()
        sha = self._store_blob(data)
        url = f"{self.url}/repos/{REPO}/git/blobs/{sha}"
        return 201, {"url": url, "sha": sha}, {"Location": url}

    def _get_blob(self, req: Request, p: dict, host: str):
        data = self.git_blobs.get(p["sha"])
        if data is None:
            return 404, _not_found()
        return 200, {
            "sha": p["sha"], "node_id": f"B_{p['sha'][:8]}", "size": len(data),
            "url": f"{self.url}/repos/{REPO}/git/blobs/{p['sha']}",
            "content": base64.encodebytes(data).decode(), "encoding": "base64",
        }  # fmt: skip

    def _tree_json(self, sha: str, recursive: bool) -> dict[str, Any]:
        files = self.trees[sha]
        api = f"{self.url}/repos/{REPO}/git"
        entries: list[dict[str, Any]] = []
        dirs = sorted({"/".join(path.split("/")[:i])
                       for path in files for i in range(1, path.count("/") + 1)})  # fmt: skip
        for d in dirs:
            if recursive or "/" not in d:
                tsha = self._subtree_sha(files, d)
                entries.append({"path": d, "mode": "040000", "type": "tree", "sha": tsha,
                                "url": f"{api}/trees/{tsha}"})  # fmt: skip
        for path, blob in sorted(files.items()):
            if recursive or "/" not in path:
                entries.append({"path": path, "mode": "100644", "type": "blob", "sha": blob,
                                "size": len(self.git_blobs[blob]),
                                "url": f"{api}/blobs/{blob}"})  # fmt: skip
        entries.sort(key=lambda e: e["path"])
        return {"sha": sha, "url": f"{api}/trees/{sha}", "tree": entries, "truncated": False}

    def _get_tree(self, req: Request, p: dict, host: str):
        if p["sha"] not in self.trees:
            return 404, _not_found()
        recursive = req.query.get("recursive", [""])[0] not in ("", "0", "false")
        return 200, self._tree_json(p["sha"], recursive)

    def _create_tree(self, req: Request, p: dict, host: str):
        doc = "git/trees#create-a-tree"
        base = req.body.get("base_tree")
        if base is not None and base not in self.trees:
            return 422, _unprocessable("base_tree is not a valid tree", doc)
        files = dict(self.trees[base]) if base else {}
        for entry in req.body["tree"]:
            path = entry["path"]
            if "content" in entry:
                files[path] = self._store_blob(entry["content"].encode())
            elif entry.get("sha") is None:
                if path not in files:  # GitHub refuses to delete what is not there
                    return 422, _unprocessable(f"GitRPC::BadObjectState: {path}", doc)
                del files[path]
            elif entry.get("type", "blob") == "blob":
                if entry["sha"] not in self.git_blobs:
                    return 422, _unprocessable(f"tree.sha {entry['sha']} is not a valid blob", doc)
                files[path] = entry["sha"]
            else:
                return 422, _unprocessable("the fake stores blob entries only", doc)
        sha = self._store_tree(files)
        return (
            201,
            self._tree_json(sha, False),
            {"Location": f"{self.url}/repos/{REPO}/git/trees/{sha}"},
        )

    def _git_commit_json(self, sha: str) -> dict[str, Any]:
        c = self.commits[sha]
        api = f"{self.url}/repos/{REPO}/git"
        who = {"name": "github-actions[bot]", "email": "bot@example.com", "date": c["date"]}
        return {
            "sha": sha, "node_id": f"C_{sha[:8]}", "url": f"{api}/commits/{sha}",
            "html_url": f"https://github.com/{REPO}/commit/{sha}", "author": who,
            "committer": who, "message": c["message"],
            "tree": {"sha": c["tree"], "url": f"{api}/trees/{c['tree']}"},
            "parents": [{"sha": x, "url": f"{api}/commits/{x}",
                         "html_url": f"https://github.com/{REPO}/commit/{x}"}
                        for x in c["parents"]],
            "verification": {"verified": False, "reason": "unsigned", "signature": None,
                             "payload": None, "verified_at": None},
        }  # fmt: skip

    def _create_git_commit(self, req: Request, p: dict, host: str):
        doc = "git/commits#create-a-commit"
        tree, parents = req.body["tree"], list(req.body.get("parents") or [])
        if tree not in self.trees:
            return 422, _unprocessable("Tree SHA does not exist", doc)
        if any(x not in self.commits for x in parents):
            return 422, _unprocessable("Parent SHA does not exist or is not a commit object", doc)
        sha = self._new_git_commit(tree, parents, req.body["message"])
        return 201, self._git_commit_json(sha), {"Location": self._git_commit_json(sha)["url"]}

    def _get_git_commit(self, req: Request, p: dict, host: str):
        if p["sha"] not in self.commits:
            return 404, _not_found()
        return 200, self._git_commit_json(p["sha"])

    def _list_artifacts(self, req: Request, p: dict, host: str):
        artifacts = list(self.artifacts.values())
        if "name" in req.query:
            artifacts = [a for a in artifacts if a["name"] == req.query["name"][0]]
        chunk, headers = self._page(req, artifacts, host, req.path)
        return 200, {"total_count": len(artifacts), "artifacts": chunk}, headers

    def _download_artifact(self, req: Request, p: dict, host: str):
        artifact = self.artifacts.get(int(p["id"]))
        if artifact is None:
            return 404, _not_found()
        if artifact["expired"]:
            return 410, Fault(
                410, body={"message": "Artifact has expired", "documentation_url": "x"}
            )
        location = f"{self.blob_url}/blob/{artifact['id']}?sig=secret-signature"
        return 302, None, {"Location": location}


def _unprocessable(message: str, doc: str) -> dict[str, Any]:
    """GitHub's plain 422 body (as for a ref update that is not a fast forward)."""
    return {"message": message, "documentation_url": f"https://docs.github.com/rest/{doc}",
            "status": "422"}  # fmt: skip


def _date_matches(value: str, query: str) -> bool:
    """GitHub's `created` search syntax: `>=D`, `>D`, `<=D`, `<D`, `A..B`, or one day `D`.

    ISO 8601 UTC strings compare in order once cut to the length of the bound."""
    if ".." in query:
        low, high = query.split("..", 1)
        return (low == "*" or value[: len(low)] >= low) and (
            high == "*" or value[: len(high)] <= high
        )
    for op, test in ((">=", str.__ge__), ("<=", str.__le__), (">", str.__gt__), ("<", str.__lt__)):
        if query.startswith(op):
            bound = query[len(op) :]
            return test(value[: len(bound)], bound)
    return value[: len(query)] == query


def _public(body: Any) -> Any:
    """A stored object as GitHub shows it: without the fake's own `_` keys."""
    if isinstance(body, dict):
        return {k: _public(v) for k, v in body.items() if not k.startswith("_") or k == "_links"}
    if isinstance(body, list):
        return [_public(v) for v in body]
    return body
