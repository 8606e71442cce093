"""The action's `paired: true` (action/merge_base.py) against the fake GitHub, in a real git
checkout with its full history (as `fetch-depth: 0` leaves it): each confirmation round's
cases run once more on the merge-base's code, merge-base.json lands in output-dir, and
`compare --history merge-base.json` reproduces the verdict from the files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.action_harness import Runner, clean_env, pr_payload, zipped
from helpers.paths import (
    IMAGE_PYTHON,
    ISOLATED,
    WORKERS,
    image_entrypoint,
    need_isolation,
    python_command,
)
from helpers.table_suite import RIGHT, SKIPS_THE_TOOL, order_case
from test_paired import commit, git

from agent_eval_action.cli import main
from agent_eval_action.pipeline import paired as pairing
from agent_eval_action.results import PAIRED_RUN

pytestmark = pytest.mark.e2e

AGENT = python_command(WORKERS / "table_agent.py", "table.json")


def _checkout(
    tmp_path: Path, main_table: dict, pr_table: dict, files: dict[str, str | bytes] | None = None
) -> tuple[Path, str, str]:
    """A checkout of the PR with main's commit in its history (`files` in both); (repo,
    main's sha, PR's sha)."""
    repo = tmp_path / "repo"
    (repo / "evals").mkdir(parents=True)
    for name, data in (files or {}).items():
        _put(repo / name, data)
    suite = {"eval_set_id": "shop", "eval_cases": [order_case("a"), order_case("b")]}
    (repo / "evals" / "shop.evalset.json").write_text(json.dumps(suite))
    git(repo, "init", "-q")
    base = commit(repo, main_table, "main")
    head = commit(repo, pr_table, "the PR", extra="the PR's change")
    return repo, base, head


def _put(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)
        if data.startswith("#!"):
            path.chmod(0o755)  # a script: committed as one


def _baseline(repo: Path, base: str, out: Path) -> bytes:
    """main's push run: its Results at `base`, run from a checkout of it."""
    git(repo, "checkout", "-q", base)
    argv = [sys.executable, "-m", "agent_eval_action", "run", "evals", "--command", AGENT]
    done = subprocess.run(
        [*argv, "--out", str(out)], cwd=repo, env=clean_env(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    git(repo, "checkout", "-q", "-")
    return out.read_bytes()


def _run_action(runner: Runner, repo: Path, base: str, head: str, baseline: bytes, **inputs: str):
    fake = runner.fake
    fake.add_commit(base, [])
    fake.add_commit(head, [base])
    run = fake.add_workflow_run(head_sha=base, path=".github/workflows/agent-eval.yml")
    fake.add_artifact(
        "agent-eval-results", zipped({"results.json": baseline}), run_id=run["id"], digest=True
    )
    fake.add_pull(7, head, base)
    env = runner.env(
        "pull_request",
        pr_payload(7, head, base),
        evals="evals",
        command=AGENT,
        history="0",
        **inputs,
    )
    argv = [sys.executable, "-m", "agent_eval_action", "action"]
    return subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=300)


def test_paired_runs_on_the_merge_base_clear_a_lucky_baseline(runner: Runner, tmp_path: Path):
    """main's code skips the tool in every run but the baseline's; the PR changes nothing
    that matters. Its failing run is re-run on both codes: main's fails alike, so the case
    is noise, and the files say so again."""
    main_table = {"a": RIGHT, "b": SKIPS_THE_TOOL, "b/0/1": RIGHT}
    repo, base, head = _checkout(tmp_path, main_table, {"a": RIGHT, "b": SKIPS_THE_TOOL})
    baseline = _baseline(repo, base, tmp_path / "base.json")
    done = _run_action(runner, repo, base, head, baseline, paired="true")
    assert done.returncode == 0, done.stdout + done.stderr
    paired = json.loads((runner.out_dir / "merge-base.json").read_text())
    assert paired["source"]["sha"] == base and [c["eval_id"] for c in paired["cases"]] == ["b"]
    runs = paired["cases"][0]["runs"]
    assert runs and all(r["confirms"].startswith(f"{PAIRED_RUN} {base[:12]}") for r in runs)
    assert "paired runs on the merge-base" in done.stdout
    # deprecated: a warning in the log, kept in the Results' warnings, and it still runs
    deprecated = pairing.DEPRECATED.format(what="the input paired")
    assert done.stdout.count(f"::warning::{deprecated}") == 1
    results = json.loads((runner.out_dir / "results.json").read_text())
    assert deprecated in results["warnings"]
    body = runner.fake.comments_on(7)[0]["body"]
    said = f"1 re-run case(s) ran {len(runs)} time(s) on the merge-base"  # the sha unlinked
    assert "**Paired runs:**" in body and said in body and "(merge-base.json)" in body
    assert git(repo, "worktree", "list").count("\n") == 0  # the worktree is gone
    diff = json.loads((runner.out_dir / "diff.json").read_text())
    b = next(c for c in diff["cases"] if c["eval_id"] == "b")
    assert b["flaky"] and b["change"] not in ("regressed", "new_failure")
    # the files reproduce the verdict with main's paired runs, and not without them
    baseline_file = runner.out_dir / "baseline" / "results.json"
    again = ["compare", "--current", str(runner.out_dir / "results.json")]
    again += ["--baseline", str(baseline_file)]
    assert main([*again, "--history", str(runner.out_dir / "merge-base.json")]) == 0
    assert main(again) == 1


def test_paired_runs_keep_a_real_regression_and_record_main_passing(runner: Runner, tmp_path: Path):
    repo, base, head = _checkout(
        tmp_path, {"a": RIGHT, "b": RIGHT}, {"a": RIGHT, "b": SKIPS_THE_TOOL}
    )
    baseline = _baseline(repo, base, tmp_path / "base.json")
    done = _run_action(runner, repo, base, head, baseline, paired="true")
    assert done.returncode == 1, done.stdout + done.stderr
    paired = json.loads((runner.out_dir / "merge-base.json").read_text())
    assert [r["run"] for r in paired["cases"][0]["runs"]] == [2, 3, 4]
    assert paired["cases"][0]["status"] == "passed"
    body = runner.fake.comments_on(7)[0]["body"]
    assert "confirmed" in body


def test_a_shallow_checkout_skips_paired_runs_with_a_note_in_the_report(
    runner: Runner, tmp_path: Path
):
    repo, base, head = _checkout(
        tmp_path, {"a": RIGHT, "b": RIGHT}, {"a": RIGHT, "b": SKIPS_THE_TOOL}
    )
    baseline = _baseline(repo, base, tmp_path / "base.json")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow))
    done = _run_action(runner, shallow, base, head, baseline, paired="true")
    assert done.returncode == 1, done.stdout + done.stderr  # gated as without paired runs
    assert "::warning::paired runs on the merge-base skipped" in done.stdout
    body = runner.fake.comments_on(7)[0]["body"]
    assert "shallow (set fetch-depth: 0" in body
    assert not (runner.out_dir / "merge-base.json").exists()
    results = json.loads((runner.out_dir / "results.json").read_text())
    assert any("shallow" in w for w in results["warnings"])


