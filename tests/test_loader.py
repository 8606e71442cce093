"""Loading ADK eval files in every form ADK accepts, and discovery of EVAL_PATHs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_eval_action.errors import InputError
from agent_eval_action.evalset.models import IntermediateData, InvocationEvents
from agent_eval_action.pipeline.suite import load_suite

USER = {"role": "user", "parts": [{"text": "What is the weather in Paris?"}]}
ANSWER = {"role": "model", "parts": [{"text": "It is 18 degrees in Paris."}]}
CALL = {"name": "get_weather", "args": {"city": "Paris"}}


def evalset(*cases, eval_set_id="demo"):
    return {"eval_set_id": eval_set_id, "eval_cases": list(cases)}


def case(eval_id="paris", turns=None, **extra):
    turns = turns or [
        {"user_content": USER, "final_response": ANSWER, "intermediate_data": {"tool_uses": [CALL]}}
    ]
    return {"eval_id": eval_id, "conversation": turns, **extra}


def test_every_adk_integration_fixture_loads(adk_fixtures: Path):
    suite = load_suite([str(adk_fixtures)])
    files = sorted(p.name for p in adk_fixtures.rglob("*.test.json"))
    assert sorted(Path(s.file).name for s in suite.eval_sets) == files
    assert suite.warnings == []
    forms = {Path(s.file).name: s.form for s in suite.eval_sets}
    assert forms["trip_inquiry.test.json"] == "legacy_rows"
    assert forms["roll_die.test.json"] == "evalset"
    # every fixture keeps its config from the test_config.json beside it
    for s in suite.eval_sets:
        assert s.config.source.endswith("test_config.json")


def test_null_part_fields_and_both_cases_of_keys(write):
    camel = {
        "evalSetId": "camel",
        "evalCases": [
            {
                "evalId": "c1",
                "conversation": [
                    {
                        "userContent": {
                            "role": "user",
                            "parts": [{"text": "hi", "functionCall": None, "thought": None}],
                        },
                        "finalResponse": ANSWER,
                        "intermediateData": {"toolUses": [CALL], "toolResponses": []},
                    }
                ],
                "sessionInput": {"appName": "app", "userId": "u", "state": {"k": 1}},
            }
        ],
    }
    write("camel.evalset.json", camel)
    suite = load_suite(["camel.evalset.json"])
    (loaded,) = suite.eval_sets
    (c,) = loaded.cases
    assert c.session_input.app_name == "app" and c.session_input.state == {"k": 1}
    assert c.conversation[0].tool_calls()[0].args == {"city": "Paris"}
    # adk eval rejects camelCase at the EvalSet level: we accept it but say so
    assert any("snake_case" in w for w in suite.warnings)


def test_invocation_events_form_gives_tool_calls_in_order(write):
    events = {
        "invocation_events": [
            {
                "author": "a",
                "content": {
                    "role": "model",
                    "parts": [{"function_call": {"name": "x", "args": {"n": 1}}}],
                },
            },
            {
                "author": "a",
                "content": {
                    "role": "user",
                    "parts": [{"function_response": {"name": "x", "response": {}}}],
                },
            },
            {
                "author": "a",
                "content": {
                    "role": "model",
                    "parts": [{"function_call": {"name": "y", "args": {}}}],
                },
            },
        ]
    }
    write(
        "e.evalset.json", evalset(case(turns=[{"user_content": USER, "intermediate_data": events}]))
    )
    (c,) = load_suite(["e.evalset.json"]).eval_sets[0].cases
    assert isinstance(c.conversation[0].intermediate_data, InvocationEvents)
    assert [(t.name, t.args) for t in c.conversation[0].tool_calls()] == [
        ("x", {"n": 1}),
        ("y", {}),
    ]


def test_empty_intermediate_data_is_the_hand_written_form(write):
    write("e.evalset.json", evalset(case(turns=[{"user_content": USER, "intermediate_data": {}}])))
    (c,) = load_suite(["e.evalset.json"]).eval_sets[0].cases
    assert isinstance(c.conversation[0].intermediate_data, IntermediateData)
    assert c.conversation[0].tool_calls() == []


def test_rubrics_and_intermediate_responses_load(write):
    rubric = {
        "rubric_id": "r1",
        "rubric_content": {"text_property": "Mentions the city."},
        "type": "FINAL_RESPONSE_QUALITY",
    }
    turn = {
        "user_content": USER,
        "final_response": ANSWER,
        "intermediate_data": {
            "tool_uses": [],
            "intermediate_responses": [["sub_agent", [{"text": "working"}]]],
        },
        "rubrics": [rubric],
    }
    write("r.evalset.json", evalset(case(turns=[turn], rubrics=[rubric])))
    (c,) = load_suite(["r.evalset.json"]).eval_sets[0].cases
    assert c.rubrics[0].rubric_content.text_property == "Mentions the city."
    assert c.conversation[0].intermediate_data.intermediate_responses[0][0] == "sub_agent"


def test_conversation_scenario_case_loads(write):
    scenario = {"starting_prompt": "Hi", "conversation_plan": "Ask about Paris weather."}
    write("s.evalset.json", evalset({"eval_id": "sim", "conversation_scenario": scenario}))
    (c,) = load_suite(["s.evalset.json"]).eval_sets[0].cases
    assert c.conversation is None and c.conversation_scenario.starting_prompt == "Hi"


def test_legacy_rows_are_one_case_with_ids_from_the_path(write):
    rows = [
        {
            "query": "Turn off device_3.",
            "expected_tool_use": [{"tool_name": "set", "tool_input": {"id": 3}}],
            "reference": "Done.",
        },
        {"query": "And device_4?", "expected_tool_use": [], "reference": "Also done."},
    ]
    write("evals/home/turn_off.test.json", rows)
    write(
        "evals/home/initial.session.json", {"app_name": "home", "user_id": "u7", "state": {"x": 1}}
    )
    suite = load_suite(["evals"])
    (loaded,) = suite.eval_sets
    assert (loaded.eval_set_id, loaded.form) == ("home/turn_off", "legacy_rows")
    (c,) = loaded.cases
    assert c.eval_id == "turn_off"
    assert [t.user_content.text() for t in c.conversation] == [
        "Turn off device_3.",
        "And device_4?",
    ]
    assert c.conversation[0].tool_calls()[0].args == {"id": 3}
    assert c.conversation[1].final_response.text() == "Also done."
    assert c.session_input.user_id == "u7" and c.session_input.state == {"x": 1}
    # the id is stable: loading again gives the same
    assert load_suite(["evals"]).eval_sets[0].eval_set_id == "home/turn_off"


def test_legacy_list_of_cases(write):
    data = [
        {
            "name": "first",
            "data": [{"query": "hi", "reference": "hello"}],
            "initial_session": {"app_name": "a", "user_id": "u", "state": {}},
        },
        {"name": "second", "data": [{"query": "bye", "reference": "goodbye"}]},
    ]
    write("old.test.json", data)
    (loaded,) = load_suite(["old.test.json"]).eval_sets
    assert loaded.form == "legacy_cases"
    assert [c.eval_id for c in loaded.cases] == ["first", "second"]
    lines = Path("old.test.json").read_text().splitlines()
    for name, line in loaded.case_lines.items():
        assert lines[line - 1].strip() == "{" and f'"name": "{name}"' in lines[line]
    assert loaded.cases[0].session_input.app_name == "a" and loaded.cases[1].session_input is None


def test_case_start_lines_are_kept(write):
    write("d.evalset.json", evalset(case("one"), case("two")))
    (loaded,) = load_suite(["d.evalset.json"]).eval_sets
    text = Path("d.evalset.json").read_text().splitlines()
    for eval_id, line in loaded.case_lines.items():
        assert text[line - 1].strip() == "{" and f'"{eval_id}"' in text[line]


def test_directory_discovery_skips_hidden_history_and_other_json(write):
    write("evals/a.evalset.json", evalset(case(), eval_set_id="a"))
    write("evals/sub/b.test.json", evalset(case(), eval_set_id="b"))
    write("evals/notes.json", {"x": 1})
    write("evals/.adk/eval_history/x.evalset.json", evalset(case(), eval_set_id="history"))
    suite = load_suite(["evals"])
    assert [s.eval_set_id for s in suite.eval_sets] == ["a", "b"]


def test_file_with_selected_ids(write):
    write("d.evalset.json", evalset(case("one"), case("two"), case("three")))
    (loaded,) = load_suite(["d.evalset.json:three,one"]).eval_sets
    assert [c.eval_id for c in loaded.cases] == ["three", "one"]


def test_selected_id_that_does_not_exist(write):
    write("d.evalset.json", evalset(case("one")))
    with pytest.raises(InputError, match="no case with eval_id 'nope'"):
        load_suite(["d.evalset.json:nope"])


def test_config_beside_each_file_else_defaults(write):
    write("a/x.evalset.json", evalset(case(), eval_set_id="x"))
    write("a/test_config.json", {"criteria": {"response_match_score": 0.5}})
    write("b/y.evalset.json", evalset(case(), eval_set_id="y"))
    x, y = load_suite(["a", "b"]).eval_sets
    assert {k: c.threshold for k, c in x.config.criteria.items()} == {"response_match_score": 0.5}
    assert {k: c.threshold for k, c in y.config.criteria.items()} == {
        "tool_trajectory_avg_score": 1.0,
        "response_match_score": 0.8,
    }
    assert y.config.source == "ADK defaults"


def test_config_flag_overrides_every_file(write):
    write("a/x.evalset.json", evalset(case(), eval_set_id="x"))
    write("a/test_config.json", {"criteria": {"response_match_score": 0.5}})
    write(
        "cfg.json",
        {"criteria": {"tool_trajectory_avg_score": {"threshold": 0.9, "matchType": "in-order"}}},
    )
    (x,) = load_suite(["a"], "cfg.json").eval_sets
    assert list(x.config.criteria) == ["tool_trajectory_avg_score"]
    assert x.config.criteria["tool_trajectory_avg_score"].match_type.name == "IN_ORDER"


def test_file_sha256_is_of_the_bytes(write):
    path = write("d.evalset.json", evalset(case()))
    import hashlib

    (loaded,) = load_suite(["d.evalset.json"]).eval_sets
    assert loaded.file_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_utf8_bom_is_accepted(write):
    write("d.evalset.json", b"\xef\xbb\xbf" + json.dumps(evalset(case())).encode())
    assert load_suite(["d.evalset.json"]).eval_sets[0].eval_set_id == "demo"
