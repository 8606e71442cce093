"""The tool as PID 1 of its container (init.py): init collects every orphan at all times,
the tool's own children keep their exit statuses, termination signals reach the tool, and
the tool's exit code is init's. Run as PID 1 of a PID namespace of its own where this
machine allows it (helpers/pid1.py); else the same split made in a child subreaper, which
orphans come back to as they come to PID 1."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from helpers.pid1 import as_pid1, can_unshare, namespace_init

from agent_eval_action import __version__

PROLOGUE = r"""
import ctypes, os, signal, subprocess, sys, time
from agent_eval_action import init
if os.environ["SPLIT"] == "pid1":
    init.become_init()
else:  # a child subreaper: orphans of its descendants come back to it, as to PID 1
    assert ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0
    init.split()
"""

ORPHANS = r"""
# twenty orphans that end: each one's parent is waited for, and exits before it
for _ in range(20):
    middle = os.fork()
    if middle == 0:
        if os.fork() == 0:
            time.sleep(0.05)
            os._exit(0)
        os._exit(0)
    os.waitpid(middle, 0)
codes = {subprocess.run(["sh", "-c", "sleep 0.01; exit 7"]).returncode for _ in range(30)}
time.sleep(0.5)
init_pid = os.getppid()
zombies = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        continue
    if fields[0] == "Z" and int(fields[1]) == init_pid:
        zombies.append(pid)
print(f"codes={sorted(codes)} zombies={len(zombies)}", flush=True)
sys.exit(5)
"""

TERM = r"""
def stop(signum, frame):
    print(f"got {signal.Signals(signum).name}", flush=True)
    sys.exit(3)
signal.signal(signal.SIGTERM, stop)
print("ready", flush=True)
time.sleep(60)
sys.exit(0)
"""

KILLED = r"""
os.kill(os.getpid(), signal.SIGKILL)
"""

SPLITS = ["pid1", "subreaper"]


def _start(split: str, body: str) -> subprocess.Popen[str]:
    if split == "pid1" and not can_unshare():
        pytest.skip("unshare --pid is not allowed here (the subreaper split runs instead)")
    argv = [sys.executable, "-c", PROLOGUE + body]
    return subprocess.Popen(
        as_pid1(argv) if split == "pid1" else argv,
        env={**os.environ, "SPLIT": split},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("split", SPLITS)
def test_init_collects_every_orphan_and_the_tools_children_keep_their_exit_codes(split):
    process = _start(split, ORPHANS)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 5, out + err  # the tool's exit code is init's
    # nothing of the orphans waits as a zombie under init, and init took no exit status
    # away from the tool's own subprocesses (a waitpid(-1) in the tool's process would)
    assert out.strip() == "codes=[7] zombies=0", err


@pytest.mark.parametrize("split", SPLITS)
def test_a_termination_signal_to_init_reaches_the_tool_which_decides(split):
    process = _start(split, TERM)
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    init_pid = process.pid
    if split == "pid1":  # unshare's child is the namespace's PID 1
        init_pid = namespace_init(process.pid) or 0
        assert init_pid > 0
    os.kill(init_pid, signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 3, out + err  # the tool's handler's exit code
    assert out.strip() == "got SIGTERM"


@pytest.mark.parametrize("split", SPLITS)
def test_a_tool_killed_by_a_signal_is_no_verdict_in_one_line(split):
    process = _start(split, KILLED)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 3
    assert err.strip() == "error: the tool was killed by SIGKILL: no verdict"


def test_the_entry_point_runs_as_pid_1():
    if not can_unshare():
        pytest.skip("unshare --pid is not allowed here")
    done = subprocess.run(
        as_pid1([sys.executable, "-m", "agent_eval_action", "--version"]),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert __version__ in done.stdout
