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
    """Issue 33's case (helpers/judged_suite.py): 20 cases, one changed answer, num_samples
    3, no history. Each round's score stage finds the earlier rounds' verdicts, and the first
    finds main's: the same judged answer is never sent to Gemini twice in one run of the
    action, and the Results count what the run spent."""
    from fakes.gemini import FakeGemini
    from helpers import judged_suite as suite

    evals = suite.write_judged_suite(tmp_path)
    steady, broken = tmp_path / "main.json", tmp_path / "pr.json"
    steady.write_text(json.dumps(suite.MAIN))
    broken.write_text(json.dumps(suite.PR))
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
        calls = gemini.calls()
    assert done.returncode == 1, done.stdout + done.stderr
    diff = json.loads((runner.out_dir / "diff.json").read_text())
    changed = next(c for c in diff["cases"] if c["eval_id"] == suite.CHANGED)
    assert changed["confirmation"] == {"runs": 3, "reproduced": 3, "inconclusive": 0}
    results = json.loads((runner.out_dir / "results.json").read_text())
    runs = {c["eval_id"]: len(c["runs"]) for c in results["cases"]}
    assert runs == {case: 1 for case in suite.CASES} | {suite.CHANGED: 4}  # one answer in 4
    # the changed answer's 3 samples, once (each round's score stage judged it afresh before)
    assert calls == suite.CALLS == 3, calls
    # and the Results say what the run spent: those 3 calls, though the last round's score
    # stage found them in the run's own cache, and every verdict reused, main's and the run's
    usage = results["usage"]
    assert usage["judge_calls"] == suite.CALLS, usage
    assert usage["judge_reused"] == suite.REUSED == 66, usage


def _recorded(path) -> list[tuple]:
    """What the Results record of each case and its runs, durations and times left out."""
    from agent_eval_action.results import Results

    results = Results.from_json(path.read_bytes())
    return [
        (
            c.key,
            c.status,
            [(r.run, r.kind, r.confirms, r.fingerprint, r.error) for r in c.runs],
            {name: (m.runs, m.status) for name, m in c.metrics.items()},
        )
        for c in sorted(results.cases, key=lambda c: c.key)
    ]


def test_re_runs_started_ahead_decide_as_one_a_round(runner: Runner, tmp_path):
    """A confirmation round's agent stage with slots to spare runs the later re-runs too;
    the later rounds take them from its traces file, with no agent stage of their own, and
    what no round took is neither recorded nor judged: the Results and the verdict are
    those of one re-run a round (concurrency 1)."""
    evals = tmp_path / "evals"
    evals.mkdir()
    suite = {"eval_set_id": "shop", "eval_cases": [order_case("a"), order_case("b")]}
    (evals / "shop.evalset.json").write_text(json.dumps(suite))
    steady, flaky = tmp_path / "steady.json", tmp_path / "flaky.json"
    steady.write_text(json.dumps({"a": RIGHT, "b": RIGHT}))
    # b regresses in run 1 and its first re-run, not in its second: the third is not needed
    skips = {"text": RIGHT["text"], "tools": []}
    flaky.write_text(json.dumps({"a": RIGHT, "b": skips, "b/0/3": RIGHT}))
    base = tmp_path / "base.json"
    argv = [sys.executable, "-m", "agent_eval_action", "run", str(evals), "--out", str(base)]
    argv += ["--command", python_command(TABLE_AGENT, str(steady))]
    assert subprocess.run(argv, cwd=ROOT, env=clean_env(), capture_output=True).returncode == 0
    main, head = main_with_baseline(runner.fake, base.read_bytes())
    runner.fake.add_pull(7, head, main[3])
    recorded, said = [], []
    for concurrency in ("1", "4"):
        env = runner.env(
            "pull_request",
            pr_payload(7, head, main[3]),
            evals=str(evals),
            command=python_command(TABLE_AGENT, str(flaky)),
            concurrency=concurrency,
        )
        done = runner.run(env)
        assert done.returncode == 0, done.stdout + done.stderr
        recorded.append(_recorded(runner.out_dir / "results.json"))
        diff = json.loads((runner.out_dir / "diff.json").read_text())
        case = next(c for c in diff["cases"] if c["eval_id"] == "b")
        assert case["confirmation"] == {"runs": 2, "reproduced": 1, "inconclusive": 0}
        said.append(done.stdout + done.stderr)
    one, ahead = recorded
    assert one == ahead
    assert [run[0] for key, _, runs, _ in ahead if key[1] == "b" for run in runs] == [1, 2, 3]
    assert "re-runs:" not in said[0]
    assert "re-runs: 2 used of 3 made (1 started ahead on idle slots were not needed)" in said[1]
    # one agent stage for both re-runs (and the one not needed), against two
    # each child stage's output is relayed between stop-commands lines: the suite's agent and
    # score stages, then per round an agent stage (none for a round whose run started ahead)
    # and a score stage
    assert said[0].count("::stop-commands::") == 6 and said[1].count("::stop-commands::") == 5
