"""The drill-down report under the action, end to end against the fake GitHub: report.html
written beside results.json, the comment's link to it (this run's artifacts; under mode
comment the PR run's `report.html` artifact itself), and the job summary's chart of the
pass rate per axis over main's baselines."""

from __future__ import annotations

import json
import re

import pytest
from helpers.action_harness import (
    REPO,
    Runner,
    fork_run_completed,
    main_with_baseline,
    pr_payload,
    zipped,
)

pytestmark = pytest.mark.e2e

LINK = "**Every case, run and turn:**"


def _older(baseline: bytes, sha: str) -> bytes:
    """The baseline as an older push run recorded it: another commit, a day earlier, one
    case failing its trajectory."""
    data = json.loads(baseline)
    data["source"] = {**(data.get("source") or {}), "sha": sha, "repo": REPO}
    data["created_at"] = "2026-01-01T00:00:00Z"
    case = data["cases"][0]
    metric = case["metrics"]["tool_trajectory_avg_score"]
    metric.update(score=0.0, status="failed", runs=[0.0], invocations=[[0.0]])
    case["status"] = "failed"
    return json.dumps(data).encode()


def test_a_pr_run_writes_report_html_links_it_and_charts_mains_history(
    runner: Runner, baseline_results: bytes
):
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    older = fake.add_workflow_run(
        head_sha=main[1], path=".github/workflows/agent-eval.yml", event="push"
    )
    fake.add_artifact(
        "agent-eval-results",
        zipped({"results.json": _older(baseline_results, main[1])}),
        run_id=older["id"],
        digest=True,
    )
    fake.add_pull(7, head, main[2])
    done = runner.run(runner.env("pull_request", pr_payload(7, head, main[2])))
    assert done.returncode == 1, done.stderr

    page = (runner.out_dir / "report.html").read_text(encoding="utf-8")
    assert (runner.out_dir / "results.json").is_file()
    assert re.search(r'<details class="case regressed[^"]*" id="case-1">', page)
    assert "support / gold_express_refund" in page
    assert f"<code>{main[1][:7]}</code>" in page  # the older baseline, in each case's history
    assert "(baseline)" in page and "(this run)" in page

    run_link = f"https://github.com/{REPO}/actions/runs/9001#artifacts"
    (comment,) = fake.comments_on(7)
    assert f"{LINK} `report.html` in [the run's artifacts]({run_link})" in comment["body"]
    summary = runner.summary.read_text(encoding="utf-8")
    assert f"{LINK} `report.html` in [the run's artifacts]({run_link})" in summary

    chart = summary[summary.index("```mermaid") :]
    chart = chart[: chart.index("```", 3) + 3]
    assert "xychart-beta" in chart
    labels = re.search(r"x-axis \[(.*)\]", chart)
    assert labels is not None
    assert labels.group(1).split(", ")[0] == f'"{main[1][:7]}"'
    assert labels.group(1).endswith('"this run"')
    lines = re.findall(r"line \[(.*)\]", chart)
    assert len(lines) == 2  # trajectory and response
    trajectory = [float(v) for v in lines[0].split(", ")]
    assert trajectory[0] < 100 and trajectory[-2] == 100 and trajectory[-1] < 100
    assert "mermaid" not in comment["body"]  # the chart is the summary's alone


@pytest.mark.parametrize("uploaded", [True, False], ids=["report.html uploaded", "not uploaded"])
def test_the_fork_safe_comment_links_to_the_pr_runs_report_html(
    runner: Runner, baseline_results: bytes, uploaded: bool
):
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3], head_repo="forker/demo")
    pr_env = runner.env("pull_request", pr_payload(7, head, main[3], fork=True), mode="compare")
    assert runner.run(pr_env).returncode == 1
    page = (runner.out_dir / "report.html").read_bytes()
    pr_run = fake.add_workflow_run(
        head_sha=head, event="pull_request", head_branch="feature",
        path=".github/workflows/agent-eval.yml", head_repository=fake.fork_repo(),
    )  # fmt: skip
    files = {n: (runner.out_dir / n).read_bytes() for n in ("results.json", "pr.json")}
    fake.add_artifact("agent-eval-results", zipped(files), run_id=pr_run["id"])
    fake.add_artifact("report.html", page, run_id=pr_run["id"], expired=True)  # not this one
    report = fake.add_artifact("report.html", page, run_id=pr_run["id"]) if uploaded else None
    payload = fork_run_completed(pr_run["id"], head)
    runner.out_dir = runner.tmp / "comment-out"
    env = runner.env("workflow_run", payload, command="", mode="comment")
    env["GITHUB_WORKFLOW_REF"] = f"{REPO}/.github/workflows/agent-eval-comment.yml@refs/heads/main"
    done = runner.run(env)
    assert done.returncode == 1, done.stderr
    (comment,) = fake.comments_on(7)
    run = f"https://github.com/{REPO}/actions/runs/{pr_run['id']}"
    if report is not None:
        assert f"{LINK} [`report.html`]({run}/artifacts/{report['id']})" in comment["body"]
    else:
        assert f"{LINK} `report.html` in [the run's artifacts]({run}#artifacts)" in comment["body"]
    # never the comment job's own run (9001): the page is the PR run's
    assert "/runs/9001" not in comment["body"].split(LINK)[1]
    # and renders none of its own: it uploads nothing, and at 100,000 cases the page was most
    # of its time and memory (bench/bench_comment.py)
    assert not (runner.out_dir / "report.html").exists()
