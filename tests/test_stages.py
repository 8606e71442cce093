"""The agent stage and the score stage as separate commands (`run-cases`, then `score`):
the same Results and verdict as `run`, and a traces file that is checked like any input
(it comes from the process that ran the PR's code)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.paths import WORKERS, python_command

from agent_eval_action.cli import main
from agent_eval_action.results import Results

TABLE_AGENT = WORKERS / "table_agent.py"


def _turn(user: str, answer: str, tool: str) -> dict:
    return {
        "user_content": {"role": "user", "parts": [{"text": user}]},
        "final_response": {"role": "model", "parts": [{"text": answer}]},
        "intermediate_data": {"tool_uses": [{"name": tool, "args": {}}]},
    }


EVALS = {
    "eval_set_id": "shop",
    "eval_cases": [
        {"eval_id": "order", "conversation": [_turn("Where is it?", "It ships today.", "track")]},
        {"eval_id": "refund", "conversation": [_turn("Refund me.", "Refund issued.", "refund")]},
    ],
}
# the agent answers "order" right and skips the refund tool: one trajectory failure
TABLE = {
    "order": {"text": "It ships today.", "tools": [["track", {}]]},
    "refund": {"text": "Refund issued.", "tools": []},
}


@pytest.fixture
def suite(write) -> list[str]:
    write("evals/shop.evalset.json", EVALS)
    write("table.json", TABLE)
    return ["--command", python_command(TABLE_AGENT, "table.json")]


def _results(path: str) -> dict:
    data = json.loads(Path(path).read_text())
    for volatile in ("created_at", "timing"):
        data.pop(volatile)
    for case in data["cases"]:
        case["duration_s"] = 0
        case["efficiency"].pop("invocation_duration_v1", None)  # wall-clock time
        for run in case["runs"]:
            run["duration_s"] = 0
            for invocation in run["invocations"]:
                invocation["duration_s"] = 0
    return data


def test_the_two_stages_give_what_run_gives(suite: list[str]) -> None:
    one = main(["run", "evals", *suite, "--num-runs", "2", "--out", "one.json"])
    first = main(["run-cases", "evals", *suite, "--num-runs", "2", "--traces", "t.jsonl"])
    two = main(["score", "evals", "--traces", "t.jsonl", "--num-runs", "2", "--out", "two.json"])
    assert first == 0
    assert one == two == 1  # the refund case fails its trajectory threshold
    assert _results("one.json") == _results("two.json")
    lines = [json.loads(line) for line in Path("t.jsonl").read_text().splitlines()]
    assert lines[0]["traces"] == "agent-eval-traces/1" and lines[0]["runner"] == "command"
    assert sum("trace" in line for line in lines) == 4 and lines[-1] == {
        "end": {"cancelled": False}
    }


def test_score_gates_on_a_baseline_as_run_does(suite: list[str]) -> None:
    main(["run", "evals", *suite, "--out", "base.json"])
    main(["run-cases", "evals", *suite, "--traces", "t.jsonl"])
    code = main(["score", "evals", "--traces", "t.jsonl", "--baseline", "base.json"])
    diff = json.loads(Path("diff.json").read_text())
    assert code == 0 and diff["verdict"]["passed"]  # unchanged; the failing case still fails


def _traces(*lines: dict | str) -> None:
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines)
    Path("t.jsonl").write_text(text + "\n")


HEADER = {"traces": "agent-eval-traces/1", "runner": "command", "target": "x", "started_at": "2026-12-01T00:00:00+00:00"}  # fmt: skip


def _trace(eval_id: str, run: int = 1, text: str = "It ships today.", tool: str = "track") -> dict:
    turn = {"final_response": {"role": "model", "parts": [{"text": text}]},
            "tool_uses": [{"name": tool, "args": {}}]}  # fmt: skip
    return {"trace": {"eval_set_id": "shop", "eval_id": eval_id, "run": run, "turns": [turn]}}


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([], "the traces file is empty"),
        (["{"], "t.jsonl:1: not JSON"),
        ([{"traces": "other/1"}], "t.jsonl:1: not a traces file"),
        ([HEADER, _trace("nobody")], "t.jsonl:2: a trace nobody asked for: shop / nobody run 1"),
        ([HEADER, _trace("order"), _trace("order")], "t.jsonl:3: a second trace"),
        ([HEADER, _trace("order", run=2)], "t.jsonl:2: a trace nobody asked for"),
        ([HEADER, {"trace": {"eval_id": 3}}], "t.jsonl:2: not a trace"),
        ([HEADER, {"end": {"cancelled": False}}, _trace("order")], "t.jsonl:3: expected one"),
        ([HEADER, {"end": {}}], "t.jsonl:2: the end line needs"),
        ([{**HEADER, "adk_version": "2.13\n::error::x"}], "t.jsonl:1: adk_version must be"),
        ([{**HEADER, "adk_version": 2}], "t.jsonl:1: adk_version must be"),
        (
            [{**HEADER, "started_at": "2026-12-01T00:00:00"}],
            "t.jsonl:1: started_at '2026-12-01T00:00:00' names no time zone",
        ),
    ],
)
def test_a_bad_traces_file_is_bad_input_naming_the_line(suite, capsys, lines, message) -> None:
    Path("t.jsonl").write_text("")
    if lines:
        _traces(*lines)
    assert main(["score", "evals", "--traces", "t.jsonl"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not Path("results.json").exists()


def test_results_say_the_google_adk_the_agent_stage_ran_with(suite) -> None:
    """A PR's requirements may give the agent stage another google-adk than the tool's: the
    Results record the agent stage's (from its traces header), else the scoring process's."""
    from agent_eval_action.traces import installed_adk

    main(["run-cases", "evals", *suite, "--traces", "t.jsonl"])
    header = json.loads(Path("t.jsonl").read_text().splitlines()[0])
    assert header["adk_version"] == installed_adk()
    done = [_trace("order"), _trace("refund"), {"end": {"cancelled": False}}]
    _traces({**HEADER, "adk_version": "1.36.0"}, *done)
    main(["score", "evals", "--traces", "t.jsonl"])
    assert Results.from_json(Path("results.json").read_text()).adk_version == "1.36.0"
    _traces(HEADER, *done)  # a header without it (an older agent stage): this process's
    main(["score", "evals", "--traces", "t.jsonl"])
    assert Results.from_json(Path("results.json").read_text()).adk_version == installed_adk()


def test_case_runs_without_a_trace_are_errored_never_passed(suite, capsys) -> None:
    # the agent stage died after one case-run: no end line
    _traces(HEADER, _trace("order"))
    assert main(["score", "evals", "--traces", "t.jsonl"]) == 3
    results = Results.from_json(Path("results.json").read_text())
    assert results.partial
    statuses = {c.eval_id: (c.status, c.note) for c in results.cases}
    assert statuses["order"][0] == "passed"
    assert statuses["refund"] == (
        "errored",
        "run 1: the agent stage ended before this run finished",
    )
    # an agent stage that ended but returned no trace for a case-run
    _traces(HEADER, _trace("order"), {"end": {"cancelled": False}})
    assert main(["score", "evals", "--traces", "t.jsonl"]) == 1
    results = Results.from_json(Path("results.json").read_text())
    refund = next(c for c in results.cases if c.eval_id == "refund")
    assert not results.partial and refund.status == "errored"
    assert "returned no trace" in (refund.note or "")


def test_an_answer_with_a_line_separator_in_it_stays_one_trace(write) -> None:
    """U+2028 and U+0085 are line breaks to str.splitlines() but not to JSON lines: a traces
    file holding them as they are (pydantic writes them unescaped) is read a trace a line."""
    from helpers.table_suite import TABLE_AGENT, order_case

    write("evals/shop.evalset.json", {"eval_set_id": "shop", "eval_cases": [order_case("a")]})
    write(
        "table.json", {"a": {"text": "Line one\u2028line two\u0085end.", "tools": [["track", {}]]}}
    )
    agent = ["--command", python_command(TABLE_AGENT, "table.json")]
    assert main(["run-cases", "evals", *agent, "--traces", "t.jsonl"]) == 0
    assert "\u2028" in Path("t.jsonl").read_text(encoding="utf-8")  # as written, unescaped
    assert main(["score", "evals", "--traces", "t.jsonl", "--out", "r.json"]) in (0, 1)
    (case,) = Results.from_json(Path("r.json").read_text()).cases
    (turn,) = case.runs[0].turns()
    assert turn.actual is not None and turn.actual.final_response is not None
    assert turn.actual.final_response.text() == "Line one\u2028line two\u0085end."
