"""Every fenced code block of docs/**/*.md runs here, or carries one reason from REASONS.

A block's reason is the marker `<!-- block: REASON -->` on the line above its opening fence
(one blank line between them at most), or, without one, its language's (a `yaml` block is
`needs-github`: helpers/docs_blocks.py, which also finds the blocks). A block without a
reason runs, by its language:

- `json`: parsed, then read by the reader the tool reads such a file with (an eval set, an
  eval case, a test_config.json, a price table; a command runner's answer; a relay
  request), so an example the tool would refuse fails here;
- `sh`, `bash`: a command at a time, by bash, in a copy of a project laid out as the docs
  assume (PROJECT_LAYOUT), each command's exit code checked: 0, or 1 where the page says
  the gate fails (FAILS), and the files it names with --out, --report and --html written;
- `python`: as pasted, in that project, then used as its page says (PYTHON_USES); the
  pytest snippet of docs/running.md runs in test_readme_snippets.py.

Blocks with the reason `needs-github` are checked too: they parse as YAML, and every `with:`
key of a step that uses agent-eval-action is an input of action.yml. conftest.py prints how
many blocks run and why the others do not.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from helpers.action_harness import clean_env
from helpers.docs_blocks import IMPLIED, Block, all_blocks
from helpers.paths import ROOT
from test_readme_snippets import PYTEST_SNIPPET_DOC, pytest_snippet

pytestmark = pytest.mark.e2e

# Why a block does not run: the fixed set. A block carries one of these, or it runs.
REASONS = {
    "needs-github": "a workflow or some of its steps: runs only on GitHub's runners",
    "needs-key": "calls a real Gemini model: needs GOOGLE_API_KEY",
    "installs": "installs packages from the network",
    "long-running": "starts a server that runs until it is stopped",
    "maintainer": "a contributor's command on this repository: its tests, CI, benchmarks, "
    "or its generated files rewritten",
    "output": "what a command prints, not something to run",
    "synopsis": "a usage line with placeholders",
    "diagram": "a drawing or an outline in text",
}
RUNS = {"json", "sh", "bash", "python"}  # the languages a block without a reason runs in

BLOCKS, MARKER_PROBLEMS = all_blocks()
RUNNING = [block for block in BLOCKS if block.reason is None]

# --- the project the commands run in ----------------------------------------------------

PROJECT_LAYOUT = """
my_agent/          examples/customer_support: an ADK agent package, its scripted model
                   without the example's deliberate slip (main's code, whose cases pass)
my_agent/evals/    its eval files, and refunds.evalset.json: the eval set
                   docs/writing-evals.md writes by hand, where its check command finds it
evals/             a copy of my_agent/evals
main.json          the Results of `run evals --agent my_agent` (main's baseline); base.json
                   the same file
examples/, scripts/example_results.py   as in this repository (docs/reports.md, and the
                   langgraph example of docs/running.md run them from a checkout)
tmp/example/       what docs/reports.md's first command writes there (its later blocks read
                   it): a command's /tmp/ is the tmp/ of its project
