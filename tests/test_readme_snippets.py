"""README's snippets, and docs/running.md's pytest snippet, run as pasted (the quickstart's commands: test_install_docs.py and
scripts/wheel_smoke.py). Here, its workflow: the action step's inputs, as the block gives
them, on a project laid out as the block assumes (the example agent as `my_agent`, its
eval set in `my_agent/evals`, a requirements file), through the action's entry point on a
pull_request event, reach the sticky comment and the check run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers.action_harness import Runner, pr_payload
from helpers.paths import ROOT

pytestmark = pytest.mark.e2e

README = (ROOT / "README.md").read_text(encoding="utf-8")
ACTION = re.compile(r"^\S+/agent-eval-action@")  # `<owner>/agent-eval-action@<sha>`


def readme_workflow() -> dict:
    (block,) = [b for b in re.findall(r"```yaml\n(.*?)```", README, re.S) if "jobs:" in b]
    return yaml.safe_load(block)


def action_step(workflow: dict) -> dict:
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    (step,) = [s for s in steps if ACTION.match(str(s.get("uses", "")))]
    return step


def test_the_readme_workflow_gates_on_pull_requests_and_records_on_pushes_to_main():
    workflow = readme_workflow()
    events = workflow[True] if True in workflow else workflow["on"]  # YAML 1.1 reads on: as True
    assert "pull_request" in events and events["push"]["branches"] == ["main"]
    step = action_step(workflow)
    uploads = [
        s for job in workflow["jobs"].values() for s in job["steps"]
        if str(s.get("uses", "")).startswith("actions/upload-artifact")
    ]  # fmt: skip
    assert uploads and uploads[0]["with"]["path"] == "agent-eval-results"  # output-dir's default
    assert uploads[0]["if"] == "always()"
    assert set(step["with"]) == {"agent", "evals", "requirements"}


def test_the_readme_workflows_inputs_reach_a_sticky_comment(runner: Runner, tmp_path: Path):
    inputs = {name: str(value) for name, value in action_step(readme_workflow())["with"].items()}
    workspace = tmp_path / "workspace"
    shutil.copytree(
        ROOT / "examples" / "customer_support",
        workspace / inputs["agent"],
        ignore=shutil.ignore_patterns(".adk", "__pycache__"),
    )
    (workspace / inputs["requirements"]).write_text("# nothing beyond the tool's own\n")
    head, base = "e" * 40, "d" * 40
    runner.fake.add_pull(7, head, base)
    env = runner.env("pull_request", pr_payload(7, head, base), **inputs)
    for name in ("INPUT_COMMAND", "INPUT_OUTPUT-DIR"):  # the harness's defaults, not README's
        env.pop(name)
    env["GITHUB_WORKSPACE"] = str(workspace)
    done = runner.run_in(env, workspace)
    said = done.stdout + done.stderr
    assert done.returncode == 1, said  # the example's one case that fails on purpose
    (comment,) = runner.fake.comments_on(7)
    assert "gold_damaged_refund" in comment["body"]
    assert [c["conclusion"] for c in runner.fake.check_runs.values()] == ["failure"]
    assert (workspace / "agent-eval-results" / "results.json").is_file()  # what gets uploaded


PYTEST_SNIPPET_DOC = ROOT / "docs" / "running.md"


def pytest_snippet() -> str:
    section = PYTEST_SNIPPET_DOC.read_text(encoding="utf-8").split("## From ADK's pytest helper")[1]
    return re.findall(r"```python\n(.*?)```", section, re.S)[0]


def test_the_pytest_snippet_as_pasted_names_the_tool_call_that_went_wrong(tmp_path: Path):
    """docs/running.md's pytest snippet in a fresh project laid out as it assumes (the
    example agent's package, its eval files in tests/evals), run as the doc says: both
    tests fail on the example's case that fails on purpose, and the failure shows the tool
    calls expected and made, not the tool's source."""
    shutil.copytree(
        ROOT / "examples" / "customer_support",
        tmp_path / "customer_support",
        ignore=shutil.ignore_patterns(".adk", "__pycache__"),
    )
    shutil.copytree(ROOT / "examples" / "customer_support" / "evals", tmp_path / "tests" / "evals")
    (tmp_path / "test_refunds.py").write_text(pytest_snippet(), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.pop("PYTHONPATH", None)
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist"]
    done = subprocess.run(
        [*argv, "test_refunds.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == 1 and "2 failed" in said, said
    assert "gold_damaged_refund" in said and "@@ tool calls @@" in said, said
    assert '- lookup_order({"order_id": "A-3090"})' in said  # the call it skipped
    assert "agent_eval_action/testing.py" not in said  # the test's frame, not ours
    assert (tmp_path / "results.json").is_file()
