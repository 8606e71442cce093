"""The action under faults: GitHub outages and refusals, cancellation, and the PR's code
trying to read the token. None of them may end in a pass the gate did not give, or lose
the results."""

from __future__ import annotations

import contextlib
import io
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fakes.github import Fault, secondary_rate_limit
from helpers.action_harness import REPO, TOKEN, Runner, pr_payload
from helpers.paths import WORKERS, python_command
from helpers.pid1 import as_pid1, can_unshare, namespace_init

from agent_eval_action.files.safe import TEMPORARY

pytestmark = pytest.mark.e2e  # the action's entry point in a child process, against the fake GitHub

SCRIPTED = WORKERS / "scripted_worker.py"
SECRETS = ("INPUT_GITHUB-TOKEN", "GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN", "GH_TOKEN")
FILE_COMMANDS = ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV")  # the action's alone


def evalset(tmp: Path, *texts: str) -> Path:
    """An eval set whose cases send these texts to the scripted worker."""
    cases = [
        {
            "eval_id": f"case{i}",
            "conversation": [
                {
                    "user_content": {"role": "user", "parts": [{"text": text}]},
                    "final_response": {"role": "model", "parts": [{"text": "ok"}]},
                }
            ],
        }
        for i, text in enumerate(texts)
    ]
    path = tmp / "evals" / "probe.evalset.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"eval_set_id": "probe", "eval_cases": cases}), encoding="utf-8")
    return path.parent


def open_pr(runner: Runner) -> tuple[str, dict]:
    """PR #7 off main, with no baseline on main."""
    fake = runner.fake
    main = fake.linear_history(2)
    head = fake.linear_history(1, parent=main[1], prefix="pr", branch="feature")[0]
    fake.add_pull(7, head, main[1])
    return head, pr_payload(7, head, main[1])


def test_the_agent_never_sees_the_token(runner: Runner):
    _, payload = open_pr(runner)
    evals = evalset(runner.tmp, "env " + " ".join(SECRETS + FILE_COMMANDS) + " GITHUB_REPOSITORY")
    env = runner.env("pull_request", payload, evals=str(evals), command=python_command(SCRIPTED))
    env["GITHUB_TOKEN"] = env["GH_TOKEN"] = TOKEN
    env["GOOGLE_API_KEY"] = "AIza-model-key-for-the-agent"
    env["GITHUB_ENV"] = str(runner.tmp / "github_env")
    done = runner.run(env)
    assert "::add-mask::AIza-model-key-for-the-agent" in done.stdout  # the agent keeps it
    assert done.returncode == 1, done.stderr  # "ok" was expected; the probe answers otherwise
    results = json.loads((runner.out_dir / "results.json").read_text())
    answer = results["cases"][0]["runs"][0]["invocations"][0]["actual"]["final_response"]
    seen = json.loads(answer["parts"][0]["text"])
    assert seen == {**dict.fromkeys(SECRETS + FILE_COMMANDS), "GITHUB_REPOSITORY": REPO}
    assert TOKEN not in done.stdout.replace(f"::add-mask::{TOKEN}", "") + done.stderr


