"""The security issue's findings 2 and 3, end to end: the action's entry point against the
fake GitHub, each attack set up as it was found, and shown to do no harm.

- Sticky-comment takeover: another bot's comment that quotes (or merely mentions) our
  marker is never overwritten or deleted, and with a personal access token the comment
  stays one comment over reruns.
- Data-branch baselines: a results file that someone committed to `agent-eval-data` under
  a run that is not a successful push run of the baseline workflow on main for that commit
  is refused, said loudly, and the PR is judged as without a baseline; the results a real
  push run stored there are used.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.github import BOT
from helpers.action_harness import (
    AGENT,
    EVALS,
    Runner,
    clean_env,
    main_with_baseline,
    pr_payload,
    repository,
)
from helpers.paths import ROOT, python_command

pytestmark = pytest.mark.e2e  # the action's entry point in a child process, against the fake GitHub

MARKER = "<!-- agent-eval-action:agent-eval -->"
DATA_BRANCH = "agent-eval-data"
WORKFLOW_PATH = ".github/workflows/agent-eval.yml"  # the harness's GITHUB_WORKFLOW_REF


# ---- finding 2: sticky-comment takeover ---------------------------------------------------------
def test_other_bots_comments_that_carry_the_marker_are_left_alone(
    runner: Runner, baseline_results: bytes
):
    """The PR's description holds our marker. A lint workflow (github-actions[bot], like us)
    quoted it; a security scan listed it. Neither comment is overwritten or deleted."""
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3])
    lint = f"Lint: 1 problem in the PR description:\n> {MARKER}\n> Please review"
    scan = f"Security scan: the PR description hides HTML comments:\n```\n{MARKER}\n```"
    echo = f"{MARKER}\nPlease review"  # a bot echoing the description verbatim
    others = [fake.add_comment(7, text) for text in (lint, scan, echo)]
    done = runner.run(runner.env("pull_request", pr_payload(7, head, main[3])))
    assert done.returncode == 1, done.stderr
    for comment, text in zip(others, (lint, scan, echo), strict=True):
        assert fake.comments[comment["id"]]["body"] == text
    assert fake.calls("delete_comment") == []
    (report,) = [c for c in fake.comments_on(7) if c["id"] not in {o["id"] for o in others}]
    assert report["body"].startswith(MARKER + "\n") and "gold_express_refund" in report["body"]
    assert report["user"]["login"] == BOT
    assert runner.outputs()["comment-url"] == report["html_url"]


def test_three_runs_with_a_personal_access_token_leave_one_comment(
    runner: Runner, baseline_results: bytes
):
    fake = runner.fake
    pat = "ghp_maintainerPersonalAccessToken1"
    fake.add_token(pat, "release-maintainer")
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3])
    env = runner.env("pull_request", pr_payload(7, head, main[3]), **{"github-token": pat})
    urls = []
    for _ in range(3):
        done = runner.run(env)
        assert done.returncode == 1, done.stderr
        urls.append(runner.outputs()["comment-url"])
    (comment,) = fake.comments_on(7)
    assert comment["user"]["login"] == "release-maintainer"
    assert urls == [comment["html_url"]] * 3
    assert len(fake.calls("create_comment")) == 1


# ---- finding 3: data-branch baselines --------------------------------------------------------
@pytest.fixture(scope="module")
def pr_agent_results(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The Results of the PR's agent (examples/agent: one case fails its threshold); stored
    as the merge-base's baseline, that case is "still failing" and the gate passes."""
    out = tmp_path_factory.mktemp("forged") / "results.json"
    argv = [sys.executable, "-m", "agent_eval_action", "run", EVALS]
    argv += ["--command", python_command(AGENT), "--out", str(out), "--format", "json"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env=clean_env())
    assert done.returncode == 1, done.stderr  # gold_express_refund fails its threshold
    return out.read_bytes()