RUNNER_UID = 1001  # GitHub's runner user: owns the workspace
PYTHON_WITH_USER_SITE = Path("/usr/bin/python3.11")  # Debian's: it reads ~/.local


@pytest.fixture
def layout() -> Iterator[Path]:
    need_isolation()
    top = Path(tempfile.mkdtemp(prefix="agent-eval-paired-layout-"))
    top.chmod(0o755)
    try:
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _run_isolated(
    runner: Runner,
    top: Path,
    main_table: dict,
    pr_table: dict,
    python: Path,
    pr_files: dict[str, str | bytes] | None = None,
    env: dict[str, str] | None = None,
    main_files: dict[str, str | bytes] | None = None,
    adk_agent: str | None = None,
    command: str | None = None,
    **inputs: str,
) -> tuple[subprocess.CompletedProcess[str], Path, str]:
    """As root, in GitHub's layout (the checkout owned by the runner's user), the image's
    entry point on a PR whose agent is table_agent.py run by `python` (or the ADK agent in
    the folder `adk_agent`, run with `--agent`), `main_files` in both commits, `pr_files`
    added to the PR's (a text put before the agent's for "table_agent.py"), `env` the
    step's, `inputs` the action's, `command` the agent's command when not table_agent.py's
    (with "REPO" for the checkout's path); (what the action did, the repository, main's
    sha)."""
    agent = (WORKERS / "table_agent.py").read_text()
    both = {"table_agent.py": agent, **(main_files or {})}
    repo, base, head = _checkout(top, main_table, pr_table, both)
    if pr_files:
        for name, data in pr_files.items():
            _put(repo / name, f"{data}{agent}" if name == "table_agent.py" else data)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--amend", "-m", "the PR")
        head = git(repo, "rev-parse", "HEAD")
    command = (command or f"{python} table_agent.py table.json").replace("REPO", str(repo))
    how = {"agent": adk_agent, "command": ""} if adk_agent else {"command": command}
    argv = [sys.executable, "-m", "agent_eval_action", "run", inputs.get("evals", "evals")]
    argv += [f"--{name}={value}" for name, value in how.items() if value]
    step = {k: v.replace("REPO", str(repo)) for k, v in (env or {}).items()}
    git(repo, "checkout", "-q", base)
    made = subprocess.run(
        [*argv, "--out", str(top / "base.json")], cwd=repo, env={**clean_env(), **step},
        text=True, capture_output=True,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    git(repo, "checkout", "-q", head)
    for folder, _, files in os.walk(repo):
        os.chown(folder, RUNNER_UID, RUNNER_UID)
        for file in files:
            os.chown(Path(folder) / file, RUNNER_UID, RUNNER_UID)
    fake = runner.fake
    fake.add_commit(base, [])
    fake.add_commit(head, [base])
    run = fake.add_workflow_run(head_sha=base, path=".github/workflows/agent-eval.yml")
    baseline = (top / "base.json").read_bytes()
    fake.add_artifact(
        "agent-eval-results", zipped({"results.json": baseline}), run_id=run["id"], digest=True
    )
    fake.add_pull(7, head, base)
    environment = runner.env(
        "pull_request", pr_payload(7, head, base), history="0", paired="true",
        **{"evals": "evals", **how, "output-dir": str(top / "out"), **inputs},
    )  # fmt: skip
    environment.update(
        GITHUB_WORKSPACE=str(repo), PATH=f"{IMAGE_PYTHON.parent}:/usr/local/bin:/usr/bin:/bin"
    )
    environment.pop("PYTHONPATH", None)
    environment.update(step)
    done = subprocess.run(
        [*image_entrypoint(), "action"],
        cwd=repo, env=environment, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return done, repo, base


@ISOLATED
def test_isolated_main_code_runs_in_the_worktree_as_a_user_of_its_own(runner: Runner, layout):
    """As root, in GitHub's layout: the action makes the worktree, and main's agent runs
    there as a user of its own, who can read it."""
    main_table, pr_table = {"a": RIGHT, "b": RIGHT}, {"a": RIGHT, "b": SKIPS_THE_TOOL}
    done, repo, base = _run_isolated(runner, layout, main_table, pr_table, IMAGE_PYTHON)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no isolation" not in done.stdout
    paired = json.loads((layout / "out" / "merge-base.json").read_text())
    assert paired["source"]["sha"] == base
    assert [r["run"] for r in paired["cases"][0]["runs"]] == [2, 3, 4]
    assert paired["cases"][0]["status"] == "passed"  # main's code ran, and read its table
    assert git(repo, "worktree", "list").count("\n") == 0


# The PR's agent, before it answers: a usercustomize.py in its user's HOME that, wherever
# main's code runs from the merge-base's worktree, makes main's agent skip the tool, so
# that main's paired runs fail as the PR's do and the regression passes as noise.
PLANTS_IN_HOME = r"""
import os, sys
_SABOTAGE = (
    "import json, os\n"
    "if 'merge-base' in os.getcwd():\n"
    "    _load = json.load\n"
    "    def load(f, **kw):\n"
    "        return {k: dict(v, tools=[]) for k, v in _load(f, **kw).items()}\n"
    "    json.load = load\n"
)
_site = os.path.join(
    os.path.expanduser("~"), ".local", "lib",
    f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages",
)
os.makedirs(_site, exist_ok=True)
with open(os.path.join(_site, "usercustomize.py"), "w") as _out:
    _out.write(_SABOTAGE)
"""


@ISOLATED
def test_isolated_the_prs_code_cannot_sabotage_mains_paired_runs(runner: Runner, layout):
    if not PYTHON_WITH_USER_SITE.exists():
        pytest.skip(f"{PYTHON_WITH_USER_SITE} is absent: no Python that reads a user site")
    main_table, pr_table = {"a": RIGHT, "b": RIGHT}, {"a": RIGHT, "b": SKIPS_THE_TOOL}
    plants = {"table_agent.py": PLANTS_IN_HOME}
    done, _, _ = _run_isolated(runner, layout, main_table, pr_table, PYTHON_WITH_USER_SITE, plants)
    # main's code ran as a user of its own, whose HOME the PR's code never touched
    assert done.returncode == 1, done.stdout + done.stderr
    paired = json.loads((layout / "out" / "merge-base.json").read_text())
    assert paired["cases"][0]["status"] == "passed"


# A module of the PR's that says, in a folder anyone may write, which user imported it
# where: imported in main's stage (which runs with --agent-cwd), it could rewrite main's
# answers there and make the PR's regression pass as noise.
TELLS = """
import os, sys
MAIN = "--agent-cwd" in sys.argv or "merge-base" in os.getcwd()  # main's stage, or its agent
with open(os.path.join(DROP, f"imported-{os.getuid()}-{MAIN}"), "w"):
    pass


def metric(*args):
    return 1.0
"""


# TELLS as a .pth line, which the site module runs whenever an interpreter starts
PTH_TELLS = (
    "import os, sys; open(os.path.join(DROP, 'imported-%d-%s' % (os.getuid(), "
    "'--agent-cwd' in sys.argv or 'merge-base' in os.getcwd())), 'w').close()"
)


# ... or the standard library's json package, put in its own place in sys.modules
JSON_ITSELF = """
import importlib.util, sysconfig
_where = os.path.join(sysconfig.get_paths()["stdlib"], "json")
_spec = importlib.util.spec_from_file_location(
    "json", os.path.join(_where, "__init__.py"), submodule_search_locations=[_where]
)
_json = importlib.util.module_from_spec(_spec)
sys.modules["json"] = _json
_spec.loader.exec_module(_json)
"""


def _wheel(pth: str) -> bytes:
    """A wheel of agentdep whose only file is agentdep.pth holding `pth` (one line: what
    the site module runs when the interpreter starts)."""
    import base64
    import hashlib
    import io
    import zipfile

    files = {
        "agentdep.pth": (pth + "\n").encode() if pth else b"\n",
        "agentdep-0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: agentdep\nVersion: 0\n",
        "agentdep-0.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = (
        "".join(
            f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip('=')},{len(data)}\n"
            for name, data in files.items()
        )
        + "agentdep-0.dist-info/RECORD,,\n"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in {**files, "agentdep-0.dist-info/RECORD": record.encode()}.items():
            archive.writestr(name, data)
    return buffer.getvalue()


# ... and then is the standard library's shlex, which the agent stage imports once it has
# put the agent's folders (PYTHONPATH among them) first on sys.path
SHLEX_ITSELF = """
import sysconfig
_real = os.path.join(sysconfig.get_paths()["stdlib"], "shlex.py")
exec(compile(open(_real).read(), _real, "exec"))
"""


@ISOLATED
@pytest.mark.parametrize(
    "how", ["custom metric", "PYTHONPATH", "absolute PYTHONPATH", "requirements' local path"]
)
def test_isolated_mains_stage_imports_nothing_of_the_prs(runner: Runner, layout, how: str):
    drop = layout / "drop"
    drop.mkdir()
    drop.chmod(0o1777)
    tells = TELLS.replace("DROP", repr(str(drop)))
    main_table, pr_table = {"a": RIGHT, "b": RIGHT}, {"a": RIGHT, "b": SKIPS_THE_TOOL}
    if how == "custom metric":  # the PR's test_config.json names a module of the PR's
        config = {
            "criteria": {"tool_trajectory_avg_score": 1.0, "tells": 0.0},
            "custom_metrics": {"tells": {"code_config": {"name": "tells.metric"}}},
        }
        files, env = {"tells.py": tells, "evals/test_config.json": json.dumps(config)}, {}
    elif how == "PYTHONPATH":  # the workflow's PYTHONPATH: the checkout, where the PR
        files, env = {"shlex.py": tells + SHLEX_ITSELF}, {"PYTHONPATH": "."}  # shadows a module
    elif how == "absolute PYTHONPATH":  # main's agent is no isolated interpreter: it reads it
        files, env = {"json.py": tells + JSON_ITSELF}, {"PYTHONPATH": str(layout / "repo")}
    else:  # main's requirements name a wheel in the checkout; the PR's commit replaces it
        wheel = "agentdep-0-py3-none-any.whl"
        main = {"requirements.txt": f"./{wheel}\n", wheel: _wheel("")}
        files, env = {wheel: _wheel(PTH_TELLS.replace("DROP", repr(str(drop))))}, {}
        done, _, _ = _run_isolated(
            runner, layout, main_table, pr_table, Path("python"), files, env, main,
            requirements="requirements.txt",
        )  # fmt: skip
        _no_prs_code_in_mains_stage(done, drop)
        return
    done, _, _ = _run_isolated(runner, layout, main_table, pr_table, IMAGE_PYTHON, files, env)
    _no_prs_code_in_mains_stage(done, drop)


def _no_prs_code_in_mains_stage(done: subprocess.CompletedProcess[str], drop: Path) -> None:
    said = done.stdout + done.stderr
    assert done.returncode == 1, said  # the regression stands
    seen = sorted(p.name for p in drop.iterdir())
    assert not any(name.endswith("-True") for name in seen), seen  # never in main's stage


# main's ADK agent (no model: it answers from its answer.txt, or from ANSWER when set)
ANSWERS = """
import os, pathlib

from dotenv import find_dotenv, load_dotenv
from google.adk.agents import BaseAgent
from google.adk.events import Event
from google.genai import types


load_dotenv(find_dotenv())  # as many agents do: the nearest .env above this file


class Answers(BaseAgent):
    async def _run_async_impl(self, ctx):
        said = os.environ.get("ANSWER") or (pathlib.Path(__file__).parent / "answer.txt").read_text()
        content = types.Content(role="model", parts=[types.Part(text=said.strip())])
        yield Event(author=self.name, invocation_id=ctx.invocation_id, content=content)


root_agent = Answers(name="answers")
"""

# The PR's agent, when it is imported: a .env in the temporary folder, where main's
# worktree is made, that would have main's agent give the PR's answer
PLANTS_DOTENV = """
import pathlib
pathlib.Path(TMP, ".env").write_text("ANSWER=bye\\n")
pathlib.Path(TMP, "planted", "it").write_text("")
"""


@ISOLATED
def test_isolated_mains_adk_agent_reads_no_dotenv_the_pr_left_above_the_worktree(
    runner: Runner, layout
):
    """Main's stage walks up from its agent's folder for a `.env` as ADK does, but not
    past the worktree's top, and main's agent (python-dotenv's find_dotenv) finds none the
    PR's code left in the temporary folder: the worktree is made where no other user may
    write above it, and what the PR's user left in the shared folders goes with its stage."""
    tmp = layout / "tmp"
    (tmp / "planted").mkdir(parents=True)
    for folder in (tmp, tmp / "planted"):
        folder.chmod(0o1777)
    case = {
        "eval_id": "greets",
        "conversation": [
            {
                "invocation_id": "1",
                "user_content": {"role": "user", "parts": [{"text": "hello"}]},
                "final_response": {"role": "model", "parts": [{"text": "hi"}]},
                "intermediate_data": {"tool_uses": [], "intermediate_responses": []},
            }
        ],
    }
    main_files = {
        "greet/greet.evalset.json": json.dumps({"eval_set_id": "greet", "eval_cases": [case]}),
        "greet/test_config.json": json.dumps({"criteria": {"response_match_score": 0.8}}),
        "answers/__init__.py": "from . import agent\n",
        "answers/agent.py": ANSWERS,
        "answers/answer.txt": "hi",
    }
    plants = PLANTS_DOTENV.replace("TMP", repr(str(tmp)))
    pr_files = {"answers/agent.py": plants + ANSWERS, "answers/answer.txt": "bye"}
    table = {"a": RIGHT, "b": RIGHT}
    done, _, _ = _run_isolated(
        runner, layout, table, table, IMAGE_PYTHON, pr_files, {"TMPDIR": str(tmp)}, main_files,
        adk_agent="answers", evals="greet",
    )  # fmt: skip
    assert (tmp / "planted" / "it").exists()  # the PR's code left its .env
    assert done.returncode == 1, done.stdout + done.stderr  # the regression stands
    assert not (tmp / ".env").exists()  # removed when the PR's stage ended
    paired = json.loads((layout / "out" / "merge-base.json").read_text())
    greets = next(c for c in paired["cases"] if c["eval_id"] == "greets")
    assert greets["status"] == "passed"  # main's agent answered as main's code does


# The PR's agent, put first on PATH by the workflow (the checkout's bin): it says, in a
# folder anyone may write, who ran it where
PR_AGENT = """#!/bin/sh
touch "DROP/ran-$(id -u)-$(pwd | grep -c merge-base)"
exec python table_agent.py table.json
"""
MAIN_AGENT = "#!/bin/sh\nexec python table_agent.py table.json\n"


@ISOLATED
def test_isolated_mains_stage_runs_no_program_of_the_checkouts_path(runner: Runner, layout):
    """The workflow puts the checkout's bin on PATH and installs requirements (whose venv
    goes first on PATH): main's stage finds its programs in the worktree's bin, and a
    command naming the checkout by absolute path is taken in the worktree too."""
    drop = layout / "drop"
    drop.mkdir()
    drop.chmod(0o1777)
    main_table, pr_table = {"a": RIGHT, "b": RIGHT}, {"a": RIGHT, "b": SKIPS_THE_TOOL}
    main = {"bin/agent": MAIN_AGENT, "requirements.txt": "# nothing\n"}
    pr = {"bin/agent": PR_AGENT.replace("DROP", str(drop))}
    path = f"REPO/bin:{IMAGE_PYTHON.parent}:/usr/local/bin:/usr/bin:/bin"
    for command in ("agent", "REPO/bin/agent"):
        for old in drop.iterdir():
            old.unlink()
        done, _, _ = _run_isolated(
            runner, layout / command.replace("/", "-"), main_table, pr_table, IMAGE_PYTHON, pr,
            {"PATH": path}, main, command=command, requirements="requirements.txt",
        )  # fmt: skip
        said = done.stdout + done.stderr
        assert done.returncode == 1, said  # the regression stands
        seen = sorted(p.name for p in drop.iterdir())
        assert seen and not any(name.endswith("-1") for name in seen), (command, seen, said)
