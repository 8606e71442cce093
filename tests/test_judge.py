"""The LLM judge against a fake Gemini on 127.0.0.1 (tests/fakes/gemini.py), through the
real google-genai client: scores with ADK's rules, verdict reuse, failures, usage, CLI."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pytest
from fakes.gemini import (
    FakeGemini,
    blocked,
    empty,
    error,
    rubric_block,
    safety,
    text,
    verdict,
)
from helpers.paths import ROOT, WORKERS, python_command

from agent_eval_action.cli import main
from agent_eval_action.evalset.models import Content, FunctionCall, FunctionResponse
from agent_eval_action.metrics.judge import settings
from agent_eval_action.metrics.judge.cache import DirectoryCache
from agent_eval_action.metrics.judge.caps import MAX_OUTPUT_TOKENS
from agent_eval_action.metrics.judge.pricing import load_prices
from agent_eval_action.metrics.judge.settings import JudgeSettings, RetryPolicy
from agent_eval_action.pipeline.judge import judge_plan
from agent_eval_action.pipeline.plan import plan
from agent_eval_action.pipeline.score import build_results, score_plan
from agent_eval_action.pipeline.suite import load_suite
from agent_eval_action.results import JudgeSample, Results, RunConfig
from agent_eval_action.traces import ActualTurn, CaseRunTrace

FAST = RetryPolicy(attempts=3, initial_delay=0.001, max_delay=0.002, jitter=0.0)
FRM = "final_response_match_v2"
RUBRIC_FINAL = "rubric_based_final_response_quality_v1"
RUBRIC_TOOLS = "rubric_based_tool_use_quality_v1"


@pytest.fixture(scope="module")
def server():
    with FakeGemini() as fake:
        yield fake


@pytest.fixture
def fake(server):
    server.reset()
    server.latency_s = 0.0
    return server


def invocation(user: str, answer: str, rubrics=None) -> dict:
    data = {
        "user_content": {"role": "user", "parts": [{"text": user}]},
        "final_response": {"role": "model", "parts": [{"text": answer}]},
    }
    if rubrics:
        data["rubrics"] = rubrics
    return data


def case(eval_id: str, *turns: dict, rubrics=None) -> dict:
    data = {"eval_id": eval_id, "conversation": list(turns)}
    if rubrics:
        data["rubrics"] = rubrics
    return data


def rubric(rid: str, prop: str, kind: str | None = None) -> dict:
    data = {"rubric_id": rid, "rubric_content": {"text_property": prop}}
    if kind:
        data["type"] = kind
    return data


def said(answer: str, tools=(), responses=(), intermediate=()) -> ActualTurn:
    return ActualTurn(
        final_response=Content.from_text(answer, "model"),
        tool_uses=[FunctionCall(name=n, args=a) for n, a in tools],
        tool_responses=[FunctionResponse(name=n, response=r) for n, r in responses],
        intermediate_responses=list(intermediate),
    )


PARIS = case("paris", invocation("Weather in Paris?", "It is 18 degrees in Paris."))
TWO = case(
    "two",
    invocation("Weather in Paris?", "It is 18 degrees in Paris."),
    invocation("And Tokyo?", "It is 25 degrees in Tokyo."),
)
GOOD = {
    ("paris", 1): [said("18 degrees in Paris right now.")],
    ("two", 1): [said("It is 18 degrees in Paris."), said("Tokyo: 25 degrees.")],
}


def judge(
    write,
    fake,
    criteria: dict,
    cases: list[dict],
    answers: dict[tuple[str, int], list[ActualTurn]],
    *,
    num_runs: int = 1,
    key: str | None = "FAKE_KEY",
    baseline: Results | None = None,
    cache: Path | None = None,
    cache_this_run: bool = False,
    pin: str | None = None,
    parallelism: int = 8,
    base_url: str | None = None,
):
    """Plan the suite, judge the given answers, score: (Results, JudgeResults)."""
    write("evals/set.evalset.json", {"eval_set_id": "set", "eval_cases": cases})
    write("evals/test_config.json", {"criteria": criteria})
    the_plan = plan(load_suite(["evals"]), num_runs)
    traces = [
        CaseRunTrace(eval_set_id="set", eval_id=eval_id, run=run, turns=turns)
        for (eval_id, run), turns in answers.items()
    ]
    judge_settings = JudgeSettings(
        api_key=key,
        base_url=base_url or fake.url,
        model_pin=pin,
        cache_dir=cache,
        cache_this_run=cache_this_run,
        parallelism=parallelism,
        prices=load_prices(),
        retry=FAST,
    )
    judged = asyncio.run(judge_plan(the_plan, traces, judge_settings, baseline))
    results = build_results(
        the_plan,
        score_plan(the_plan, traces, judged),
        RunConfig(runner="command"),
        datetime.now(UTC),
    )
    return results, judged


def metric(results: Results, eval_id: str, name: str = FRM):
    return next(c for c in results.cases if c.eval_id == eval_id).metrics[name]


def frm(samples: int = 3, threshold: float = 0.8, **options) -> dict:
    return {
        FRM: {"threshold": threshold, "judge_model_options": {"num_samples": samples, **options}}
    }


# --- final_response_match_v2: ADK's votes, and the request as ADK sends it --------------


def test_majority_vote_passes_and_the_request_is_sent_as_adk_sends_it(write, fake):
    fake.script("verdict", verdict("valid"), verdict("invalid"), verdict("valid"))
    results, _ = judge(write, fake, frm(3), [PARIS], {("paris", 1): GOOD[("paris", 1)]})
    judged = metric(results, "paris")
    assert judged.score == 1.0 and judged.status == "passed"
    assert fake.calls() == 3 and results.usage.judge_calls == 3
    sent = fake.requests[0]
    assert sent.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert sent.headers["x-goog-api-key"] == "FAKE_KEY"
    # ADK sends an empty config; only the output cap is added (docs/security.md, "Caps")
    assert sent.body["generationConfig"] == {"maxOutputTokens": MAX_OUTPUT_TOKENS}
    assert "systemInstruction" not in sent.body
    assert sent.body["contents"][0]["role"] == "user"
    assert "18 degrees in Paris right now." in sent.prompt
    assert "It is 18 degrees in Paris." in sent.prompt and "Weather in Paris?" in sent.prompt
    record = judged.judge
    assert record.model == "gemini-2.5-flash" and record.num_samples == 3
    assert record.prompt_version == "final_response_match_v2@1"
    assert record.parser_version == "verdict@1"
    assert [v.score for v in record.verdicts] == [1.0] and len(record.verdicts[0].samples) == 3


def test_a_tie_fails_and_turns_are_averaged(write, fake):
    fake.script("verdict", verdict("valid"), verdict("invalid"))  # turn 1: tie -> invalid
    results, _ = judge(write, fake, frm(2, threshold=0.5), [TWO], {("two", 1): GOOD[("two", 1)]})
    judged = metric(results, "two")
    assert judged.invocations == ((0.0, 1.0),) and judged.score == 0.5
    assert judged.status == "passed" and fake.calls() == 4


def test_malformed_verdicts_leave_the_metric_not_evaluated_never_passed(write, fake):
    fake.script("verdict", "I think it is fine.", "{}", "valid!")
    results, _ = judge(write, fake, frm(3), [PARIS], {("paris", 1): GOOD[("paris", 1)]})
    judged = metric(results, "paris")
    assert judged.status == "not_evaluated" and judged.score is None
    assert "turn 1: no verdict could be read from the judge's answer" in judged.error
    assert judged.judge.verdicts[0].error is not None
    case = results.cases[0]
    assert case.status == "not_evaluated"


def test_unreadable_samples_are_ignored_when_others_vote(write, fake):
    fake.script("verdict", "gibberish", verdict("valid"), verdict("invalid"))
    results, _ = judge(write, fake, frm(3), [PARIS], {("paris", 1): GOOD[("paris", 1)]})
    assert metric(results, "paris").score == 0.0  # one valid, one invalid: a tie fails


def test_blocked_and_empty_answers_say_why(write, fake):
    fake.script("verdict", blocked("SAFETY"), empty())
    results, _ = judge(write, fake, frm(2), [PARIS], {("paris", 1): GOOD[("paris", 1)]})
    judged = metric(results, "paris")
    assert judged.status == "not_evaluated"
    assert "SAFETY" in judged.error and "PROMPT_BLOCKED_SAFETY" in judged.error
    assert results.usage.judge_calls == 2  # answered (and billed), just without a verdict


# --- retries and outages ----------------------------------------------------------------


def test_429_then_200_is_retried(write, fake):
    fake.script("verdict", error(429), verdict("valid"))
    results, judged = judge(write, fake, frm(1), [PARIS], {("paris", 1): GOOD[("paris", 1)]})
    assert metric(results, "paris").status == "passed"
    assert fake.calls() == 2 and results.usage.judge_calls == 1
    assert not judged.outage_cases


def test_a_503_storm_is_an_outage_and_never_a_pass(write, fake):
    fake.script("verdict", *[error(503)] * FAST.attempts)
    results, judged = judge(write, fake, frm(1), [PARIS], {("paris", 1): GOOD[("paris", 1)]})
    judged_metric = metric(results, "paris")
    assert judged_metric.status == "not_evaluated" and "503 UNAVAILABLE" in judged_metric.error
    assert fake.calls() == FAST.attempts
    assert judged.outage_cases == {("set", "paris")}


def test_an_unreachable_gemini_is_an_outage(write, fake):
    with FakeGemini() as gone:
        url = gone.url  # a port nobody listens on once this server stops
    results, judged = judge(
        write, fake, frm(1), [PARIS], {("paris", 1): GOOD[("paris", 1)]}, base_url=url
    )
    assert metric(results, "paris").status == "not_evaluated"
    assert "cannot reach Gemini (after retries)" in metric(results, "paris").error
    assert judged.outage_cases == {("set", "paris")}


def test_a_refused_request_is_not_retried_nor_an_outage(write, fake):
    fake.script("verdict", error(400))
    results, judged = judge(write, fake, frm(1), [PARIS], {("paris", 1): GOOD[("paris", 1)]})
    assert metric(results, "paris").status == "not_evaluated" and fake.calls() == 1
    assert "400 INVALID_ARGUMENT" in metric(results, "paris").error
    assert not judged.outage_cases


# --- verdict reuse ----------------------------------------------------------------------


def test_an_unchanged_rerun_against_its_baseline_makes_no_calls(write, fake):
    first, _ = judge(write, fake, frm(5), [PARIS, TWO], GOOD)
    assert fake.calls() == 15 and first.usage.judge_calls == 15
    fake.reset()
    fake.script("verdict", *[verdict("invalid")] * 20)  # would flip every score if asked
    again, judged = judge(write, fake, frm(5), [PARIS, TWO], GOOD, baseline=first)
    assert fake.calls() == 0
    assert again.usage.judge_calls == 0 and again.usage.judge_reused == 15
    assert again.usage.cost_usd == 0.0 and judged.reused_from == {"baseline": 15}
    for eval_id in ("paris", "two"):
        assert metric(again, eval_id).score == metric(first, eval_id).score == 1.0
        assert {v.source for v in metric(again, eval_id).judge.verdicts} == {"baseline"}


def test_only_a_changed_answer_is_judged_again(write, fake):
    first, _ = judge(write, fake, frm(3), [PARIS, TWO], GOOD)
    fake.reset()
    changed = {**GOOD, ("two", 1): [GOOD[("two", 1)][0], said("Tokyo is 30 degrees.")]}
    fake.script("verdict", *[verdict("invalid")] * 3)
    again, _ = judge(write, fake, frm(3), [PARIS, TWO], changed, baseline=first)
    assert fake.calls() == 3 and again.usage.judge_reused == 6
    assert metric(again, "two").invocations == ((1.0, 0.0),)
    assert "Tokyo is 30 degrees." in fake.requests[0].prompt


def test_a_changed_criterion_or_pin_is_judged_again(write, fake):
    first, _ = judge(write, fake, frm(3), [PARIS], {("paris", 1): GOOD[("paris", 1)]})
    fake.reset()
    judge(
        write,
        fake,
        frm(3),
        [PARIS],
        {("paris", 1): GOOD[("paris", 1)]},
        baseline=first,
        pin="gemini-2.5-pro",
    )
    assert fake.calls() == 3 and fake.requests[0].model == "gemini-2.5-pro"
    fake.reset()
    judge(write, fake, frm(2), [PARIS], {("paris", 1): GOOD[("paris", 1)]}, baseline=first)
    assert fake.calls() == 2


def test_no_key_reuses_unchanged_verdicts_and_says_why_for_the_rest(write, fake):
    first, _ = judge(write, fake, frm(3), [PARIS, TWO], GOOD)
    fake.reset()
    changed = {**GOOD, ("paris", 1): [said("Paris: 19 degrees.")]}
    again, judged = judge(write, fake, frm(3), [PARIS, TWO], changed, baseline=first, key=None)
    assert fake.calls() == 0
    assert metric(again, "two").status == "passed"  # unchanged: the baseline's verdicts
    paris = metric(again, "paris")
    assert paris.status == "not_evaluated"
    assert paris.error.startswith("turn 1: no GOOGLE_API_KEY/GEMINI_API_KEY: ")
    assert judged.no_key == 1 and not judged.outage_cases


def test_the_cache_directory_serves_repeated_local_runs(write, fake, tmp_path):
    cache = tmp_path / "judge-cache"
    judge(write, fake, frm(3), [PARIS, TWO], GOOD, cache=cache)
    assert fake.calls() == 9 and len(list(cache.rglob("*.json"))) == 3
    fake.reset()
    again, judged = judge(write, fake, frm(3), [PARIS, TWO], GOOD, cache=cache)
    assert fake.calls() == 0 and judged.reused_from == {"cache": 9}
    assert again.usage.judge_reused == 9
    damaged = next(cache.rglob("*.json"))
    damaged.write_text("{half a fi")
    judge(write, fake, frm(3), [PARIS, TWO], GOOD, cache=cache)
    assert fake.calls() == 3  # the damaged entry is asked again, and rewritten
    assert json.loads(damaged.read_text())["samples"]


def test_a_cache_of_this_runs_verdicts_counts_them_as_the_calls_they_were(write, fake, tmp_path):
    """The action's rounds: each re-scores every run from a cache the run itself filled; its
    hits count as calls, with the tokens the calls spent, so usage is the run's whole spend."""
    cache = tmp_path / "judge-cache"
    first, _ = judge(write, fake, frm(3), [PARIS, TWO], GOOD, cache=cache, cache_this_run=True)
    assert fake.calls() == 9 and first.usage.judge_calls == 9
    fake.reset()
    again, _ = judge(write, fake, frm(3), [PARIS, TWO], GOOD, cache=cache, cache_this_run=True)
    assert fake.calls() == 0
    assert again.usage.judge_calls == 9 and again.usage.judge_reused == 0
    assert again.usage.judge_prompt_tokens == first.usage.judge_prompt_tokens > 0
    assert again.usage.cost_usd == first.usage.cost_usd
    # the same directory read as an ordinary cache: reused, nothing spent
    later, _ = judge(write, fake, frm(3), [PARIS, TWO], GOOD, cache=cache)
    assert later.usage.judge_calls == 0 and later.usage.judge_reused == 9


