"""Failures say why, everywhere (#35): on the console each regressed or failing case shows
its first divergent turn, the differing argument of a tool call marked, in bounded width
and count; a pytest failure is that message, with no frame of this library's; a tool that
raises in the ADK runner prints one line, its traceback kept in the trace."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from helpers.adk_agents import write_probe_agent
from helpers.factory import case, results

from agent_eval_action.cli import main
from agent_eval_action.compare import compare
from agent_eval_action.evalset.models import Content
from agent_eval_action.report import console, diff_console, why
from agent_eval_action.results import FunctionCall, Results, RunRecord
from agent_eval_action.runners import log_capture
from agent_eval_action.runners.adk import run_adk_suite
from agent_eval_action.traces import CaseRunRequest

T = "tool_trajectory_avg_score"
ASKED = {"amount": 40, "order_id": "A-1"}
PASSED_ON_MAIN = [FunctionCall(name="refund", args=ASKED)]


def calling(result, *calls: FunctionCall, expected: list[FunctionCall] | None = None):
    """The case with every run's one turn making these tool calls (and expecting those)."""
    for run in result.runs:
        [turn] = run.turns()
        turn.actual.tool_uses = list(calls)
        turn.expected.tool_uses = list(expected if expected is not None else PASSED_ON_MAIN)
        run.fingerprint = None
    return result


def why_section(text: str) -> list[str]:
    return text[text.index(why.TITLE) :].splitlines()


# ---- the console ----------------------------------------------------------------------------


def test_compare_shows_a_regressed_case_s_expected_and_actual_call_with_the_argument_marked(
    tmp_path, capsys
):
    before = calling(case("refund", {T: [1.0]}, eval_set_id="shop"), *PASSED_ON_MAIN)
    wrong = FunctionCall(name="refund", args={**ASKED, "amount": 400})
    after = calling(case("refund", {T: [0.0]}, ["wrong"], eval_set_id="shop"), wrong)
    base, cur = tmp_path / "base.json", tmp_path / "cur.json"
    results(before, sha="1" * 40).write(base)
    results(after, sha="2" * 40).write(cur)

    code = main(["compare", "--baseline", str(base), "--current", str(cur), "--format", "table"])

    assert code == 1
    lines = why_section(capsys.readouterr().out)
    assert lines[2:] == [
        "1. shop / refund · new failure",
        "    at evals/shop.evalset.json:1",
        "    tool_trajectory_avg_score: 1.000 -> 0.000",
        "    @@ turn 1: baseline run 1 → current run 1 @@",
        "      user: question",
        "      expected tool calls:",
        '        refund({"amount": 40, "order_id": "A-1"})',
        "    @@ tool calls @@",
        '    - refund({"amount": 40, "order_id": "A-1"})',
        "              ^^^^^^^^^^^^",
        '    + refund({"amount": 400, "order_id": "A-1"})',
        "              ^^^^^^^^^^^^^",
        "    @@ answer @@",
        "    - answer same",
        "    + answer wrong",
        "      expected answer:",
        "        answer",
    ]


def test_run_s_table_shows_why_each_failing_case_fails_against_its_eval_file():
    added = FunctionCall(name="refund", args={**ASKED, "note": "rush"})
    failing = calling(case("refund", {T: [0.0]}, ["x"], eval_set_id="shop"), added)
    text = console.table(results(failing, case("fine", {T: [1.0]}, eval_set_id="shop")))
    lines = why_section(text)
    assert "    @@ turn 1: expected → current run 1 @@" in lines
    call = lines.index('    + refund({"amount": 40, "note": "rush", "order_id": "A-1"})')
    assert lines[call - 1] == '    - refund({"amount": 40, "order_id": "A-1"})'  # nothing marked
    at = lines[call].index('"note"')
    assert lines[call + 1] == " " * at + "^" * len('"note": "rush"')  # the added argument
    assert re.search(r"^shop / refund .* 0\.000 +1\.000  FAIL$", text, re.M)  # 3 decimals
    assert text.splitlines()[-1] == "2 cases: 1 passed, 1 failed"  # the summary stays last
    passing = console.table(results(case("fine", {T: [1.0]})))
    assert why.TITLE not in passing


