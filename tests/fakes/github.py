"""A fake GitHub REST API on 127.0.0.1 (reference/github.md §1-4, §9), one per test.

It keeps issue comments, check runs, workflow runs and artifacts for one repository, pages
lists with `Link` headers (the next URLs use the `/repositories/{id}/…` form, as GitHub's do),
answers GitHub's 422 shapes, serves artifact zips through a 302 to a second port that rejects
any `Authorization` header (400, as Azure blob storage does), and takes injected faults.
With an `OpenAPI` it also checks every JSON request body and its own JSON responses against
GitHub's description; violations are kept in `schema_errors` (and a bad request gets 422).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from fakes.openapi import OpenAPI

OWNER, NAME, REPO_ID = "octo", "demo", 1
REPO = f"{OWNER}/{NAME}"
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
    ("GET", _R + r"/actions/artifacts", "list_artifacts", "/repos/{owner}/{repo}/actions/artifacts"),
    ("GET", _R + r"/actions/artifacts/(?P<id>\d+)/zip", "download_artifact",
     "/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}"),
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
        self.faults: dict[str, deque[Fault]] = defaultdict(deque)
        self.before: dict[str, list[Callable[[], None]]] = defaultdict(list)
        self.log: list[Request] = []
        self.blob_log: list[Request] = []
        self.schema_errors: list[str] = []
        self._ids = itertools.count(1000)
        self._lock = threading.RLock()
        self._api = ThreadingHTTPServer(("127.0.0.1", 0), self._handler(self._serve_api))
        self._blob = ThreadingHTTPServer(("127.0.0.1", 0), self._handler(self._serve_blob))
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

    def _user(self, login: str) -> dict[str, Any]:
        user = {k: f"https://api.github.com/users/{login}/{k}" for k in USER_URLS}
        user.update(login=login, id=41898282, node_id="MDM6Qm90NDE4OTgyODI=", gravatar_id="")
        user.update(type="Bot", site_admin=False)
        return user

    def _repo(self) -> dict[str, Any]:
        repo = {k: f"https://api.github.com/repos/{REPO}/{k}" for k in REPO_URLS}
        repo.update(id=REPO_ID, node_id="R_1", name=NAME, full_name=REPO, private=False)
        repo.update(owner=self._user(OWNER), description=None, fork=False)
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
        self, name: str, data: bytes, *, expired: bool = False, run_id: int | None = None
    ) -> dict[str, Any]:
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
        self.artifacts[aid] = artifact
        self.blobs[aid] = data
        return artifact

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
            self.schema_errors.extend(self.openapi.response_errors(method, template, status, body))
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
        comment = self.add_comment(int(p["n"]), req.body["body"])
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

    def _list_workflow_runs(self, req: Request, p: dict, host: str):
        runs = self.workflow_runs
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
        chunk, headers = self._page(req, runs, host, req.path)
        return 200, {"total_count": len(runs), "workflow_runs": chunk}, headers

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


def _public(body: Any) -> Any:
    """A stored object as GitHub shows it: without the fake's own `_` keys."""
    if isinstance(body, dict):
        return {k: _public(v) for k, v in body.items() if not k.startswith("_")}
    if isinstance(body, list):
        return [_public(v) for v in body]
    return body
