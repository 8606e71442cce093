"""What a judged criterion may ask of the judge's key (docs/security.md, "Caps"): the
judge's models (an allow-list), its generation options, and the calls a job may make on
the key, held by the process that holds it. The command line is tested here with the real
google-genai client against the fake Gemini; the action, as root with the PR's code as
another user, in tests/test_action_key_budget.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.gemini import FakeGemini
from helpers.paths import ROOT, WORKERS, python_command

from agent_eval_action.cli import main
from agent_eval_action.metrics.judge import settings
from agent_eval_action.metrics.judge.budget import KeyBudget, KeySpent
from agent_eval_action.metrics.judge.caps import (
    MAX_OUTPUT_TOKENS,
    MAX_RETRY_ATTEMPTS,
    MAX_THINKING_BUDGET,
    allowed_judge_models,
    default_judge_models,
    judge_model_refusal,
)
from agent_eval_action.metrics.judge.pricing import load_prices
from agent_eval_action.metrics.judge.settings import RetryPolicy
from agent_eval_action.pipeline.key_budget import Calls, case_run_calls, key_calls, most_calls
from agent_eval_action.pipeline.options import RunOptions
from agent_eval_action.pipeline.plan import plan
from agent_eval_action.pipeline.suite import load_suite
from agent_eval_action.results import Results

FRM = "final_response_match_v2"
TABLE_AGENT = WORKERS / "table_agent.py"


def turn(user: str, answer: str) -> dict:
    return {
        "user_content": {"role": "user", "parts": [{"text": user}]},
        "final_response": {"role": "model", "parts": [{"text": answer}]},
    }


PARIS = {"eval_id": "paris", "conversation": [turn("Weather in Paris?", "18 degrees.")]}
TWO = {"eval_id": "two", "conversation": [turn("Paris?", "18."), turn("Tokyo?", "25.")]}
SCENARIO = {
    "eval_id": "chat",
    "conversation_scenario": {"starting_prompt": "Hi.", "conversation_plan": "Say hi."},
}


def frm(samples: int, **options) -> dict:
    return {FRM: {"threshold": 0.5, "judge_model_options": {"num_samples": samples, **options}}}


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(
        settings, "DEFAULT_RETRY", RetryPolicy(attempts=1, initial_delay=0.001, max_delay=0.002)
    )
    with FakeGemini() as server:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
        monkeypatch.setenv("GOOGLE_API_KEY", "FAKE_KEY")
        yield server


def suite(write, criteria: dict, cases=(PARIS, TWO)) -> None:
    write("evals/set.evalset.json", {"eval_set_id": "set", "eval_cases": list(cases)})
    write("evals/test_config.json", {"criteria": criteria})
    write("table.json", {"paris": {"text": "18 degrees."}, "two": {"text": "Warm."}})


def run(*flags: str) -> int:
    return main(["run", "evals", "--command", python_command(TABLE_AGENT, "table.json"), *flags])


# --- the judge's models ---------------------------------------------------------------


def test_the_default_allow_list_is_the_priced_models():
    assert default_judge_models() == tuple(sorted(load_prices().models))
    assert allowed_judge_models(()) == default_judge_models()
    assert allowed_judge_models(["models/my-judge"]) == ("my-judge",)  # it replaces the list
    assert judge_model_refusal("models/gemini-2.5-flash", default_judge_models()) is None
    assert "judge-models" in (judge_model_refusal("gemini-9-ultra", default_judge_models()) or "")


def test_an_unlisted_judge_model_is_bad_input_naming_the_criterion_and_nothing_is_asked(
    write, fake, capsys
):
    suite(write, frm(20, judge_model="gemini-9-ultra"))
    assert run() == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("error: evals/test_config.json:3: ")
    assert f'criterion "{FRM}"' in err[0] and '"gemini-9-ultra" is not a model the judge' in err[0]
    assert fake.calls() == 0 and not Path("results.json").exists()


def test_judge_models_names_the_list_and_the_pin_must_be_on_it(write, fake, capsys):
    suite(write, frm(1, judge_model="my-tuned-judge"))
    assert run("--judge-models", "my-tuned-judge") == 0
    assert {r.model for r in fake.requests} == {"my-tuned-judge"} and fake.calls() == 3
    # the list replaces the default one: the default model is then not allowed
    suite(write, frm(1))
    assert run("--judge-models", "my-tuned-judge") == 2
    assert '"gemini-2.5-flash" is not a model the judge' in capsys.readouterr().err
    # a pin overrides the criteria's models, and is held to the list itself
    assert run("--judge-model", "gemini-9-ultra") == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --judge-model: ") and "gemini-9-ultra" in err
    fake.reset()
    suite(write, frm(1, judge_model="gemini-9-ultra"))
    assert run("--judge-model", "gemini-2.5-flash-lite") == 0
    assert {r.model for r in fake.requests} == {"gemini-2.5-flash-lite"}


# --- the judge's generation options ---------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"candidateCount": 8}, "candidate_count cannot be set for the judge"),
        ({"tools": [{"codeExecution": {}}]}, "tools cannot be set for the judge"),
        ({"systemInstruction": "x"}, "system_instruction cannot be set for the judge"),
        ({"thinkingConfig": {"thinkingLevel": "HIGH"}}, "thinking_level cannot be set"),
        (
            {"thinkingConfig": {"thinkingBudget": MAX_THINKING_BUDGET + 1}},
            f"thinking_budget must be 0 to {MAX_THINKING_BUDGET}",
        ),
        (
            {"maxOutputTokens": MAX_OUTPUT_TOKENS + 1},
            f"max_output_tokens must be 1 to {MAX_OUTPUT_TOKENS}",
        ),
        (
            {"httpOptions": {"retryOptions": {"attempts": 1000}}},
            f"attempts must be 1 to {MAX_RETRY_ATTEMPTS}",
        ),
        # the waits and what is retried are the tool's policy's at most: a PR that makes the
        # judge answer 400 (a long answer) must not hold the score stage for a day
        (
            {"httpOptions": {"retryOptions": {"initialDelay": 20, "maxDelay": 86400}}},
            "retry_options.max_delay must be 0 to 120",
        ),
        (
            {"httpOptions": {"retryOptions": {"httpStatusCodes": [400, 429]}}},
            "retry_options.http_status_codes may name only 408, 429, 500, 502, 503, 504",
        ),
        (
            {"httpOptions": {"retryOptions": {"expBase": 1000}}},
            "retry_options.exp_base must be 1 to 2",
        ),
        ({"httpOptions": {"retryOptions": {"jitter": 50}}}, "retry_options.jitter must be 0 to 1"),
    ],
)
def test_generation_options_past_a_cap_are_bad_input(write, fake, capsys, config, message):
    suite(write, frm(1, judge_model_config=config))
    assert run() == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: evals/test_config.json:3: "), err
    assert message in err[0]
    assert fake.calls() == 0


def test_the_output_cap_is_sent_when_the_criterion_sets_none(write, fake):
    suite(write, frm(1, judge_model_config={"temperature": 0.0}))
    assert run() == 0
    sent = fake.requests[0].body["generationConfig"]
    assert sent == {"temperature": 0.0, "maxOutputTokens": MAX_OUTPUT_TOKENS}
    suite(write, frm(1, judge_model_config={"maxOutputTokens": 300}))
    fake.reset()
    assert run() == 0
    assert fake.requests[0].body["generationConfig"] == {"maxOutputTokens": 300}


# --- the budget of calls --------------------------------------------------------------------


def test_a_budget_pays_for_a_request_whole_or_refuses_it_whole():
    budget = KeyBudget(5)
    assert budget.take(3, "judge") and budget.left == 2
    assert not budget.take(3, "judge")  # not 2 of its 3 samples: none
    assert budget.take(1, "simulator") and budget.take(1, "judge") and budget.left == 0
    assert not budget.take(1, "simulator")
    assert budget.record() == KeySpent(limit=5, judge_calls=4, simulator_calls=1, refused=4)
    unlimited = KeyBudget()
    assert unlimited.take(10**9, "judge") and unlimited.left is None


def planned(write, criteria: dict, cases, num_runs: int = 1, simulator: dict | None = None):
    config: dict = {"criteria": criteria}
    if simulator is not None:
        config["user_simulator_config"] = simulator
    write("evals/set.evalset.json", {"eval_set_id": "set", "eval_cases": list(cases)})
    write("evals/test_config.json", config)
    return plan(load_suite(["evals"]), num_runs, import_custom=False)


def test_a_case_runs_calls_are_its_turns_requests_and_samples(write):
    the_plan = planned(write, frm(3), [PARIS, TWO])
    keys = list(the_plan.cases)
    # each request once a turn and once more for the run, 3 samples each
    assert [case_run_calls(the_plan, key) for key in keys] == [
        Calls((1 + 1) * 3),
        Calls((2 + 1) * 3),
    ]
    # a scenario: its simulator's calls (the starting prompt asks nothing), and its turns
    # up to the turn limit judged; safety_v1 asks once a turn, one sample unless set
    the_plan = planned(
        write, {"safety_v1": 0.5}, [SCENARIO], simulator={"max_allowed_invocations": 4}
    )
    [key] = the_plan.cases
    assert case_run_calls(the_plan, key) == Calls(judge=(4 + 1) * 1, simulator=4 - 1)
    # hallucinations over every intermediate text: as many as the agent writes, no bound
    hallucinations = {"threshold": 0.5, "evaluate_intermediate_nl_responses": True}
    the_plan = planned(write, {"hallucinations_v1": hallucinations}, [PARIS])
    assert case_run_calls(the_plan, next(iter(the_plan.cases))) is None


def test_a_jobs_calls_are_its_runs_and_what_its_rounds_may_add_within_the_input(write):
    the_plan = planned(write, frm(3), [PARIS, TWO], num_runs=2)
    suite_calls = 2 * (6 + 9)
    quiet = RunOptions(num_runs=2, confirm_runs=0, baseline_runs=1, judge_max_calls=10**6)
    assert most_calls(the_plan, quiet) == suite_calls
    # confirmation: at most confirm_limit re-runs (2 cases x 3 here), each no costlier than
    # the costliest case-run; paired runs run each round's cases on main's code too
    confirming = RunOptions(num_runs=2, confirm_runs=3, confirm_limit=4, baseline_runs=1)
    assert most_calls(the_plan, confirming) == suite_calls + 4 * 9
    paired = RunOptions(num_runs=2, confirm_runs=3, confirm_limit=4, baseline_runs=1, paired=True)
    assert most_calls(the_plan, paired) == suite_calls + 2 * 4 * 9
    # main's sampling: each case until it has baseline_runs runs
    sampling = RunOptions(num_runs=2, confirm_runs=0, baseline_runs=3)
    assert most_calls(the_plan, sampling) == suite_calls + 2 * 2 * 9
    # always within judge_max_calls, and that alone where the plan has no bound
    assert most_calls(the_plan, RunOptions(judge_max_calls=7)) == 7
    unbounded = {"threshold": 0.5, "evaluate_intermediate_nl_responses": True}
    the_plan = planned(write, {"hallucinations_v1": unbounded}, [PARIS])
    assert most_calls(the_plan, RunOptions(judge_max_calls=123)) == 123


def test_calls_past_the_budget_are_not_made_and_their_cases_not_passed(write, fake, capsys):
    suite(write, frm(3))  # paris: one request of 3 samples; two: two of them
    code = run("--judge-max-calls", "6", "--key-spent", "spent.json")
    assert code == 1  # never passed
    assert fake.calls() == 6  # two requests paid for whole; the third not asked at all
    results = Results.from_json(Path("results.json").read_text())
    assert results.usage.judge_calls == 6 and results.usage.judge_refused == 3
    refused = [
        case
        for case in results.cases
        if "no calls on the judge's key are left" in (case.metrics[FRM].error or "")
    ]
    assert len(refused) == 1 and refused[0].status == "not_evaluated"
    assert refused[0].metrics[FRM].status == "not_evaluated"
    assert any("3 judge call(s) were not made" in w for w in results.warnings)
    said = capsys.readouterr()
    assert "--judge-max-calls" in said.err
    assert "judge: 6 calls, 0 reused, 3 refused (judge-max-calls)" in said.out
    spent = KeySpent.model_validate_json(Path("spent.json").read_text())
    assert (spent.limit, spent.judge_calls, spent.refused) == (6, 6, 3)


def test_the_plan_bounds_the_budget_below_the_input(write, fake):
    suite(write, frm(1))  # 1 + 2 turns, one sample each: the plan allows (2 + 3) a run
    assert run("--judge-max-calls", "100000", "--key-spent", "spent.json") == 0
    spent = json.loads(Path("spent.json").read_text())
    assert spent["judge_calls"] == 3 and spent["refused"] == 0
    assert spent["limit"] < 100000  # the plan's bound, its rounds' allowance included


def test_the_security_page_lists_the_judges_caps_as_declared():
    from agent_eval_action.metrics.criteria import MAX_NUM_SAMPLES
    from agent_eval_action.pipeline.options import DEFAULTS

    page = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    caps = page.split("### Caps", 1)[1].split("\n### ", 1)[0]
    assert all(f"`{model}`" in caps for model in default_judge_models())
    figures = (MAX_THINKING_BUDGET, MAX_OUTPUT_TOKENS, DEFAULTS.run.judge_max_calls)
    assert all(f"{n:,}" in caps for n in figures)
    assert f"| {MAX_RETRY_ATTEMPTS} (" in caps and f"| {MAX_NUM_SAMPLES} (" in caps
    for name in ("judge-models", "judge-max-calls", "judge_refused", "simulator_refused"):
        assert name in caps, name


def test_results_written_before_judge_refused_existed_still_load():
    older = ROOT / "tests" / "data" / "results_v1" / "rich.results.json"
    assert '"judge_refused"' not in older.read_text()
    results = Results.from_json(older.read_text())
    assert results.usage.judge_calls > 0 and results.usage.judge_refused == 0


def test_roots_meter_takes_each_stages_spending_off_the_jobs_budget(tmp_path):
    from agent_eval_action.action.key_meter import KeyMeter

    meter = KeyMeter(10, tmp_path)
    flags, record = meter.arguments("serve-suite")
    assert flags == ["--judge-max-calls", "10", "--key-spent", str(record)]
    KeyBudget(10, simulator_calls=3, refused=1).write(record)
    meter.settle(record)
    assert meter.left == 7
    flags, record = meter.arguments("score-1")
    assert flags[1] == "7"
    meter.settle(record)  # it wrote nothing (it died, or was killed): all it got is spent
    assert meter.left == 0
    # a stage that never ran (no key, so no serve-users) spent nothing
    meter = KeyMeter(5, tmp_path)
    _, record = meter.arguments("serve-round-1")
    meter.settle(record, ran=False)
    assert meter.left == 5
    # a record claiming more than its stage was given takes no more than that
    _, record = meter.arguments("score-2")
    KeyBudget(None, judge_calls=99).write(record)
    meter.settle(record)
    assert meter.left == 0


def test_one_run_per_case_may_add_suite_rounds_within_the_confirm_limit(write):
    # with one run per case a broad drop runs every case again, up to SUITE_ROUNDS times
    # (pipeline/confirm.rounds): the budget must cover them, not the re-runs alone
    from agent_eval_action.compare.statistics_policy import DEFAULT as STATISTICS
    from agent_eval_action.pipeline.key_budget import extra_case_runs

    rounds = STATISTICS.suite_rounds

    the_plan = planned(write, frm(3), [PARIS, TWO])
    options = RunOptions(confirm_runs=3, baseline_runs=1, judge_max_calls=10**6)
    assert extra_case_runs(2, options).confirming == 2 * (3 + rounds)
    assert most_calls(the_plan, options) == (6 + 9) + 2 * (3 + rounds) * 9
    assert extra_case_runs(2, RunOptions(confirm_runs=3, confirm_limit=5)).confirming == 5
    assert extra_case_runs(2, RunOptions(confirm_runs=0)).confirming == 0


def test_the_judges_and_the_simulators_calls_are_bounded_apart(write):
    the_plan = planned(
        write, {"safety_v1": 0.5}, [SCENARIO], simulator={"max_allowed_invocations": 4}
    )
    quiet = RunOptions(confirm_runs=0, baseline_runs=1)
    calls = key_calls(the_plan, quiet)
    assert calls.bound == Calls(judge=5, simulator=3) and calls.most == 8
    # the budget holds both together: each alone may reach it, never more
    tight = key_calls(the_plan, RunOptions(confirm_runs=0, baseline_runs=1, judge_max_calls=6))
    assert tight.bound == Calls(judge=5, simulator=3) and tight.most == 6
