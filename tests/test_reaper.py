"""What the agent leaves running dies with its case-run (runners/reaper.py, docs/security.md).

Real processes throughout: `run-cases` runs as a child process (the agent stage of the
action), with a `--command` worker or an in-process ADK agent whose tools detach daemons.
A daemon is a shell loop that writes its pid to `<base>.pid` and appends to `<base>.log`
every 20 ms; the agents report from inside the run what they see of each other's daemons.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers.paths import ROOT

from agent_eval_action.runners import reaper

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="a child subreaper and /proc are Linux's"
)

DAEMON = """
import os, shlex, subprocess, sys, time


def loop(base):
    return f"echo $$ > {shlex.quote(base + '.pid')}; while :; do echo x >> {shlex.quote(base + '.log')}; sleep 0.02; done"


def pid_of(base, wait=30.0):  # generous: on a loaded CI machine the other case starts late
    end = time.monotonic() + wait
    while time.monotonic() < end:
        try:
            return int(open(base + ".pid").read())
        except (OSError, ValueError):
            time.sleep(0.01)
    raise RuntimeError("no daemon wrote " + base + ".pid")


def alive(pid):
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def detach(base):
    # a background job that leaves the session; its shell exits at once: the daemon is orphaned
    script = f"setsid sh -c {shlex.quote(loop(base))} >/dev/null 2>&1 &"
    subprocess.run(["sh", "-c", script], check=True)
    return f"daemon {pid_of(base)}"


def fork_away(base):
    # the classic double fork, without subprocess: the daemon carries no scope mark
    child = os.fork()
    if child == 0:
        os.setsid()
        if os.fork() == 0:
            os.execvp("sh", ["sh", "-c", loop(base)])
        os._exit(0)
    os.waitpid(child, 0)
    return f"daemon {pid_of(base)}"


KEPT = []


def child(base):
    # a daemon that stays the caller's own child (it is kept, not orphaned)
    KEPT.append(subprocess.Popen(["setsid", "sh", "-c", loop(base)]))
    return f"child {pid_of(base)}"


def gone(base, wait=15.0):
    pid = pid_of(base)
    end = time.monotonic() + wait
    while alive(pid):
        if time.monotonic() > end:
            return "alive"
        time.sleep(0.02)
    return "gone"


def status(base):
    return "alive" if alive(pid_of(base)) else "gone"


def growth(base):
    size = os.path.getsize(base + ".log")
    time.sleep(0.3)
    return "growing" if os.path.getsize(base + ".log") > size else "still"


def hang(_):
    time.sleep(3600)


VERBS = {"detach": detach, "fork_away": fork_away, "child": child, "gone": gone,
         "status": status, "growth": growth, "hang": hang}
"""

WORKER = (
    DAEMON
    + """
import json

for line in sys.stdin:
    message = json.loads(line)
    if message.get("type") == "end":
        continue
    verb, _, base = message["user_content"]["parts"][0]["text"].partition(" ")
    text = VERBS[verb](base)
    answer = {"role": "model", "parts": [{"text": text}]}
    print(json.dumps({"id": message["id"], "final_response": answer}), flush=True)