def test_the_section_is_bounded_in_width_and_in_cases():
    long_value = "a note that the agent wrote at length, " * 6
    cases = []
    for i in range(why.CASES + 3):
        args = {"amount": 400 + i, "note": long_value, "order_id": "A-1", "zone": long_value}
        expected = {**args, "amount": 40}
        cases.append(
            calling(
                case(f"case_{i:02d}", {T: [0.0]}, ["x"], eval_set_id="shop_" + "s" * 80),
                FunctionCall(name="refund", args=args),
                expected=[FunctionCall(name="refund", args=expected)],
            )
        )
    cur = results(*cases)
    diff = compare(cur, None)
    lines = why_section(diff_console.table(diff, cur))
    assert max(len(line) for line in lines) <= why.WIDTH
    assert sum(bool(re.match(r"\d+\. shop_", line)) for line in lines) == why.CASES
    assert lines[-1] == "… 3 more cases, the drill-down report (--html FILE) shows every case"
    # the argument that differs stays in sight, the others give way to an ellipsis
    plus = next(line for line in lines if line.startswith("    + refund("))
    assert plus == '    + refund({"amount": 400, …})'
    assert lines[lines.index(plus) + 1] == " " * plus.index('"') + "^" * len('"amount": 400')
    named = why_section(diff_console.table(diff, cur, html="out/report.html"))
    assert named[-1] == "… 3 more cases, see out/report.html"


# ---- pytest ---------------------------------------------------------------------------------

SHOP_AGENT = '''
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.genai import types


def refund(order_id: str, amount: int) -> dict:
    """Refund part of an order."""
    return {"refunded": amount, "order_id": order_id}


def _say(part):
    return LlmResponse(content=types.Content(role="model", parts=[part]))


class ScriptedLlm(BaseLlm):
    """Refunds ten times what was asked, then says so."""

    model: str = "scripted"

    async def generate_content_async(self, llm_request, stream=False):
        last = llm_request.contents[-1]
        if any(p.function_response for p in last.parts or []):
            yield _say(types.Part(text="I refunded $400.00 for order A-1."))
            return
        call = types.FunctionCall(name="refund", args={"order_id": "A-1", "amount": 400})
        yield _say(types.Part(function_call=call))


root_agent = LlmAgent(name="shop", model=ScriptedLlm(), instruction="Refunds.", tools=[refund])
'''

SHOP_TESTS = """
import pytest
from agent_eval_action.testing import AgentEvaluator

@pytest.fixture
def anyio_backend():
    return "asyncio"

def test_refunds_sync():
    AgentEvaluator.evaluate_sync("shop_agent", "evals", num_runs=1)

@pytest.mark.anyio
async def test_refunds_async():
    await AgentEvaluator.evaluate("shop_agent", "evals", num_runs=1)

def test_a_missing_folder():
    AgentEvaluator.evaluate_sync("shop_agent", "no_such_evals", num_runs=1)
"""


def _shop(tmp_path: Path) -> None:
    """A user's project: the agent package, its eval set, a test file."""
    (tmp_path / "shop_agent").mkdir()
    (tmp_path / "shop_agent" / "__init__.py").write_text("from . import agent\n")
    (tmp_path / "shop_agent" / "agent.py").write_text(SHOP_AGENT)
    turn = {
        "user_content": {"role": "user", "parts": [{"text": "Refund $40 of order A-1."}]},
        "final_response": {"role": "model", "parts": [{"text": "I refunded $40.00."}]},
        "intermediate_data": {"tool_uses": [{"name": "refund", "args": ASKED}]},
    }
    evals = {"eval_set_id": "shop", "eval_cases": [{"eval_id": "partial", "conversation": [turn]}]}
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "shop.evalset.json").write_text(json.dumps(evals, indent=1))
    (tmp_path / "test_shop.py").write_text(SHOP_TESTS)


@pytest.mark.adk
def test_a_pytest_failure_is_the_message_with_no_frame_of_the_library(tmp_path):
    _shop(tmp_path)
    options = ["-p", "no:cacheprovider", "-p", "no:xdist", "-c", os.devnull]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *options, "--rootdir", str(tmp_path), "test_shop.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = done.stdout
    assert done.returncode == 1 and "3 failed" in out, out + done.stderr
    parts = re.split(r"^_{3,} (\w+) _{3,}$", out, flags=re.M)
    failures = dict(zip(parts[1::2], parts[2::2], strict=True))
    for test in ("test_refunds_sync", "test_refunds_async"):
        failure = failures[test]
        assert "EvaluationFailed: the agent shop_agent did not pass its evals (evals):" in failure
        said = [line.removeprefix("E       ") for line in failure.splitlines()]
        minus = said.index('    - refund({"amount": 40, "order_id": "A-1"})')
        assert said[minus + 2] == '    + refund({"amount": 400, "order_id": "A-1"})'
        at = said[minus].index('"amount"')
        assert said[minus + 1] == " " * at + "^" * len('"amount": 40')
        assert said[minus + 3] == " " * at + "^" * len('"amount": 400')
        # the only frame shown is the test's: no source of ours, no asyncio's
        assert _frames(failure) == ["test_shop.py"], failure
        assert "__tracebackhide__" not in failure and "def evaluate" not in failure
    bad = failures["test_a_missing_folder"]
    assert "InputError" in bad and _frames(bad) == ["test_shop.py"], bad
    assert "agent_eval_action/" not in out


