"""The action's children (action/children.py): a stage's deadline, and how it is stopped;
the deadline an agent stage gets (action/agent_run.stage_deadline)."""

from __future__ import annotations

import sys
import time

import pytest

from agent_eval_action import launch
from agent_eval_action.action import children as children_module
from agent_eval_action.action.agent_run import STAGE_SLACK_S, stage_deadline
from agent_eval_action.action.children import Children, Overran
from agent_eval_action.action.settings import parse_settings

SLEEPS = [sys.executable, "-c", "import time; print('started', flush=True); time.sleep(60)"]
DEAF = [
    sys.executable,
    "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('started', flush=True); time.sleep(60)",
]


def test_a_child_past_its_deadline_is_stopped_and_said_to_have_overrun():
    started = time.monotonic()
    with pytest.raises(Overran, match="deadline of 1 s"):
        Children().call(launch.Kind.PYTHON, SLEEPS, {}, deadline=1.0)
    assert time.monotonic() - started < 20  # SIGTERM ended it, not its minute of sleep


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace(monkeypatch):
    monkeypatch.setattr(children_module, "STOP_GRACE_S", 0.5)
    started = time.monotonic()
    with pytest.raises(Overran):
        Children().call(launch.Kind.PYTHON, DEAF, {}, deadline=1.0)
    assert time.monotonic() - started < 20


def test_a_child_within_its_deadline_returns_its_exit_code():
    argv = [sys.executable, "-c", "raise SystemExit(4)"]
    assert Children().call(launch.Kind.PYTHON, argv, {}, deadline=60.0) == 4


def test_an_agent_stages_deadline_is_its_waves_of_case_runs_at_the_timeout():
    settings = parse_settings({"INPUT_TIMEOUT": "100", "INPUT_CONCURRENCY": "4"})
    assert stage_deadline(settings, 1) == STAGE_SLACK_S + 100
    assert stage_deadline(settings, 4) == STAGE_SLACK_S + 100
    assert stage_deadline(settings, 5) == STAGE_SLACK_S + 200
    assert stage_deadline(settings, 0) == STAGE_SLACK_S + 100  # a stage still starts