.git               one commit of all of it, which origin/main names too
"""
SLIP = 'tier == "gold" and reason == "damaged"'  # the example's deliberate slip
# A command with this comment runs on the pull request's code: the example agent as shipped,
# its slip included (refund_flow/gold_damaged_refund then refunds without looking the order
# up). Every other command runs on main's.
ON_THE_PR = "# on the PR"
# The commands the docs say end in a failed gate, exit 1; every other command exits 0:
# (page, what the command contains, where the page says so).
FAILS = [
    (
        "docs/reports.md",
        "--baseline /tmp/example/base.json",
        "a baseline without the deliberate slip, then the agent as shipped",
    ),
    ("docs/running.md", ON_THE_PR, "the PR's run shows a new failure, in the output below"),
    ("docs/running.md", "compare --baseline baseline.json", "the output below: FAIL (...)"),
    ("docs/accept.md", "--out results.json", "# on the PR: the gate fails"),
]
TMP = "/tmp/"  # a command's /tmp/ is its project's tmp/
GEMINI = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_USE_VERTEXAI")


def by_hand_eval_set() -> str:
    (block,) = [
        b
        for b in BLOCKS
        if b.file == "docs/writing-evals.md" and b.lang == "json" and '"eval_cases"' in b.text
    ]
    assert json.loads(block.text)["eval_set_id"] == "refunds", block.where
    return block.text


def environment(bin_dir: Path) -> dict[str, str]:
    """What the commands see: no GitHub and no Gemini variables, `agent-eval-action` and
    `python` this interpreter's (`adk` beside it), no bytecode written into the project."""
    env = clean_env()
    for name in GEMINI:
        env.pop(name, None)
    path = env.get("PATH", os.defpath)
    env["PATH"] = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), path])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def shell(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def said(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The commands' environment, with `agent-eval-action` this tree's package."""
    bin_dir = tmp_path_factory.mktemp("docs-bin")
    script = bin_dir / "agent-eval-action"
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m agent_eval_action "$@"\n')
    script.chmod(0o755)
    (bin_dir / "python").symlink_to(sys.executable)
    return environment(bin_dir)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, tools: dict[str, str]) -> Path:
    """PROJECT_LAYOUT, made once per module (per xdist worker); each test copies it."""
    root = tmp_path_factory.mktemp("docs-project")
    ignore = shutil.ignore_patterns("__pycache__", ".adk", "node_modules")
    shutil.copytree(ROOT / "examples", root / "examples", ignore=ignore)
    (root / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "example_results.py", root / "scripts")
    shutil.copytree(ROOT / "examples" / "customer_support", root / "my_agent", ignore=ignore)
    set_agent(root, on_the_pr=False)
    (root / "my_agent" / "evals" / "refunds.evalset.json").write_text(by_hand_eval_set())
    shutil.copytree(root / "my_agent" / "evals", root / "evals")
    git = "git -c user.name=docs -c user.email=docs@example.invalid"
    for command in (
        "git init -q",
        "git add -A",
        f"{git} commit -qm main",
        "git update-ref refs/remotes/origin/main HEAD",
    ):
        subprocess.run(["bash", "-c", command], cwd=root, check=True, env=tools)
    done = shell("agent-eval-action run evals --agent my_agent --out main.json", root, tools)
    assert done.returncode == 0, said(done)
    shutil.copy2(root / "main.json", root / "base.json")
    done = shell(f"python scripts/example_results.py {root / 'tmp' / 'example'}", root, tools)
    assert done.returncode == 0, said(done)
    return root


def set_agent(project: Path, *, on_the_pr: bool) -> None:
    shipped = (ROOT / "examples" / "customer_support" / "scripted_model.py").read_text()
    assert SLIP in shipped, "the example agent changed: update SLIP"
    source = shipped if on_the_pr else shipped.replace(SLIP, "False")
    (project / "my_agent" / "scripted_model.py").write_text(source, encoding="utf-8")


@pytest.fixture
def workdir(project: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    shutil.copytree(project, folder, symlinks=True)
    return folder


# --- the markers ------------------------------------------------------------------------


def test_every_block_runs_or_carries_one_known_reason():
    assert not MARKER_PROBLEMS, "\n".join(MARKER_PROBLEMS)
    assert set(IMPLIED.values()) <= set(REASONS)
    unknown = [
        f"{b.where}: unknown reason {b.marker!r}"
        for b in BLOCKS
        if b.marker not in (None, *REASONS)
    ]
    assert not unknown, "\n".join(unknown) + f"\nthe reasons: {', '.join(REASONS)}"
    cannot = [
        f"{b.where}: a block {'without a language' if not b.lang else f'of {b.lang}'} "
        "runs nowhere: mark it <!-- block: REASON --> (tests/test_docs_blocks.py REASONS)"
        for b in RUNNING
        if b.lang not in RUNS
    ]
    assert not cannot, "\n".join(cannot)


def test_every_reason_is_used():
    used = {b.reason for b in BLOCKS}
    assert set(REASONS) <= used, f"reasons no block gives: {sorted(set(REASONS) - used)}"


# --- json -------------------------------------------------------------------------------


def read_json_block(block: Block, folder: Path) -> None:
    """`block` as the tool reads what it holds; InputError when the tool refuses it."""
    from agent_eval_action.evalset.models import Content, SessionInput
    from agent_eval_action.metrics.config import load_config
    from agent_eval_action.metrics.judge.pricing import load_prices
    from agent_eval_action.pipeline.suite import load_suite
    from agent_eval_action.pipeline.user_relay import _Ask
    from agent_eval_action.runners.command import PROTOCOL_VERSION, _parse_answer

    data = json.loads(block.text)
    assert isinstance(data, dict), f"{block.where}: not a JSON object"
    warnings: list[str] = []
    if "protocol" in data:  # a command runner's request (the tool writes it)
        assert data["protocol"] == PROTOCOL_VERSION
        Content.model_validate(data["user_content"])
        if data.get("session_input") is not None:
            SessionInput.model_validate(data["session_input"])
    elif "relay" in data:  # a user-turn relay request, as serve-users reads it
        _Ask.model_validate(data)
    elif "eval_cases" in data or "eval_id" in data:  # an eval set, or one case of one
        eval_set = data if "eval_cases" in data else {"eval_set_id": "doc", "eval_cases": [data]}
        path = folder / "doc.evalset.json"
        path.write_text(json.dumps(eval_set), encoding="utf-8")
        warnings = load_suite([path.name]).warnings
    elif "criteria" in data:  # a test_config.json
        path = folder / "test_config.json"
        path.write_text(block.text, encoding="utf-8")
        load_config(path, path.name, warnings)
    elif "models" in data:  # a price table (AGENT_EVAL_JUDGE_PRICES)
        path = folder / "prices.json"
        path.write_text(block.text, encoding="utf-8")
        load_prices(path.name)
    elif "id" in data and "final_response" in data:  # a command runner's answer
        _parse_answer(data, data["id"])
    assert not warnings, f"{block.where}: the tool warns: {warnings}"


@pytest.mark.parametrize("block", [b for b in RUNNING if b.lang == "json"], ids=lambda b: b.where)
def test_a_json_block_is_read_as_the_tool_reads_it(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from agent_eval_action.errors import InputError

    monkeypatch.chdir(tmp_path)
    try:
        read_json_block(block, tmp_path)
    except json.JSONDecodeError as err:
        pytest.fail(f"{block.where}: not JSON ({err}): fix it, or mark it with its reason")
    except InputError as err:
        pytest.fail(f"{block.where}: the tool refuses it: {err}")


# --- workflows (needs-github) -------------------------------------------------------------

ACTION_INPUTS = set(yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))["inputs"])
OURS = re.compile(r"\./|[\w.-]+/agent-eval-action@\S+")  # as test_workflows.is_ours


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if b.reason == "needs-github"], ids=lambda b: b.where
)
def test_a_workflow_block_parses_and_gives_the_action_only_its_inputs(block: Block):
    data = yaml.safe_load(block.text)
    if isinstance(data, dict):
        assert "jobs" in data, f"{block.where}: a mapping without jobs: not a workflow"
        steps = [s for job in data["jobs"].values() for s in job.get("steps", [])]
    else:
        assert isinstance(data, list), f"{block.where}: neither a workflow nor steps"
        steps = data
    assert steps and all(isinstance(s, dict) for s in steps), f"{block.where}: {steps!r}"
    for step in steps:
        if OURS.fullmatch(str(step.get("uses", ""))):
            unknown = set(step.get("with") or {}) - ACTION_INPUTS
            assert not unknown, f"{block.where}: not inputs of action.yml: {sorted(unknown)}"


# --- sh and bash: a block at a time -------------------------------------------------------


def commands(block: Block) -> list[str]:
    """The block's commands: its lines, a trailing backslash joining the next; comments and
    blank lines left out."""
    joined = block.text.replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines() if line.strip() and line[0] != "#"]


def flag_value(words: list[str], flag: str) -> str | None:
    return words[words.index(flag) + 1] if flag in words[:-1] else None


def expected_exit(block: Block, command: str) -> tuple[int, str]:
    """The exit code the page gives the command, and where it says so."""
    for page, needle, why in FAILS:
        if page == block.file and needle in command:
            return 1, f"the gate fails: {why}"
    return 0, "nothing on the page says it fails"


class Reader:
    """A reader running one block's commands in order, in a copy of the project."""

    def __init__(self, block: Block, folder: Path, env: dict[str, str]):
        self.block, self.folder, self.env = block, folder, env
        self.shards: list[str] = []  # the block's `--shard I/N` commands, as run

    def run(self, command: str, expected: int | None = None) -> None:
        where = self.block.where
        pasted = command.replace(TMP, f"{self.folder / 'tmp'}/")
        words = shlex.split(pasted, comments=True)
        if words[:2] == ["agent-eval-action", "merge"]:
            self.other_shards(words)
        set_agent(self.folder, on_the_pr=ON_THE_PR in command)
        done = shell(pasted, self.folder, self.env)
        code, why = expected_exit(self.block, command) if expected is None else (expected, "")
        assert done.returncode == code, (
            f"{where}: {command}\nexpected exit {code}: {why}\n{said(done)}"
        )
        if "--shard" in words:
            self.shards.append(command)
        for flag in ("--out", "--report", "--html"):
            written = flag_value(words, flag)
            assert written is None or (self.folder / written).is_file(), (
                f"{where}: {command}\nwrote no {written}\n{said(done)}"
            )

    def other_shards(self, words: list[str]) -> None:
        """A `merge` of shards the block runs one of (one job's command): the other jobs'
        shards first, by that command with their index."""
        flags = [i for i, w in enumerate(words) if w.startswith("-")]
        inputs = words[2 : flags[0] if flags else None]
        missing = [w for w in inputs if not (self.folder / w).exists()]
        if not missing or not self.shards:
            return
        job = self.shards[-1]
        index, count = re.search(r"--shard (\d+)/(\d+)", job).groups()  # type: ignore[union-attr]
        out = flag_value(shlex.split(job, comments=True), "--out")
        assert out is not None and index in out, f"{self.block.where}: {job}"
        pattern = re.escape(out).replace(re.escape(index), r"(\d+)", 1)
        for name in missing:
            other = re.fullmatch(pattern, name)
            assert other, f"{self.block.where}: merge names {name}, not a shard of {job}"
            command = job.replace(f"--shard {index}/{count}", f"--shard {other[1]}/{count}")
            self.run(command.replace(out, name), expected=0)


SHELL = [b for b in RUNNING if b.lang in ("sh", "bash")]


def test_every_failing_command_is_one_of_its_page():
    for page, needle, _ in FAILS:
        found = [c for b in SHELL if b.file == page for c in commands(b) if needle in c]
        assert found, f"FAILS: no command of {page} contains {needle!r}"


@pytest.mark.adk
@pytest.mark.parametrize("block", SHELL, ids=lambda b: b.where)
def test_a_shell_block_runs_as_its_page_says(block: Block, workdir: Path, tools: dict[str, str]):
    lines = commands(block)
    assert lines, f"{block.where}: no command"
    reader = Reader(block, workdir, tools)
    for command in lines:
        reader.run(command)


# --- python -------------------------------------------------------------------------------


def a_minimal_worker(block: Block, folder: Path, env: dict[str, str]) -> None:
    """docs/runner-protocol.md's worker behind `run --command`: it answers every turn as the
    protocol asks (no case-run errors), and fails the cases, since it only echoes."""
    (folder / "worker.py").write_text(block.text, encoding="utf-8")
    command = 'agent-eval-action run my_agent/evals --command "python worker.py"'
    done = shell(command, folder, env)
    assert done.returncode == 1, said(done)
    cases = json.loads((folder / "results.json").read_text(encoding="utf-8"))["cases"]
    errors = [run["error"] for case in cases for run in case["runs"] if run["error"]]
    assert not errors, errors
    assert {case["status"] for case in cases} == {"failed"}


RECORD_A_SESSION = """
import asyncio

from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

from my_agent.agent import root_agent
from snippet import save_case


async def main() -> None:
    sessions = InMemorySessionService()
    session = await sessions.create_session(
        app_name="my_agent", user_id="user-1", state={"tier": "gold"}
    )
    runner = Runner(app_name="my_agent", agent=root_agent, session_service=sessions)
    said = types.Content(role="user", parts=[types.Part(text="My blender arrived broken. Order A-4471.")])
    async for _ in runner.run_async(user_id="user-1", session_id=session.id, new_message=said):
        pass
    await save_case(sessions, session.id)


asyncio.run(main())
"""


def saves_a_recorded_session(block: Block, folder: Path, env: dict[str, str]) -> None:
    """docs/writing-evals.md's save_case on a session of my_agent that started from the
    state the snippet names: the file it writes runs, and passes on the same agent."""
    (folder / "snippet.py").write_text(block.text, encoding="utf-8")
    (folder / "record.py").write_text(RECORD_A_SESSION, encoding="utf-8")
    done = shell("python record.py", folder, env)
    assert done.returncode == 0, said(done)
    command = "agent-eval-action run my_agent/evals/recorded.evalset.json --agent my_agent"
    done = shell(command, folder, env)
    assert done.returncode == 0, said(done)


# How a python block is used, by page; a block of another page runs as a script, exit 0.
PYTHON_USES: dict[str, Callable[[Block, Path, dict[str, str]], None]] = {
    "docs/runner-protocol.md": a_minimal_worker,
    "docs/writing-evals.md": saves_a_recorded_session,
}


def as_a_script(block: Block, folder: Path, env: dict[str, str]) -> None:
    (folder / "block.py").write_text(block.text, encoding="utf-8")
    done = shell("python block.py", folder, env)
    assert done.returncode == 0, said(done)


# docs/running.md's pytest snippet runs as pasted in test_readme_snippets.py, not twice here
ELSEWHERE = PYTEST_SNIPPET_DOC.relative_to(ROOT).as_posix()


def test_the_pytest_snippet_is_the_block_test_readme_snippets_runs():
    (block,) = [b for b in RUNNING if b.lang == "python" and b.file == ELSEWHERE]
    assert block.text == pytest_snippet(), f"{block.where}: not the snippet that test runs"


@pytest.mark.adk
@pytest.mark.parametrize(
    "block",
    [b for b in RUNNING if b.lang == "python" and b.file != ELSEWHERE],
    ids=lambda b: b.where,
)
def test_a_python_block_runs_as_pasted(block: Block, workdir: Path, tools: dict[str, str]):
    PYTHON_USES.get(block.file, as_a_script)(block, workdir, tools)