def _frames(failure: str) -> list[str]:
    """The files of the traceback entries pytest shows (`file.py:LINE: Error`)."""
    return re.findall(r"^(\S+\.py):\d+: \w+$", failure, re.M)


# ---- a tool that raises ------------------------------------------------------------------------


def request(eval_id: str, text: str) -> CaseRunRequest:
    return CaseRunRequest(
        eval_set_id="probe",
        eval_id=eval_id,
        run=1,
        user_contents=[Content.from_text(text, role="user")],
    )


@pytest.mark.adk
def test_a_raising_tool_prints_one_line_and_its_traceback_is_kept(tmp_path, capsys):
    agent = write_probe_agent(tmp_path)
    crash, boom, fine = asyncio.run(
        run_adk_suite(
            [request("crash", "tool crash"), request("boom", "boom"), request("fine", "hello")],
            agent,
            concurrency=3,
        )
    )
    err = capsys.readouterr().err
    source = (agent / "agent.py").read_text().splitlines()

    def line_of(text: str) -> int:
        return next(n for n, line in enumerate(source, 1) if text in line)

    assert "Traceback" not in err
    assert sorted(err.splitlines()) == [
        "  probe / boom run 1: ADK logged RuntimeError: the model exploded "
        f"({agent.name}/agent.py:{line_of('the model exploded')})",
        "  probe / crash run 1: tool 'crash' raised ValueError: the crash tool failed: asked "
        f"to ({agent.name}/agent.py:{line_of('the crash tool failed')})",
    ]
    # each case-run's log holds its own error, in full
    assert crash.error.startswith("ValueError: the crash tool failed: asked to")
    assert "Traceback (most recent call last)" in crash.log
    assert 'raise ValueError("the crash tool failed: " + reason)' in crash.log
    assert "the model exploded" not in crash.log
    assert "RuntimeError: the model exploded" in boom.log and "crash tool" not in boom.log
    assert fine.log is None or "Traceback" not in fine.log
    assert len(crash.log) <= log_capture.LOG_CHARS
    # and the loggers are as they were
    assert logging.getLogger("google_adk").propagate is True
    assert not any(
        isinstance(h, logging.Handler) and type(h).__name__ == "_Router"
        for h in logging.getLogger("google_adk").handlers
    )


def test_a_record_outside_every_case_run_goes_where_it_went_before(caplog):
    with log_capture.routed():
        logging.getLogger("google_adk.google.adk.agents").warning("loading the agent")
        with log_capture.case("s / c run 1", str) as log:
            logging.getLogger("google_adk.google.adk.runners").warning("inside")
    assert [r.getMessage() for r in caplog.records] == ["loading the agent"]
    assert log.text() == "WARNING google_adk.google.adk.runners: inside"


def test_a_long_log_keeps_its_head_and_tail():
    with log_capture.routed(), log_capture.case("s / c run 1", str) as log:
        adk = logging.getLogger("google_adk.google.adk.flows")
        for i in range(2_000):
            adk.warning("line %d of a chatty agent", i)
    text = log.text()
    assert text is not None and len(text) <= log_capture.LOG_CHARS
    assert text.startswith("WARNING google_adk.google.adk.flows: line 0 of")
    assert text.endswith("line 1999 of a chatty agent") and "characters left out" in text


# ---- the Results ----------------------------------------------------------------------------


def test_a_run_s_log_is_an_optional_field_of_the_results():
    run = RunRecord(run=1, invocations=[], log="ERROR google_adk: boom\nTraceback …")
    assert msgspec.json.decode(msgspec.json.encode(run), type=RunRecord).log == run.log
    older = json.loads(results(case("c", {T: [1.0]})).dump_json())
    for record in older["cases"][0]["runs"]:
        record.pop("log")
    [old] = Results.from_json(json.dumps(older)).cases
    assert old.runs[0].log is None


def test_the_why_block_is_the_comment_s_block_with_marks():
    # one differ: without marks, the block is the PR comment's, byte for byte
    from agent_eval_action.report.divergence import divergence_text

    before = calling(case("refund", {T: [1.0]}), *PASSED_ON_MAIN)
    after = calling(
        case("refund", {T: [0.0]}, ["x"]),
        FunctionCall(name="refund", args={**ASKED, "amount": 4}),
    )
    diff = compare(results(after), results(before))
    [regressed] = diff.cases
    plain = divergence_text(regressed.divergence, 300)
    marked = divergence_text(regressed.divergence, 300, marks=True)
    assert [line for line in marked.splitlines() if set(line.strip()) != {"^"}] == [
        line for line in plain.splitlines()
    ]
    assert marked.count("^") == len('"amount": 40') + len('"amount": 4')