def test_the_agent_runs_in_the_agent_stage_and_the_scores_come_from_another(runner: Runner):
    _, payload = open_pr(runner)
    evals = evalset(runner.tmp, "parent")
    env = runner.env("pull_request", payload, evals=str(evals), command=python_command(SCRIPTED))
    done = runner.run(env)
    assert done.returncode == 1, done.stderr  # "ok" was expected
    results = json.loads((runner.out_dir / "results.json").read_text())
    answer = results["cases"][0]["runs"][0]["invocations"][0]["actual"]["final_response"]
    parent = json.loads(answer["parts"][0]["text"])
    # the worker's parent is the agent stage: `run-cases` in an isolated interpreter (-I,
    # launch.py), which neither judges nor scores
    assert parent[1:6] == ["-I", "-u", "-m", "agent_eval_action", "run-cases"]
    assert "--out" not in parent and "--fail-on" not in parent
    assert results["run_config"]["runner"] == "command"  # scored from the stage's traces


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("pid1", [False, True], ids=["child", "pid1"])
def test_cancellation_keeps_partial_results_posts_nothing_and_exits_3(runner: Runner, signum, pid1):
    """Cancelled as a child, or as its container's PID 1 (init.py passes the signal on)."""
    if pid1 and not can_unshare():
        pytest.skip("unshare --pid is not allowed here")
    _, payload = open_pr(runner)
    evals = evalset(runner.tmp, "quick", "hang")
    env = runner.env(
        "pull_request", payload, evals=str(evals), command=python_command(SCRIPTED), concurrency="1"
    )
    argv = [sys.executable, "-m", "agent_eval_action", "action"]
    if pid1:
        argv = as_pid1(argv)
    process = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    seen: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [seen.put(line) for line in process.stdout])
    reader.start()
    stdout, deadline = "", time.monotonic() + 30
    while "case0 run 1" not in stdout and time.monotonic() < deadline:
        with contextlib.suppress(queue.Empty):
            stdout += seen.get(timeout=0.5)  # the agent stage's progress, relayed
    target = namespace_init(process.pid) if pid1 else process.pid
    assert target is not None, "unshare started no PID 1"
    os.kill(target, signum)
    process.wait(timeout=30)
    reader.join(timeout=5)
    rest = process.stderr.read()
    assert process.returncode == 3, stdout + rest
    results = json.loads((runner.out_dir / "results.json").read_text())
    assert results["partial"] is True
    assert [c["status"] for c in results["cases"]] == ["failed", "errored"]
    assert runner.fake.comments == {} and runner.fake.check_runs == {}
    assert "Traceback" not in rest


def test_github_down_while_fetching_the_baseline_is_exit_3_not_a_pass(runner: Runner):
    _, payload = open_pr(runner)
    runner.fake.inject("compare", *[502] * 10)
    env = runner.env("pull_request", payload, **{"fail-on": "never"})
    done = runner.run(env)
    assert done.returncode == 3, done.stderr
    assert "cannot fetch the baseline" in done.stderr and "Traceback" not in done.stderr
    assert runner.fake.comments == {}
    assert "agent-eval: no verdict (exit 3)" in runner.summary.read_text(encoding="utf-8")


def test_rate_limited_comment_is_waited_out_and_posted_once(runner: Runner):
    _, payload = open_pr(runner)
    runner.fake.inject("create_comment", secondary_rate_limit(retry_after=1))
    done = runner.run(runner.env("pull_request", payload))
    assert done.returncode == 1, done.stderr
    assert len(runner.fake.comments_on(7)) == 1


def test_comment_refused_keeps_the_gate_and_the_summary(runner: Runner):
    _, payload = open_pr(runner)
    forbidden = Fault(403, body={"message": "Resource not accessible by integration"})
    runner.fake.inject("create_comment", forbidden)
    runner.fake.inject("list_comments", forbidden)
    done = runner.run(runner.env("pull_request", payload))
    assert done.returncode == 1
    assert "::warning::could not post the PR comment" in done.stdout
    assert "gold\\_express\\_refund" in runner.summary.read_text()
    (check,) = runner.fake.check_runs.values()
    assert check["conclusion"] == "failure"


def test_no_token_still_gates_and_writes_the_summary(runner: Runner):
    _, payload = open_pr(runner)
    env = runner.env("pull_request", payload, **{"github-token": ""})
    done = runner.run(env)
    assert done.returncode == 1
    assert runner.fake.log == []
    assert "NO BASELINE" in done.stdout and "::error file=" in done.stdout
    assert runner.outputs()["verdict"] == "fail"


def test_outputs_cannot_be_forged_by_a_value(runner: Runner, tmp_path: Path):
    from agent_eval_action.action.outputs import write_outputs

    target = tmp_path / "out"
    write_outputs(str(target), {"comment-url": "x\nverdict<<EOF\npass\nEOF", "verdict": "fail"})
    runner.output = target
    assert runner.outputs() == {"comment-url": "x\nverdict<<EOF\npass\nEOF", "verdict": "fail"}


