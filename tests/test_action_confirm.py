"""Confirmation re-runs through the action (pipeline/confirm.py): the regressed cases run
again as the agent stage, the score stage scores every traces file, and the verdict holds
only if the re-runs show the regression again."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers.action_harness import Runner, clean_env, main_with_baseline, pr_payload
from helpers.paths import ROOT, python_command
from helpers.table_suite import RIGHT, TABLE_AGENT, order_case

pytestmark = pytest.mark.e2e


def test_a_regression_is_confirmed_by_its_re_runs(runner: Runner, baseline_results: bytes):
    main, head = main_with_baseline(runner.fake, baseline_results)
    runner.fake.add_pull(7, head, main[3])
    done = runner.run(runner.env("pull_request", pr_payload(7, head, main[3])))
    assert done.returncode == 1, done.stdout + done.stderr
    results = json.loads((runner.out_dir / "results.json").read_text())
    gold = next(c for c in results["cases"] if c["eval_id"] == "gold_express_refund")
    assert [r["run"] for r in gold["runs"]] == [1, 2, 3, 4]
    assert [r["confirms"] is not None for r in gold["runs"]] == [False, True, True, True]
    diff = json.loads((runner.out_dir / "diff.json").read_text())
    case = next(c for c in diff["cases"] if c["eval_id"] == "gold_express_refund")
    assert case["confirmation"] == {"runs": 3, "reproduced": 3, "inconclusive": 0}
    body = runner.fake.comments_on(7)[0]["body"]
    assert "confirmed" in body, body  # the report names the class (the reason is in diff.json)
    metric = next(m for m in case["metrics"] if m["metric"] == "tool_trajectory_avg_score")
    assert metric["reason"].endswith("confirmed in 3/3 re-runs")


def test_the_confirmation_limit_is_said_at_the_top_of_the_comment(
    runner: Runner, baseline_results: bytes
):
    """`confirm-limit` cut the re-runs: the regression keeps its verdict, unconfirmed, and
    the comment says so at the top, not only the Results' warnings."""
    main, head = main_with_baseline(runner.fake, baseline_results)
    runner.fake.add_pull(7, head, main[3])
    env = runner.env("pull_request", pr_payload(7, head, main[3]), **{"confirm-limit": "1"})
    done = runner.run(env)
    assert done.returncode == 1, done.stdout + done.stderr
    results = json.loads((runner.out_dir / "results.json").read_text())
    gold = next(c for c in results["cases"] if c["eval_id"] == "gold_express_refund")
    assert len(gold["runs"]) == 2  # one re-run, then the limit
    said = "Confirmation re-runs stopped at the limit of 1 extra case-runs"
    assert any(w.startswith(said[0].lower() + said[1:]) for w in results["warnings"])
    body = runner.fake.comments_on(7)[0]["body"]
    assert said in body.split("<details>")[0], body  # above every collapsed block
    assert f"::warning::{said[0].lower() + said[1:]}" in done.stdout


def test_a_flip_its_re_run_does_not_show_again_passes(runner: Runner, tmp_path):
    case = order_case("b")
    evals = tmp_path / "evals"
    evals.mkdir()
    (evals / "shop.evalset.json").write_text(
        json.dumps({"eval_set_id": "shop", "eval_cases": [case]})
    )
    steady, flaky = tmp_path / "steady.json", tmp_path / "flaky.json"
    steady.write_text(json.dumps({"b": RIGHT}))
    # run 1 skips the tool, its re-run does not
    flaky.write_text(json.dumps({"b": RIGHT, "b/0/1": {"text": RIGHT["text"], "tools": []}}))
    base = tmp_path / "base.json"
    argv = [sys.executable, "-m", "agent_eval_action", "run", str(evals), "--out", str(base)]
    argv += ["--command", python_command(TABLE_AGENT, str(steady))]
    assert subprocess.run(argv, cwd=ROOT, env=clean_env(), capture_output=True).returncode == 0
    main, head = main_with_baseline(runner.fake, base.read_bytes())
    runner.fake.add_pull(7, head, main[3])
    env = runner.env(
        "pull_request",
        pr_payload(7, head, main[3]),
        evals=str(evals),
        command=python_command(TABLE_AGENT, str(flaky)),
    )
    done = runner.run(env)
    assert done.returncode == 0, done.stdout + done.stderr
    diff = json.loads((runner.out_dir / "diff.json").read_text())
    assert diff["cases"][0]["confirmation"] == {"runs": 1, "reproduced": 0, "inconclusive": 0}
    metric = diff["cases"][0]["metrics"][0]
    assert metric["reason"].startswith("not reproduced: 0/1") and diff["cases"][0]["flaky"]


def test_the_judge_is_asked_once_across_the_confirmation_rounds(runner: Runner, tmp_path):
    """Each round's score stage finds the earlier rounds' verdicts: the same judged answer
    is never sent to Gemini twice in one run of the action."""
    from fakes.gemini import FakeGemini

    evals = tmp_path / "evals"
    evals.mkdir()
    case = order_case("b")
    (evals / "shop.evalset.json").write_text(
        json.dumps({"eval_set_id": "shop", "eval_cases": [case]})
    )
    (evals / "test_config.json").write_text(
        json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0, "final_response_match_v2": 0.5}})
    )
    steady, broken = tmp_path / "steady.json", tmp_path / "broken.json"
    steady.write_text(json.dumps({"b": {"text": "It ships today.", "tools": [["track", {}]]}}))
    # every run skips the tool and says the same thing: confirmed in 3 re-runs, one answer
    broken.write_text(json.dumps({"b": {"text": RIGHT["text"], "tools": []}}))
    with FakeGemini() as gemini:
        base = tmp_path / "base.json"
        argv = [sys.executable, "-m", "agent_eval_action", "run", str(evals), "--out", str(base)]
        argv += ["--command", python_command(TABLE_AGENT, str(steady))]
        env = {**clean_env(), "GOOGLE_GEMINI_BASE_URL": gemini.url, "GOOGLE_API_KEY": "k"}
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        gemini.reset()
        main, head = main_with_baseline(runner.fake, base.read_bytes())
        runner.fake.add_pull(7, head, main[3])
        env = runner.env(
            "pull_request",
            pr_payload(7, head, main[3]),
            evals=str(evals),
            command=python_command(TABLE_AGENT, str(broken)),
            **{"judge-api-key": "judge-key"},
        )
        env["GOOGLE_GEMINI_BASE_URL"] = gemini.url
        done = runner.run(env)
        calls = len(gemini.requests)
    assert done.returncode == 1, done.stdout + done.stderr
    diff = json.loads((runner.out_dir / "diff.json").read_text())
    assert diff["cases"][0]["confirmation"] == {"runs": 3, "reproduced": 3, "inconclusive": 0}
    results = json.loads((runner.out_dir / "results.json").read_text())
    assert len(results["cases"][0]["runs"]) == 4  # four runs, one answer between them
    # one judged answer, judged once: its 5 samples (final_response_match_v2's default);
    # each round's score stage judged it afresh before (20 calls)
    assert calls == 5, calls
    # and the Results say what the run spent: those 5 calls, though the last round's score
    # stage found them in the run's own cache (it said 0 calls before)
    assert results["usage"]["judge_calls"] == 5, results["usage"]