"""
)

AGENT = (
    DAEMON
    + '''
import asyncio
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.genai import types


def act(verb: str, base: str) -> str:
    """Do `verb` with the daemon at `base`."""
    return VERBS[verb](base)


async def wait_gone(base: str) -> str:
    """Wait until the daemon at `base` is gone, without blocking the other case-runs."""
    for _ in range(250):
        if (await asyncio.to_thread(status, base)) == "gone":
            return "gone"
        await asyncio.sleep(0.02)
    return "alive"


class Scripted(BaseLlm):
    model: str = "scripted"

    async def generate_content_async(self, llm_request, stream=False):
        last = llm_request.contents[-1]
        result = next((p.function_response for p in last.parts or [] if p.function_response), None)
        if result is not None:
            text = result.response.get("result", "")
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))
            return
        verb, _, base = " ".join(p.text or "" for p in last.parts or []).partition(" ")
        call = (types.FunctionCall(name="wait_gone", args={"base": base}) if verb == "gone"
                else types.FunctionCall(name="act", args={"verb": verb, "base": base}))
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))


root_agent = LlmAgent(name="reaped", model=Scripted(), instruction="-", tools=[act, wait_gone])
'''
)


@pytest.fixture(autouse=True)
def _no_daemon_left(tmp_path):
    """Whatever a failing test leaves running is killed here."""
    yield
    for pidfile in tmp_path.glob("*.pid"):
        with contextlib.suppress(ValueError, OSError):
            pid = int(pidfile.read_text())
            if str(tmp_path) in Path(f"/proc/{pid}/cmdline").read_text(errors="replace"):
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    proc = reaper.read_proc(pid)
    return proc is not None and not proc.zombie


def _pid(base: Path) -> int:
    return int(base.with_suffix(".pid").read_text())


def _evals(tmp_path: Path, cases: dict[str, list[str]]) -> Path:
    """One eval set: each case's user turns (its expected answers do not matter here)."""
    evals = tmp_path / "evals"
    evals.mkdir()
    eval_cases = [
        {
            "eval_id": eval_id,
            "conversation": [
                {
                    "user_content": {"role": "user", "parts": [{"text": text}]},
                    "final_response": {"role": "model", "parts": [{"text": "-"}]},
                }
                for text in texts
            ],
        }
        for eval_id, texts in cases.items()
    ]
    (evals / "reap.evalset.json").write_text(
        json.dumps({"eval_set_id": "reap", "eval_cases": eval_cases})
    )
    return evals


def _run_cases(
    tmp_path: Path, agent: list[str], concurrency: int, *options: str
) -> dict[str, list[str]]:
    """`run-cases` in a child process; each case's answers, by eval id (and its error, if
    it failed, as the last item)."""
    traces = tmp_path / "traces.jsonl"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "agent_eval_action", "run-cases", str(tmp_path / "evals")),
            *(*agent, "--concurrency", str(concurrency), "--traces", str(traces), *options),
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "ADK_DISABLE_LOAD_DOTENV": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    found = {}
    for line in traces.read_text().splitlines()[1:-1]:
        trace = json.loads(line)["trace"]
        error = [trace["error"]] if trace.get("error") else []
        turns = [turn["final_response"]["parts"][0]["text"] for turn in trace["turns"]]
        found[trace["eval_id"]] = turns + error
    return found


def _command(tmp_path: Path) -> list[str]:
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER)
    return ["--command", f"{sys.executable} {worker}"]


# --- a --command agent -----------------------------------------------------------------------


def test_a_daemon_is_killed_when_its_case_ends_while_the_next_case_runs(tmp_path):
    one = tmp_path / "one"
    _evals(tmp_path, {"first": [f"detach {one}"], "second": [f"gone {one}", f"growth {one}"]})
    answers = _run_cases(tmp_path, _command(tmp_path), concurrency=1)
    assert answers["first"] == [f"daemon {_pid(one)}"]
    # seen from the next case-run, on the same worker: the daemon is dead, its file still
    assert answers["second"] == ["gone", "still"]


def test_a_daemon_of_a_case_that_timed_out_dies_with_it(tmp_path):
    late, kept = tmp_path / "late", tmp_path / "kept"
    _evals(
        tmp_path,
        {"slow": [f"detach {late}", f"child {kept}", "hang -"], "next": [f"gone {late}"]},
    )
    answers = _run_cases(tmp_path, _command(tmp_path), 1, "--timeout", "3")
    assert answers["slow"][-1] == "timed out after 3 s at turn 3 of 3"
    assert answers["next"] == ["gone"]  # on a fresh worker: the old one was killed
    assert not _alive(_pid(kept))  # its own child, in a session of its own, went with it