def _stored(results: bytes, sha: str, run_id: int) -> bytes:
    """`results` dressed as a push run's on main for `sha`."""
    data = json.loads(results)
    data["source"] = {
        "repo": "octo/demo", "sha": sha, "ref": "refs/heads/main", "run_id": str(run_id),
        "event": "push",
    }  # fmt: skip
    return json.dumps(data).encode()


def _pr_off_main(runner: Runner) -> tuple[list[str], str]:
    """main: 4 commits; a PR branches off the third (its merge-base) while main moved on."""
    fake = runner.fake
    main = fake.linear_history(4)
    head = fake.linear_history(1, parent=main[2], prefix="pr", branch="feature")[0]
    fake.add_pull(7, head, main[3])
    return main, head


FORGED_RUNS = {
    # a workflow run of the PR itself (it had `contents: write`, and committed the file)
    "a pull_request run": lambda fake, main, head: fake.add_workflow_run(
        head_sha=head, event="pull_request", head_branch="feature", path=WORKFLOW_PATH
    )["id"],
    "a run that does not exist": lambda fake, main, head: 424242,
    # a genuine push run of the baseline workflow on main, but for another commit
    "a push run for another commit": lambda fake, main, head: fake.add_workflow_run(
        head_sha=main[1], event="push", path=WORKFLOW_PATH
    )["id"],
}


@pytest.mark.parametrize("forged", list(FORGED_RUNS))
def test_a_forged_baseline_on_the_data_branch_is_refused(
    runner: Runner, pr_agent_results: bytes, forged: str
):
    """Someone who can push a branch commits "totally legit" results for the merge-base,
    in which the PR's failing case already fails: accepted, the PR would pass. Refused, it is
    judged by thresholds, and fails."""
    fake = runner.fake
    main, head = _pr_off_main(runner)
    run_id = FORGED_RUNS[forged](fake, main, head)
    forged_file = _stored(pr_agent_results, main[2], run_id)
    fake.commit_files(DATA_BRANCH, {f"results/{main[2]}.json": forged_file}, "totally legit")
    env = runner.env("pull_request", pr_payload(7, head, main[3]), baseline="branch")
    done = runner.run(env)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stdout  # no baseline: the failing case fails the gate
    assert "::warning::baseline refused" in done.stdout
    assert "NO BASELINE" in done.stdout and "was refused" in done.stdout
    out = runner.outputs()
    assert out["verdict"] == "fail" and out["baseline-sha"] == ""
    (comment,) = fake.comments_on(7)
    assert "refused" in comment["body"]
    assert not (runner.out_dir / "baseline" / "results.json").exists()


def test_the_results_a_push_run_stored_are_used(runner: Runner):
    """The push run on main stores its results on the data branch (recording its run id);
    once it has succeeded, a PR off that commit compares with them."""
    fake = runner.fake
    main, head = _pr_off_main(runner)
    push_run = fake.add_workflow_run(head_sha=main[2], event="push", path=WORKFLOW_PATH)
    payload = {"ref": "refs/heads/main", "after": main[2], "repository": repository()}
    env = runner.env("push", payload, baseline="branch")
    env.update(GITHUB_SHA=main[2], GITHUB_REF="refs/heads/main", GITHUB_RUN_ID=str(push_run["id"]))
    done = runner.run(env)
    assert done.returncode == 0, done.stderr
    stored = json.loads(fake.branch_files(DATA_BRANCH)[f"results/{main[2]}.json"])
    assert stored["source"]["run_id"] == str(push_run["id"])
    runner.out_dir = runner.tmp / "pr-out"
    done = runner.run(runner.env("pull_request", pr_payload(7, head, main[3]), baseline="branch"))
    assert done.returncode == 0, done.stdout  # the same agent: still failing, not a regression
    assert "refused" not in done.stdout
    out = runner.outputs()
    assert out["verdict"] == "pass" and out["baseline-sha"] == main[2]
    assert Path(runner.out_dir / "baseline" / "results.json").is_file()
