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


def commit_link(source: Source, options: Options) -> Md:
    sha = source.sha or ""
    if not _SHA.match(sha):
        return escape.code(sha) if sha else Md("")
    label = f"`{sha[:7]}`"
    server = _server(options)
    if server and source.repo and _REPO.match(source.repo):
        return Md(f"[{label}]({server}/{source.repo}/commit/{sha})")
    return Md(label)


def run_link(source: Source, options: Options, label: str) -> Md:
    server = _server(options)
    if not (server and source.repo and _REPO.match(source.repo)):
        return Md("")
    if not (source.run_id and _RUN_ID.match(source.run_id)):
        return Md("")
    return Md(f"[{label}]({server}/{source.repo}/actions/runs/{source.run_id})")


def branch(ref: str | None) -> str | None:
    if not ref:
        return None
    return ref.removeprefix("refs/heads/")
