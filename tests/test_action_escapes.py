"""No silent escape routes, through the action against the fake GitHub: a PR that deletes a
passing case fails unless accepted; a moved eval file and a `FILE:id` selection are no
removals; a merge group counts the accept label of each of its PRs; a baseline run records
the step's policy."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.action_harness import (
    EVALS,
    TOKEN,
    Runner,
    main_with_baseline,
    pr_payload,
    repository,
)
from helpers.paths import ROOT

from agent_eval_action.action.event import MergeGroupEvent
from agent_eval_action.action.merge_group import group_numbers, group_pulls
from agent_eval_action.compare.model import Change, Diff
from agent_eval_action.github.client import GitHub

ACCEPT = "agent-eval:accept"
GOLD = "gold_express_refund"  # the case the PR's agent regresses (the example agent's shortcut)


def eval_copy(tmp: Path) -> Path:
    """A copy of the example eval files, to change as a PR would."""
    target = tmp / "evals"
    shutil.copytree(ROOT / EVALS, target)
    return target


def without_case(evals: Path, eval_id: str) -> None:
    path = evals / "support.evalset.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["eval_cases"] = [c for c in data["eval_cases"] if c["eval_id"] != eval_id]
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")


def diff_of(runner: Runner) -> Diff:
    return Diff.from_json((runner.out_dir / "diff.json").read_text(encoding="utf-8"))


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("labels", "fail_on"),
    [((), ""), ((ACCEPT,), ""), ((), "-removed,regression")],
    ids=["no-label", "accept-label", "opted-out"],
)
def test_a_pr_that_deletes_its_regressing_case_fails_unless_accepted(
    runner: Runner, baseline_results: bytes, labels: tuple[str, ...], fail_on: str
):
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3], labels=list(labels))
    evals = eval_copy(runner.tmp)
    without_case(evals, GOLD)  # the regressed case, deleted: nothing regresses any more
    inputs = {"evals": str(evals), "fail-on": fail_on}
    env = runner.env("pull_request", pr_payload(7, head, main[3]), **inputs)

    done = runner.run(env)

    assert "Traceback" not in done.stderr, done.stderr
    diff = diff_of(runner)
    (removed,) = [c for c in diff.cases if c.change == Change.REMOVED]
    assert removed.eval_id == GOLD and diff.verdict.trajectory_regressions == 0
    assert diff.verdict.notes[0].startswith("⚠️ 1 case removed since the baseline")
    assert "::warning::1 case removed since the baseline" in done.stdout  # on the run's page
    (check,) = fake.check_runs.values()
    body = fake.comments_on(7)[0]["body"]
    if fail_on:  # opted out: passes, and the removal is still said
        assert done.returncode == 0, done.stderr
        assert diff.verdict.reasons == [] and diff.verdict.decided_by == ["regression", "-removed"]
        assert check["conclusion"] == "success"
        return
    reason = (
        "1 case that passed on the baseline was removed (fail-on regression; -removed opts out)"
    )
    assert diff.verdict.reasons == [reason]
    assert reason.split(" (")[0] in body  # said at the top of the comment, not only below
    if labels:
        assert done.returncode == 0, done.stderr
        assert diff.verdict.passed and diff.verdict.accepted
        assert check["conclusion"] == "success" and "Accepted" in body
    else:
        assert done.returncode == 1, done.stderr
        assert check["conclusion"] == "failure" and runner.outputs()["verdict"] == "fail"


@pytest.mark.e2e
def test_a_moved_eval_file_and_a_file_id_selection_are_no_removals(
    runner: Runner, baseline_results: bytes
):
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3])
    evals = eval_copy(runner.tmp)
    moved = evals / "legacy" / "moved"  # a legacy file's eval set id is its path
    moved.mkdir()
    (evals / "legacy" / "faq.test.json").rename(moved / "faq.test.json")
    shutil.copy(evals / "legacy" / "test_config.json", moved / "test_config.json")
    support = evals / "support.evalset.json"
    chosen = "order_status,where_is_my_order,broken_item_refund,return_policy"  # not GOLD
    selection = f"{support}:{chosen} {evals}/legacy"
    env = runner.env("pull_request", pr_payload(7, head, main[3]), evals=selection)

    done = runner.run(env)

    assert done.returncode == 0, done.stdout + done.stderr
    diff = diff_of(runner)
    assert not [c for c in diff.cases if c.change in (Change.REMOVED, Change.ADDED)]
    (faq,) = [c for c in diff.cases if c.renamed_from is not None]
    assert (faq.eval_set_id, faq.renamed_from.eval_set_id) == ("moved/faq", "legacy/faq")
    assert [(c.eval_set_id, c.eval_id) for c in diff.not_run] == [("support", GOLD)]
    assert diff.verdict.passed and diff.verdict.reasons == []
    assert diff.verdict.notes[0].startswith("⚠️ 1 case of the baseline not run (selection)")
    assert any(n.startswith("⚠️ The policy differs from main's") for n in diff.verdict.notes)
    recorded = json.loads((runner.out_dir / "results.json").read_text())["run_config"]
    assert recorded["selection"]["unselected"] == {"support": [GOLD]}
    (check,) = fake.check_runs.values()
    assert check["conclusion"] == "success"


def merge_queue(fake, main: list[str]) -> tuple[str, str]:
    """PR 7 and then PR 8 in the merge queue on main[2]: PR 8's group holds PR 7's commit."""
    group7 = fake.linear_history(1, parent=main[2], prefix="mq7", branch=None)[0]
    group8 = fake.linear_history(1, parent=group7, prefix="mq8", branch=None)[0]
    fake.refs[f"heads/gh-readonly-queue/main/pr-7-{main[2]}"] = group7
    fake.refs[f"heads/gh-readonly-queue/main/pr-8-{group7}"] = group8
    other = fake.linear_history(1, parent=main[1], prefix="mq9", branch=None)[0]
    fake.refs[f"heads/gh-readonly-queue/main/pr-9-{main[1]}"] = other  # not in 8's group
    fake.refs[f"heads/gh-readonly-queue/release/pr-10-{main[2]}"] = group7  # another base
    return group7, group8


def test_a_merge_groups_prs_are_its_own_and_those_queued_ahead(github_fake):
    fake = github_fake
    main = fake.linear_history(4)
    group7, group8 = merge_queue(fake, main)
    fake.add_pull(7, "a" * 40, main[2], labels=[ACCEPT])
    fake.add_pull(8, "b" * 40, main[2])
    gh = GitHub(TOKEN, fake.url, retries=1, backoff=0, sleep=lambda s: None)
    event = MergeGroupEvent(group8, f"refs/heads/gh-readonly-queue/main/pr-8-{group7}", main[2],
                            "refs/heads/main")  # fmt: skip
    assert group_numbers(gh, _repo(), event) == [8, 7]
    pulls = {p.number: p.labels for p in group_pulls(gh, _repo(), event)}
    assert pulls == {8: (), 7: (ACCEPT,)}
    first = MergeGroupEvent(group7, f"refs/heads/gh-readonly-queue/main/pr-7-{main[2]}", main[2],
                            "refs/heads/main")  # fmt: skip
    assert group_numbers(gh, _repo(), first) == [7]


def _repo() -> str:
    from fakes.github import REPO

    return REPO


@pytest.mark.e2e
def test_a_merge_group_passes_when_a_pr_in_it_carries_the_accept_label(
    runner: Runner, baseline_results: bytes
):
    fake = runner.fake
    main, _ = main_with_baseline(fake, baseline_results)
    group7, group8 = merge_queue(fake, main)
    fake.add_pull(7, "a" * 40, main[2], labels=[ACCEPT])  # its regression was accepted
    fake.add_pull(8, "b" * 40, main[2])
    payload = {
        "action": "checks_requested",
        "merge_group": {
            "head_sha": group8, "head_ref": f"refs/heads/gh-readonly-queue/main/pr-8-{group7}",
            "base_sha": main[2], "base_ref": "refs/heads/main",
        },
        "repository": repository(),
    }  # fmt: skip
    done = runner.run(runner.env("merge_group", payload))
    assert done.returncode == 0, done.stdout + done.stderr
    diff = diff_of(runner)
    assert diff.verdict.accepted and diff.verdict.trajectory_regressions == 1
    assert (
        f"☑️ Accepted by the label {ACCEPT} on PR #7 of this merge group (PRs #8, #7)."
        in diff.verdict.notes
    )
    (check,) = fake.check_runs.values()
    assert check["head_sha"] == group8 and check["conclusion"] == "success"
    assert fake.comments == {}


@pytest.mark.e2e
def test_a_baseline_run_records_the_policy_of_its_step(runner: Runner):
    fake = runner.fake
    main = fake.linear_history(1)
    payload = {"ref": "refs/heads/main", "after": main[0], "repository": repository()}
    env = runner.env("push", payload, **{"fail-on": "trajectory,-removed", "min-delta": "0.2"})
    env["GITHUB_SHA"], env["GITHUB_REF"] = main[0], "refs/heads/main"
    done = runner.run(env)
    assert done.returncode == 0, done.stderr
    config = json.loads((runner.out_dir / "results.json").read_text())["run_config"]
    assert config["gate"] == {
        "fail_on": ["trajectory", "-removed"],
        "min_delta": {"trajectory": 0.2, "response": 0.2},
    }
    assert config["selection"]["paths"] == [{"path": EVALS, "directory": True, "ids": None}]


@pytest.mark.parametrize(
    ("ref", "number"),
    [
        (f"refs/heads/gh-readonly-queue/main/pr-7-{'a' * 40}", 7),
        ("refs/heads/gh-readonly-queue/release/1.0/pr-12-abc123", 12),
        ("gh-readonly-queue/main/pr-7", 7),
        ("refs/heads/main", None),
        ("refs/heads/gh-readonly-queue/main/pr-x", None),
        ("refs/heads/feature/gh-readonly-queue/main/pr-7", None),
    ],
)
def test_the_pr_of_a_merge_queue_branch(ref, number):
    assert MergeGroupEvent("h", ref, "b", "refs/heads/main").pr_number == number
