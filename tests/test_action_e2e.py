"""End to end: `agent-eval-action action` as the runner starts it, against the fake GitHub.

Each test builds an event payload and the runner's environment, starts the entry point
(tests/helpers/action_harness.py), and checks what GitHub received, the outputs file, the job
summary and the exit code. The example agent (examples/agent) is the PR's agent; its baseline
comes from a copy with the gold-tier shortcut removed, so the PR regresses one case's
trajectory while its answer holds (a lucky answer).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.action_harness import (
    AGENT,
    EVALS,
    REPO,
    TOKEN,
    Runner,
    fixed_agent,
    fork_run_completed,
    main_with_baseline,
    pr_payload,
    repository,
    zipped,
)
from helpers.paths import ROOT, python_command

from agent_eval_action.compare.record_file import RECORD_NAME
from agent_eval_action.results import PAIRED_RUN

pytestmark = pytest.mark.e2e  # the action's entry point in a child process, against the fake GitHub


def test_pr_with_a_regression_posts_one_comment_a_failing_check_and_outputs(
    runner: Runner, baseline_results: bytes
):
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3])
    env = runner.env("pull_request", pr_payload(7, head, main[3]))

    done = runner.run(env)

    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stderr
    comments = fake.comments_on(7)
    assert len(comments) == 1
    body = comments[0]["body"]
    assert "<!-- agent-eval-action:agent-eval -->" in body
    assert "gold_express_refund" in body and "lucky answer" in body
    (check,) = fake.check_runs.values()
    assert check["head_sha"] == head and check["conclusion"] == "failure"
    assert check["name"] == "agent-eval"
    (annotation,) = check["_annotations"]
    assert annotation["path"] == "examples/evals/support.evalset.json"
    assert annotation["annotation_level"] == "failure" and annotation["start_line"] > 1
    assert "gold_express_refund" in annotation["message"]
    out = runner.outputs()
    assert out["verdict"] == "fail"
    assert out["trajectory-regressions"] == "1" and out["response-regressions"] == "0"
    assert out["regressions"] == "1"
    assert out["baseline-sha"] == main[2]
    assert out["comment-url"] == comments[0]["html_url"]
    assert Path(out["results-path"]).is_file() and Path(out["report-path"]).is_file()
    assert "gold_express_refund" in runner.summary.read_text(encoding="utf-8")
    assert json.loads((runner.out_dir / "pr.json").read_text())["number"] == 7
    # the token is masked, never written to results or shown to the agent
    assert f"::add-mask::{TOKEN}" in done.stdout
    for path in runner.out_dir.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path
    # the merge-base (not main's newer tip) gave the baseline
    (compare_call,) = fake.calls("compare")
    assert main[3] in compare_call.path and head in compare_call.path


def test_the_same_pr_rerun_updates_its_comment(runner: Runner, baseline_results: bytes):
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3])
    env = runner.env("pull_request", pr_payload(7, head, main[3]))
    assert runner.run(env).returncode == 1
    first = fake.comments_on(7)[0]["id"]
    assert runner.run(env).returncode == 1
    comments = fake.comments_on(7)
    assert [c["id"] for c in comments] == [first]
    assert len(fake.calls("create_comment")) == 1  # updated, never posted again


def test_the_accept_label_passes_and_lists_what_it_accepts(runner: Runner, baseline_results):
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3], labels=["agent-eval:accept"])
    done = runner.run(runner.env("pull_request", pr_payload(7, head, main[3])))
    assert done.returncode == 0, done.stderr
    (check,) = fake.check_runs.values()
    assert check["conclusion"] == "success"
    body = fake.comments_on(7)[0]["body"]
    assert "accepted" in body.lower() and "gold_express_refund" in body
    assert runner.outputs()["verdict"] == "pass"


def test_an_outdated_head_posts_nothing(runner: Runner, baseline_results: bytes):
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, "e" * 40, main[3])  # the PR moved on while this run was under way
    done = runner.run(runner.env("pull_request", pr_payload(7, head, main[3])))
    assert done.returncode == 1
    assert "posting nothing" in done.stdout
    assert fake.comments_on(7) == [] and fake.check_runs == {}
    assert runner.outputs()["verdict"] == "fail"  # the gate still speaks in the log


def test_first_run_without_any_baseline_falls_back_to_thresholds(runner: Runner):
    fake = runner.fake
    main = fake.linear_history(2)
    head = fake.linear_history(1, parent=main[1], prefix="pr", branch="feature")[0]
    fake.add_pull(7, head, main[1])
    done = runner.run(runner.env("pull_request", pr_payload(7, head, main[1])))
    assert done.returncode == 1  # gold_express_refund fails its threshold
    assert "NO BASELINE" in done.stdout
    body = fake.comments_on(7)[0]["body"]
    assert "baseline" in body.lower()
    assert runner.outputs()["baseline-sha"] == ""


def test_push_to_main_writes_the_baseline_and_passes(runner: Runner):
    fake = runner.fake
    main = fake.linear_history(2)
    payload = {"ref": "refs/heads/main", "after": main[1], "repository": repository()}
    env = runner.env("push", payload)
    env["GITHUB_SHA"], env["GITHUB_REF"] = main[1], "refs/heads/main"
    done = runner.run(env)
    assert done.returncode == 0, done.stderr  # one case fails, but the baseline is recorded
    results = json.loads((runner.out_dir / "results.json").read_text())
    assert results["source"]["sha"] == main[1] and len(results["cases"]) == 6
    assert fake.comments == {} and fake.check_runs == {}


def test_a_workflow_run_of_a_push_run_posts_nothing(runner: Runner):
    payload = {
        "action": "completed",
        "workflow_run": {
            "id": 55, "event": "push", "conclusion": "success", "head_sha": "a" * 40,
            "head_branch": "main", "pull_requests": [], "path": ".github/workflows/agent-eval.yml",
            "head_repository": {"full_name": REPO},
        },
        "repository": repository(),
    }  # fmt: skip
    done = runner.run(runner.env("workflow_run", payload))
    assert done.returncode == 0, done.stderr
    assert runner.fake.log == []  # not a single API call


def test_fork_pr_then_workflow_run_posts_after_the_sha_check(runner: Runner, baseline_results):
    fake = runner.fake
    # 1. the fork's PR run (mode compare: its token is read-only) posts nothing
    done, head = _fork_pr_run(runner, baseline_results)
    assert done.returncode == 1  # the gate still fails the fork's run
    assert fake.comments_on(7) == [] and fake.check_runs == {}
    assert not fake.calls("create_comment") and not fake.calls("create_check_run")
    # 2. its output-dir is uploaded as the artifact of that run; 3. the workflow_run job,
    # with write permissions, posts it
    done = _comment_job(runner, head, {})
    assert done.returncode == 1, done.stderr
    (comment,) = fake.comments_on(7)
    assert "gold_express_refund" in comment["body"]
    (check,) = fake.check_runs.values()
    assert check["head_sha"] == head and check["conclusion"] == "failure"
    # the artifacts were streamed to scratch folders, removed once read
    assert (runner.out_dir / "results.json").exists()
    assert not list(runner.out_dir.rglob(".artifact*"))


def test_workflow_run_refuses_a_pr_record_for_another_head(runner: Runner, baseline_results):
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(8, "c" * 40, main[3], head_repo="forker/demo")
    pr_run = fake.add_workflow_run(head_sha=head, event="pull_request", head_branch="feature")
    forged = json.dumps({"schema": "agent-eval-pr/1", "number": 8, "head_sha": "c" * 40})
    files = {"results.json": baseline_results, "pr.json": forged.encode()}
    fake.add_artifact("agent-eval-results", zipped(files), run_id=pr_run["id"])
    payload = {
        "action": "completed",
        "workflow_run": {
            "id": pr_run["id"], "event": "pull_request", "conclusion": "success",
            "head_sha": head, "head_branch": "feature", "pull_requests": [],
            "head_repository": {"full_name": "forker/demo"},
        },
        "repository": repository(),
    }  # fmt: skip
    done = runner.run(runner.env("workflow_run", payload, command=""))
    assert done.returncode == 2
    assert "pr.json names head" in done.stderr and "Traceback" not in done.stderr
    assert fake.comments == {} and fake.check_runs == {}


def test_merge_group_checks_the_group_commit(runner: Runner, baseline_results: bytes):
    fake = runner.fake
    main, _ = main_with_baseline(fake, baseline_results)
    group_head = fake.linear_history(1, parent=main[2], prefix="mq", branch="gh-readonly-queue")[0]
    payload = {
        "action": "checks_requested",
        "merge_group": {
            "head_sha": group_head, "head_ref": "refs/heads/gh-readonly-queue/main/pr-7",
            "base_sha": main[2], "base_ref": "refs/heads/main",
        },
        "repository": repository(),
    }  # fmt: skip
    done = runner.run(runner.env("merge_group", payload))
    assert done.returncode == 1, done.stderr
    (check,) = fake.check_runs.values()
    assert check["head_sha"] == group_head and check["conclusion"] == "failure"
    assert fake.comments == {}  # a merge group has no PR to comment on
    assert runner.outputs()["baseline-sha"] == main[2]


def test_a_fork_pr_under_auto_mode_degrades_to_warnings_and_log_annotations(
    runner: Runner, baseline_results: bytes
):
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3], head_repo="forker/demo")
    fake.inject("create_comment", 403)
    fake.inject("create_check_run", 403)
    done = runner.run(runner.env("pull_request", pr_payload(7, head, main[3], fork=True)))
    assert done.returncode == 1  # the gate still fails the fork's run
    assert "fork-safe" in done.stdout and "::error file=" in done.stdout
    assert fake.comments_on(7) == []


def test_workflow_dispatch_with_a_pr_number_compares(runner: Runner, baseline_results: bytes):
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3])
    payload = {"inputs": {"pr-number": "7"}, "ref": "refs/heads/main", "repository": repository()}
    env = runner.env("workflow_dispatch", payload)
    # the workflow checked out the PR's head (actions/checkout, ref: refs/pull/7/head)
    (runner.tmp / "workspace" / ".git").mkdir(parents=True)
    (runner.tmp / "workspace" / ".git" / "HEAD").write_text(f"{head}\n", encoding="utf-8")
    env["GITHUB_WORKSPACE"] = str(runner.tmp / "workspace")
    done = runner.run(env)
    assert done.returncode == 1, done.stderr
    assert len(fake.comments_on(7)) == 1
    assert runner.outputs()["baseline-sha"] == main[2]


def test_workflow_dispatch_without_a_pr_just_runs(runner: Runner):
    done = runner.run(runner.env("workflow_dispatch", {"inputs": {}, "repository": repository()}))
    assert done.returncode == 1  # thresholds: gold_express_refund fails
    assert (runner.out_dir / "results.json").is_file()
    assert runner.fake.comments == {} and runner.fake.check_runs == {}


def test_bad_input_is_one_line_and_exit_2(runner: Runner):
    env = runner.env("pull_request", pr_payload(7, "a" * 40, "b" * 40), **{"num-runs": "0"})
    done = runner.run(env)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: input num-runs: must be a whole number of at least 1, got '0'"
    ]
    assert runner.fake.log == []
    assert not (runner.out_dir / "results.json").exists()
    summary = runner.summary.read_text(encoding="utf-8")
    assert summary.startswith("### ❌ agent-eval: bad input (exit 2)")
    assert "input num-runs: must be a whole number" in summary


def test_comment_false_check_name_and_fail_on_never(runner: Runner, baseline_results: bytes):
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3])
    inputs = {"comment": "false", "check-name": "evals/support", "fail-on": "never"}
    done = runner.run(runner.env("pull_request", pr_payload(7, head, main[3]), **inputs))
    assert done.returncode == 0, done.stderr  # reported, never failing the job
    assert fake.comments == {} and not fake.calls("list_comments")
    (check,) = fake.check_runs.values()
    assert check["name"] == "evals/support" and check["conclusion"] == "success"
    out = runner.outputs()
    assert out["verdict"] == "pass" and out["regressions"] == "1"
    assert "<!-- agent-eval-action:evals/support -->" in (runner.out_dir / "report.md").read_text()


def test_eval_files_given_by_absolute_path_annotate_repository_paths(
    runner: Runner, baseline_results: bytes
):
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3])
    env = runner.env("pull_request", pr_payload(7, head, main[3]), evals=str(ROOT / EVALS))
    env["GITHUB_WORKSPACE"] = str(ROOT)
    done = runner.run(env)
    assert done.returncode == 1, done.stderr
    (check,) = fake.check_runs.values()
    (annotation,) = check["_annotations"]
    assert annotation["path"] == "examples/evals/support.evalset.json"


def _fork_pr_run(runner: Runner, baseline_results: bytes):
    """main with a baseline, a fork's PR #7 and its run in mode compare; (that run, head)."""
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3], head_repo="forker/demo")
    pr_env = runner.env("pull_request", pr_payload(7, head, main[3], fork=True), mode="compare")
    return runner.run(pr_env), head


