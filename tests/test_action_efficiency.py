"""The action's inputs of issue 17 end to end, against the fake GitHub: `budgets` fails the
gate on a case over its budget and says so in the comment; `strip-thoughts` and
`initial-session` reach both stages and the Results record them."""

from __future__ import annotations

import json

import pytest
from helpers.action_harness import Runner, main_with_baseline, pr_payload

from agent_eval_action.results import Results

pytestmark = pytest.mark.e2e


def test_budgets_and_strip_thoughts_reach_both_stages_and_the_comment(
    runner: Runner, baseline_results: bytes
):
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3])
    inputs = {
        "budgets": "tool_call_count_v1=1.5, token_usage_v1=1e9",
        "strip-thoughts": "true",
        "fail-on": "threshold",
    }
    done = runner.run(runner.env("pull_request", pr_payload(7, head, main[3]), **inputs))
    assert done.returncode == 1, done.stderr
    results = Results.from_json((runner.out_dir / "results.json").read_text())
    assert results.run_config.budgets == {"tool_call_count_v1": 1.5, "token_usage_v1": 1e9}
    assert results.run_config.response_thoughts == "stripped"
    over = [c.eval_id for c in results.cases if c.over_budget]
    assert over and all(
        c.efficiency["tool_call_count_v1"].total > 1.5 for c in results.cases if c.eval_id in over
    )
    body = fake.comments_on(7)[0]["body"]
    assert (
        "over their efficiency budget (tool\\_call\\_count\\_v1)" in body
        or "over its efficiency budget" in body
    )
    assert "over its budget of 1.5" in body
    assert "`--strip-thoughts`" in body


def test_a_bad_budgets_input_is_one_line_and_exit_2(runner: Runner, baseline_results: bytes):
    fake = runner.fake
    main, head = main_with_baseline(fake, baseline_results)
    fake.add_pull(7, head, main[3])
    env = runner.env("pull_request", pr_payload(7, head, main[3]), budgets="calls=3")
    done = runner.run(env)
    assert done.returncode == 2
    assert "input budgets: 'calls=3'" in done.stderr
    assert json.dumps(fake.comments) == "{}"


def test_the_stage_command_lines_carry_the_new_inputs(tmp_path):
    from pathlib import Path

    from agent_eval_action.action.agent_run import run_arguments
    from agent_eval_action.action.settings import parse_settings

    settings = parse_settings(
        {
            "INPUT_AGENT": "my_agent",
            "INPUT_INITIAL-SESSION": "evals/initial.session.json",
            "INPUT_STRIP-THOUGHTS": "true",
            "INPUT_BUDGETS": "token_usage_v1=20000",
        }
    )
    for stage in run_arguments(settings, Path("out/results.json"), None):
        assert stage[stage.index("--initial-session") + 1] == "evals/initial.session.json"
        assert "--strip-thoughts" in stage
        assert stage[stage.index("--budget") + 1] == "token_usage_v1=20000.0"
    plain = parse_settings({"INPUT_AGENT": "my_agent"})
    for stage in run_arguments(plain, Path("out/results.json"), None):
        assert not {"--initial-session", "--strip-thoughts", "--budget"} & set(stage)
