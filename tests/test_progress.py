"""Live progress on stderr: a terminal line, GitHub Actions records, or plain lines."""

from __future__ import annotations

import asyncio
import io
import re
import time
from datetime import UTC, datetime

from fakes.gemini import FakeGemini
from fakes.gemini import verdict as judge_says
from helpers.paths import WORKERS, python_command

from agent_eval_action.cli import main
from agent_eval_action.evalset.models import Content, FunctionCall
from agent_eval_action.metrics.judge.pricing import load_prices
from agent_eval_action.metrics.judge.settings import JudgeSettings, RetryPolicy
from agent_eval_action.pipeline.judge import judge_plan
from agent_eval_action.pipeline.plan import plan
from agent_eval_action.pipeline.progress import Progress, progress_mode, quick_verdict
from agent_eval_action.pipeline.score import build_results, score_plan
from agent_eval_action.pipeline.suite import load_suite
from agent_eval_action.results import Results, RunConfig, Status
from agent_eval_action.traces import ActualTurn, CaseRunTrace


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
    # the preview's first line, then the group (pipeline/preview.py)
    assert (
        start == 1 and err[0].startswith("plan: 1 case ") and err[end + 2 :] == ["results: r.json"]
    )
    assert err[end + 1].startswith("config: 1 eval file uses ADK's defaults")


# ---- the progress line and the results table agree ---------------------------------------

JUDGED = {"threshold": 0.5, "judge_model_options": {"num_samples": 1}}


def expects(eval_id: str) -> dict:
    return {
        "eval_id": eval_id,
        "conversation": [
            {
                "user_content": {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
                "final_response": {"role": "model", "parts": [{"text": "It is sunny."}]},
                "intermediate_data": {"tool_uses": [{"name": "weather", "args": {}}]},
            }
        ],
    }


def answered(eval_set: str, eval_id: str, answer: str, tools: bool) -> CaseRunTrace:
    said = ActualTurn(
        final_response=Content.from_text(answer, "model"),
        tool_uses=[FunctionCall(name="weather", args={})] if tools else [],
    )
    return CaseRunTrace(eval_set_id=eval_set, eval_id=eval_id, run=1, turns=[said])


def scored_and_shown(write) -> tuple[Results, dict[str, str]]:
    """Two eval sets, one with an LLM-judged metric beside the trajectory, one with the
    trajectory alone; their case-runs' final Results (the judge finds "snowing" wrong) and
    what the progress line said of each case-run (lines mode: "passed", "FAILED", "ERROR"
    or nothing)."""
    cases = ["right", "wrong_answer", "wrong_tools", "broken"]
    for eval_set, criteria in (
        ("judged", {"tool_trajectory_avg_score": 1.0, "final_response_match_v2": JUDGED}),
        ("plain", {"tool_trajectory_avg_score": 1.0}),
    ):
        write(
            f"evals/{eval_set}/{eval_set}.evalset.json",
            {"eval_set_id": eval_set, "eval_cases": [expects(c) for c in cases]},
        )
        write(f"evals/{eval_set}/test_config.json", {"criteria": criteria})
    the_plan = plan(load_suite(["evals"]), 1)
    traces = []
    for eval_set in ("judged", "plain"):
        traces += [
            answered(eval_set, "right", "It is sunny.", tools=True),
            answered(eval_set, "wrong_answer", "It is snowing.", tools=True),
            answered(eval_set, "wrong_tools", "It is sunny.", tools=False),
            CaseRunTrace(eval_set_id=eval_set, eval_id="broken", run=1, error="timed out"),
        ]
    out = io.StringIO()
    provisional = quick_verdict(the_plan)
    with Progress(len(traces), verdict=provisional, stream=out, mode="lines") as progress:
        for trace in traces:
            progress.on_trace(trace)
    line = re.compile(r"  (\S+ / \S+) run 1: (?:ok(?:, (passed|FAILED))? \(|(ERROR): )")
    shown = {m[1]: m[2] or m[3] or "" for m in map(line.match, out.getvalue().splitlines()) if m}
    with FakeGemini() as fake:
        fake.respond("verdict", lambda ask: judge_says("invalid" if "snowing" in ask else "valid"))
        judge = JudgeSettings(
            api_key="FAKE_KEY",
            base_url=fake.url,
            prices=load_prices(),
            retry=RetryPolicy(attempts=1, initial_delay=0.001, max_delay=0.001, jitter=0.0),
        )
        judged = asyncio.run(judge_plan(the_plan, traces, judge, None))
    scored = score_plan(the_plan, traces, judged)
    return build_results(the_plan, scored, RunConfig(runner="command"), datetime.now(UTC)), shown


SAID = {Status.PASSED: "passed", Status.FAILED: "FAILED", Status.ERRORED: "ERROR"}


def test_the_progress_line_never_says_passed_of_a_run_the_results_table_fails(write):
    results, shown = scored_and_shown(write)
    final = {case.key.name: case.status for case in results.cases}
    # the trajectory passed and the judge failed it: the table says FAIL, and the line (which
    # once went by the trajectory alone, and said "passed") says nothing until the judge has
    wrong = next(c for c in results.cases if c.key.name == "judged / wrong_answer")
    assert wrong.metrics["tool_trajectory_avg_score"].status == Status.PASSED
    assert wrong.metrics["final_response_match_v2"].status == Status.FAILED
    assert wrong.status == Status.FAILED and shown[wrong.key.name] == ""
    for name, status in final.items():
        said = shown[name]
        assert said != "passed" or status == Status.PASSED, name
        assert said in ("", SAID[status]), name  # what it says is the table's, or nothing
    # where every metric that decides needs no judge, the line says what the table says
    plain = {name: SAID[s] for name, s in final.items() if name.startswith("plain / ")}
    assert {name: shown[name] for name in plain} == plain
    assert set(plain.values()) == {"passed", "FAILED", "ERROR"}