def test_a_case_ending_spares_the_daemon_of_a_case_still_running(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _evals(tmp_path, {"a": [f"detach {a}"], "b": [f"detach {b}", f"gone {a}", f"status {b}"]})
    answers = _run_cases(tmp_path, _command(tmp_path), concurrency=2)
    # a's daemon died when a ended, while b ran on the other worker; b's lived on till b ended
    assert answers["b"][1:] == ["gone", "alive"], answers
    assert not _alive(_pid(b))


def test_a_workers_own_child_lives_across_cases_and_dies_with_the_worker(tmp_path):
    kept = tmp_path / "kept"
    _evals(tmp_path, {"first": [f"child {kept}"], "second": [f"status {kept}"]})
    answers = _run_cases(tmp_path, _command(tmp_path), concurrency=1)
    assert answers["second"] == ["alive"]  # not detached: the worker's own, kept between cases
    # in a session of its own, so killing the worker's group missed it: the reaper did not
    assert not _alive(_pid(kept))


# --- an in-process ADK agent -----------------------------------------------------------------


@pytest.mark.adk
def test_an_in_process_agents_detached_daemons_die_with_their_case_and_its_helper_lives(
    tmp_path,
):
    pytest.importorskip("google.adk")
    package = tmp_path / "reaped_agent"
    package.mkdir()
    (package / "__init__.py").write_text("from . import agent\n")
    (package / "agent.py").write_text(textwrap.dedent(AGENT))
    helper, a, forked, b = (tmp_path / name for name in ("helper", "a", "forked", "b"))
    _evals(
        tmp_path,
        {
            "a": [f"child {helper}", f"detach {a}", f"fork_away {forked}"],
            "b": [f"detach {b}", f"gone {a}", f"gone {forked}", f"status {b}", f"status {helper}"],
        },
    )
    answers = _run_cases(tmp_path, ["--agent", str(package)], concurrency=2)
    assert answers["a"][0] == f"child {_pid(helper)}"
    # when a ended: its daemons died (the one with its mark, the one without a mark), while
    # b's (its mark: b still ran) and the agent's own child lived on
    assert answers["b"][1:] == ["gone", "gone", "alive", "alive"]
    # and when the stage ended, the rest: b's daemon, the helper the agent never stopped
    assert not _alive(_pid(b)) and not _alive(_pid(helper))


# --- the reaper's own rules, in this process -------------------------------------------------


def _detached(base: Path, env: dict[str, str] | None = None) -> int:
    loop = f"echo $$ > {base}.pid; while :; do sleep 0.05; done"
    script = f"setsid sh -c '{loop}' >/dev/null 2>&1 &"
    subprocess.run(["sh", "-c", script], check=True, env=env)
    end = time.monotonic() + 10
    while not base.with_suffix(".pid").exists() or not base.with_suffix(".pid").read_text():
        assert time.monotonic() < end
        time.sleep(0.01)
    return _pid(base)


def test_a_sweep_spares_open_scopes_and_kills_unmarked_and_closed_ones(tmp_path):
    with reaper.reaping() as reap:
        assert reap.active
        mine, other = reap.open(), reap.open()
        ours = _detached(tmp_path / "ours", {**os.environ, reaper.SCOPE_ENV: mine})
        theirs = _detached(tmp_path / "theirs", {**os.environ, reaper.SCOPE_ENV: other})
        cleared = _detached(tmp_path / "cleared", {"PATH": os.environ["PATH"]})
        assert reaper.read_proc(ours).ppid == os.getpid()  # adopted: we are its subreaper
        reap.sweep(mine)
        assert (_alive(ours), _alive(theirs), _alive(cleared)) == (False, True, False)
        reap.close(other)
        assert not _alive(theirs)


def test_children_from_before_are_spared_and_those_started_meanwhile_end_with_it(tmp_path):
    before = subprocess.Popen(["sleep", "60"])
    try:
        with reaper.reaping() as reap:
            during = subprocess.Popen(["sleep", "60"])
            with reap.case():  # a case-run's sweep leaves direct children alone
                pass
            assert _alive(during.pid)
        assert during.wait(timeout=5) == -9
        assert _alive(before.pid)
    finally:
        before.kill()
        before.wait()


def test_what_a_daemon_started_is_killed_with_it(tmp_path):
    with reaper.reaping() as reap, reap.case():
        loop = f"echo $$ > {tmp_path / 'tree.pid'}; sleep 60 & sleep 60 & wait"
        subprocess.run(["sh", "-c", f"setsid sh -c '{loop}' >/dev/null 2>&1 &"], check=True)
        time.sleep(0.2)
        root = _pid(tmp_path / "tree")
        tree = reaper.below([reaper.read_proc(root)], reaper.processes())
        assert len(tree) == 3
    assert not any(_alive(proc.pid) for proc in tree)


def test_outside_an_agent_stage_nothing_is_swept(tmp_path):
    idle = reaper.current()
    assert not idle.active and idle.sweep() == 0
