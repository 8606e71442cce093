"""The security issue's findings 5, 7 and 8, end to end: each test plays the attack (or the
mistake) through `python -m agent_eval_action action` against the fake GitHub and checks
that it does no harm (docs/security.md).

- 5: in the fork-safe pair, the PR run's Results are the PR author's to write; their
  `source` must not decide where the comment's commit and run links point.
- 7: an unsafe artifact, a score that overflows, a NUL in a file name, in the privileged
  comment and merge jobs: exit 2 in one line, nothing posted, no traceback; a bad baseline
  is no baseline, said loudly.
- 8: a `workflow_dispatch` with `pr-number` runs on the dispatched ref's checkout: it must
  be the PR's head (else exit 2, no check run), and a fork's head only when allowed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.action_harness import (
    REPO,
    Runner,
    fork_run_completed,
    main_with_baseline,
    repository,
    zipped,
)

pytestmark = pytest.mark.e2e  # the action's entry point in a child process, against the fake GitHub

EVIL = "attacker/evil-repo"


# --- the fork-safe pair's part 2, fed a hand-made artifact ---------------------------------


def forged(results: bytes, edit) -> bytes:
    data = json.loads(results)
    edit(data)
    return json.dumps(data).encode()


def pr_artifact(runner: Runner, baseline: bytes, results: bytes, *, entries=None):
    """main with a baseline, fork PR #7 off it, and its finished PR run whose artifact holds
    `results` (and a pr.json for the PR's head). Returns (head, the PR run, the event)."""
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline)
    fake.add_pull(7, head, main[3], head_repo="forker/demo")
    pr_run = fake.add_workflow_run(
        head_sha=head, event="pull_request", head_branch="feature",
        path=".github/workflows/agent-eval.yml", head_repository=fake.fork_repo(),
    )  # fmt: skip
    record = {"schema": "agent-eval-pr/1", "number": 7, "head_sha": head}
    files = {"results.json": results, "pr.json": json.dumps(record).encode()}
    files.update(entries or {})
    fake.add_artifact("agent-eval-results", zipped(files), run_id=pr_run["id"])
    payload = fork_run_completed(pr_run["id"], head, "success")
    return head, pr_run, payload


def comment_mode(runner: Runner, payload: dict):
    runner.out_dir = runner.tmp / "comment-out"
    env = runner.env("workflow_run", payload, command="", mode="comment")
    env["GITHUB_WORKFLOW_REF"] = f"{REPO}/.github/workflows/agent-eval-comment.yml@refs/heads/main"
    env["GITHUB_RUN_ID"] = "424242"  # the comment job's own run
    return runner.run(env)


def refused_in_one_line(done, *phrases: str) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: "), line
    for phrase in phrases:
        assert phrase in line, line
    return line


def nothing_posted(runner: Runner) -> None:
    assert runner.fake.comments == {} and runner.fake.check_runs == {}
    assert not runner.fake.calls("create_comment") and not runner.fake.calls("create_check_run")


# --- finding 5: links from the artifact ----------------------------------------------------


def test_comment_mode_links_the_events_commit_and_run_never_the_artifacts(
    runner: Runner, baseline_results: bytes
):
    def plant(data: dict) -> None:
        data["source"] = {
            "repo": EVIL, "sha": "e" * 40, "ref": "refs/heads/phish",
            "run_id": "666", "event": "push",
        }  # fmt: skip

    head, pr_run, payload = pr_artifact(runner, baseline_results, forged(baseline_results, plant))
    done = comment_mode(runner, payload)
    assert done.returncode == 0, done.stdout + done.stderr  # same Results as main's: pass
    (comment,) = runner.fake.comments_on(7)
    body = comment["body"]
    assert EVIL not in body and "e" * 40 not in body and "runs/666" not in body
    assert f"https://github.com/{REPO}/commit/{head})" in body
    assert f"https://github.com/{REPO}/actions/runs/{pr_run['id']})" in body
    (check,) = runner.fake.check_runs.values()
    assert EVIL not in json.dumps(check)
    # the Results kept in output-dir say where they really come from
    kept = json.loads((runner.out_dir / "results.json").read_text(encoding="utf-8"))
    assert kept["source"]["repo"] == REPO and kept["source"]["sha"] == head
    assert kept["source"]["run_id"] == str(pr_run["id"])


# --- finding 7: what the privileged jobs load ----------------------------------------------


