"""Live progress on stderr: a terminal line, GitHub Actions records, or plain lines."""

from __future__ import annotations

import io
import time

from helpers.paths import WORKERS, python_command

from agent_eval_action.cli import main
from agent_eval_action.pipeline.progress import Progress, progress_mode
from agent_eval_action.results import Status
from agent_eval_action.traces import CaseRunTrace


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def trace(eval_id: str, error: str | None = None) -> CaseRunTrace:
    return CaseRunTrace(eval_set_id="s", eval_id=eval_id, run=1, error=error, duration_s=1.25)


VERDICTS = {"good": Status.PASSED, "bad": Status.FAILED}


def verdict(t: CaseRunTrace) -> Status | None:
    return VERDICTS.get(t.eval_id)


def test_mode_follows_where_the_output_goes():
    assert progress_mode(Terminal(), {}) == "tty"
    assert progress_mode(Terminal(), {"TERM": "dumb"}) == "lines"
    assert progress_mode(io.StringIO(), {}) == "lines"
    assert progress_mode(Terminal(), {"GITHUB_ACTIONS": "true"}) == "actions"
    assert progress_mode(io.StringIO(), {"GITHUB_ACTIONS": "true"}) == "actions"


def test_lines_mode_prints_one_line_per_case_run():
    out = io.StringIO()
    with Progress(3, verdict=verdict, stream=out, mode="lines") as progress:
        progress.on_trace(trace("good"))
        progress.on_trace(trace("bad"))
        progress.on_trace(trace("broken", error="timed out after 5 s at turn 1 of 1"))
    assert out.getvalue().splitlines() == [
        "  s / good run 1: ok, passed (1.2s)",
        "  s / bad run 1: ok, FAILED (1.2s)",
        "  s / broken run 1: ERROR: timed out after 5 s at turn 1 of 1 (1.2s)",
    ]


def test_terminal_line_counts_and_estimates_time_left():
    out, clock = Terminal(), Clock()
    with Progress(4, verdict=verdict, stream=out, clock=clock, interval=60) as progress:
        assert progress.mode == "tty"
        clock.now += 10
        progress.on_trace(trace("good"))
        progress.wait()
        assert out.getvalue().endswith(
            "\r\x1b[Kprogress: 1/4 case-runs, 1 passed, 0 failed, 0 errored, 0:10 elapsed, ETA 0:30"
        )
        clock.now += 10
        progress.on_trace(trace("broken", error="boom"))
        progress.wait()
        # An error is printed above the live line, which is redrawn below it.
        assert out.getvalue().endswith(
            "\r\x1b[K  s / broken run 1: ERROR: boom (1.2s)\n"
            "progress: 2/4 case-runs, 1 passed, 0 failed, 1 errored, 0:20 elapsed, ETA 0:20"
        )
    assert out.getvalue().endswith(
        "\r\x1b[Kprogress: 2/4 case-runs, 1 passed, 0 failed, 1 errored, 0:20 elapsed, ETA 0:20\n"
    )


def test_actions_mode_groups_periodic_records():
    out = io.StringIO()
    with Progress(2, verdict=verdict, stream=out, mode="actions", interval=0.05) as progress:
        progress.on_trace(trace("bad"))
        time.sleep(0.3)
        progress.on_trace(trace("broken", error="boom"))
    lines = out.getvalue().splitlines()
    assert lines[0] == "::group::agent-eval-action: running 2 case-runs"
    assert lines[-1] == "::endgroup::"
    assert lines[-2].startswith("progress: 2/2 case-runs, 0 passed, 1 failed, 1 errored, ")
    records = [
        line for line in lines if line.startswith("progress: 1/2 case-runs, 0 passed, 1 failed")
    ]
    assert len(records) >= 2  # a record every interval, not one per case-run
    assert "  s / broken run 1: ERROR: boom (1.2s)" in lines
    assert "  s / bad run 1: ok, FAILED (1.2s)" not in lines  # only errors get their own line


def test_cli_progress_in_github_actions(write, capsys, monkeypatch):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    write(
        "evals/w.evalset.json",
        {
            "eval_set_id": "w",
            "eval_cases": [
                {
                    "eval_id": "echo",
                    "conversation": [
                        {
                            "user_content": {"parts": [{"text": "hi"}]},
                            "final_response": {"parts": [{"text": "It is 18 degrees in Paris."}]},
                        }
                    ],
                }
            ],
        },
    )
    write("table.json", {"echo": {"text": "It is 18 degrees in Paris.", "tools": []}})
    command = python_command(WORKERS / "table_agent.py", "table.json")
    assert main(["run", "evals", "--command", command, "--out", "r.json"]) == 0
    err = capsys.readouterr().err.splitlines()
    start, end = (
        err.index("::group::agent-eval-action: running 1 case-run"),
        err.index("::endgroup::"),
    )
    assert err[end - 1].startswith("progress: 1/1 case-run, 1 passed, 0 failed, 0 errored")
    assert start == 0 and err[end + 2 :] == ["results: r.json"]
    assert err[end + 1].startswith("config: 1 eval file uses ADK's defaults")
