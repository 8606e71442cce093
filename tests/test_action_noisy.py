"""An LLM-like agent at default settings (one run per case) through the action: an unchanged
agent passes, with main's history and without, its noise sorted out by confirmation re-runs;
a real regression (one tool no longer called) fails. The rates behind this are measured in
bench/gate_trust.py; these seeds are fixed examples."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.action_harness import Runner, clean_env, pr_payload, zipped
from helpers.noisy_suite import NOISY_AGENT, order_suite
from helpers.paths import ROOT, python_command

pytestmark = pytest.mark.e2e


def _results_of(evals: Path, seed: str, out: Path, *recording: str) -> bytes:
    argv = [sys.executable, "-m", "agent_eval_action", "run", str(evals), "--out", str(out)]
    argv += ["--command", python_command(NOISY_AGENT, seed), *recording]
    subprocess.run(argv, cwd=ROOT, env=clean_env(), capture_output=True, check=False)
    return out.read_bytes()


def _main_with_history(runner: Runner, evals: Path) -> tuple[list[str], str]:
    """main: three push runs with baselines (seeds main-0..2), a PR off the third."""
    fake = runner.fake
    main = fake.linear_history(4)
    for index in range(3):
        data = _results_of(evals, f"main-{index}", runner.tmp / f"main-{index}.json")
        run = fake.add_workflow_run(
            head_sha=main[index], path=".github/workflows/agent-eval.yml", event="push"
        )
        fake.add_artifact(
            "agent-eval-results", zipped({"results.json": data}), run_id=run["id"], digest=True
        )
    head = fake.linear_history(1, parent=main[2], prefix="pr", branch="feature")[0]
    fake.add_pull(7, head, main[3])
    return main, head


def _sampled_main(runner: Runner, evals: Path) -> tuple[list[str], str]:
    """main: one push run whose baseline was recorded with main's sampling (the first after
    adoption: nothing older), a PR off it."""
    fake = runner.fake
    main = fake.linear_history(2)
    out = runner.tmp / "main-0.json"
    data = _results_of(evals, "main-0", out, "--record-baseline", "--baseline-runs", "10")
    run = fake.add_workflow_run(
        head_sha=main[0], path=".github/workflows/agent-eval.yml", event="push"
    )
    fake.add_artifact(
        "agent-eval-results", zipped({"results.json": data}), run_id=run["id"], digest=True
    )
    head = fake.linear_history(1, parent=main[0], prefix="pr", branch="feature")[0]
    fake.add_pull(7, head, main[1])
    return main, head


def _pr(
    runner: Runner,
    seed: str,
    *,
    dropped: str | None = None,
    history: str = "5",
    sampled: bool = False,
):
    evals = order_suite(runner.tmp)
    main, head = (_sampled_main if sampled else _main_with_history)(runner, evals)
    command = python_command(NOISY_AGENT, seed, *([dropped] if dropped else []))
    env = runner.env(
        "pull_request",
        pr_payload(7, head, main[-1]),
        evals=str(evals),
        command=command,
        history=history,
    )
    done = runner.run(env)
    diff = json.loads((runner.out_dir / "diff.json").read_text())
    return done, diff


@pytest.mark.parametrize("history", ["5", "0"])
@pytest.mark.parametrize("seed", ["4", "5", "17", "20", "22"])  # 20 and 22: the other tool path
def test_an_unchanged_noisy_agent_passes(runner: Runner, seed: str, history: str):
    done, diff = _pr(runner, seed, history=history)
    assert done.returncode == 0, done.stdout + done.stderr
    noise = [c for c in diff["cases"] if c["confirmation"]]
    for case in noise:  # every flip seen was re-run, and not reproduced
        assert case["confirmation"]["reproduced"] < case["confirmation"]["runs"]
        assert case["flaky"] and case["change"] not in ("regressed", "new_failure")
    if history == "0":
        assert noise  # with nothing known about main, the flips of run 1 were re-run


@pytest.mark.parametrize("seed", ["4", "17", "20"])
def test_a_tool_no_longer_called_fails(runner: Runner, seed: str):
    done, diff = _pr(runner, seed, dropped="lookup")
    assert done.returncode == 1, done.stdout + done.stderr
    cases = {c["eval_id"]: c for c in diff["cases"]}
    # the cases that answer the same way every run: blamed one by one, after 3 re-runs
    for steady in ("order4", "order5"):
        assert cases[steady]["axes"]["trajectory"] == "new_failure"
        assert cases[steady]["confirmation"] == {"runs": 3, "reproduced": 3, "inconclusive": 0}
    # those whose wording varies: too few runs on main to blame one alone, but together
    # they fail the suite-level test on the trajectory axis
    (trajectory,) = [t for t in diff["suite_tests"] if t["axis"] == "trajectory"]
    assert trajectory["significant"], diff["suite_tests"]
    assert any("got worse together on the trajectory axis" in r for r in diff["verdict"]["reasons"])


@pytest.mark.parametrize("seed", ["4", "5", "20"])
def test_an_unchanged_noisy_agent_passes_against_a_sampled_first_baseline(runner: Runner, seed):
    done, diff = _pr(runner, seed, history="0", sampled=True)
    assert done.returncode == 0, done.stdout + done.stderr
    for case in diff["cases"]:
        assert case["change"] not in ("regressed", "new_failure"), case


@pytest.mark.parametrize("seed", ["4", "17"])
def test_a_tool_no_longer_called_fails_against_a_sampled_first_baseline(runner: Runner, seed):
    done, diff = _pr(runner, seed, dropped="lookup", history="0", sampled=True)
    assert done.returncode == 1, done.stdout + done.stderr
    cases = {c["eval_id"]: c for c in diff["cases"]}
    # main's ten runs of each reworded case never missed the lookup: each is blamed on the
    # trajectory axis after 3 re-runs, the noisy ones too (order3's own run on main took its
    # other tool path for some seeds: failing there already)
    for n in (0, 1, 2, 4, 5):
        assert cases[f"order{n}"]["axes"]["trajectory"] == "new_failure", cases[f"order{n}"]
        assert cases[f"order{n}"]["confirmation"] == {"runs": 3, "reproduced": 3, "inconclusive": 0}
