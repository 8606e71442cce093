"""Bad input: one line naming the file (and line), exit 2, no traceback, nothing written."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent_eval_action.cli import main
from agent_eval_action.pipeline.suite import load_suite

USER = {"role": "user", "parts": [{"text": "hi"}]}
ANSWER = {"role": "model", "parts": [{"text": "hello"}]}


def evalset(*cases, eval_set_id="demo"):
    return {"eval_set_id": eval_set_id, "eval_cases": list(cases)}


def case(eval_id="c1", tool_uses=None, **turn_extra):
    turn = {
        "user_content": USER,
        "final_response": ANSWER,
        "intermediate_data": {"tool_uses": tool_uses or []},
    }
    turn.update(turn_extra)
    return {"eval_id": eval_id, "conversation": [turn]}


def line_of(path: Path, needle: str) -> int:
    for number, text in enumerate(
        path.read_text(encoding="utf-8", errors="replace").splitlines(), 1
    ):
        if needle in text:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


def run_cli(capsys, *paths: str, config: str | None = None) -> str:
    """Run the CLI, expect exit 2 with exactly one stderr line and no results file."""
    argv = ["run", *paths, "--command", f"{sys.executable} -c pass", "--out", "out/results.json"]
    if config:
        argv += ["--config", config]
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if ": warning: " not in line]
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err
    assert not Path("out").exists(), "nothing may be written on bad input"
    return lines[0]


def test_evalset_tool_call_with_legacy_keys(write, capsys):
    path = write(
        "evals/refund.evalset.json",
        evalset(case(tool_uses=[{"tool_name": "refund", "tool_input": {}}])),
    )
    message = run_cli(capsys, "evals")
    line = line_of(path, '"tool_name"') - 1  # the call object starts on the line before
    assert message == (
        f'error: evals/refund.evalset.json:{line}: tool call uses "tool_name"/"tool_input"; '
        'EvalSet tool calls are "name"/"args"'
    )


def test_legacy_row_tool_call_with_evalset_keys(write, capsys):
    rows = [{"query": "q", "expected_tool_use": [{"name": "refund", "args": {}}], "reference": "r"}]
    path = write("legacy.test.json", rows)
    message = run_cli(capsys, "legacy.test.json")
    assert message == (
        f'error: legacy.test.json:{line_of(path, chr(34) + "name" + chr(34)) - 1}: tool call uses "name"/"args"; '
        'legacy .test.json rows use "tool_name"/"tool_input"'
    )


def test_duplicate_eval_ids(write, capsys):
    path = write("d.evalset.json", evalset(case("same"), case("same")))
    message = run_cli(capsys, "d.evalset.json")
    second = [
        n for n, t in enumerate(path.read_text().splitlines(), 1) if '"eval_id": "same"' in t
    ][1] - 1
    assert message.startswith(f'error: d.evalset.json:{second}: duplicate eval_id "same"')


def test_duplicate_eval_set_ids_across_files(write, capsys):
    write("a.evalset.json", evalset(case()))
    write("b.evalset.json", evalset(case()))
    message = run_cli(capsys, "a.evalset.json", "b.evalset.json")
    assert (
        message
        == 'error: b.evalset.json: eval_set_id "demo" is also used by a.evalset.json; each eval set needs its own id'
    )


def test_unknown_metric_with_suggestion(write, capsys):
    write("d.evalset.json", evalset(case()))
    path = write("test_config.json", {"criteria": {"response_match_scor": 0.5}})
    message = run_cli(capsys, "d.evalset.json")
    assert message == (
        f'error: test_config.json:{line_of(path, "response_match_scor")}: unknown metric "response_match_scor" '
        '(did you mean "response_match_score"?)'
    )


def test_response_evaluation_score_takes_thresholds_on_adks_scale_of_1_to_5(write, capsys):
    write("d.evalset.json", evalset(case()))
    write("test_config.json", {"criteria": {"response_evaluation_score": 6}})
    assert "threshold 6 is outside [1, 5]" in run_cli(capsys, "d.evalset.json")


@pytest.mark.parametrize(
    ("criterion", "message"),
    [
        (
            {"threshold": 0.8, "judgeModelOptions": {"numSamples": 0}},
            "judgeModelOptions.num_samples: Input should be greater than or equal to 1",
        ),
        (
            {"threshold": 0.8, "judge_model_options": {"judge_modle": "x"}},
            'judge_model_options.judge_modle: unknown key "judge_modle"',
        ),
        (
            {"threshold": 0.8, "judge_model_options": "gemini"},
            "judge_model_options: Input should be a valid dictionary or instance of JudgeModelOptions",
        ),
    ],
)
def test_bad_judge_model_options(write, capsys, criterion, message):
    write("d.evalset.json", evalset(case()))
    path = write("test_config.json", {"criteria": {"final_response_match_v2": criterion}})
    line = line_of(path, "udge")
    assert run_cli(capsys, "d.evalset.json") == (
        f'error: test_config.json:{line}: criterion "final_response_match_v2": {message}'
    )


def test_bad_rubric_in_criterion(write, capsys):
    write("d.evalset.json", evalset(case()))
    criterion = {"threshold": 0.5, "rubrics": [{"rubric_id": "r1"}]}
    write("test_config.json", {"criteria": {"rubric_based_tool_use_quality_v1": criterion}})
    assert run_cli(capsys, "d.evalset.json").endswith("rubrics.0.rubric_content: Field required")


def test_criterion_object_without_threshold(write, capsys):
    write("d.evalset.json", evalset(case()))
    write("test_config.json", {"criteria": {"tool_trajectory_avg_score": {"match_type": "EXACT"}}})
    assert run_cli(capsys, "d.evalset.json").endswith(
        'criterion "tool_trajectory_avg_score" needs a numeric "threshold"'
    )


def test_non_boolean_flag(write, capsys):
    write("d.evalset.json", evalset(case()))
    write(
        "test_config.json",
        {"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "ignore_args": "yes"}}},
    )
    assert run_cli(capsys, "d.evalset.json").endswith('"ignore_args" must be true or false')


def test_informational_metric_in_criteria(write, capsys):
    write("d.evalset.json", evalset(case()))
    write("test_config.json", {"criteria": {"tool_call_count_v1": 0.5}})
    assert "informational" in run_cli(capsys, "d.evalset.json")


def test_misspelled_criterion_key_warns_but_runs(write):
    write("d.evalset.json", evalset(case()))
    path = write(
        "test_config.json",
        {"criteria": {"tool_trajectory_avg_score": {"threshold": 1.0, "match_typ": "IN_ORDER"}}},
    )
    suite = load_suite(["d.evalset.json"])
    assert suite.warnings == [
        f'test_config.json:{line_of(path, "match_typ")}: warning: "tool_trajectory_avg_score" has no option '
        '"match_typ"; ADK ignores it silently (did you mean "match_type"?)'
    ]


@pytest.mark.parametrize("threshold", [1.5, -0.1])
def test_threshold_outside_unit_interval(write, capsys, threshold):
    write("d.evalset.json", evalset(case()))
    path = write(
        "test_config.json", {"criteria": {"response_match_score": {"threshold": threshold}}}
    )
    message = run_cli(capsys, "d.evalset.json")
    assert message == (
        f'error: test_config.json:{line_of(path, "threshold")}: criterion "response_match_score": '
        f"threshold {threshold} is outside [0, 1]"
    )


def test_threshold_as_bare_number_outside_range(write, capsys):
    write("d.evalset.json", evalset(case()))
    write("test_config.json", '{"criteria": {\n  "response_match_score": 80\n}}')
    assert run_cli(capsys, "d.evalset.json").startswith("error: test_config.json:2: ")


def test_threshold_of_wrong_type(write, capsys):
    write("d.evalset.json", evalset(case()))
    write("test_config.json", {"criteria": {"response_match_score": True}})
    assert "must be a threshold number or an object" in run_cli(capsys, "d.evalset.json")


def test_bad_match_type(write, capsys):
    write("d.evalset.json", evalset(case()))
    write(
        "test_config.json",
        {"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": "FUZZY"}}},
    )
    message = run_cli(capsys, "d.evalset.json")
    assert message.startswith("error: test_config.json:") and "FUZZY" in message


def test_config_without_criteria(write, capsys):
    write("d.evalset.json", evalset(case()))
    write("test_config.json", {})
    assert 'no "criteria"' in run_cli(capsys, "d.evalset.json")


def test_empty_eval_set(write, capsys):
    write("d.evalset.json", evalset())
    assert run_cli(capsys, "d.evalset.json") == "error: d.evalset.json:3: the eval set has no cases"


def test_empty_legacy_list(write, capsys):
    write("d.test.json", [])
    assert "not an ADK eval file" in run_cli(capsys, "d.test.json")


def test_invalid_json_names_line_and_column(write, capsys):
    write(
        "d.evalset.json",
        '{\n  "eval_set_id": "x",\n  "eval_cases": [\n    {"eval_id": "a",}\n  ]\n}\n',
    )
    assert run_cli(capsys, "d.evalset.json") == (
        "error: d.evalset.json:4: invalid JSON (column 21): Expecting property name enclosed in double quotes"
    )


def test_not_utf8(write, capsys):
    write("d.evalset.json", b'{"eval_set_id": "x",\n "eval_cases": ["\xff"]}')
    assert (
        run_cli(capsys, "d.evalset.json") == "error: d.evalset.json:2: not UTF-8 text (byte 0xff)"
    )


def test_unknown_key_inside_an_invocation(write, capsys):
    path = write("d.evalset.json", evalset(case(final_respons=ANSWER)))
    assert run_cli(capsys, "d.evalset.json") == (
        f"error: d.evalset.json:{line_of(path, 'final_respons' + chr(34))}: "
        'eval_cases[0].conversation[0].final_respons: unknown key "final_respons"'
    )


def test_missing_user_content(write, capsys):
    data = evalset({"eval_id": "c1", "conversation": [{"final_response": ANSWER}]})
    path = write("d.evalset.json", data)
    message = run_cli(capsys, "d.evalset.json")
    assert message == (
        f"error: d.evalset.json:{line_of(path, 'final_response') - 1}: "
        'eval_cases[0].conversation[0]: missing required key "user_content"'
    )


def test_case_with_both_conversation_and_scenario(write, capsys):
    c = case()
    c["conversation_scenario"] = {"starting_prompt": "a", "conversation_plan": "b"}
    write("d.evalset.json", evalset(c))
    assert 'exactly one of "conversation" or "conversation_scenario"' in run_cli(
        capsys, "d.evalset.json"
    )


def test_turn_with_legacy_query_key(write, capsys):
    write("d.evalset.json", evalset({"eval_id": "c", "conversation": [{"query": "hi"}]}))
    assert 'legacy "query" key' in run_cli(capsys, "d.evalset.json")


def test_args_of_wrong_type(write, capsys):
    write("d.evalset.json", evalset(case(tool_uses=[{"name": "x", "args": [1, 2]}])))
    message = run_cli(capsys, "d.evalset.json")
    assert "tool_uses[0].args" in message and "dictionary" in message


def test_missing_eval_path(write, capsys):
    assert run_cli(capsys, "nowhere") == "error: nowhere: no such file or directory"


def test_directory_without_eval_files(write, capsys):
    write("evals/readme.txt", "x")
    assert run_cli(capsys, "evals") == "error: no *.evalset.json or *.test.json files below evals"


def test_custom_metric_that_cannot_be_imported(write, capsys):
    write("d.evalset.json", evalset(case()))
    write(
        "test_config.json",
        {
            "criteria": {"mine": 0.5},
            "custom_metrics": {"mine": {"code_config": {"name": "no_such_module.fn"}}},
        },
    )
    message = run_cli(capsys, "d.evalset.json")
    assert message.startswith("error: test_config.json:") and 'custom metric "mine"' in message


def test_legacy_row_without_query(write, capsys):
    path = write("d.test.json", [{"reference": "x"}])
    assert (
        run_cli(capsys, "d.test.json")
        == f'error: d.test.json:{line_of(path, "reference") - 1}: a legacy row needs a "query" string'
    )


def test_bad_flags_exit_2(write, capsys):
    write("d.evalset.json", evalset(case()))
    for flags in (
        ["--num-runs", "0"],
        ["--concurrency", "x"],
        ["--timeout", "-1"],
        ["--trajectory-policy", "loose"],
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(["run", "d.evalset.json", "--command", "x", *flags])
        assert exit_info.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_command_that_cannot_start(write, capsys):
    write("d.evalset.json", evalset(case()))
    assert (
        main(["run", "d.evalset.json", "--command", "/no/such/agent", "--out", "out/results.json"])
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: cannot start the agent command") and not Path("out").exists()


def test_warning_for_unknown_case_key(write):
    write("d.evalset.json", evalset({**case(), "notes": "x"}))
    suite = load_suite(["d.evalset.json"])
    assert any('unknown key "notes"' in w for w in suite.warnings)