def test_a_pr_the_token_may_not_read_is_still_compared_and_posted(runner: Runner):
    _, payload = open_pr(runner)
    forbidden = Fault(403, body={"message": "Resource not accessible by integration"})
    runner.fake.inject("get_pull", forbidden)
    done = runner.run(runner.env("pull_request", payload))
    assert done.returncode == 1, done.stderr
    assert "::warning::cannot read PR #7 (403)" in done.stdout
    assert len(runner.fake.comments_on(7)) == 1


def test_the_judge_only_key_reaches_the_judge_and_never_the_agent(runner: Runner):
    from fakes.gemini import FakeGemini

    _, payload = open_pr(runner)
    names = "AGENT_EVAL_JUDGE_API_KEY INPUT_JUDGE-API-KEY GOOGLE_API_KEY"
    evals = evalset(runner.tmp, f"env {names}")
    config = runner.tmp / "judged.json"
    config.write_text(json.dumps({"criteria": {"final_response_match_v2": 0.5}}))
    with FakeGemini() as gemini:
        env = runner.env(
            "pull_request",
            payload,
            evals=str(evals),
            config=str(config),
            command=python_command(SCRIPTED),
            baseline="none",
            **{"judge-api-key": "judge-only-key-42"},
        )
        env["GOOGLE_GEMINI_BASE_URL"] = gemini.url
        done = runner.run(env)
        keys = {call.headers.get("x-goog-api-key") for call in gemini.requests}
    assert "::add-mask::judge-only-key-42" in done.stdout
    assert keys == {"judge-only-key-42"}, done.stdout + done.stderr
    results = json.loads((runner.out_dir / "results.json").read_text())
    answer = results["cases"][0]["runs"][0]["invocations"][0]["actual"]["final_response"]
    assert json.loads(answer["parts"][0]["text"]) == dict.fromkeys(names.split())


def test_the_actions_own_lines_quote_untrusted_text_as_plain_text():
    from agent_eval_action.action import outputs

    assert outputs.plain("::set-output name=x::1") == ": :set-output name=x::1"
    assert "##[" not in outputs.plain("pr.json says ##[set-output name=x;]1")
    assert "\n" not in outputs.plain("a\n::error::forged")
    log = io.StringIO()
    outputs.command("error", "bad zip entry ##[add-path]/tmp/evil\n::set-env name=A::1", log)
    (line,) = log.getvalue().splitlines()
    assert line.startswith("::error::") and "##[" not in line and "\n::" not in line


def test_github_unreachable_after_the_verdict_keeps_the_verdict_and_the_report(
    runner: Runner, baseline_results: bytes
):
    _, payload = open_pr(runner)
    baseline = runner.tmp / "baseline.json"
    baseline.write_bytes(baseline_results)
    env = runner.env("pull_request", payload, baseline=str(baseline))
    env["GITHUB_API_URL"] = "http://127.0.0.1:9"  # nothing listens: GitHub is unreachable
    done = runner.run(env)
    assert done.returncode == 1, done.stdout + done.stderr  # the gate's: a regression
    assert "could not be reached" in done.stdout and "were not posted" in done.stdout
    assert "gold\\_express\\_refund" in runner.summary.read_text()  # the report is there
    assert runner.outputs()["verdict"] == "fail"


# The action's entry point with a bug planted in the report's rendering: what a TypeError in
# a template would do. Its message plays an artifact's text quoted by an exception.
_PLANTED_BUG = """
import sys
from agent_eval_action.report import markdown
def comment_of(*args, **kwargs):
    raise TypeError("::warning::forged annotation\\n##[add-path]/tmp/evil")
markdown.comment_of = comment_of
from agent_eval_action.cli import main
sys.exit(main(["action"]))
"""