def test_an_unsafe_zip_in_comment_mode_is_exit_2_in_one_line(
    runner: Runner, baseline_results: bytes
):
    entries = {"../../outside.txt": b"x"}  # a zip-slip entry beside the files asked for
    _, pr_run, payload = pr_artifact(runner, baseline_results, baseline_results, entries=entries)
    done = comment_mode(runner, payload)
    refused_in_one_line(
        done, f"artifact agent-eval-results of run {pr_run['id']}", "'..' component"
    )
    nothing_posted(runner)
    summary = runner.summary.read_text(encoding="utf-8")
    assert "bad input (exit 2)" in summary


def test_a_score_that_overflows_in_the_artifact_is_exit_2_before_posting(
    runner: Runner, baseline_results: bytes
):
    def overflow(data: dict) -> None:
        data["cases"][0]["metrics"]["tool_trajectory_avg_score"]["score"] = 1e308

    _, _, payload = pr_artifact(runner, baseline_results, forged(baseline_results, overflow))
    done = comment_mode(runner, payload)
    refused_in_one_line(done, "refused Results", "tool_trajectory_avg_score.score", "1e+308")
    nothing_posted(runner)


def test_a_built_in_metric_scoring_outside_0_1_in_the_artifact_is_exit_2(
    runner: Runner, baseline_results: bytes
):
    def five(data: dict) -> None:
        metric = data["cases"][0]["metrics"]["tool_trajectory_avg_score"]
        metric["score"], metric["runs"] = 5.0, [5.0]

    _, _, payload = pr_artifact(runner, baseline_results, forged(baseline_results, five))
    done = comment_mode(runner, payload)
    refused_in_one_line(done, "outside [0, 1]")
    nothing_posted(runner)


def test_a_nul_in_a_file_name_in_the_artifact_is_exit_2_before_posting(
    runner: Runner, baseline_results: bytes
):
    def nul(data: dict) -> None:
        for case in data["cases"]:
            case["file"] = "/github/workspace/evals/x\u0000.evalset.json"

    _, _, payload = pr_artifact(runner, baseline_results, forged(baseline_results, nul))
    done = comment_mode(runner, payload)
    refused_in_one_line(done, "refused Results", "file", "control character")
    nothing_posted(runner)
    assert not runner.outputs()  # a step that stops on bad input sets no outputs


def test_a_lone_surrogate_in_the_artifact_is_exit_2_before_posting(
    runner: Runner, baseline_results: bytes
):
    """Python reads "\\udc00" in JSON, but nothing can write it out again: the report, the
    comment or results.json would end in a traceback after a partial publish."""
    text = baseline_results.decode("utf-8")
    eval_id = json.loads(text)["cases"][0]["eval_id"]
    text = text.replace(f'"eval_id": "{eval_id}"', '"eval_id": "\\udc00"', 1)
    _, _, payload = pr_artifact(runner, baseline_results, text.encode())
    done = comment_mode(runner, payload)
    refused_in_one_line(done, "refused Results", "half of a UTF-16 pair")
    nothing_posted(runner)


def test_a_baseline_that_overflows_is_no_baseline_said_loudly(
    runner: Runner, baseline_results: bytes
):
    def overflow(data: dict) -> None:
        data["cases"][0]["metrics"]["tool_trajectory_avg_score"]["score"] = 1e308

    # main's artifact is the bad one; the PR's Results are fine
    _, _, payload = pr_artifact(runner, forged(baseline_results, overflow), baseline_results)
    done = comment_mode(runner, payload)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stdout + done.stderr  # judged by thresholds: all pass
    assert "NO BASELINE" in done.stdout and "1e+308" in done.stdout
    (comment,) = runner.fake.comments_on(7)
    assert "No baseline" in comment["body"]
    assert runner.outputs()["baseline-sha"] == ""


def test_a_baseline_whose_built_in_score_is_outside_0_1_is_no_baseline(
    runner: Runner, baseline_results: bytes
):
    def five(data: dict) -> None:
        metric = data["cases"][0]["metrics"]["tool_trajectory_avg_score"]
        metric["score"], metric["runs"] = 5.0, [5.0]

    _, _, payload = pr_artifact(runner, forged(baseline_results, five), baseline_results)
    done = comment_mode(runner, payload)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    assert "NO BASELINE: the baseline is refused" in done.stdout and "outside [0, 1]" in done.stdout
    assert "No baseline" in runner.fake.comments_on(7)[0]["body"]
    assert not (runner.out_dir / "baseline" / "results.json").exists()  # not kept as if used