def _comment_job(runner: Runner, head: str, extra: dict[str, bytes], **inputs: str):
    """The fork's PR run's output-dir (results.json, pr.json, and `extra` files) uploaded as
    its artifact, then the workflow_run comment job (its own workflow file) run on it."""
    fake = runner.fake
    pr_run = fake.add_workflow_run(
        head_sha=head, event="pull_request", head_branch="feature",
        path=".github/workflows/agent-eval.yml", head_repository=fake.fork_repo(),
    )  # fmt: skip
    files = {n: (runner.out_dir / n).read_bytes() for n in ("results.json", "pr.json")}
    fake.add_artifact("agent-eval-results", zipped({**files, **extra}), run_id=pr_run["id"])
    payload = fork_run_completed(pr_run["id"], head)
    runner.out_dir = runner.tmp / "comment-out"
    env = runner.env("workflow_run", payload, command="", mode="comment", **inputs)
    env["GITHUB_WORKFLOW_REF"] = f"{REPO}/.github/workflows/agent-eval-comment.yml@refs/heads/main"
    return runner.run(env)


def _fork_comment(runner: Runner, baseline_results: bytes, extra: dict[str, bytes]):
    """A fork's PR run, then the comment job with `extra` files in the artifact."""
    _, head = _fork_pr_run(runner, baseline_results)
    return _comment_job(runner, head, extra)


