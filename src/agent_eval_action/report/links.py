"""Links to commits and workflow runs, made only from values that look like what GitHub gives.

A Results file names its repository, commit and run; a hostile one could put markdown
or a phishing URL there, so anything that does not match GitHub's own shapes is shown as
escaped code or left out, never linked.
"""

from __future__ import annotations

import re

from ..results import Source
from . import escape
from .escape import Md
from .model import Options

_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_SHA = re.compile(r"^[0-9a-f]{7,64}$")
_RUN_ID = re.compile(r"^[0-9]{1,20}$")
_SERVER = re.compile(r"^https?://[A-Za-z0-9.:\[\]-]+(/[A-Za-z0-9._~/-]*)?$")


def _server(options: Options) -> str | None:
    url = options.server_url.rstrip("/")
    return url if _SERVER.match(url) else None


def commit_url(source: Source, options: Options) -> str | None:
    """The commit's page, when the server, repository and commit look like GitHub's."""
    server, sha = _server(options), source.sha or ""
    if server and _SHA.match(sha) and source.repo and _REPO.match(source.repo):
        return f"{server}/{source.repo}/commit/{sha}"
    return None


def run_url(source: Source, options: Options) -> str | None:
    """The workflow run's page, when the server, repository and run id look like GitHub's."""
    server = _server(options)
    if not (server and source.repo and _REPO.match(source.repo)):
        return None
    if not (source.run_id and _RUN_ID.match(source.run_id)):
        return None
    return f"{server}/{source.repo}/actions/runs/{source.run_id}"


def short_sha(sha: str | None) -> str | None:
    """A commit's first 7 hex digits, when it is one (never text a Results file made up)."""
    return sha[:7] if sha and _SHA.match(sha) else None


def commit_link(source: Source, options: Options) -> Md:
    sha = source.sha or ""
    if not _SHA.match(sha):
        return escape.code(sha) if sha else Md("")
    label = f"`{sha[:7]}`"
    url = commit_url(source, options)
    return Md(f"[{label}]({url})") if url else Md(label)


def run_link(source: Source, options: Options, label: str) -> Md:
    url = run_url(source, options)
    return Md(f"[{label}]({url})") if url else Md("")


# The drill-down report's address (Options.report_url): a run's artifacts, or one artifact
# of it, on the server; the action builds it from the event and the API, never an artifact.
_REPORT = re.compile(
    r"^https?://[A-Za-z0-9.:\[\]-]+(/[A-Za-z0-9._~-]+)*/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+"
    r"/actions/runs/[0-9]{1,20}(#artifacts|/artifacts/[0-9]{1,20})$"
)


def report_link(options: Options) -> Md:
    """Where the drill-down report.html is: the file itself once it is uploaded (the
    fork-safe comment job finds it), else the run's artifacts it is uploaded to."""
    url = options.report_url
    if not url or not _REPORT.match(url):
        return Md("")
    if url.endswith("#artifacts"):
        return Md(f"`report.html` in [the run's artifacts]({url})")
    return Md(f"[`report.html`]({url})")


def branch(ref: str | None) -> str | None:
    if not ref:
        return None
    return ref.removeprefix("refs/heads/")