def test_a_fault_of_the_action_itself_is_no_verdict_not_a_gate_failure(runner: Runner):
    _, payload = open_pr(runner)
    evals = evalset(runner.tmp, "parent")  # a gate failure ("ok" was expected), but for the bug
    env = runner.env("pull_request", payload, evals=str(evals), command=python_command(SCRIPTED))
    argv = [sys.executable, "-c", _PLANTED_BUG]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stdout + done.stderr  # not 1: nothing was decided
    errors = [line for line in done.stdout.splitlines() if line.startswith("::error::")]
    assert len(errors) == 1 and errors[0].startswith("::error::internal error, TypeError: ")
    assert "Traceback (most recent call last)" in done.stderr  # for the bug report
    log = done.stdout + done.stderr  # the exception's text is quoted, never obeyed
    assert "##[" not in log
    assert not any(line.startswith("::warning::forged") for line in log.splitlines())
    summary = runner.summary.read_text(encoding="utf-8")
    assert "agent-eval: no verdict (exit 3)" in summary and "TypeError" in summary
    assert json.loads((runner.out_dir / "results.json").read_text())["cases"]  # kept
    assert runner.fake.comments == {}


def test_a_job_summary_that_cannot_be_written_is_no_verdict_in_one_line(runner: Runner):
    _, payload = open_pr(runner)
    evals = evalset(runner.tmp, "parent")
    env = runner.env("pull_request", payload, evals=str(evals), command=python_command(SCRIPTED))
    runner.summary.mkdir()  # the runner's summary file is a folder: writing it fails
    done = runner.run(env)
    assert done.returncode == 3, done.stdout + done.stderr
    (error,) = [line for line in done.stdout.splitlines() if line.startswith("::error::")]
    assert error.startswith("::error::internal error, IsADirectoryError: ")
    assert json.loads((runner.out_dir / "results.json").read_text())["cases"]


def test_an_output_dir_that_is_a_file_is_bad_input_before_anything_runs(runner: Runner):
    _, payload = open_pr(runner)
    taken = runner.tmp / "taken"
    taken.write_text("someone else's file\n", encoding="utf-8")
    done = runner.run(runner.env("pull_request", payload, **{"output-dir": str(taken)}))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: {taken}: input output-dir: a file stands in its place"
    )
    assert "Traceback" not in done.stderr and runner.fake.comments == {}
    assert taken.read_text(encoding="utf-8") == "someone else's file\n"


def test_a_full_disk_is_one_line_and_no_verdict(runner: Runner):
    """A write the machine refuses (here the step outputs, on /dev/full) is the machine's
    fault: exit 3, one error line naming what could not be written, no traceback."""
    _, payload = open_pr(runner)
    env = runner.env("pull_request", payload, baseline="none")
    env["GITHUB_OUTPUT"] = "/dev/full"
    done = runner.run(env)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("::error::")]
    assert "No space left on device" in line and "free some space" in line


def test_an_output_dir_on_a_full_disk_is_one_line_naming_the_file_and_nothing_half_written(
    runner: Runner,
):
    """A real filesystem that fills up (a tmpfs of 8 KiB, mounted as root) under output-dir:
    the file that did not fit is named, exit 3, and no part of it is left there."""
    full = runner.tmp / "small"
    full.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(full)])
    if mounted.returncode != 0:
        pytest.skip("this machine does not let root mount a tmpfs (a container without it)")
    try:
        _, payload = open_pr(runner)
        env = runner.env("pull_request", payload, baseline="none", **{"output-dir": str(full)})
        done = runner.run(env)
        left = sorted(p.name for p in full.iterdir())
        whole = {name: (full / name).read_bytes() for name in left}
    finally:
        subprocess.run(["umount", str(full)], check=True)
    said = done.stdout + done.stderr
    assert done.returncode == 3, said
    assert "Traceback" not in said
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("::error::")]
    name = line.split(f"{full}/", 1)[1].split(":", 1)[0]
    assert line == (
        f"::error::{full}/{name}: cannot be written: No space left on device "
        "(free some space, then run again)"
    )
    assert name not in left  # not a part of it
    assert not [n for n in left if TEMPORARY.fullmatch(n)], left  # no temporary file either
    for name, data in whole.items():
        if name.endswith(".json"):
            json.loads(data)  # what is there is whole