def test_the_comment_job_weighs_the_pr_runs_paired_runs_as_it_did(
    runner: Runner, baseline_results: bytes
):
    """With `paired: true` the PR run wrote merge-base.json (main's record of its re-run
    cases) into output-dir; the fork-safe comment job compares with it too."""
    paired = json.loads(baseline_results)
    paired["source"]["sha"] = "9" * 40
    for case in paired["cases"]:
        for run in case["runs"]:
            run["confirms"] = f"{PAIRED_RUN} {'9' * 12}: trajectory: passed -> failed"
    done = _fork_comment(runner, baseline_results, {"merge-base.json": json.dumps(paired).encode()})
    assert done.returncode == 1, done.stderr
    (comment,) = runner.fake.comments_on(7)
    assert "🔀 **Paired runs:** 6 re-run case(s) ran 6 time(s) on the merge-base" in comment["body"]
    assert (runner.out_dir / "merge-base.json").is_file()


def test_the_comment_job_leaves_out_paired_runs_it_cannot_read(
    runner: Runner, baseline_results: bytes
):
    done = _fork_comment(runner, baseline_results, {"merge-base.json": b"{not json"})
    assert done.returncode == 1, done.stderr  # the gate's verdict, posted all the same
    assert "merge-base.json left out, compared without its paired runs" in done.stdout
    (comment,) = runner.fake.comments_on(7)
    assert "merge-base.json left out" in comment["body"]
    assert not (runner.out_dir / "merge-base.json").exists()


