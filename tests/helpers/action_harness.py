"""The Actions runner's side of an action run, for the end-to-end tests: the event file, the
environment (INPUT_* with hyphens kept, GITHUB_*), the output and summary files, and the
entry point started in a child process from the repository root, as the container starts it.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from fakes.github import FORK, FORK_ID, REPO, REPO_ID

from helpers.paths import ROOT, python_command

AGENT = ROOT / "examples" / "agent" / "support_agent.py"
EVALS = "examples/evals"
TOKEN = "ghs_e2eSecretToken123"
WORKFLOW_REF = f"{REPO}/.github/workflows/agent-eval.yml@refs/heads/main"


def zipped(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


SHORTCUT = ' and session.tier != "gold"'  # the example agent's deliberate slip


def fixed_agent(folder: Path) -> Path:
    """The example agent without its gold-tier shortcut, in `folder`: main's agent, whose
    every case passes."""
    source = AGENT.read_text(encoding="utf-8")
    assert SHORTCUT in source, "the example agent changed: update this helper"
    fixed = folder / "fixed_agent.py"
    fixed.write_text(source.replace(SHORTCUT, ""), encoding="utf-8")
    return fixed


def example_results(agent: Path, folder: Path) -> bytes:
    """The Results of `agent` on the example's eval files, by the command line."""
    out = folder / "results.json"
    argv = [sys.executable, "-m", "agent_eval_action", "run", EVALS]
    argv += ["--command", python_command(agent), "--out", str(out), "--format", "json"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env=clean_env())
    assert done.returncode in (0, 1), done.stderr  # 1: a case does not pass
    return out.read_bytes()


def clean_env() -> dict[str, str]:
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GITHUB_", "INPUT_", "RUNNER_", "ACTIONS_"))
    }


class Runner:
    """The Actions runner's side: event file, environment, output and summary files."""

    def __init__(self, fake, tmp_path: Path):
        self.fake, self.tmp = fake, tmp_path
        self.output = tmp_path / "github_output"
        self.summary = tmp_path / "step_summary"
        self.out_dir = tmp_path / "out"

    def env(self, event_name: str, payload: dict, **inputs: str) -> dict[str, str]:
        event_path = self.tmp / "event.json"
        event_path.write_text(json.dumps(payload), encoding="utf-8")
        env = clean_env()
        env.update(
            GITHUB_ACTIONS="true",
            GITHUB_API_URL=self.fake.url,
            GITHUB_SERVER_URL="https://github.com",
            GITHUB_REPOSITORY=REPO,
            GITHUB_REPOSITORY_ID=str(REPO_ID),
            GITHUB_EVENT_NAME=event_name,
            GITHUB_EVENT_PATH=str(event_path),
            GITHUB_SHA="f" * 40,
            GITHUB_REF="refs/pull/7/merge",
            GITHUB_RUN_ID="9001",
            GITHUB_WORKFLOW_REF=WORKFLOW_REF,
            GITHUB_OUTPUT=str(self.output),
            GITHUB_STEP_SUMMARY=str(self.summary),
            ACTIONS_RUNTIME_TOKEN="runtime-secret",
        )
        defaults = {
            "evals": EVALS,
            "command": python_command(AGENT),
            "output-dir": str(self.out_dir),
            "github-token": TOKEN,
        }
        for name, value in {**defaults, **inputs}.items():
            env[f"INPUT_{name.upper()}"] = value
        return env

    def run(self, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return self.run_in(env, ROOT)

    def run_in(self, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
        """The action with `cwd` as its current folder (the workspace, as `docker run -w`)."""
        argv = [sys.executable, "-m", "agent_eval_action", "action"]
        return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)

    def outputs(self) -> dict[str, str]:
        text = self.output.read_text(encoding="utf-8") if self.output.exists() else ""
        found = {}
        for match in re.finditer(
            r"^([\w-]+)<<(ghadelimiter_[\w-]+)\n(.*?)\n\2\n", text, re.S | re.M
        ):
            found[match.group(1)] = match.group(3)
        return found


def repository() -> dict:
    return {"id": REPO_ID, "full_name": REPO, "default_branch": "main"}


def fork_run_completed(
    run_id: int,
    head: str,
    conclusion: str = "failure",
    *,
    head_repo: str = FORK,
    head_repo_id: int = FORK_ID,
    head_branch: str = "feature",
) -> dict:
    """The `workflow_run` event of a fork's PR run (`.github/workflows/agent-eval.yml`) that
    ended with `conclusion`: what the fork-safe comment job (mode comment) runs on. The run
    was on `head_branch` of `head_repo` (the fake's fork, as `add_pull(head_repo=FORK)` has
    it, unless given)."""
    return {
        "action": "completed",
        "workflow_run": {
            "id": run_id, "event": "pull_request", "conclusion": conclusion,
            "head_sha": head, "head_branch": head_branch, "pull_requests": [],
            "path": ".github/workflows/agent-eval.yml",
            "head_repository": {"id": head_repo_id, "full_name": head_repo},
        },
        "repository": repository(),
    }  # fmt: skip


def pr_payload(number: int, head: str, base: str, *, fork: bool = False, labels=()) -> dict:
    head_repo = {"full_name": "forker/demo" if fork else REPO}
    return {
        "action": "synchronize",
        "number": number,
        "pull_request": {
            "number": number,
            "head": {"sha": head, "ref": "feature", "repo": head_repo},
            "base": {"sha": base, "ref": "main", "repo": {"full_name": REPO}},
            "labels": [{"name": name} for name in labels],
        },
        "repository": repository(),
    }


def main_with_baseline(fake, baseline: bytes | dict[str, bytes], *, expired: bool = False):
    """main: 4 commits; the push run of the third has the baseline artifact (`baseline`: its
    results.json, or every file of it); a PR branches off the third while main has moved on
    to the fourth."""
    main = fake.linear_history(4)
    head = fake.linear_history(1, parent=main[2], prefix="pr", branch="feature")[0]
    run = fake.add_workflow_run(
        head_sha=main[2], path=".github/workflows/agent-eval.yml", event="push"
    )
    fake.add_artifact(
        "agent-eval-results",
        zipped(baseline if isinstance(baseline, dict) else {"results.json": baseline}),
        run_id=run["id"],
        digest=True,
        expired=expired,
    )
    return main, head
