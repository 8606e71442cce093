"""Where real-world ADK files met a difference (docs/adk-differences.md): a legacy row with
`"reference": null`, an initial.session.json beside a legacy file and --initial-session,
`"criteria": {}`, and the model's thought parts in response_match_score (--strip-thoughts)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agent_eval_action.cli import main
from agent_eval_action.compare import compare
from agent_eval_action.errors import InputError
from agent_eval_action.pipeline.suite import load_suite
from agent_eval_action.report import markdown
from agent_eval_action.results import Results

ROWS = [
    {"query": "Hi who are you?", "expected_tool_use": [], "reference": None},
    {"query": "Roll a die", "expected_tool_use": [], "reference": "I rolled a 4."},
]
SESSION = {"app_name": "hello_world", "user_id": "u-1", "state": {"tier": "gold"}}

# A command agent that thinks aloud: a thought part, then its answer.
THINKER = """
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    if request.get("type") == "end":
        continue
    parts = [{"text": "Let me think: the user wants a refund for order 7.", "thought": True},
             {"text": "Your refund for order 7 is on its way."}]
    print(json.dumps({"id": request["id"], "final_response": {"role": "model", "parts": parts},
                      "tool_uses": []}), flush=True)
"""
ANSWER_CASE = {
    "eval_set_id": "thoughts",
    "eval_cases": [
        {
            "eval_id": "refund",
            "conversation": [
                {
                    "user_content": {"role": "user", "parts": [{"text": "Refund order 7"}]},
                    "final_response": {
                        "role": "model",
                        "parts": [{"text": "Your refund for order 7 is on its way."}],
                    },
                }
            ],
        }
    ],
}


def command(write, script: str) -> str:
    path = write("agent.py", script)
    return f"{sys.executable} {path}"


# --- "reference": null ------------------------------------------------------------------


def test_a_null_reference_is_read_as_adk_reads_it_with_a_warning(write):
    write("evals/roll_die.test.json", ROWS)
    suite = load_suite(["evals"])
    [case] = suite.eval_sets[0].cases
    first = case.conversation[0].final_response
    assert first is not None and first.text() == "" and len(first.parts) == 1
    assert case.conversation[1].final_response.text() == "I rolled a 4."
    [warning] = [w for w in suite.warnings if "reference" in w]
    assert warning.startswith('evals/roll_die.test.json:5: warning: "reference": null')


@pytest.mark.adk
def test_a_null_reference_gives_adks_expected_text():
    from google.adk.evaluation.final_response_match_v1 import _get_text_from_content
    from google.adk.evaluation.local_eval_sets_manager import convert_eval_set_to_pydantic_schema

    theirs = convert_eval_set_to_pydantic_schema(
        "s", [{"name": "roll_die", "data": ROWS, "initial_session": {}}]
    )
    expected = theirs.eval_cases[0].conversation[0].final_response
    assert _get_text_from_content(expected) == ""


def test_a_null_reference_scores_that_turn_0_and_other_types_are_refused(write, capsys):
    write("evals/roll_die.test.json", ROWS)
    write("evals/test_config.json", {"criteria": {"response_match_score": 0.5}})
    agent = command(write, THINKER.replace("Let me think", "I rolled a 4. Let me"))
    assert main(["run", "evals", "--command", agent, "--out", "r.json"]) == 1
    results = Results.from_json(Path("r.json").read_text())
    turns = results.cases[0].metrics["response_match_score"].invocations[0]
    assert turns[0] == 0.0 and turns[1] > 0.0
    assert any('"reference": null' in w for w in results.warnings)
    capsys.readouterr()
    write("evals/roll_die.test.json", [{"query": "q", "reference": 42}])
    assert main(["run", "evals", "--command", agent]) == 2
    err = capsys.readouterr().err
    assert err == 'error: evals/roll_die.test.json:4: "reference" must be a string (or null)\n'


# --- initial.session.json and --initial-session ------------------------------------------


def test_the_session_file_beside_a_legacy_file_is_used_and_said(write, capsys):
    write("evals/roll_die.test.json", ROWS)
    write("evals/initial.session.json", SESSION)
    suite = load_suite(["evals"])
    session = suite.eval_sets[0].cases[0].session_input
    assert session is not None and session.state == {"tier": "gold"}
    [warning] = [w for w in suite.warnings if "initial.session.json" in w]
    assert warning.startswith("evals/roll_die.test.json:1: warning: its session")
    assert "--initial-session FILE" in warning
    agent = command(write, THINKER)
    main(["run", "evals", "--command", agent, "--out", "r.json"])
    assert "evals/initial.session.json beside it" in capsys.readouterr().err  # the run's output
    results = Results.from_json(Path("r.json").read_text())
    assert any("initial.session.json beside it" in w for w in results.warnings)


def test_initial_session_names_the_session_explicitly_as_adk_does(write):
    write("evals/roll_die.test.json", ROWS)
    write("evals/initial.session.json", SESSION)
    write("other.json", {**SESSION, "state": {"tier": "silver"}})
    suite = load_suite(["evals"], initial_session="other.json")
    assert suite.eval_sets[0].cases[0].session_input.state == {"tier": "silver"}
    assert not any("initial.session.json" in w for w in suite.warnings)


@pytest.mark.parametrize(
    ("files", "session", "message"),
    [
        (
            {"evals/a.evalset.json": ANSWER_CASE},
            SESSION,
            "error: evals/a.evalset.json:1: --initial-session s.json applies to legacy "
            ".test.json row files only; an EvalSet gives each case its session_input",
        ),
        (
            {"evals/a.test.json": [{"name": "c", "data": ROWS}]},
            SESSION,
            "error: evals/a.test.json:1: --initial-session s.json applies to legacy .test.json "
            "row files only; its cases give their own initial_session",
        ),
        (
            {"evals/a.test.json": ROWS},
            {"app_name": "x", "user_id": "u", "state": [1]},
            'error: s.json:1: "state" must be an object',
        ),
        ({"evals/a.test.json": ROWS}, None, "error: s.json: --initial-session: no such file"),
    ],
)
def test_a_bad_initial_session_is_one_line_exit_2(write, capsys, files, session, message):
    for name, content in files.items():
        write(name, content)
    if session is not None:
        write("s.json", json.dumps(session))
    assert main(["run", "evals", "--command", "true", "--initial-session", "s.json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


def test_empty_criteria_are_still_refused(write, capsys):
    write("evals/a.evalset.json", ANSWER_CASE)
    write("evals/test_config.json", {"criteria": {}})
    assert main(["run", "evals", "--command", "true"]) == 2
    assert 'no "criteria": nothing would be evaluated' in capsys.readouterr().err


# --- thought parts -----------------------------------------------------------------------


def test_thoughts_count_as_adk_counts_them_unless_stripped(write, capsys):
    write("evals/a.evalset.json", ANSWER_CASE)
    write("evals/test_config.json", {"criteria": {"response_match_score": 0.9}})
    agent = ["--command", command(write, THINKER)]
    assert main(["run", "evals", *agent, "--out", "kept.json"]) == 1
    assert main(["run", "evals", *agent, "--strip-thoughts", "--out", "stripped.json"]) == 0
    kept = Results.from_json(Path("kept.json").read_text())
    stripped = Results.from_json(Path("stripped.json").read_text())
    assert kept.run_config.response_thoughts == "included"
    assert stripped.run_config.response_thoughts == "stripped"
    assert kept.cases[0].metrics["response_match_score"].score < 0.9
    assert stripped.cases[0].metrics["response_match_score"].score == 1.0
    # the answer is recorded as the agent gave it, thought and all
    actual = stripped.cases[0].runs[0].turns()[0].actual
    assert actual is not None and actual.final_response.parts[0].thought is True
    capsys.readouterr()
    text = markdown.comment(compare(stripped, kept), stripped, markdown.Options())
    assert "without the model's thought parts (`--strip-thoughts`)" in text
    assert "thought parts" not in markdown.comment(compare(kept, None), kept, markdown.Options())


@pytest.mark.adk
def test_adk_includes_thought_parts_in_the_response_text():
    from google.adk.evaluation.final_response_match_v1 import _get_text_from_content
    from google.genai import types

    from agent_eval_action.evalset.models import Content

    parts = [{"text": "thinking", "thought": True}, {"text": "answer"}]
    theirs = _get_text_from_content(types.Content(role="model", parts=parts))
    assert theirs == Content.model_validate({"parts": parts}).text() == "thinking\nanswer"


def test_adks_own_legacy_fixtures_take_an_explicit_initial_session(adk_fixtures, write):
    session = write("s.json", SESSION)
    legacy = [
        adk_fixtures / "home_automation_agent" / "simple_test2.test.json",
        adk_fixtures / "trip_planner_agent" / "trip_inquiry.test.json",
    ]
    suite = load_suite([str(p) for p in legacy], initial_session=str(session))
    assert [s.form for s in suite.eval_sets] == ["legacy_rows", "legacy_rows"]
    for eval_set in suite.eval_sets:
        assert eval_set.cases[0].session_input.state == {"tier": "gold"}
    assert not any("initial.session.json" in w for w in suite.warnings)
    # ADK's AgentEvaluator refuses an explicit session for an EvalSet file too (an assert)
    evalset = adk_fixtures / "hello_world_agent" / "roll_die.test.json"
    with pytest.raises(InputError, match=r"applies to legacy \.test\.json row files only"):
        load_suite([str(evalset)], initial_session=str(session))