def test_an_unsafe_shard_artifact_in_merge_mode_is_exit_2(runner: Runner, baseline_results):
    fake = runner.fake
    main = fake.linear_history(1)
    current = fake.add_workflow_run(id=9001, head_sha=main[0], event="push")
    fake.add_artifact(
        "agent-eval-results-shard-1",
        zipped({"results.json": baseline_results, "/etc/cron.d/x": b"x"}),
        run_id=current["id"],
    )
    payload = {"ref": "refs/heads/main", "after": main[0], "repository": repository()}
    env = runner.env("push", payload, mode="merge", command="")
    env["GITHUB_SHA"], env["GITHUB_REF"] = main[0], "refs/heads/main"
    done = runner.run(env)
    refused_in_one_line(done, "artifact agent-eval-results-shard-1 of run 9001", "absolute")
    assert not (runner.out_dir / "results.json").exists()


def test_a_shard_whose_score_is_not_finite_is_exit_2_in_merge_mode(
    runner: Runner, baseline_results: bytes
):
    fake = runner.fake
    main = fake.linear_history(1)
    current = fake.add_workflow_run(id=9001, head_sha=main[0], event="push")
    data = json.loads(baseline_results)
    data["shard"] = {"index": 1, "count": 1, "partition_hash": "p", "cases_total": 6}
    text = json.dumps(data).replace('"score": 1.0', '"score": 1e999', 1)  # inf once parsed
    fake.add_artifact(
        "agent-eval-results-shard-1", zipped({"results.json": text.encode()}), run_id=current["id"]
    )
    payload = {"ref": "refs/heads/main", "after": main[0], "repository": repository()}
    env = runner.env("push", payload, mode="merge", command="")
    env["GITHUB_SHA"], env["GITHUB_REF"] = main[0], "refs/heads/main"
    done = runner.run(env)
    refused_in_one_line(done, "agent-eval-results-shard-1.json", "inf")
    assert not (runner.out_dir / "results.json").exists()


# --- finding 8: workflow_dispatch with pr-number -------------------------------------------


def checkout(tmp: Path, sha: str) -> Path:
    """A workspace as actions/checkout leaves it for `ref: refs/pull/N/head`: detached HEAD."""
    workspace = tmp / "workspace"
    (workspace / ".git").mkdir(parents=True, exist_ok=True)
    (workspace / ".git" / "HEAD").write_text(f"{sha}\n", encoding="utf-8")
    return workspace


def dispatch_env(runner: Runner, main: list[str], workspace: Path | None, **inputs: str):
    payload = {"inputs": {"pr-number": "7"}, "ref": "refs/heads/main", "repository": repository()}
    env = runner.env("workflow_dispatch", payload, **inputs)
    env["GITHUB_SHA"], env["GITHUB_REF"] = main[-1], "refs/heads/main"
    if workspace is not None:
        env["GITHUB_WORKSPACE"] = str(workspace)
    return env


def test_dispatch_with_a_pr_number_refuses_to_run_main_for_the_pr(
    runner: Runner, baseline_results: bytes
):
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3])
    # the workflow checked out the dispatched ref (main), not the PR
    env = dispatch_env(runner, main, checkout(runner.tmp, main[3]))
    done = runner.run(env)
    line = refused_in_one_line(done, "workflow_dispatch for PR #7", "not the PR's head")
    assert main[3][:12] in line and head[:12] in line and "refs/pull/7/head" in line
    nothing_posted(runner)
    assert not (runner.out_dir / "results.json").exists()  # nothing ran


def test_dispatch_without_a_checkout_judges_by_github_sha(runner: Runner, baseline_results):
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3])
    env = dispatch_env(runner, main, runner.tmp)  # a workspace with no .git
    done = runner.run(env)
    refused_in_one_line(done, "GITHUB_SHA", main[3][:12])
    nothing_posted(runner)


def test_dispatch_for_a_fork_pr_is_refused_unless_allowed(runner: Runner, baseline_results):
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3], head_repo="forker/demo")
    workspace = checkout(runner.tmp, head)
    done = runner.run(dispatch_env(runner, main, workspace))
    refused_in_one_line(done, "forker/demo", "allow-fork-dispatch")
    nothing_posted(runner)
    assert not (runner.out_dir / "results.json").exists()
    # opted in: the fork's head, checked out, is evaluated and reported on
    done = runner.run(dispatch_env(runner, main, workspace, **{"allow-fork-dispatch": "true"}))
    assert done.returncode == 1, done.stdout + done.stderr  # the example PR regresses
    (check,) = fake.check_runs.values()
    assert check["head_sha"] == head
