"""The pytest route (agent_eval_action.testing): ADK's `AgentEvaluator.evaluate(...)`, with
the import changed, run by pytest in a child process against the example ADK agent on the
real ADK Runner: passing from sync and async tests, failing with our table, writing Results
that record what `run --agent DIR` records; the agent on the fake Gemini for the failure."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from fakes.gemini import FakeGemini
from helpers.paths import ROOT

from agent_eval_action.cli import main
from agent_eval_action.errors import InputError
from agent_eval_action.results import Results
from agent_eval_action.testing import AgentEvaluator, agent_directory

pytestmark = pytest.mark.adk

EVALS = "examples/customer_support/evals"
PASSING = f"{EVALS}/refund_flow.evalset.json:damaged_item_refund,unverified_customer"

# ADK's docs' test, with the import changed; the folder form, a file with ids, the
# explicit initial session, sync and async (anyio's pytest plugin, with asyncio).
TESTS = """
import pytest
from agent_eval_action.testing import AgentEvaluator

@pytest.fixture
def anyio_backend():
    return "asyncio"

@pytest.mark.anyio
async def test_async_passes():
    await AgentEvaluator.evaluate(
        "customer_support", "{passing}", num_runs=1, results_file="{out}/async.json"
    )

def test_sync_passes():
    AgentEvaluator.evaluate_sync("customer_support", "{passing}", results_file="{out}/sync.json")

def test_the_legacy_file_with_an_initial_session(tmp_path):
    session = tmp_path / "initial.session.json"
    session.write_text('{{"app_name": "customer_support", "user_id": "u-1", "state": {{"tier": "gold"}}}}')
    AgentEvaluator.evaluate_sync(
        "customer_support", "{evals}/order_status.test.json", num_runs=1,
        initial_session_file=str(session), results_file="{out}/legacy.json",
    )

@pytest.mark.anyio
async def test_the_whole_folder():
    await AgentEvaluator.evaluate("customer_support", "{evals}", num_runs=1, results_file="{out}/all.json")
"""


def pytest_child(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    test_file = tmp_path / "test_agent_evals.py"
    test_file.write_text(TESTS.format(passing=PASSING, evals=EVALS, out=tmp_path))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-c",
            os.devnull,
            str(test_file),
            *args,
        ],
        cwd=ROOT,
        env={**os.environ, **env, "PYTHONPATH": str(ROOT / "examples")},  # where the agent is
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_adk_tests_pass_sync_and_async_and_record_what_run_agent_records(tmp_path):
    result = pytest_child(tmp_path, {"CUSTOMER_SUPPORT_MODEL": ""}, "-k", "not whole_folder")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed" in result.stdout
    written = {
        name: Results.from_json((tmp_path / f"{name}.json").read_text())
        for name in ("async", "sync", "legacy")
    }
    # the same run through the command line, from the same folder
    cli = tmp_path / "cli.json"
    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        assert (
            main(["run", PASSING, "--agent", "examples/customer_support", "--out", str(cli)]) == 0
        )
    finally:
        os.chdir(cwd)
    by_cli = Results.from_json(cli.read_text())
    for results in written.values():
        assert results.run_config.runner == by_cli.run_config.runner == "adk"
        assert results.run_config.target == by_cli.run_config.target == "examples/customer_support"
        assert all(case.status == "passed" for case in results.cases)
    assert written["sync"].run_config.num_runs == 2  # ADK's default
    assert [c.key for c in written["async"].cases] == [c.key for c in by_cli.cases]
    for ours, theirs in zip(written["async"].cases, by_cli.cases, strict=True):
        assert ours.case_sha256 == theirs.case_sha256  # the same case: a baseline for the other
        assert {n: m.score for n, m in ours.metrics.items()} == {
            n: m.score for n, m in theirs.metrics.items()
        }
    [legacy] = written["legacy"].cases
    assert legacy.runs[0].turns()[0].actual is not None
    assert not any("initial.session.json" in w for w in written["legacy"].warnings)


def test_a_failing_agent_fails_the_test_with_our_table_on_the_fake_gemini(tmp_path):
    with FakeGemini() as gemini:
        env = {
            "CUSTOMER_SUPPORT_MODEL": "gemini-2.5-flash",
            "GOOGLE_GEMINI_BASE_URL": gemini.url,
            "GOOGLE_API_KEY": "fake",
        }
        result = pytest_child(tmp_path, env, "-k", "whole_folder")
        calls = gemini.calls(None)
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "EvaluationFailed: the agent customer_support did not pass its evals" in out
    # the table: one row per case and metric, with the axis, score, threshold and status
    assert "refund_flow / damaged_item_refund" in out
    assert "tool_trajectory_avg_score  trajectory" in out
    assert "FAIL" in out
    assert "FunctionCall(" not in out
    assert calls > 0  # the agent's model calls went to the (fake) Gemini through ADK
    results = Results.from_json((tmp_path / "all.json").read_text())
    case = results.cases[0]
    assert case.efficiency["inference_call_count_v1"].total >= 1
    assert case.efficiency["token_usage_v1"].total > 0  # the fake's usageMetadata


def test_bad_arguments_are_one_line_errors(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    with pytest.raises(InputError, match="no such package"):
        agent_directory("no_such_agent_package")
    with pytest.raises(InputError, match="agent_name: evaluating a sub-agent"):
        AgentEvaluator.evaluate_sync("customer_support", EVALS, agent_name="shipping_agent")
    with pytest.raises(InputError, match="num_runs must be at least 1"):
        AgentEvaluator.evaluate_sync("customer_support", EVALS, num_runs=0)
    with pytest.raises(InputError, match="no such file or directory"):
        AgentEvaluator.evaluate_sync("customer_support", str(tmp_path / "missing"), num_runs=1)
    assert agent_directory("customer_support.agent") == ROOT / "examples" / "customer_support"


def test_the_sync_form_inside_an_event_loop_says_to_await():
    import asyncio

    async def inside() -> None:
        AgentEvaluator.evaluate_sync("customer_support", EVALS)

    with pytest.raises(RuntimeError, match=r"await AgentEvaluator\.evaluate"):
        asyncio.run(inside())


def test_the_migration_snippet_in_the_docs_is_this_module():
    # the snippet moved from README.md to docs/running.md ("From ADK's pytest helper")
    walkthrough = (ROOT / "docs" / "running.md").read_text(encoding="utf-8")
    assert "from agent_eval_action.testing import AgentEvaluator" in walkthrough


def test_the_example_pytest_file_passes_and_shows_the_failing_case():
    example = ROOT / "examples" / "customer_support" / "test_with_pytest.py"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-c",
            os.devnull,
            "-rx",
            str(example),
        ],
        cwd=ROOT,
        env={**os.environ, "CUSTOMER_SUPPORT_MODEL": "", "PYTHONPATH": str(ROOT / "examples")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 1 xfailed" in result.stdout


CONFIRMING = """
import pytest
from agent_eval_action.testing import AgentEvaluator