def test_a_push_run_passes_mains_record_on_and_a_pr_reads_it_with_the_baseline_alone(
    runner: Runner, baseline_results: bytes
):
    """mode baseline stores main's record of the older baselines beside its Results
    (main-record.msgpack); a PR whose baseline that is downloads that one artifact only,
    and still weighs (and shows) the older baselines."""
    fake = runner.fake
    main = fake.linear_history(4)
    workflow = ".github/workflows/agent-eval.yml"
    for sha in main[:2]:
        older = json.loads(baseline_results)
        older["source"]["sha"] = sha
        run = fake.add_workflow_run(head_sha=sha, path=workflow, event="push")
        data = zipped({"results.json": json.dumps(older).encode()})
        fake.add_artifact("agent-eval-results", data, run_id=run["id"], digest=True)
    payload = {"ref": "refs/heads/main", "after": main[2], "repository": repository()}
    env = runner.env("push", payload)
    env["GITHUB_SHA"], env["GITHUB_REF"] = main[2], "refs/heads/main"
    done = runner.run(env)
    assert done.returncode == 0, done.stderr
    assert f"main's record of 2 older baselines written to {RECORD_NAME}" in done.stdout
    # upload-artifact of output-dir without baseline/, as docs/workflows.md has it
    out = runner.out_dir
    files = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert "baseline/results.json" in files  # the previous baseline, which no PR reads
    files = {name: data for name, data in files.items() if not name.startswith("baseline/")}
    run = fake.add_workflow_run(head_sha=main[2], path=workflow, event="push")
    fake.add_artifact("agent-eval-results", zipped(files), run_id=run["id"], digest=True)
    head = fake.linear_history(1, parent=main[2], prefix="pr", branch="feature")[0]
    fake.add_pull(7, head, main[3])
    before = len(fake.calls("download_artifact"))
    runner.out_dir = runner.tmp / "pr-out"
    done = runner.run(runner.env("pull_request", pr_payload(7, head, main[3])))
    assert done.returncode == 0, done.stderr  # the same agent as main's newest push run
    assert len(fake.calls("download_artifact")) == before + 1  # the baseline's artifact alone
    kept = sorted(p.name for p in (runner.out_dir / "baseline").iterdir())
    assert kept == [RECORD_NAME, "results.json"]
    page = (runner.out_dir / "report.html").read_text(encoding="utf-8")
    assert main[0][:7] in page and main[1][:7] in page  # the history the drill-down shows


