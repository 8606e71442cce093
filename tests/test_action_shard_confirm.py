"""Confirmation re-runs in a sharded run, through the action against the fake GitHub: each
shard confirms its own regressed cases and records the re-runs in its Results; the merge job
merges them and its comparison, and `compare` on the merged file, reach the same verdict."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.action_harness import (
    Runner,
    clean_env,
    main_with_baseline,
    pr_payload,
    zipped,
)
from helpers.paths import ROOT, python_command
from helpers.table_suite import RIGHT, SKIPS_THE_TOOL, TABLE_AGENT, order_case

from agent_eval_action.core import CaseKey
from agent_eval_action.pipeline.shard import partition

pytestmark = pytest.mark.e2e

# baseline durations that put the noisy case and a steady one in shard 1 of 2, the real
# regression and the other steady one in shard 2 (longest first, to the least loaded shard)
DURATIONS = {"noisy": 4.0, "real": 3.0, "steady2": 2.0, "steady1": 1.0}


def _baseline(tmp: Path, evals: Path) -> bytes:
    """main's run: every case right; its durations fixed, so the split is known."""
    steady = tmp / "steady.json"
    steady.write_text(json.dumps(dict.fromkeys(DURATIONS, RIGHT)))
    out = tmp / "base.json"
    argv = [sys.executable, "-m", "agent_eval_action", "run", str(evals), "--out", str(out)]
    argv += ["--command", python_command(TABLE_AGENT, str(steady))]
    done = subprocess.run(argv, cwd=ROOT, env=clean_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    for case in data["cases"]:
        case["duration_s"] = DURATIONS[case["eval_id"]]
    out.write_text(json.dumps(data))
    split = partition(
        [CaseKey("shop", c) for c in DURATIONS],
        2,
        {CaseKey("shop", c): d for c, d in DURATIONS.items()},
    )
    assert split.cases(1) == [CaseKey("shop", "noisy"), CaseKey("shop", "steady1")]
    return out.read_bytes()


def _by_id(cases: list[dict]) -> dict[str, dict]:
    return {c["eval_id"]: c for c in cases}


def test_each_shard_confirms_its_own_flips_and_the_merge_reproduces_the_verdict(
    runner: Runner, tmp_path: Path
):
    evals = tmp_path / "evals"
    evals.mkdir()
    (evals / "shop.evalset.json").write_text(
        json.dumps({"eval_set_id": "shop", "eval_cases": [order_case(c) for c in DURATIONS]})
    )
    base = _baseline(tmp_path, evals)
    main, head = main_with_baseline(runner.fake, base)
    runner.fake.add_pull(7, head, main[3])
    payload = pr_payload(7, head, main[3])
    # the PR's agent: `noisy` skips the tool in its first run only (its re-run is right);
    # `real` skips it every run
    table = tmp_path / "pr.json"
    table.write_text(
        json.dumps(
            {**dict.fromkeys(DURATIONS, RIGHT), "noisy/0/1": SKIPS_THE_TOOL, "real": SKIPS_THE_TOOL}
        )
    )
    command = python_command(TABLE_AGENT, str(table))
    shards: dict[int, bytes] = {}
    for index in (1, 2):
        runner.out_dir = tmp_path / f"shard-{index}"
        env = runner.env(
            "pull_request", payload, evals=str(evals), command=command, shard=f"{index}/2"
        )
        done = runner.run(env)
        # a shard records; the merge job gates, so the real regression fails nothing here
        assert done.returncode == 0, done.stdout + done.stderr
        shards[index] = (runner.out_dir / "results.json").read_bytes()
    assert runner.fake.comments == {} and runner.fake.check_runs == {}

    one, two = (_by_id(json.loads(shards[i])["cases"]) for i in (1, 2))
    assert set(one) == {"noisy", "steady1"} and set(two) == {"real", "steady2"}
    # each shard re-ran its own regressed case, recorded as such with what triggered it
    noisy, real = one["noisy"]["runs"], two["real"]["runs"]
    assert [r["run"] for r in noisy] == [1, 2] and noisy[0]["confirms"] is None
    assert "tool_trajectory_avg_score" in noisy[1]["confirms"]
    assert [r["confirms"] is not None for r in real] == [False, True, True, True]
    # no suite round in a shard, and nothing re-ran the steady cases
    assert len(one["steady1"]["runs"]) == len(two["steady2"]["runs"]) == 1
    for data in shards.values():
        assert json.loads(data)["shard"]["cases_compared"] == 4  # the whole suite's family

    current = runner.fake.add_workflow_run(id=9001, head_sha=head, event="pull_request")
    for index, data in shards.items():
        runner.fake.add_artifact(
            f"agent-eval-results-shard-{index}",
            zipped({"results.json": data}),
            run_id=current["id"],
        )
    runner.out_dir = tmp_path / "merged"
    done = runner.run(runner.env("pull_request", payload, evals=str(evals), mode="merge"))
    assert done.returncode == 1, done.stdout + done.stderr  # the real regression
    merged = _by_id(json.loads((runner.out_dir / "results.json").read_text())["cases"])
    assert merged["noisy"]["runs"] == one["noisy"]["runs"]  # the confirms runs, merged
    assert merged["real"]["runs"] == two["real"]["runs"]
    diff = _by_id(json.loads((runner.out_dir / "diff.json").read_text())["cases"])
    assert diff["real"]["change"] == "new_failure"
    assert diff["real"]["confirmation"] == {"runs": 3, "reproduced": 3, "inconclusive": 0}
    assert diff["noisy"]["change"] not in ("new_failure", "regressed") and diff["noisy"]["flaky"]
    assert diff["noisy"]["confirmation"] == {"runs": 1, "reproduced": 0, "inconclusive": 0}
    blamed = {c for c, d in diff.items() if d["change"] in ("new_failure", "regressed")}
    assert blamed == {"real"}
    body = runner.fake.comments_on(7)[0]["body"]
    assert "real" in body and "confirmed" in body, body

    # `compare` on the merged Results file gives the same verdict, case by case
    again = tmp_path / "again"
    again.mkdir()
    (again / "base.json").write_bytes(base)
    argv = [sys.executable, "-m", "agent_eval_action", "compare", "--baseline", "base.json"]
    argv += ["--current", str(runner.out_dir / "results.json"), "--format", "json"]
    done = subprocess.run(argv, cwd=again, env=clean_env(), capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    reproduced = _by_id(json.loads(done.stdout)["cases"])
    for key in ("change", "confirmation", "flaky"):
        assert {c: d[key] for c, d in reproduced.items()} == {c: d[key] for c, d in diff.items()}
