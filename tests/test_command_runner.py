"""The command runner against real worker processes (tests/workers/scripted_worker.py)."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
import time
from pathlib import Path

import pytest

from agent_eval_action.evalset.models import Content, SessionInput
from agent_eval_action.runners.command import RunnerStartError, parse_command, run_command_suite
from agent_eval_action.traces import CaseRunRequest, CaseRunTrace

WORKER = Path(__file__).parent / "workers" / "scripted_worker.py"
COMMAND = shlex.join([sys.executable, str(WORKER)])


def case(eval_id: str, *texts: str, run: int = 1, session_input: dict | None = None):
    return CaseRunRequest(
        eval_set_id="set",
        eval_id=eval_id,
        run=run,
        session_input=SessionInput.model_validate(session_input) if session_input else None,
        user_contents=[Content.from_text(text, role="user") for text in texts],
    )


def run(requests: list[CaseRunRequest], **options) -> list[CaseRunTrace]:
    return asyncio.run(run_command_suite(requests, COMMAND, **options))


def answers(trace: CaseRunTrace) -> list[str]:
    return [turn.final_response.text() for turn in trace.turns if turn.final_response]


def worker_pid(trace: CaseRunTrace) -> int:
    return trace.turns[0].tool_responses[0].response["pid"]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a killed orphan may linger as a zombie if nothing reaps it (containers)
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state not in {"Z", "X"}


@pytest.fixture
def received(tmp_path, monkeypatch):
    """What each worker process received: {pid: [message, ...]}, read on call."""
    log_dir = tmp_path / "worker-logs"
    log_dir.mkdir()
    monkeypatch.setenv("WORKER_LOG_DIR", str(log_dir))

    def read() -> dict[int, list[dict]]:
        return {
            int(path.stem): [json.loads(line) for line in path.read_text().splitlines()]
            for path in log_dir.glob("*.jsonl")
        }

    return read


def test_turns_go_in_order_to_one_worker_then_the_session_ends(received):
    first = case(
        "greeting",
        "hello",
        "how are you",
        "bye",
        session_input={"app_name": "app", "user_id": "u-1", "state": {"tier": "gold", "x": None}},
    )
    second = case("again", "hello again", run=2)

    traces = run([first, second], concurrency=1)

    assert [t.error for t in traces] == [None, None]
    assert answers(traces[0]) == ["hello", "how are you", "bye"]
    assert answers(traces[1]) == ["hello again"]
    # The worker remembered the session's earlier turns, and forgot them at "end".
    assert [turn.tool_uses[0].args for turn in traces[0].turns] == [
        {"turn": 0, "seen": ["hello"]},
        {"turn": 1, "seen": ["hello", "how are you"]},
        {"turn": 2, "seen": ["hello", "how are you", "bye"]},
    ]
    assert traces[1].turns[0].tool_uses[0].args == {"turn": 0, "seen": ["hello again"]}
    turn = traces[0].turns[0]
    assert turn.usage is not None and turn.usage.prompt_tokens == len("hello")
    assert turn.intermediate_responses == []
    assert all(t.duration_s > 0 for t in traces[0].turns)
    assert traces[0].duration_s >= sum(t.duration_s for t in traces[0].turns)
    assert (traces[0].eval_set_id, traces[0].eval_id, traces[0].run) == ("set", "greeting", 1)

    [(pid, messages)] = received().items()
    assert worker_pid(traces[0]) == worker_pid(traces[1]) == pid
    assert [(m.get("type"), m["session_id"], m.get("turn")) for m in messages] == [
        (None, "set.greeting.run1", 0),
        (None, "set.greeting.run1", 1),
        (None, "set.greeting.run1", 2),
        ("end", "set.greeting.run1", None),
        (None, "set.again.run2", 0),
        ("end", "set.again.run2", None),
    ]
    assert messages[0] == {
        "protocol": 1,
        "id": messages[0]["id"],
        "session_id": "set.greeting.run1",
        "eval_set_id": "set",
        "eval_id": "greeting",
        "run": 1,
        "turn": 0,
        "session_input": {
            "app_name": "app",
            "user_id": "u-1",
            "state": {"tier": "gold", "x": None},
        },
        "user_content": {"role": "user", "parts": [{"text": "hello"}]},
    }
    assert messages[3] == {"protocol": 1, "type": "end", "session_id": "set.greeting.run1"}
    assert messages[4]["session_input"] is None
    ids = [m["id"] for m in messages if "id" in m]
    assert len(set(ids)) == len(ids)


def test_pool_bounds_workers_and_keeps_each_case_run_on_one_worker(received):
    requests = [case(f"c{n}", f"c{n} first", f"c{n} second", f"c{n} third") for n in range(7)]
    finished: list[str] = []

    traces = run(requests, concurrency=3, on_trace=lambda t: finished.append(t.eval_id))

    assert [t.eval_id for t in traces] == [f"c{n}" for n in range(7)]
    assert all(t.error is None for t in traces)
    assert answers(traces[4]) == ["c4 first", "c4 second", "c4 third"]
    assert sorted(finished) == sorted(t.eval_id for t in traces)

    by_pid = received()
    assert len(by_pid) == 3
    sessions_seen: list[str] = []
    for messages in by_pid.values():
        # Each worker gets whole case-runs back to back: turns 0, 1, 2, then "end".
        assert len(messages) % 4 == 0
        for start in range(0, len(messages), 4):
            block = messages[start : start + 4]
            session = block[0]["session_id"]
            assert [m["session_id"] for m in block] == [session] * 4
            assert [m.get("turn", m.get("type")) for m in block] == [0, 1, 2, "end"]
            sessions_seen.append(session)
    assert sorted(sessions_seen) == sorted(r.session_id for r in requests)
    assert not any(alive(pid) for pid in by_pid)  # closed at the end


def test_crash_errors_only_its_case_run_and_the_worker_is_restarted():
    traces = run([case("dies", "one", "crash", "never"), case("after", "fine")], concurrency=1)

    dies, after = traces
    assert dies.error == (
        "worker exited with code 3 (last stderr line: boom: crashing on purpose) at turn 2 of 3"
    )
    assert answers(dies) == ["one"]
    assert after.error is None and answers(after) == ["fine"]
    assert worker_pid(after) != worker_pid(dies)


@pytest.mark.parametrize(
    ("word", "error"),
    [
        ("garbage", "answered a line that is not JSON: 'this is not json' (write logs to stderr)"),
        ("list", "answered list JSON, not an object"),
        ("wrong-id", "answered id r-999999, expected r-2"),
        ("error", "agent error: the model refused to answer"),
        ("invalid", "invalid answer: tool_uses[0].name: Field required"),
        ("no-final", 'answer has no "final_response" (it may be null, not missing)'),
    ],
)
def test_a_bad_answer_errors_the_case_run_with_a_clear_reason(word, error):
    traces = run([case("bad", "one", word, "never"), case("after", "fine")], concurrency=1)

    bad, after = traces
    assert bad.error == f"{error} at turn 2 of 3"
    assert answers(bad) == ["one"]
    assert after.error is None and answers(after) == ["fine"]
    assert worker_pid(after) != worker_pid(bad)


def test_a_hanging_case_run_times_out_keeping_its_finished_turns():
    started = time.monotonic()
    traces = run([case("slow", "one", "hang"), case("after", "fine")], concurrency=1, timeout=1)

    slow, after = traces
    assert slow.error == "timed out after 1 s at turn 2 of 2"
    assert answers(slow) == ["one"]
    assert 1.0 <= slow.duration_s < 2.0
    assert after.error is None and answers(after) == ["fine"]
    assert time.monotonic() - started < 10


def test_a_command_that_cannot_start_raises_runner_start_error():
    with pytest.raises(RunnerStartError, match="No such file or directory: no-such-agent-xyz"):
        asyncio.run(run_command_suite([case("c", "hi")], "no-such-agent-xyz --serve"))
    with pytest.raises(RunnerStartError, match="empty"):
        asyncio.run(run_command_suite([case("c", "hi")], "   "))


def test_parse_command_splits_like_a_shell():
    assert parse_command("python 'my agent.py' --name \"a b\"") == [
        "python",
        "my agent.py",
        "--name",
        "a b",
    ]
    with pytest.raises(ValueError, match="empty"):
        parse_command("")
    with pytest.raises(ValueError, match="cannot parse"):
        parse_command("python 'unclosed")


def test_no_requests_start_no_worker():
    assert asyncio.run(run_command_suite([], "no-such-agent-xyz")) == []


def test_workers_do_not_see_the_github_token(monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secret")
    monkeypatch.setenv("INPUT_GITHUB-TOKEN", "ghs_secret")
    monkeypatch.setenv("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "secret")
    monkeypatch.setenv("GOOGLE_API_KEY", "model-key")

    [trace] = run(
        [
            case(
                "env",
                "env GITHUB_TOKEN INPUT_GITHUB-TOKEN ACTIONS_ID_TOKEN_REQUEST_TOKEN GOOGLE_API_KEY",
            )
        ]
    )

    assert json.loads(answers(trace)[0]) == {
        "GITHUB_TOKEN": None,
        "INPUT_GITHUB-TOKEN": None,
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": None,
        "GOOGLE_API_KEY": "model-key",
    }


def test_worker_stderr_is_forwarded_and_kept_out_of_the_protocol(capfd):
    [trace] = run([case("noisy", "noisy")])

    assert trace.error is None and answers(trace) == ["quiet on stdout"]
    err = capfd.readouterr().err
    assert '] {"id": "r-1", "final_response": null}' in err
    assert "] a partial stderr line without newline" in err
    assert "[worker 1 pid " in err


def test_a_response_line_over_one_mebibyte_is_read_whole():
    size = 3 * 1024 * 1024
    [trace] = run([case("big", f"big {size}")])

    assert trace.error is None
    assert answers(trace) == ["x" * size]


def test_cancellation_kills_every_worker_and_what_they_started(received):
    def child_pids() -> list[int]:
        return [m["child_pid"] for ms in received().values() for m in ms if "child_pid" in m]

    async def cancel_mid_run() -> None:
        requests = [case(f"c{n}", "spawn-hang") for n in range(3)]
        suite = asyncio.create_task(run_command_suite(requests, COMMAND, concurrency=2))
        deadline = time.monotonic() + 10
        while len(child_pids()) < 2:
            assert time.monotonic() < deadline, "workers did not start"
            await asyncio.sleep(0.05)
        suite.cancel()
        with pytest.raises(asyncio.CancelledError):
            await suite

    asyncio.run(cancel_mid_run())

    workers, children = list(received()), child_pids()
    assert len(workers) == len(children) == 2
    assert not any(alive(pid) for pid in workers)  # reaped before CancelledError came out
    # A SIGKILLed grandchild may take a moment more to disappear.
    deadline = time.monotonic() + 2
    while any(alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(alive(pid) for pid in children)
