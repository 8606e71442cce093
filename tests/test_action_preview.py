"""The action's cost preview (pipeline/preview.py): root plans the job before any of the
PR's code runs and writes the preview to the log and, as a short block above the report,
to the job summary; the run stays within it (issue 36)."""

from __future__ import annotations

import json
import re

import pytest
from helpers.action_harness import Runner, main_with_baseline, pr_payload, repository

from agent_eval_action.pipeline.preview import TIMES

pytestmark = pytest.mark.e2e  # the action's entry point in a child process, against the fake GitHub

EXTRA = re.compile(r"at most (\d+) more to (confirm|sample main)")


def _case_runs(runner: Runner) -> int:
    results = json.loads((runner.out_dir / "results.json").read_text())
    return sum(len(case["runs"]) for case in results["cases"])


def test_a_pr_run_shows_its_preview_in_the_log_and_the_summary_and_stays_within_it(
    runner: Runner, baseline_results: bytes
):
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3])
    done = runner.run(runner.env("pull_request", pr_payload(7, head, main[3])))
    assert done.returncode == 1, done.stderr  # the example's regression
    first = f"plan: 6 cases {TIMES} 1 run = 6 case-runs; at most 36 more to confirm; "
    log = done.stdout.splitlines()
    [said] = [i for i, line in enumerate(log) if line.startswith(first)]
    assert said < log.index("::group::run the evals")  # before the agent stage
    assert "no call on the judge's key" in log[said]
    summary = runner.summary.read_text(encoding="utf-8")
    assert summary.startswith("```") and first in summary.split("\n", 2)[1]
    assert "  confirmation: each regressed case re-runs up to 3 times" in summary
    # the report follows the block: the preview never takes its place
    assert "gold_express_refund" in summary.split("```", 2)[2]
    found = EXTRA.search(log[said])
    assert found and _case_runs(runner) - 6 <= int(found[1])
    assert _case_runs(runner) > 6  # the regression was confirmed: the bound held re-runs


def test_a_push_run_previews_mains_sampling_and_stays_within_it(runner: Runner):
    fake = runner.fake
    main = fake.linear_history(2)
    payload = {"ref": "refs/heads/main", "after": main[1], "repository": repository()}
    env = runner.env("push", payload, **{"baseline-runs": "3"})
    env["GITHUB_SHA"], env["GITHUB_REF"] = main[1], "refs/heads/main"
    done = runner.run(env)
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("plan: "))
    found = EXTRA.search(line)
    assert found and found[2] == "sample main" and int(found[1]) == 6 * 2
    assert "  main's sampling: each case runs again until main has 3 runs" in (
        runner.summary.read_text(encoding="utf-8")
    )
    assert 6 < _case_runs(runner) <= 6 + int(found[1])