@pytest.mark.parametrize("confirm_runs", [3, 0])
def test_against_main(confirm_runs):
    AgentEvaluator.evaluate_sync(
        "customer_support", "{passing}", num_runs=1, baseline="{base}",
        confirm_runs=confirm_runs, results_file=f"{out}/confirm-{{confirm_runs}}.json",
    )
"""


def test_the_pytest_route_confirms_a_regression_as_run_does(tmp_path):
    """Against a baseline, a regression is re-run before it is blamed, as `run --baseline`
    re-runs it; `confirm_runs=0` blames it on its first run."""
    base = tmp_path / "base.json"
    assert main(["run", PASSING, "--agent", "examples/customer_support", "--out", str(base)]) == 0
    test_file = tmp_path / "test_confirming.py"
    test_file.write_text(CONFIRMING.format(passing=PASSING, base=base, out=tmp_path))
    with FakeGemini() as gemini:  # the agent on a model that answers nothing useful: it regresses
        env = {
            "CUSTOMER_SUPPORT_MODEL": "gemini-2.5-flash",
            "GOOGLE_GEMINI_BASE_URL": gemini.url,
            "GOOGLE_API_KEY": "fake",
        }
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
        argv += ["-c", os.devnull, str(test_file)]
        result = subprocess.run(
            argv,
            cwd=ROOT,
            env={**os.environ, **env, "PYTHONPATH": str(ROOT / "examples")},
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "2 failed" in result.stdout, result.stdout
    confirmed = Results.from_json((tmp_path / "confirm-3.json").read_text())
    once = Results.from_json((tmp_path / "confirm-0.json").read_text())
    for case in confirmed.cases:  # the regressed case and its 3 re-runs, each saying why
        assert [r.purpose()[0] for r in case.runs] == ["suite", *["confirmation"] * 3]
    assert all(len(case.runs) == 1 for case in once.cases)
    assert confirmed.run_config.confirm_runs == 3 and once.run_config.confirm_runs == 0


def test_the_pytest_route_judges_each_question_once_across_its_confirmation_rounds(
    tmp_path, monkeypatch
):
    """Issue 33's case (helpers/judged_suite.py) through `AgentEvaluator`: 20 cases, one
    changed answer, num_samples 3, no history, `confirm_runs` 3. As in `run` and the action:
    3 judge calls, counted once in the Results with every verdict reused."""
    from helpers import judged_suite as suite

    from agent_eval_action.testing import EvaluationFailed

    suite.write_judged_suite(tmp_path)
    fresh = uuid.uuid4().hex[:8]  # Python caches an imported package by its name
    main_agent = suite.write_adk_agent(tmp_path, f"main_{fresh}", suite.MAIN).name
    pr_agent = suite.write_adk_agent(tmp_path, f"pr_{fresh}", suite.PR).name
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    with FakeGemini() as gemini:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", gemini.url)
        monkeypatch.setenv("GOOGLE_API_KEY", "k")
        AgentEvaluator.evaluate_sync(
            main_agent, "evals", num_runs=1, results_file="base.json", print_detailed_results=False
        )
        gemini.reset()
        with pytest.raises(EvaluationFailed) as failed:
            AgentEvaluator.evaluate_sync(
                pr_agent,
                "evals",
                num_runs=1,
                baseline="base.json",
                confirm_runs=suite.CONFIRM_RUNS,
            )
        calls = gemini.calls()
    results = failed.value.results
    runs = {c.eval_id: len(c.runs) for c in results.cases}
    assert runs == {case: 1 for case in suite.CASES} | {suite.CHANGED: 4}  # one answer in 4
    assert calls == suite.CALLS == 3, calls  # the changed answer, once
    assert results.usage.judge_calls == suite.CALLS
    assert results.usage.judge_reused == suite.REUSED == 66  # 19 x 3 main's, 3 x 3 re-runs'
