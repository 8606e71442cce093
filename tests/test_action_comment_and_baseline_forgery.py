"""The security issue's findings 2, 3 and 4, end to end: the action's entry point against
the fake GitHub, each attack set up as it was found, and shown to do no harm.

- Sticky-comment takeover: another bot's comment that quotes (or merely mentions) our
  marker is never overwritten or deleted, and with a personal access token the comment
  stays one comment over reruns.
- Data-branch baselines: a results file that someone committed to `agent-eval-data` under
  a run that is not a successful push run of the baseline workflow on main for that commit
  is refused, said loudly, and the PR is judged as without a baseline; the results a real
  push run stored there are used.
- Another PR's commit: a fork pushes the exact commit of someone else's PR, and its own PR
  run's artifact names that PR. The fork-safe comment job (`mode: comment`) ties the artifact
  to a PR by the head repository's id, head branch and head commit of the triggering run, as
  the `workflow_run` event names them: the victim's PR gets no comment and no check run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.github import BOT, FORK, FORK_ID, REPO
from helpers.action_harness import (
    AGENT,
    EVALS,
    Runner,
    clean_env,
    fork_run_completed,
    main_with_baseline,
    pr_payload,
    repository,
    zipped,
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


# ---- finding 4: another PR's commit, pushed by a fork -------------------------------------------
ATTACKER, ATTACKER_ID = "attacker/demo", 666


def _pr_run_naming_pr_7(
    runner: Runner,
    baseline_results: bytes,
    *,
    run_repo: str = FORK,
    run_repo_id: int = FORK_ID,
    run_branch: str = "feature",
) -> tuple[str, dict]:
    """main with a baseline; fork PR #7 (FORK's branch `feature`) off it; and a finished
    pull_request run of the same commit on `run_branch` of `run_repo`, whose artifact names
    PR #7 in its pr.json and holds Results that pass the gate. (PR #7's head, the run's
    workflow_run event.)"""
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3], head_repo=FORK)
    pr_run = fake.add_workflow_run(
        head_sha=head, event="pull_request", head_branch=run_branch, path=WORKFLOW_PATH,
        head_repository=fake.fork_repo(run_repo, run_repo_id),
    )  # fmt: skip
    record = {"schema": "agent-eval-pr/1", "number": 7, "head_sha": head}
    files = {"results.json": baseline_results, "pr.json": json.dumps(record).encode()}
    fake.add_artifact("agent-eval-results", zipped(files), run_id=pr_run["id"])
    payload = fork_run_completed(
        pr_run["id"], head, "success",
        head_repo=run_repo, head_repo_id=run_repo_id, head_branch=run_branch,
    )  # fmt: skip
    return head, payload


def _comment_job(runner: Runner, payload: dict) -> subprocess.CompletedProcess[str]:
    """The fork-safe part 2 (its own workflow, `mode: comment`) on that workflow_run event."""
    runner.out_dir = runner.tmp / "comment-out"
    env = runner.env("workflow_run", payload, command="", mode="comment")
    env["GITHUB_WORKFLOW_REF"] = f"{REPO}/.github/workflows/agent-eval-comment.yml@refs/heads/main"
    return runner.run(env)


def _refused(done: subprocess.CompletedProcess[str], runner: Runner, *phrases: str) -> None:
    """Exit 2, one plain error line saying why, and nothing posted anywhere."""
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and "posting nothing" in line, line
    for phrase in phrases:
        assert phrase in line, line
    fake = runner.fake
    assert fake.comments == {} and fake.check_runs == {}
    assert not fake.calls("create_comment") and not fake.calls("create_check_run")


def test_a_fork_that_pushes_another_prs_commit_posts_nothing_on_that_pr(
    runner: Runner, baseline_results: bytes
):
    """The attacker's fork pushes PR #7's head commit to a branch of the same name and opens
    a PR; its run's artifact names PR #7 (pr.json is the PR's code's to write), with Results
    that pass. The head commits match; the head repositories do not."""
    _, payload = _pr_run_naming_pr_7(
        runner, baseline_results, run_repo=ATTACKER, run_repo_id=ATTACKER_ID
    )
    done = _comment_job(runner, payload)
    _refused(
        done, runner, "PR #7 is not this run's PR", f"head repository is id {FORK_ID}",
        f"the run's is {ATTACKER}, id {ATTACKER_ID}",
    )  # fmt: skip


def test_a_fork_reusing_the_victims_repository_name_is_told_by_its_id(
    runner: Runner, baseline_results: bytes
):
    """A run of a repository with the name of PR #7's head repository but another id: a
    name can pass to someone else (an account renamed or deleted), an id cannot."""
    _, payload = _pr_run_naming_pr_7(
        runner, baseline_results, run_repo=FORK, run_repo_id=ATTACKER_ID
    )
    done = _comment_job(runner, payload)
    _refused(done, runner, "head repository", f"the run's is {FORK}, id {ATTACKER_ID}")


def test_the_same_commit_on_another_branch_posts_nothing(runner: Runner, baseline_results: bytes):
    """Same repository, same commit, another branch: not the run of PR #7's head."""
    _, payload = _pr_run_naming_pr_7(runner, baseline_results, run_branch="copy-of-feature")
    done = _comment_job(runner, payload)
    _refused(
        done, runner, "PR #7 is not this run's PR",
        "its head branch is 'feature', the run's is 'copy-of-feature'",
    )  # fmt: skip


def test_a_pr_whose_fork_was_deleted_is_refused(runner: Runner, baseline_results: bytes):
    """GitHub answers `head.repo: null` for a PR whose fork is gone: nothing ties it to the
    run any more (the attacker's fork, or the victim's own, cannot be told apart)."""
    _, payload = _pr_run_naming_pr_7(runner, baseline_results)
    runner.fake.pulls[7]["head"]["repo"] = None
    done = _comment_job(runner, payload)
    _refused(done, runner, "PR #7's head repository is gone (a deleted fork)")


def test_an_event_without_the_head_repositorys_id_matches_no_pr(
    runner: Runner, baseline_results: bytes
):
    _, payload = _pr_run_naming_pr_7(runner, baseline_results)
    del payload["workflow_run"]["head_repository"]["id"]
    done = _comment_job(runner, payload)
    _refused(done, runner, "no field workflow_run.head_repository.id")


def test_a_pr_whose_head_moved_on_since_the_run_gets_nothing_and_exit_0(
    runner: Runner, baseline_results: bytes
):
    """Its own fork and branch, but a newer commit: the newer run reports, not this one."""
    _, payload = _pr_run_naming_pr_7(runner, baseline_results)
    runner.fake.pulls[7]["head"]["sha"] = "e" * 40
    done = _comment_job(runner, payload)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"PR #7's head is {'e' * 12}" in done.stdout
    assert "(moved on since the run): posting nothing" in done.stdout
    assert runner.fake.comments == {} and runner.fake.check_runs == {}


def test_the_pr_runs_own_artifact_is_posted_on_its_pr(runner: Runner, baseline_results: bytes):
    """The run of PR #7's own fork and branch: its head repository id, branch and commit
    all match, so the comment and the check run are posted on PR #7."""
    head, payload = _pr_run_naming_pr_7(runner, baseline_results)
    done = _comment_job(runner, payload)
    assert done.returncode == 0, done.stdout + done.stderr  # main's Results: the gate passes
    (comment,) = runner.fake.comments_on(7)
    assert comment["body"].startswith(MARKER + "\n")
    (check,) = runner.fake.check_runs.values()
    assert check["head_sha"] == head and check["conclusion"] == "success"
