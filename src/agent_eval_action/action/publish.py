"""Publishing a comparison: report files, job summary, sticky comment, check run, outputs.

Failing to publish never changes the verdict: a comment or check GitHub refuses (a fork's
read-only token, an outage) becomes a warning, the job summary and the uploaded files
still carry the report, and the exit code stays the gate's. A run whose PR head has moved
on posts nothing: the newer run will. The check run is the gate and is posted whatever the
`comment` setting; the sticky comment follows it (report/quiet.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..compare.model import REGRESSIONS, Diff
from ..compare.record import MainRecord, Past
from ..files import write_whole
from ..github.checks import publish_check
from ..github.client import GitHub, GitHubError
from ..github.comments import STAMP_RESERVE, update_sticky, upsert_sticky
from ..report import chart, html, markdown
from ..report.all_clear import all_clear
from ..report.budget import size
from ..report.check import CheckOutput, check_output_of, workflow_commands
from ..report.model import Report
from ..report.quiet import CommentAction, comment_action, news_of
from ..results import Results, Status
from . import outputs
from .event import Event, WorkflowRunEvent
from .run_artifacts import artifact_id
from .settings import Settings

FORK_HINT = (
    "the token cannot write here (a pull request from a fork gets a read-only token); "
    "the fork-safe workflow pair posts it instead: see docs/workflows.md"
)


@dataclass(frozen=True)
class Target:
    """Where the report goes: a PR (number None: none, e.g. a merge queue) and its head."""

    number: int | None
    head_sha: str | None


@dataclass
class Published:
    comment_url: str | None = None
    check_url: str | None = None
    outdated: bool = False


def report_options(
    settings: Settings, relation: str | None, report_url: str | None = None
) -> markdown.Options:
    return markdown.Options(
        check_name=settings.check_name,
        server_url=settings.github.server_url,
        baseline_relation=relation,
        report_url=report_url,
    )


def report_url(settings: Settings, gh: GitHub | None, event: Event) -> str | None:
    """Where the drill-down report.html is, from the event and the API only (never from an
    artifact's contents): under `mode: comment`, the PR run's `report.html` artifact when
    that run uploaded one, else that run's artifacts; otherwise this run's artifacts, where
    the workflow's upload step puts it after this step."""
    repo, run = settings.github.repository, settings.github.run_id
    if isinstance(event, WorkflowRunEvent):
        run = str(event.id)
        if gh is not None and repo is not None:
            try:
                found = artifact_id(gh, repo, event.id, html.FILE_NAME)
            except GitHubError as err:
                outputs.command("warning", f"could not list run {event.id}'s artifacts: {err}")
                found = None
            if found is not None:
                return f"{settings.github.server_url}/{repo}/actions/runs/{run}/artifacts/{found}"
    if repo is None or run is None:
        return None
    return f"{settings.github.server_url}/{repo}/actions/runs/{run}#artifacts"


def write_reports(
    out_dir: Path,
    report: Report,
    *,
    baseline: Results | None = None,
    history: MainRecord | None = None,
    page: bool = True,
    room: int = markdown.SUMMARY_LIMIT,
) -> tuple[str, str]:
    """diff.json, report.md (the comment), summary.md and report.html (unless `page` is
        False) in out_dir; returns the markdown. The job summary ends with the pass rate per axis
        over main's history (report/chart.py) when there is a baseline to draw it from; it fits
    in `room` bytes (what the job summary has left: the cost preview is above it).

        The comment leaves room for the line that ties it to its id (github/comments.py)."""
    diff, results = report.diff, report.current
    comment = markdown.comment_of(report, limit=markdown.COMMENT_LIMIT - STAMP_RESERVE)
    known = [*(history.past if history else ()), *([Past.header(baseline)] if baseline else [])]
    trend = chart.mermaid(known, results)
    trend = "\n" + trend if trend else ""
    summary = markdown.summary_of(report, limit=room - size(trend))
    summary += trend
    diff.write(out_dir / "diff.json")
    write_whole(out_dir / "report.md", comment)
    write_whole(out_dir / "summary.md", summary)
    if page:
        html.write(
            out_dir / html.FILE_NAME,
            html.render(diff, results, report.options, baseline=baseline, history=history),
        )
    return comment, summary


def _warn(what: str, err: GitHubError) -> None:
    hint = FORK_HINT if err.status in (403, 404) else "the report is in the job summary"
    outputs.command("warning", f"could not {what}: {err}; {hint}")


def publish(
    gh: GitHub | None,
    settings: Settings,
    target: Target,
    report: Report,
    comment_body: str,
    conclusion_failed: bool,
) -> Published:
    """Post the comment and the check run where the settings and the token allow."""
    diff, published = report.diff, Published()
    repo = settings.github.repository
    if gh is None or repo is None:
        print("no github-token: the report is in the job summary only")
        _fallback_annotations(diff)
        return published
    if target.number is not None:
        published.comment_url = _comment(gh, repo, target.number, settings, report, comment_body)
    if target.head_sha is not None:
        run_url = None
        if settings.github.run_id:
            run_url = f"{settings.github.server_url}/{repo}/actions/runs/{settings.github.run_id}"
        try:
            check = publish_check(
                gh,
                repo,
                name=settings.check_name,
                head_sha=target.head_sha,
                conclusion="failure" if conclusion_failed else "success",
                output=_repo_relative(check_output_of(report), settings),
                details_url=run_url,
            )
            published.check_url = check.get("html_url")
        except GitHubError as err:
            _warn("create the check run", err)
            _fallback_annotations(diff)
    return published


def _comment(
    gh: GitHub, repo: str, number: int, settings: Settings, report: Report, body: str
) -> str | None:
    """The sticky comment as the `comment` setting has it for this Diff (report/quiet.py):
    the report posted, an earlier comment edited to the all-clear line, or nothing. Its
    URL when there is one now."""
    when = settings.comment
    action = comment_action(news_of(report.diff), when)
    if action == CommentAction.NOTHING:
        print(f"comment: {when}: none posted")
        return None
    marker = markdown.marker(settings.check_name)
    try:
        if action == CommentAction.POST:
            comment: dict[str, Any] | None = upsert_sticky(gh, repo, number, body, marker)
        else:
            comment = update_sticky(gh, repo, number, all_clear(report, when), marker)
    except GitHubError as err:
        _warn("post the PR comment", err)
        return None
    if comment is None:
        print(f"comment: {when}: nothing to post, and no earlier comment to clear")
        return None
    url = comment.get("html_url")
    print(f"comment{' (all clear)' if action == CommentAction.ALL_CLEAR else ''}: {url}")
    return str(url) if url else None


def _repo_relative(output: CheckOutput, settings: Settings) -> CheckOutput:
    """Annotation paths as the Checks API wants them: relative to the repository root (an
    eval file given by absolute path lies below the workspace, the checkout)."""
    workspace = Path(settings.github.workspace or Path.cwd()).resolve()
    for annotation in output.annotations:
        path = Path(annotation["path"])
        if path.is_absolute() and path.resolve().is_relative_to(workspace):
            annotation["path"] = path.resolve().relative_to(workspace).as_posix()
    return output


def _fallback_annotations(diff: Diff) -> None:
    """Without a check run, the annotations go to the log as workflow commands."""
    for line in workflow_commands(diff):
        print(line)


def output_values(
    diff: Diff | None,
    results: Results | None,
    settings: Settings,
    out_dir: Path,
    *,
    shown: Path,
    passed: bool,
    comment_url: str | None = None,
    baseline_sha: str | None = None,
) -> dict[str, str]:
    """The action's outputs (docs/action.md, "Outputs"): the files' paths as they will be
    in output-dir (`shown`) once the run folder `out_dir` is published."""
    cases = diff.cases if diff is not None else []
    regressed = [c for c in cases if any(a in REGRESSIONS for a in c.axes.values())]
    failed = [c for c in results.cases if c.status != Status.PASSED] if results else []
    report = out_dir / "report.md"
    return {
        "verdict": "pass" if passed else "fail",
        "regressions": str(len(regressed)),
        "trajectory-regressions": str(diff.verdict.trajectory_regressions if diff else 0),
        "response-regressions": str(diff.verdict.response_regressions if diff else 0),
        "failed-cases": str(len(failed)),
        "results-path": str(shown / "results.json") if results else "",
        "report-path": str(shown / report.name) if report.exists() else "",
        "comment-url": comment_url or "",
        "baseline-sha": baseline_sha or "",
    }