ALL_CLEAR = "✅ **agent-eval**: no changes against the baseline"


def test_on_change_is_quiet_then_posts_a_regression_then_clears_it(
    runner: Runner, baseline_results: bytes, tmp_path: Path
):
    """`comment: on-change` over three pushes to one PR: main's agent (nothing changed),
    the shipped agent (a regression), main's agent again (the fix)."""
    fake = runner.fake
    main, first = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, first, main[3])
    fixed = python_command(fixed_agent(tmp_path))

    def push(head: str, command: str):
        fake.pulls[7]["head"]["sha"] = head  # the PR as GitHub returns it now
        payload = pr_payload(7, head, main[3])
        env = runner.env("pull_request", payload, command=command, comment="on-change")
        env["GITHUB_SHA"] = head  # the commit evaluated, which the all-clear line names
        return runner.run(env)

    def check_of(head: str) -> dict:
        (check,) = [c for c in fake.check_runs.values() if c["head_sha"] == head]
        return check

    # 1. nothing changed: no comment, the check run all the same
    done = push(first, fixed)
    assert done.returncode == 0, done.stderr
    assert fake.comments_on(7) == [] and not fake.calls("create_comment")
    assert check_of(first)["conclusion"] == "success"
    assert runner.outputs()["comment-url"] == ""
    assert "no earlier comment to clear" in done.stdout

    # 2. a regression: the report is posted
    second = fake.linear_history(1, parent=first, prefix="pr2", branch="feature")[0]
    done = push(second, python_command(AGENT))
    assert done.returncode == 1, done.stderr
    (comment,) = fake.comments_on(7)
    assert "gold_express_refund" in comment["body"] and "lucky answer" in comment["body"]
    assert check_of(second)["conclusion"] == "failure"
    assert runner.outputs()["comment-url"] == comment["html_url"]

    # 3. fixed: the same comment says all clear, in one line under its marker and id
    third = fake.linear_history(1, parent=second, prefix="pr3", branch="feature")[0]
    done = push(third, fixed)
    assert done.returncode == 0, done.stderr
    (cleared,) = fake.comments_on(7)
    assert cleared["id"] == comment["id"] and len(fake.calls("create_comment")) == 1
    marker, id_line, line = cleared["body"].rstrip("\n").split("\n")
    assert marker == "<!-- agent-eval-action:agent-eval -->"
    assert id_line == f"<!-- agent-eval-action:comment-id:{comment['id']} -->"
    assert line.startswith(ALL_CLEAR)
    assert "against the baseline the merge-base" in line  # its Results name no commit here
    assert f"at [`{third[:7]}`](https://github.com/{REPO}/commit/{third})" in line
    assert "/actions/runs/9001)" in line
    assert check_of(third)["conclusion"] == "success"
    assert runner.outputs()["comment-url"] == comment["html_url"]
    assert len(fake.check_runs) == 3  # one per push: the gate speaks every time
    # the full report is still written for the job summary and the artifact
    report = (runner.out_dir / "report.md").read_text(encoding="utf-8")
    assert "### ✅ no regressions · 6 unchanged" in report