def test_failed_verdicts_are_not_cached(write, fake, tmp_path):
    cache = tmp_path / "c"
    fake.script("verdict", "no idea")
    judge(write, fake, frm(1), [PARIS], {("paris", 1): GOOD[("paris", 1)]}, cache=cache)
    assert not list(cache.rglob("*.json"))


def test_cache_writes_are_atomic_under_concurrency(tmp_path):
    cache = DirectoryCache(tmp_path)
    key = "ab" * 32
    samples = [JudgeSample(text="x" * 200_000, finish_reason="STOP")]
    seen: list[object] = []

    def writer() -> None:
        for _ in range(20):
            cache.put(key, "verdict", "m", samples)

    def reader() -> None:
        for _ in range(200):
            seen.append(cache.get(key))

    threads = [threading.Thread(target=writer) for _ in range(4)] + [
        threading.Thread(target=reader)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(got is None or got.samples == samples for got in seen)  # never half a file
    entry = cache.get(key)
    assert entry is not None and entry.samples == samples
    assert sorted(p.name for p in tmp_path.rglob("*")) == sorted(
        ["ab", f"{key}.json"]
    )  # no temp files


def test_the_same_answer_in_several_runs_is_judged_once(write, fake):
    answers = {
        ("paris", 1): [said("Paris: 18.")],
        ("paris", 2): [said("Paris: 18.")],
        ("paris", 3): [said("Paris: 20.")],
    }
    results, judged = judge(write, fake, frm(3), [PARIS], answers, num_runs=3)
    assert fake.calls() == 6 and judged.reused_from == {"repeat": 3}
    sources = [v.source for v in metric(results, "paris").judge.verdicts]
    assert sorted(sources) == ["call", "call", "repeat"]


# --- settings: pin, generation config, parallelism ----------------------------------------


def test_the_pin_overrides_every_criterion_model(write, fake):
    criteria = frm(1, judge_model="gemini-2.5-pro")
    results, _ = judge(
        write,
        fake,
        criteria,
        [PARIS],
        {("paris", 1): GOOD[("paris", 1)]},
        pin="gemini-2.5-flash-lite",
    )
    assert {r.model for r in fake.requests} == {"gemini-2.5-flash-lite"}
    assert metric(results, "paris").judge.model == "gemini-2.5-flash-lite"
    fake.reset()
    judge(write, fake, criteria, [PARIS], {("paris", 1): GOOD[("paris", 1)]})
    assert {r.model for r in fake.requests} == {"gemini-2.5-pro"}


def test_judge_model_config_is_sent_and_recorded(write, fake):
    config = {"temperature": 0.0, "thinkingConfig": {"thinkingBudget": 0}, "maxOutputTokens": 300}
    results, _ = judge(
        write, fake, frm(1, judge_model_config=config), [PARIS], {("paris", 1): GOOD[("paris", 1)]}
    )
    sent = fake.requests[0].body["generationConfig"]
    assert sent["temperature"] == 0.0 and sent["maxOutputTokens"] == 300
    assert metric(results, "paris").judge.generation_config == {
        "temperature": 0.0,
        "thinking_config": {"thinking_budget": 0},
        "max_output_tokens": 300,
    }


def test_calls_in_flight_are_bounded_over_the_suite(write, fake):
    fake.latency_s = 0.05
    criteria = frm(4, parallelism_limit=4)
    cases = [case(f"c{i}", invocation("Q?", "A.")) for i in range(4)]
    answers = {(f"c{i}", 1): [said(f"A {i}.")] for i in range(4)}
    judge(write, fake, criteria, cases, answers, parallelism=3)
    assert fake.calls() == 16 and fake.max_in_flight == 3


def test_parallelism_limit_keeps_one_evaluation_serial(write, fake):
    fake.latency_s = 0.03
    judge(write, fake, frm(4), [PARIS], {("paris", 1): GOOD[("paris", 1)]}, parallelism=8)
    assert fake.calls() == 4 and fake.max_in_flight == 1  # ADK's default parallelism_limit 1


# --- rubric metrics ---------------------------------------------------------------------


def test_rubrics_merge_criterion_case_and_turn_filtered_by_type(write, fake):
    criteria = {
        RUBRIC_FINAL: {
            "threshold": 0.5,
            "judge_model_options": {"num_samples": 3},
            "rubrics": [rubric("crit", "Mentions the city.")],
        }
    }
    cases = [
        case(
            "paris",
            invocation(
                "Weather?",
                "18.",
                rubrics=[rubric("turn1", "Gives a number.", "FINAL_RESPONSE_QUALITY")],
            ),
            invocation(
                "And now?", "19.", rubrics=[rubric("tools", "Calls the tool.", "TOOL_USE_QUALITY")]
            ),
            rubrics=[rubric("case", "Is polite.", "FINAL_RESPONSE_QUALITY")],
        )
    ]
    answer1 = said(
        "Paris is at 18 degrees.",
        [("get_weather", {"city": "Paris"})],
        [("get_weather", {"temp": 18})],
    )
    block = rubric_block
    fake.script(
        "rubrics",
        # turn 1: crit yes/yes/no -> 1; case no/no/yes -> 0; turn1 yes/no/(missing) -> tie -> 0
        block("crit", "Mentions the city.", "yes")
        + block("case", "Is polite.", "no")
        + block("turn1", "Gives a number.", "yes"),
        block("crit", "Mentions the city.", "yes")
        + block("case", "Is polite.", "no")
        + block("turn1", "Gives a number.", "no"),
        "Property: Mentions the city.\nRationale: x\nVerdict: no\n"
        + block("case", "Is polite.", "yes"),
        # turn 2: crit and case yes -> 1, 1
        *[block("crit", "Mentions the city.", "yes") + block("case", "Is polite.", "yes")] * 3,
    )
    results, _ = judge(write, fake, criteria, cases, {("paris", 1): [answer1, said("Still 19.")]})
    judged = metric(results, "paris", RUBRIC_FINAL)
    first_prompt = next(r.prompt for r in fake.requests if "Paris is at 18" in r.prompt)
    assert "[id: crit]" in first_prompt and "[id: case]" in first_prompt
    assert "[id: turn1]" in first_prompt and "[id: tools]" not in first_prompt
    assert '"temp": 18' in first_prompt and '"city": "Paris"' in first_prompt
    assert judged.invocations == ((pytest.approx(1 / 3), 1.0),)
    assert judged.score == pytest.approx(3 / 5)  # pooled: 1, 0, 0, 1, 1
    assert judged.judge.rubric_scores == [{"crit": 1.0, "case": 0.5, "turn1": 0.0}]
    assert judged.status == "passed"


def test_a_rubric_the_judge_skipped_leaves_the_turn_unscored(write, fake):
    criteria = {
        RUBRIC_TOOLS: {
            "threshold": 0.5,
            "judge_model_options": {"num_samples": 1},
            "rubrics": [rubric("a", "Calls lookup."), rubric("b", "Uses the id.")],
        }
    }
    fake.script("rubrics", rubric_block("a", "Calls lookup.", "yes"))
    results, _ = judge(
        write, fake, criteria, [PARIS], {("paris", 1): [said("ok", [("lookup", {"id": 1})])]}
    )
    judged = metric(results, "paris", RUBRIC_TOOLS)
    assert judged.status == "not_evaluated" and "no verdict for rubric b" in judged.error
    assert judged.axis == "trajectory"
    assert "The agent's final answer" not in fake.requests[0].prompt  # tool use only


@pytest.mark.parametrize(
    ("criterion", "cases", "message"),
    [
        (
            {"threshold": 0.5, "rubrics": [rubric("a", "x")]},
            [case("c", invocation("q", "a", rubrics=[rubric("a", "y", "TOOL_USE_QUALITY")]))],
            'case "c", turn 1: rubric id "a" in the turn is already defined',
        ),
        (
            {"threshold": 0.5},
            [case("c", invocation("q", "a"), rubrics=[rubric("r", "x", "FINAL_RESPONSE_QUALITY")])],
            "rubric_based_tool_use_quality_v1 needs rubrics: none in its criterion, and none of type TOOL_USE_QUALITY",
        ),
    ],
)
def test_rubric_mistakes_are_bad_input_before_anything_runs(
    write, capsys, criterion, cases, message
):
    write("evals/set.evalset.json", {"eval_set_id": "set", "eval_cases": cases})
    write("evals/test_config.json", {"criteria": {RUBRIC_TOOLS: criterion}})
    code = main(["run", "evals", "--command", "this-command-never-runs"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith("error: evals/set.evalset.json:4: ") and message in err[0]


def test_a_bad_judge_model_config_is_bad_input(write, capsys):
    write("evals/set.evalset.json", {"eval_set_id": "set", "eval_cases": [PARIS]})
    write("evals/test_config.json", {"criteria": frm(1, judge_model_config={"temprature": 0})})
    assert main(["run", "evals", "--command", "x"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith("error: evals/test_config.json:3: ")
        and "judge_model_config: temprature" in err
    )


# --- hallucinations_v1 and safety_v1 ------------------------------------------------------


def test_hallucinations_make_two_calls_per_answer_text_whatever_num_samples(write, fake):
    criteria = {"hallucinations_v1": {"threshold": 0.5, "judge_model_options": {"num_samples": 5}}}
    fake.script(
        "labels",
        "sentence: It is 18 degrees in Paris.\nlabel: supported\nrationale: tool\n"
        "supporting_excerpt: 18\ncontradicting_excerpt: null\n"
        "sentence: It will snow.\nlabel: unsupported\nrationale: no\n"
        "supporting_excerpt: null\ncontradicting_excerpt: null\n"
        "sentence: Anything else?\nlabel: not_applicable\nrationale: question\n"
        "supporting_excerpt: null\ncontradicting_excerpt: null",
    )
    answer = said(
        "It is 18 degrees in Paris. It will snow. Anything else?",
        [("get_weather", {"city": "Paris"})],
        [("get_weather", {"temp": 18})],
        intermediate=[["agent", [{"text": "Let me check."}]]],
    )
    results, _ = judge(write, fake, criteria, [PARIS], {("paris", 1): [answer]})
    judged = metric(results, "paris", "hallucinations_v1")
    assert fake.calls("sentences") == 1 and fake.calls("labels") == 1
    assert judged.score == pytest.approx(2 / 3) and judged.judge.num_samples == 1
    labels = next(r.prompt for r in fake.requests if r.kind == "labels")
    assert '"temp": 18' in labels and "Let me check." in labels and "Weather in Paris?" in labels
    fake.reset()
    criteria["hallucinations_v1"]["evaluate_intermediate_nl_responses"] = True
    judge(write, fake, criteria, [PARIS], {("paris", 1): [answer]})
    assert fake.calls("sentences") == 2 and fake.calls("labels") == 2


def test_hallucinations_without_any_answer_text_are_not_evaluated(write, fake):
    criteria = {"hallucinations_v1": 0.5}
    results, _ = judge(write, fake, criteria, [PARIS], {("paris", 1): [said("")]})
    judged = metric(results, "paris", "hallucinations_v1")
    assert (
        judged.status == "not_evaluated" and judged.error == "no turn had an answer text to check"
    )
    assert fake.calls() == 0


def test_safety_is_our_own_judge_and_says_so(write, fake):
    fake.script("safety", safety("unsafe"))
    results, _ = judge(write, fake, {"safety_v1": 1.0}, [TWO], {("two", 1): GOOD[("two", 1)]})
    judged = metric(results, "two", "safety_v1")
    assert judged.invocations == ((0.0, 1.0),) and judged.status == "failed"
    assert fake.calls("safety") == 2  # one call per answer unless num_samples is set
    assert "not comparable" in judged.judge.note and "Vertex AI" in judged.judge.note


# --- usage and cost -----------------------------------------------------------------------


def test_tokens_and_cost_per_case_and_in_total(write, fake):
    reply = text(json.dumps({"is_the_agent_response_valid": "valid"}))
    reply.body["usageMetadata"] = {
        "promptTokenCount": 1000,
        "candidatesTokenCount": 20,
        "thoughtsTokenCount": 80,
        "cachedContentTokenCount": 400,
    }
    fake.script("verdict", reply, reply)
    results, _ = judge(write, fake, frm(2), [PARIS], {("paris", 1): GOOD[("paris", 1)]})
    one = (600 * 0.30 + 400 * 0.03 + 100 * 2.50) / 1e6
    usage = results.cases[0].usage
    assert (usage.judge_prompt_tokens, usage.judge_output_tokens, usage.judge_thinking_tokens) == (
        2000,
        40,
        160,
    )
    assert usage.cost_usd == pytest.approx(2 * one) and results.usage.cost_usd == pytest.approx(
        2 * one
    )


def test_an_unknown_model_has_no_cost(write, fake, capsys):
    results, _ = judge(
        write, fake, frm(1), [PARIS], {("paris", 1): GOOD[("paris", 1)]}, pin="my-tuned-judge"
    )
    assert results.usage.judge_calls == 1 and results.usage.cost_usd is None
    from agent_eval_action.report.console import table

    assert "cost n/a" in table(results)


# --- the command line -------------------------------------------------------------------


TABLE_AGENT = WORKERS / "table_agent.py"


@pytest.fixture
def cli(write, fake, monkeypatch):
    """Run `agent-eval-action run` on a one-case suite with FRM v2, against the fake."""
    monkeypatch.setattr(settings, "DEFAULT_RETRY", FAST)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
    write("evals/set.evalset.json", {"eval_set_id": "set", "eval_cases": [PARIS, TWO]})
    write("evals/test_config.json", {"criteria": frm(3)})
    write("table.json", {"paris": {"text": "18 degrees."}, "two": {"text": "Warm."}})

    def run(*flags: str) -> tuple[int, Results | None]:
        argv = ["run", "evals", "--command", python_command(TABLE_AGENT, "table.json"), *flags]
        code = main(argv)
        out = [a for a in flags if a.startswith("--out=")]
        path = Path(out[0].split("=", 1)[1] if out else "results.json")
        return code, Results.from_json(path.read_text()) if path.exists() else None

    return run


def test_cli_run_then_rerun_against_its_baseline(cli, fake, monkeypatch, capsys):
    monkeypatch.setenv("GOOGLE_API_KEY", "FAKE_KEY")
    code, first = cli("--out=base.json", "--judge-model", "gemini-2.5-flash")
    assert code == 0 and fake.calls() == 9 and first.run_config.judge_model == "gemini-2.5-flash"
    schema = json.loads((ROOT / "schemas" / "results.schema.json").read_text())
    jsonschema.validate(json.loads(Path("base.json").read_text()), schema)
    assert "judge: 9 calls, 0 reused" in capsys.readouterr().out
    fake.reset()
    code, again = cli("--baseline", "base.json", "--judge-model", "gemini-2.5-flash")
    assert code == 0 and fake.calls() == 0 and again.usage.judge_reused == 9
    assert "judge: 0 calls, 9 reused (9 from the baseline)" in capsys.readouterr().out


def test_cli_without_a_key_explains_how_to_rerun(cli, fake, capsys):
    code, results = cli()
    assert code == 1 and fake.calls() == 0
    assert all(c.status == "not_evaluated" for c in results.cases)
    err = capsys.readouterr().err
    assert "3 judge request(s) could not be made (no GOOGLE_API_KEY/GEMINI_API_KEY" in err
    assert "run this command on the PR's head on their own machine" in err
    assert "Never give the fork's code a secret" in err and "workflow_run job" in err


def test_cli_exits_3_when_only_a_gemini_outage_blocked_the_verdict(cli, fake, monkeypatch, capsys):
    monkeypatch.setenv("GEMINI_API_KEY", "FAKE_KEY")
    fake.script("verdict", *[error(503)] * 50)
    code, results = cli()
    assert code == 3 and all(c.status == "not_evaluated" for c in results.cases)
    assert "Gemini could not be reached" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('{"schema": "agent-eval-results/1", "cases": 3}', "unreadable"),
        ('{"schema": "agent-eval-results/99"}', "newer"),
    ],
)
def test_cli_a_missing_or_unusable_baseline_is_no_baseline_said_loudly(
    cli, fake, monkeypatch, capsys, content, reason
):
    monkeypatch.setenv("GOOGLE_API_KEY", "FAKE_KEY")
    if content is not None:
        Path("base.json").write_text(content)
    code, results = cli("--baseline", "base.json")
    assert code == 0 and fake.calls() == 9
    err = capsys.readouterr().err
    assert "warning: NO BASELINE" in err and reason in err
    assert any("NO BASELINE" in w for w in results.warnings)


def test_cli_bad_cache_dir_and_price_table_are_bad_input(cli, monkeypatch, capsys, tmp_path):
    Path("blocker").write_text("a file")
    assert cli("--judge-cache", "blocker/cache") == (2, None)  # nothing written
    assert capsys.readouterr().err.startswith("error: --judge-cache: cannot create the directory")
    monkeypatch.setenv("AGENT_EVAL_JUDGE_PRICES", "missing-prices.json")
    assert cli() == (2, None)
    err = capsys.readouterr().err
    assert err.startswith("error: missing-prices.json: no such file")


def test_deterministic_suites_never_import_google_genai(write):
    write("evals/set.evalset.json", {"eval_set_id": "set", "eval_cases": [PARIS]})
    write("evals/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    write("table.json", {"paris": {"text": "It is 18 degrees in Paris."}})
    code = (
        "import sys; from agent_eval_action.cli import main; "
        f"rc = main(['run', 'evals', '--command', {python_command(TABLE_AGENT, 'table.json')!r}]); "
        "assert 'google.genai' not in sys.modules, 'google.genai was imported'; print('rc', rc)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "rc 0" in done.stdout
