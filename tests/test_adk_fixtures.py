"""ADK's own integration eval files: each loads, and an agent that answers exactly as
expected scores what ADK's evaluators give for expected against expected."""

from __future__ import annotations

import asyncio
import inspect
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.paths import SHARED_FIXTURES, WORKERS

from agent_eval_action.results import Results

agent_evaluator = pytest.importorskip("google.adk.evaluation.agent_evaluator")
eval_config = pytest.importorskip("google.adk.evaluation.eval_config")
trajectory_evaluator = pytest.importorskip("google.adk.evaluation.trajectory_evaluator")
final_response_match_v1 = pytest.importorskip("google.adk.evaluation.final_response_match_v1")

pytestmark = pytest.mark.adk

# ADK's registry maps these names to these evaluators (it needs pandas to import, so
# the same mapping is written out here).
ADK_EVALUATORS = {
    "tool_trajectory_avg_score": trajectory_evaluator.TrajectoryEvaluator,
    "response_match_score": final_response_match_v1.RougeEvaluator,
}

FIXTURE_FILES = sorted(SHARED_FIXTURES.rglob("*.test.json")) if SHARED_FIXTURES.is_dir() else []


@pytest.fixture(scope="module")
def replayed(tmp_path_factory) -> Results:
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"ADK's integration eval files are not present at {SHARED_FIXTURES}")
    out = tmp_path_factory.mktemp("fixtures") / "results.json"
    command = f"{sys.executable} {WORKERS / 'replay_agent.py'} {SHARED_FIXTURES}"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "agent_eval_action",
            "run",
            str(SHARED_FIXTURES),
            "--command",
            command,
            "--out",
            str(out),
        ],
        check=False,
        capture_output=True,
        timeout=300,
    )
    return Results.from_json(out.read_text())


def adk_case_scores(file: Path) -> dict[str, list[float | None]]:
    """Per metric, ADK's per-turn scores of the file's one case, expected against expected."""
    config = agent_evaluator.AgentEvaluator.find_config_for_test_file(str(file))
    eval_set = agent_evaluator.AgentEvaluator._load_eval_set_from_file(str(file), config, {})
    (case,) = eval_set.eval_cases
    scores = {}
    for metric in eval_config.get_eval_metrics_from_config(config):
        if metric.metric_name not in config.criteria:
            continue  # ADK's informational efficiency metrics
        evaluator = ADK_EVALUATORS[metric.metric_name](eval_metric=metric)
        result = evaluator.evaluate_invocations(case.conversation, case.conversation)
        if inspect.isawaitable(result):
            result = asyncio.run(result)
        scores[metric.metric_name] = [r.score for r in result.per_invocation_results]
    return scores


@pytest.mark.parametrize("file", FIXTURE_FILES, ids=lambda p: str(p.relative_to(SHARED_FIXTURES)))
def test_replayed_fixture_scores_as_adk(replayed: Results, file: Path):
    (case,) = [c for c in replayed.cases if Path(c.file).resolve() == file.resolve()]
    assert case.runs and case.runs[0].error is None
    expected = adk_case_scores(file)
    assert set(case.metrics) == set(expected)
    for name, adk_turns in expected.items():
        ours = case.metrics[name]
        assert ours.invocations[0] == pytest.approx(adk_turns, abs=1e-9), name
        assert ours.score == pytest.approx(sum(adk_turns) / len(adk_turns), abs=1e-9), name
