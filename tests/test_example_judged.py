"""examples/evals-judged: the example suite with final_response_match_v2, against the fake."""

from __future__ import annotations

import pytest
from fakes.gemini import FakeGemini
from helpers.paths import ROOT, python_command

from agent_eval_action.cli import main
from agent_eval_action.results import Results

AGENT = ROOT / "examples" / "agent" / "support_agent.py"


@pytest.fixture
def fake(monkeypatch):
    with FakeGemini() as server:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
        monkeypatch.setenv("GOOGLE_API_KEY", "fake")
        yield server


def test_the_judged_example_runs_and_reruns_without_calls(fake, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    argv = [
        "run",
        "examples/evals",
        "--config",
        "examples/evals-judged/test_config.json",
        "--command",
        python_command(AGENT),
    ]
    assert main([*argv, "--out", str(tmp_path / "base.json")]) == 1
    base = Results.from_json((tmp_path / "base.json").read_text())
    assert fake.calls("verdict") == 30 and base.usage.judge_calls == 30  # 10 turns x 3 samples
    by_id = {c.eval_id: c for c in base.cases}
    assert all(c.metrics["final_response_match_v2"].status == "passed" for c in base.cases)
    lucky = by_id["gold_express_refund"]
    assert lucky.status == "failed"
    assert lucky.metrics["tool_trajectory_avg_score"].status == "failed"
    fake.reset()
    again = tmp_path / "again.json"
    # against its baseline the deliberate failure is "still failing", not blamed: the gate passes
    assert main([*argv, "--baseline", str(tmp_path / "base.json"), "--out", str(again)]) == 0
    rerun = Results.from_json(again.read_text())
    assert fake.calls() == 0 and rerun.usage.judge_reused == 30
