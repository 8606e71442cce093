"""The event payload (action/event.py) and the mode `mode: auto` selects from it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_eval_action.action.event import (
    MergeGroupEvent,
    Mode,
    OtherEvent,
    PullRequestEvent,
    PushEvent,
    WorkflowDispatchEvent,
    WorkflowRunEvent,
    load_event,
    select_mode,
)
from agent_eval_action.action.settings import parse_settings
from agent_eval_action.errors import InputError

AUTO = parse_settings({})


def pull_request(head_repo: str | None = "octo/agent") -> dict[str, Any]:
    return {
        "action": "synchronize",
        "number": 7,
        "pull_request": {
            "number": 7,
            "head": {
                "ref": "fix",
                "sha": "h" * 40,
                "repo": None if head_repo is None else {"full_name": head_repo},
            },
            "base": {"ref": "main", "sha": "b" * 40, "repo": {"full_name": "octo/agent"}},
            "labels": [{"name": "agent-eval:accept"}, {"name": "bug"}],
        },
        "repository": {"full_name": "octo/agent", "default_branch": "main"},
    }


def push(ref: str = "refs/heads/main") -> dict[str, Any]:
    return {
        "ref": ref,
        "before": "0" * 40,
        "after": "a" * 40,
        "repository": {"full_name": "octo/agent", "default_branch": "main"},
    }


def workflow_run(event: str = "pull_request", pulls: list | None = None) -> dict[str, Any]:
    return {
        "action": "completed",
        "workflow_run": {
            "id": 99,
            "conclusion": "failure",
            "event": event,
            "head_sha": "h" * 40,
            "head_branch": "fix",
            "pull_requests": [{"number": 7}] if pulls is None else pulls,
            "head_repository": {"full_name": "fork/agent"},
        },
        "repository": {"full_name": "octo/agent"},
    }


def merge_group() -> dict[str, Any]:
    return {
        "action": "checks_requested",
        "merge_group": {
            "head_sha": "m" * 40,
            "head_ref": "refs/heads/gh-readonly-queue/main/pr-7-abc",
            "base_sha": "b" * 40,
            "base_ref": "refs/heads/main",
        },
        "repository": {"full_name": "octo/agent"},
    }


def load(tmp_path: Path, name: str, payload: Any) -> Any:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return load_event(name, str(path))


def test_pull_request(tmp_path: Path) -> None:
    event = load(tmp_path, "pull_request", pull_request())
    assert event == PullRequestEvent(
        number=7,
        head_sha="h" * 40,
        head_ref="fix",
        base_sha="b" * 40,
        base_ref="main",
        head_repo="octo/agent",
        base_repo="octo/agent",
        labels=("agent-eval:accept", "bug"),
        default_branch="main",
    )
    assert not event.is_fork
    assert select_mode(AUTO, event) == Mode.PR


@pytest.mark.parametrize(("head_repo", "fork"), [("fork/agent", True), (None, True)])
def test_fork_pull_requests(tmp_path: Path, head_repo: str | None, fork: bool) -> None:
    assert load(tmp_path, "pull_request", pull_request(head_repo)).is_fork is fork


def test_merge_group(tmp_path: Path) -> None:
    event = load(tmp_path, "merge_group", merge_group())
    assert event == MergeGroupEvent(
        head_sha="m" * 40,
        head_ref="refs/heads/gh-readonly-queue/main/pr-7-abc",
        base_sha="b" * 40,
        base_ref="refs/heads/main",
    )
    assert select_mode(AUTO, event) == Mode.PR


@pytest.mark.parametrize(
    ("ref", "mode"),
    [("refs/heads/main", Mode.BASELINE), ("refs/heads/fix", Mode.RUN), ("refs/tags/v1", Mode.RUN)],
)
def test_push(tmp_path: Path, ref: str, mode: Mode) -> None:
    event = load(tmp_path, "push", push(ref))
    assert event == PushEvent(ref=ref, after="a" * 40, default_branch="main")
    assert select_mode(AUTO, event) == mode


def test_workflow_run_of_a_pr_run_comments(tmp_path: Path) -> None:
    event = load(tmp_path, "workflow_run", workflow_run())
    assert event == WorkflowRunEvent(
        id=99,
        conclusion="failure",
        event="pull_request",
        head_sha="h" * 40,
        head_branch="fix",
        pull_requests=(7,),
        head_repo="fork/agent",
        repo="octo/agent",
    )
    assert event.is_fork and event.of_pull_request
    assert select_mode(AUTO, event) == Mode.COMMENT


def test_workflow_run_of_a_fork_pr_has_no_pull_requests(tmp_path: Path) -> None:
    payload = workflow_run(pulls=[])
    payload["workflow_run"]["conclusion"] = None
    payload["workflow_run"]["head_repository"] = None
    event = load(tmp_path, "workflow_run", payload)
    assert (event.pull_requests, event.conclusion, event.is_fork) == ((), None, True)
    assert select_mode(AUTO, event) == Mode.COMMENT


@pytest.mark.parametrize("trigger", ["push", "schedule", "merge_group"])
def test_workflow_run_of_other_runs_is_ignored(tmp_path: Path, trigger: str) -> None:
    event = load(tmp_path, "workflow_run", workflow_run(trigger, pulls=[]))
    assert select_mode(AUTO, event) == Mode.IGNORE


@pytest.mark.parametrize(
    ("inputs", "number", "mode"),
    [
        ({}, None, Mode.RUN),
        ({"pr-number": ""}, None, Mode.RUN),
        ({"pr-number": "12"}, 12, Mode.PR),
        ({"pr_number": "#12"}, 12, Mode.PR),
        ({"pr": 12}, 12, Mode.PR),
    ],
)
def test_workflow_dispatch(tmp_path: Path, inputs: dict, number: int | None, mode: Mode) -> None:
    event = load(tmp_path, "workflow_dispatch", {"inputs": inputs, "ref": "refs/heads/main"})
    assert isinstance(event, WorkflowDispatchEvent)
    assert event.pr_number == number
    assert select_mode(AUTO, event) == mode


def test_workflow_dispatch_with_a_bad_pr_number(tmp_path: Path) -> None:
    with pytest.raises(InputError) as raised:
        load(tmp_path, "workflow_dispatch", {"inputs": {"pr-number": "seven"}})
    assert str(raised.value) == (
        f"{tmp_path / 'event.json'}: workflow_dispatch event: "
        "inputs.pr-number must be a PR number, got 'seven'"
    )


@pytest.mark.parametrize("mode", ["run", "compare", "comment", "merge"])
@pytest.mark.parametrize(
    "event",
    [
        PushEvent(ref="refs/heads/main", after="a", default_branch="main"),
        WorkflowDispatchEvent(inputs={}, pr_number=None),
        OtherEvent("schedule"),
    ],
)
def test_explicit_modes_pass_through(mode: str, event: Any) -> None:
    assert select_mode(parse_settings({"INPUT_MODE": mode}), event) == Mode(mode)


def test_auto_refuses_events_it_does_not_handle(tmp_path: Path) -> None:
    event = load_event("pull_request_target", None)  # not read: no file needed
    assert event == OtherEvent("pull_request_target")
    with pytest.raises(InputError, match="mode: auto does not handle the pull_request_target"):
        select_mode(AUTO, event)


def _without(payload: dict, dotted: str) -> dict:
    *parents, last = dotted.split(".")
    node = payload
    for key in parents:
        node = node[key]
    del node[last]
    return payload


@pytest.mark.parametrize(
    ("name", "payload", "field"),
    [
        ("pull_request", pull_request(), "pull_request.head.sha"),
        ("pull_request", pull_request(), "pull_request.number"),
        ("pull_request", pull_request(), "pull_request.base.ref"),
        ("pull_request", pull_request(), "repository.full_name"),
        ("merge_group", merge_group(), "merge_group.base_sha"),
        ("push", push(), "after"),
        ("push", push(), "repository.default_branch"),
        ("workflow_run", workflow_run(), "workflow_run.event"),
        ("workflow_run", workflow_run(), "workflow_run.head_sha"),
        ("workflow_run", workflow_run(), "workflow_run.pull_requests"),
    ],
)
def test_missing_fields_name_the_file_and_the_field(
    tmp_path: Path, name: str, payload: dict, field: str
) -> None:
    with pytest.raises(InputError) as raised:
        load(tmp_path, name, _without(payload, field))
    assert str(raised.value) == f"{tmp_path / 'event.json'}: {name} event: missing field {field}"


def test_a_field_of_the_wrong_type(tmp_path: Path) -> None:
    payload = pull_request()
    payload["pull_request"]["number"] = "7"
    with pytest.raises(
        InputError, match=r"pull_request event: wrong type of field pull_request\.number$"
    ):
        load(tmp_path, "pull_request", payload)


def test_unreadable_event_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"missing\.json: no such file"):
        load_event("push", str(tmp_path / "missing.json"))
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.json:1: invalid JSON \(column 2\)"):
        load_event("push", str(tmp_path / "bad.json"))
    with pytest.raises(InputError, match="GITHUB_EVENT_PATH is not set for the push event"):
        load_event("push", None)
    with pytest.raises(InputError, match="GITHUB_EVENT_NAME is not set"):
        load_event(None, None)