def test_never_leaves_an_earlier_comment_alone(runner: Runner, baseline_results: bytes):
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3])
    payload = pr_payload(7, head, main[3])
    assert runner.run(runner.env("pull_request", payload)).returncode == 1  # always, the default
    (before,) = fake.comments_on(7)
    body, checks = before["body"], len(fake.calls("create_check_run"))
    calls = len(fake.log)
    done = runner.run(runner.env("pull_request", payload, comment="never"))
    assert done.returncode == 1, done.stderr
    assert [c["body"] for c in fake.comments_on(7)] == [body]
    ours = [c.route for c in fake.log[calls:] if "comment" in c.route]
    assert ours == []  # not even listed
    assert len(fake.calls("create_check_run")) == checks + 1
    assert runner.outputs()["comment-url"] == ""


def test_on_regression_with_only_an_improvement_creates_nothing(
    runner: Runner, shipped_results: bytes, tmp_path: Path
):
    fake = runner.fake
    main, head = main_with_baseline(fake, shipped_results)  # main as shipped: one case fails
    fake.add_pull(7, head, main[3])
    fixed = python_command(fixed_agent(tmp_path))
    payload = pr_payload(7, head, main[3])
    env = runner.env("pull_request", payload, command=fixed, comment="on-regression")
    done = runner.run(env)
    assert done.returncode == 0, done.stderr
    assert fake.comments_on(7) == [] and not fake.calls("create_comment")
    (check,) = fake.check_runs.values()
    assert check["head_sha"] == head and check["conclusion"] == "success"
    diff = json.loads((runner.out_dir / "diff.json").read_text(encoding="utf-8"))
    changes = {c["eval_id"]: c["change"] for c in diff["cases"]}
    assert changes.pop("gold_express_refund") == "fixed"  # the news it stays quiet about
    assert set(changes.values()) == {"unchanged"}


def test_the_comment_job_honours_its_own_comment_input(runner: Runner, baseline_results: bytes):
    """Part 1 of the fork-safe pair runs with the default; part 2's own `comment` decides."""
    fake = runner.fake
    _, head = _fork_pr_run(runner, baseline_results)
    pr_out = runner.out_dir
    done = _comment_job(runner, head, {}, comment="never")
    assert done.returncode == 1, done.stderr  # the regression, gated
    assert fake.comments_on(7) == [] and not fake.calls("list_comments")
    (check,) = fake.check_runs.values()
    assert check["head_sha"] == head and check["conclusion"] == "failure"
    shutil.rmtree(runner.out_dir)  # the comment job's own output-dir, reused
    runner.out_dir = pr_out
    done = _comment_job(runner, head, {}, comment="on-regression")
    assert done.returncode == 1, done.stderr
    (comment,) = fake.comments_on(7)
    assert "gold_express_refund" in comment["body"]


def test_a_bad_comment_input_is_one_line_and_exit_2(runner: Runner):
    env = runner.env("pull_request", pr_payload(7, "a" * 40, "b" * 40), comment="sometimes")
    done = runner.run(env)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: input comment: must be one of always, on-change, on-regression, never "
        "(or true, false), got 'sometimes'"
    ]
    assert runner.fake.log == []
    assert not (runner.out_dir / "results.json").exists()
