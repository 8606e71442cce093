"""The action's other paths end to end: branch-mode baselines, sharded runs merged by the
merge job, a baseline file given as a path, and the agent's `requirements`."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import zipfile
from pathlib import Path

import pytest
from helpers.action_harness import AGENT, Runner, main_with_baseline, pr_payload, repository, zipped

pytestmark = pytest.mark.e2e  # the action's entry point in a child process, against the fake GitHub

DATA_BRANCH = "agent-eval-data"


def push_env(runner: Runner, sha: str, **inputs: str) -> dict[str, str]:
    payload = {"ref": "refs/heads/main", "after": sha, "repository": repository()}
    env = runner.env("push", payload, **inputs)
    env["GITHUB_SHA"], env["GITHUB_REF"] = sha, "refs/heads/main"
    return env


def test_branch_mode_stores_on_push_and_a_pr_compares_with_it(runner: Runner):
    fake = runner.fake
    main = fake.linear_history(3)
    env = push_env(runner, main[1], baseline="branch")
    # the push run that stores them: a PR's run checks that it is a successful push run
    push_run = fake.add_workflow_run(head_sha=main[1], path=".github/workflows/agent-eval.yml")
    env["GITHUB_RUN_ID"] = str(push_run["id"])
    done = runner.run(env)
    assert done.returncode == 0, done.stderr
    stored = fake.branch_files(DATA_BRANCH)
    assert f"results/{main[1]}.json" in stored
    # a PR off main[2], whose own commit has no results: the nearest older one is used
    head = fake.linear_history(1, parent=main[2], prefix="pr", branch="feature")[0]
    fake.add_pull(7, head, main[2])
    runner.out_dir = runner.tmp / "pr-out"
    done = runner.run(runner.env("pull_request", pr_payload(7, head, main[2]), baseline="branch"))
    assert done.returncode == 0, done.stderr  # same agent on both sides: nothing regressed
    out = runner.outputs()
    assert out["baseline-sha"] == main[1] and out["verdict"] == "pass"
    assert "1 commit before" in fake.comments_on(7)[0]["body"]


def test_a_baseline_path_input_is_used_as_is(runner: Runner, tmp_path: Path):
    fake = runner.fake
    main = fake.linear_history(2)
    first = runner.run(push_env(runner, main[1]))
    assert first.returncode == 0, first.stderr
    saved = tmp_path / "saved-baseline.json"
    saved.write_bytes((runner.out_dir / "results.json").read_bytes())
    head = fake.linear_history(1, parent=main[1], prefix="pr", branch="feature")[0]
    fake.add_pull(7, head, main[1])
    runner.out_dir = tmp_path / "pr-out"
    done = runner.run(runner.env("pull_request", pr_payload(7, head, main[1]), baseline=str(saved)))
    assert done.returncode == 0, done.stderr
    assert runner.outputs()["baseline-sha"] == main[1]
    assert not fake.calls("compare")  # no artifact walk


def _shard(runner: Runner, payload: dict, index: int, count: int) -> bytes:
    runner.out_dir = runner.tmp / f"shard-{index}"
    env = runner.env("pull_request", payload, shard=f"{index}/{count}")
    done = runner.run(env)
    assert done.returncode == 0, done.stderr  # a shard only records; the merge job gates
    return (runner.out_dir / "results.json").read_bytes()


def test_shards_merged_by_the_merge_job_post_one_comment(runner: Runner, baseline_results):
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3])
    payload = pr_payload(7, head, main[3])
    shards = {i: _shard(runner, payload, i, 3) for i in (1, 2, 3)}
    assert fake.comments == {} and fake.check_runs == {}
    current = fake.add_workflow_run(id=9001, head_sha=head, event="pull_request")
    for index, data in shards.items():
        fake.add_artifact(
            f"agent-eval-results-shard-{index}",
            zipped({"results.json": data}),
            run_id=current["id"],
        )
    runner.out_dir = runner.tmp / "merged"
    done = runner.run(runner.env("pull_request", payload, mode="merge"))
    assert done.returncode == 1, done.stderr
    merged = json.loads((runner.out_dir / "results.json").read_text())
    assert len(merged["cases"]) == 6 and merged["shard"] is None
    # each shard's results.json was streamed out of its artifact and moved, not copied, to
    # shards/; the scratch folder of the downloads is gone
    shards_dir = runner.out_dir / "shards"
    assert sorted(p.name for p in shards_dir.iterdir()) == [
        f"agent-eval-results-shard-{i}.json" for i in (1, 2, 3)
    ]
    assert [p.read_bytes() for p in sorted(shards_dir.iterdir())] == list(shards.values())
    assert not list(runner.out_dir.rglob(".artifact*"))
    (comment,) = fake.comments_on(7)
    assert "gold_express_refund" in comment["body"]
    (check,) = fake.check_runs.values()
    assert check["conclusion"] == "failure"


def test_a_missing_shard_fails_the_merge_loudly(runner: Runner, baseline_results):
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3])
    payload = pr_payload(7, head, main[3])
    data = _shard(runner, payload, 1, 2)
    current = fake.add_workflow_run(id=9001, head_sha=head, event="pull_request")
    fake.add_artifact(
        "agent-eval-results-shard-1", zipped({"results.json": data}), run_id=current["id"]
    )
    runner.out_dir = runner.tmp / "merged"
    done = runner.run(runner.env("pull_request", payload, mode="merge"))
    assert done.returncode == 3, done.stderr
    assert "shard" in done.stderr.lower() and "Traceback" not in done.stderr
    assert fake.comments == {} and fake.check_runs == {}


def _wheel(tmp: Path) -> Path:
    """A tiny pure-Python wheel, built by hand, so pip installs it without any index."""
    name, version = "agent_eval_probe", "1.0"
    files = {
        f"{name}.py": b"MESSAGE = 'installed from the requirements input'\n",
        f"{name}-{version}.dist-info/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
        ),
        f"{name}-{version}.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = [
        f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}"
        for path, data in files.items()
    ]
    record.append(f"{name}-{version}.dist-info/RECORD,,")
    files[f"{name}-{version}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    path = tmp / f"{name}-{version}-py3-none-any.whl"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for member, data in files.items():
            archive.writestr(member, data)
    path.write_bytes(buffer.getvalue())
    return path


def test_requirements_are_installed_before_the_agent_runs(runner: Runner, tmp_path: Path):
    fake = runner.fake
    main = fake.linear_history(1)
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"{_wheel(tmp_path)}\n", encoding="utf-8")
    agent = tmp_path / "agent.py"
    agent.write_text(
        "import runpy\n"
        "import agent_eval_probe  # only there if the requirements were installed\n"
        f"runpy.run_path({str(AGENT)!r}, run_name='__main__')\n"
    )
    # a --command agent gets a venv of its own: its `python` (from PATH) has the package
    env = push_env(runner, main[0], requirements=str(requirements), command=f"python {agent}")
    env["PIP_NO_INDEX"] = "1"  # offline: the wheel is a file
    done = runner.run(env)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((runner.out_dir / "results.json").read_text())
    assert all(c["status"] != "errored" for c in results["cases"])
    assert "installing the agent's requirements" in done.stdout
    import agent_eval_action  # the tool's own environment got nothing

    assert not (Path(agent_eval_action.__file__).parent.parent / "agent_eval_probe.py").exists()


def test_requirements_of_an_in_process_agent_keep_the_tools_versions(runner: Runner, tmp_path):
    main = runner.fake.linear_history(1)
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("pydantic==1.10.0\n", encoding="utf-8")  # the tool runs pydantic 2
    history = tmp_path / "history.json"  # an agent that runs in the tool's own interpreter
    env = push_env(
        runner, main[0], requirements=str(requirements), command="", **{"adk-history": str(history)}
    )
    env["PIP_NO_INDEX"] = "1"
    done = runner.run(env)
    assert done.returncode == 2, done.stdout + done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: {requirements}: input requirements: it pins pydantic to")


def test_a_missing_requirements_file_is_bad_input(runner: Runner, tmp_path: Path):
    main = runner.fake.linear_history(1)
    env = push_env(runner, main[0], requirements=str(tmp_path / "nope.txt"))
    done = runner.run(env)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'nope.txt'}: input requirements: no such file"
    ]
    assert not (runner.out_dir / "results.json").exists()


@pytest.mark.adk
def test_the_adk_example_through_the_action(runner: Runner):
    """The flagship ADK agent (examples/customer_support), run in-process by the child `run`,
    as the dogfood workflow runs it: a push records it; a PR with the same agent passes."""
    fake = runner.fake
    main = fake.linear_history(2)
    inputs = {"agent": "examples/customer_support", "evals": "examples/customer_support/evals"}
    inputs["command"] = ""
    env = push_env(runner, main[0], baseline="branch", **inputs)
    push_run = fake.add_workflow_run(head_sha=main[0], path=".github/workflows/agent-eval.yml")
    env["GITHUB_RUN_ID"] = str(push_run["id"])  # the push run a PR's run checks
    done = runner.run(env)
    assert done.returncode == 0, done.stderr
    results = json.loads((runner.out_dir / "results.json").read_text())
    assert results["run_config"]["runner"] == "adk" and len(results["cases"]) == 6
    head = fake.linear_history(1, parent=main[1], prefix="pr", branch="feature")[0]
    fake.add_pull(7, head, main[1])
    runner.out_dir = runner.tmp / "pr-out"
    payload = pr_payload(7, head, main[1])
    done = runner.run(runner.env("pull_request", payload, baseline="branch", **inputs))
    assert done.returncode == 0, done.stderr  # the case failing on purpose fails on both sides
    out = runner.outputs()
    assert out["verdict"] == "pass" and out["baseline-sha"] == main[0]
    assert "still failing" in fake.comments_on(7)[0]["body"].lower()


def test_a_baseline_path_input_that_does_not_exist_is_bad_input(runner: Runner, tmp_path: Path):
    main = runner.fake.linear_history(2)
    head = runner.fake.linear_history(1, parent=main[1], prefix="pr", branch="feature")[0]
    runner.fake.add_pull(7, head, main[1])
    payload = pr_payload(7, head, main[1])
    done = runner.run(runner.env("pull_request", payload, baseline=str(tmp_path / "gone.json")))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "input baseline: no such file" in done.stderr


def test_a_sharded_push_run_merged_stores_mains_record_too(runner: Runner, baseline_results):
    """The merge job of a sharded push to main writes main-record.msgpack beside the merged
    Results, as an unsharded push run does: the previous baseline first."""
    from agent_eval_action.compare.record_file import RECORD_NAME, read_record

    fake = runner.fake
    main, _ = main_with_baseline(fake, baseline_results)  # main[2]'s push run has a baseline
    shards = {}
    for index in (1, 2):
        runner.out_dir = runner.tmp / f"shard-{index}"
        done = runner.run(push_env(runner, main[3], shard=f"{index}/2"))
        assert done.returncode == 0, done.stderr
        assert not (runner.out_dir / RECORD_NAME).exists()  # a shard stores none
        shards[index] = (runner.out_dir / "results.json").read_bytes()
    current = fake.add_workflow_run(id=9001, head_sha=main[3], event="push")
    for index, data in shards.items():
        name = f"agent-eval-results-shard-{index}"
        fake.add_artifact(name, zipped({"results.json": data}), run_id=current["id"])
    runner.out_dir = runner.tmp / "merged"
    done = runner.run(push_env(runner, main[3], mode="merge"))
    assert done.returncode == 0, done.stderr
    record = read_record(runner.out_dir / RECORD_NAME, RECORD_NAME)
    assert [p.source.sha for p in record.past] == [json.loads(baseline_results)["source"]["sha"]]
    assert len(record.tables.keys) == 6


def test_output_dir_must_be_a_folder_of_the_actions_own(runner: Runner, tmp_path: Path):
    head = "e" * 40
    runner.fake.add_pull(7, head, "d" * 40)
    workspace = tmp_path / "workspace"
    (workspace / "out").mkdir(parents=True)
    (workspace / "out" / "notes.txt").write_text("mine")
    for value, said in (
        (".", "input output-dir: the workspace (or a folder above it)"),
        ("out", "input output-dir: it holds 'notes.txt', which is not one of the action's files"),
    ):
        env = runner.env("pull_request", pr_payload(7, head, "d" * 40), **{"output-dir": value})
        env["GITHUB_WORKSPACE"] = str(workspace)
        done = runner.run(env)
        assert done.returncode == 2, done.stdout + done.stderr
        assert said in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert (workspace / "out" / "notes.txt").read_text() == "mine"  # never a user's file
    assert sorted(p.name for p in workspace.iterdir()) == ["out"]


def test_output_dir_holds_this_runs_files_and_loses_the_actions_stale_ones(
    runner: Runner, tmp_path: Path
):
    """A results.json and a merge-base.json already there (an earlier run's, or committed):
    this run's results replace the one, the other, which this run did not write, goes."""
    head = "e" * 40
    runner.fake.add_pull(7, head, "d" * 40)
    out = tmp_path / "workspace" / "agent-eval-results"
    out.mkdir(parents=True)
    (out / "results.json").write_text('{"forged": true}')
    (out / "merge-base.json").write_text('{"forged": true}')
    env = runner.env(
        "pull_request", pr_payload(7, head, "d" * 40), baseline="none",
        **{"output-dir": "agent-eval-results"},
    )  # fmt: skip
    env["GITHUB_WORKSPACE"] = str(out.parent)
    done = runner.run(env)
    assert done.returncode == 1, done.stdout + done.stderr  # the example's failing case
    assert json.loads((out / "results.json").read_text())["schema"].startswith("agent-eval-")
    assert not (out / "merge-base.json").exists()
    assert {"results.json", "diff.json", "report.md", "summary.md", "pr.json"} <= {
        p.name for p in out.iterdir()
    }
    assert "results-path<<" in runner.output.read_text()
    assert runner.outputs()["results-path"] == "agent-eval-results/results.json"
