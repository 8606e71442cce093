"""Check runs (docs/action.md, "Publishing"): one completed check run on the PR's head commit.

The Checks API takes at most 50 annotations per request and appends those of each update,
so the first batch goes with the creation and the rest follow as updates; every update
repeats the output's title and summary, which the API requires with `output`.
"""

from __future__ import annotations

from typing import Any, Literal

from ..report.check import CheckOutput
from .client import GitHub

Conclusion = Literal["success", "failure", "neutral", "cancelled", "action_required"]


def publish_check(
    gh: GitHub,
    repo: str,
    *,
    name: str,
    head_sha: str,
    conclusion: Conclusion,
    output: CheckOutput,
    details_url: str | None = None,
) -> dict[str, Any]:
    """Create the completed check run with all its annotations; returns the check run."""
    batches = output.batches() or [[]]
    base = {"title": output.title, "summary": output.summary, "text": output.text}
    body: dict[str, Any] = {
        "name": name,
        "head_sha": head_sha,
        "status": "completed",
        "conclusion": conclusion,
        "output": {**base, "annotations": batches[0]},
    }
    if details_url:
        body["details_url"] = details_url
    run = gh.post(f"/repos/{repo}/check-runs", body)
    for batch in batches[1:]:
        run = gh.patch(
            f"/repos/{repo}/check-runs/{run['id']}", {"output": {**base, "annotations": batch}}
        )
    return run
