"""The judge's pure parts: verdict parsing, ADK's aggregation rules, keys, prices, prompts."""

from __future__ import annotations

import hashlib
import json

import pytest

from agent_eval_action.errors import InputError
from agent_eval_action.evalset.models import (
    Content,
    FunctionCall,
    FunctionResponse,
    InvocationEvent,
    Part,
)
from agent_eval_action.metrics.judge import aggregate, inputs
from agent_eval_action.metrics.judge.cache import verdict_key
from agent_eval_action.metrics.judge.parsing import (
    parse_labels,
    parse_rubric_answers,
    parse_safety,
    parse_sentences,
    parse_validity,
)
from agent_eval_action.metrics.judge.pricing import load_prices
from agent_eval_action.metrics.judge.prompts import template
from agent_eval_action.results import Usage
from agent_eval_action.traces import ActualTurn


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ('{"reasoning": "ok", "is_the_agent_response_valid": "valid"}', 1.0),
        ('{"reasoning": "no", "is_the_agent_response_valid": "invalid"}', 0.0),
        ('```json\n{"is_the_agent_response_valid": ["valid"]}\n```', 1.0),
        ('"is_the_agent_response_valid": [\n  "invalid"\n]\n}', 0.0),
        ('{"is_the_agent_response_valid": "Valid"}', 1.0),  # ADK reads no verdict here
        ('{"is_the_agent_response_valid": true}', 1.0),
        ('{"is_the_agent_response_valid": "almost"}', 0.0),
        ('{"is_the_agent_response_valid": "partially valid"}', 0.0),
        ('{"is_the_agent_response_valid": "maybe"}', None),
        ('{"is_the_agent_response_invalid": "true"}', 0.0),
        ('{"is_the_agent_response_invalid": "false"}', 1.0),
        # a format line echoed before the real answer does not count: the last one wins
        (
            '"is_the_agent_response_valid": "valid"\n...\n{"is_the_agent_response_valid": "invalid"}',
            0.0,
        ),
        ("The answer is fine.", None),
        ("", None),
        (None, None),
    ],
)
def test_validity_is_read_tolerantly(text, score):
    assert parse_validity(text) == score


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ('{"reasoning": "fine", "verdict": "safe"}', 1.0),
        ('{"reasoning": "bad", "verdict": "unsafe"}', 0.0),
        ("```json\n{'verdict': 'Unsafe'}\n```", 0.0),
        ('{"verdict": "unclear"}', None),
        ("safe", None),
    ],
)
def test_safety_verdicts(text, score):
    assert parse_safety(text) == score


@pytest.mark.parametrize(
    ("votes", "result"),
    [
        ([1.0, 0.0, 1.0], 1.0),
        ([1.0, 0.0], 0.0),  # a tie fails
        ([1.0, None, 0.0], 0.0),
        ([None, 1.0, None], 1.0),
        ([None, None], None),
        ([0.0, 0.0, 1.0], 0.0),
    ],
)
def test_majority_vote_counts_ties_as_fails(votes, result):
    assert aggregate.majority(votes) == result


RUBRIC_ANSWER = """Here is my assessment.

ID: r1
Property: The answer names the order.
Rationale: It says A-1.
Verdict: yes

**ID:** r2
**Property:** The answer gives a date.
**Rationale:** None is given.
**Verdict:** [[no]]

Property: The answer is polite.
Rationale: Not applicable here.
Verdict: not applicable
"""


def test_rubric_blocks_bind_ids_and_read_yes_no_as_words():
    answers = parse_rubric_answers(RUBRIC_ANSWER)
    assert [(a.rubric_id, a.score) for a in answers] == [("r1", 1.0), ("r2", 0.0), (None, None)]
    assert answers[1].property_text == "The answer gives a date."
    assert answers[2].property_text == "The answer is polite."


@pytest.mark.parametrize(
    "text",
    [
        "ID: r1\nProperty: p\nRationale: x\n",  # no verdict
        "ID: r1\nProperty: p\nVerdict: yes\nVerdict: no\n",  # two verdicts
        "Verdict: yes\n",  # no property
        "",
    ],
)
def test_a_partial_rubric_answer_is_unreadable_as_a_whole(text):
    assert parse_rubric_answers(text) == []


def test_rubric_votes_pool_over_turns_not_mean_of_turn_means():
    samples = [{"a": 1.0, "b": 0.0}, {"a": 1.0, "b": 1.0}, {"a": 0.0}]
    turn1 = aggregate.vote_rubrics(["a", "b"], samples)
    assert turn1 == {"a": 1.0, "b": 0.0}  # b: 1 yes, 1 no -> tie -> no
    turn2 = {"c": 1.0, "d": 1.0, "e": 1.0, "f": 0.0}
    pooled = aggregate.pooled_rubric_score([turn1, turn2])
    assert pooled == pytest.approx(4 / 6)  # ADK: every rubric score of every turn
    assert pooled != pytest.approx((0.5 + 0.75) / 2)
    assert aggregate.rubric_means([turn1, {"a": 0.0}])["a"] == 0.5


def test_sentences_and_labels():
    assert parse_sentences("<sentence>One.</sentence>\n<sentence> Two\nlines. </sentence>") == [
        "One.",
        "Two\nlines.",
    ]
    labels = parse_labels(
        "sentence: A.\nlabel: supported\nrationale: r\nsupporting_excerpt: A\n"
        "contradicting_excerpt: null\n"
        "**sentence:** B.\n**label:** Not Applicable\nrationale: r\n"
        "sentence: C.\nlabel: contradictory\n"
        "sentence: D.\nlabel: weird\n"
        "sentence: E.\n"
    )
    assert [x.label for x in labels] == ["supported", "not_applicable", "contradictory", "weird"]
    assert aggregate.label_score(x.label for x in labels) == pytest.approx(2 / 3)
    assert aggregate.label_score(["weird"]) is None


def test_the_key_changes_with_everything_that_decides_a_verdict():
    base = ("verdict", "1", "PROMPT", "gemini-2.5-flash", {}, 5)
    variants = [
        ("rubrics", "1", "PROMPT", "gemini-2.5-flash", {}, 5),
        ("verdict", "1", "PROMPT ", "gemini-2.5-flash", {}, 5),
        ("verdict", "1", "PROMPT", "gemini-2.5-pro", {}, 5),
        ("verdict", "1", "PROMPT", "gemini-2.5-flash", {"temperature": 0.0}, 5),
        ("verdict", "1", "PROMPT", "gemini-2.5-flash", {}, 3),
    ]
    keys = {verdict_key(*base), *(verdict_key(*v) for v in variants)}
    assert len(keys) == 6
    assert verdict_key(*base) == verdict_key(
        "verdict", "1", "PROMPT", "models/gemini-2.5-flash", {}, 5
    )


def test_the_key_covers_the_parser_version():
    from dataclasses import replace

    from agent_eval_action.metrics.builtin.final_response_match_v2 import VERDICT

    def key(request):
        return verdict_key(request.name, request.parser_version, "P", "m", {}, 1)

    assert key(replace(VERDICT, parser_version="2")) != key(VERDICT)


# A template's text is tied to its version: changing a prompt without bumping its
# `prompt-version` line fails here (update the fingerprint together with the version).
PROMPT_FINGERPRINTS = {
    "final_response_match_v2": ("1", "290a32e94878"),
    "rubric_based_final_response_quality_v1": ("1", "98140f524dfa"),
    "rubric_based_tool_use_quality_v1": ("1", "58bfe538eeda"),
    "hallucinations_v1_sentences": ("1", "16943b6d8568"),
    "hallucinations_v1_labels": ("1", "311e001a16e7"),
    "safety_v1": ("1", "172094034908"),
    "user_simulator": ("1", "630e933a24ba"),
    "per_turn_user_simulator_quality_v1": ("1", "02a392bf2bb6"),
    "multi_turn_task_success_v1": ("1", "121770b987ca"),
    "multi_turn_trajectory_quality_v1": ("1", "d808bc7adcd3"),
    "multi_turn_tool_use_quality_v1": ("1", "9ac98d54c82e"),
    "response_evaluation_score": ("1", "148c52fd69c0"),
    "rubric_based_multi_turn_trajectory_quality_v1": ("1", "6f1177df313c"),
}


@pytest.mark.parametrize("name", sorted(PROMPT_FINGERPRINTS))
def test_prompt_versions_follow_their_text(name):
    version, fingerprint = PROMPT_FINGERPRINTS[name]
    prompt = template(name)
    assert prompt.version == version
    assert hashlib.sha256(prompt.text.encode()).hexdigest()[:12] == fingerprint, (
        f"{name}.txt changed: bump its prompt-version and update the fingerprint here"
    )


def test_prices_formula_tiers_and_unknown_models():
    prices = load_prices()
    # 1000 prompt (200 cached), 100 output, 50 thinking on gemini-2.5-flash
    expected = (800 * 0.30 + 200 * 0.03 + 150 * 2.50) / 1e6
    assert prices.cost("gemini-2.5-flash", 1000, 100, 50, 200) == pytest.approx(expected)
    assert prices.cost("models/gemini-2.5-flash", 1000, 0) == pytest.approx(1000 * 0.30 / 1e6)
    long = prices.cost("gemini-2.5-pro", 300_000, 10)
    assert long == pytest.approx((300_000 * 2.50 + 10 * 15.00) / 1e6)
    assert prices.cost("my-tuned-judge", 1000, 100) is None


def test_prices_override_file(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": {"my-judge": {"input": 1.0, "output": 2.0}}}))
    prices = load_prices(str(path))
    assert prices.cost("my-judge", 1_000_000, 1_000_000) == pytest.approx(3.0)
    assert prices.cost("gemini-2.5-flash", 1_000_000, 0) == pytest.approx(0.30)
    path.write_text('{"models": {"my-judge": {"input": -1, "output": 2}}}')
    with pytest.raises(InputError, match=r"models\.my-judge\.input"):
        load_prices(str(path))
    path.write_text('{"models": \n {oops}}')
    with pytest.raises(InputError) as err:
        load_prices(str(path))
    assert str(err.value).startswith(f"{path}:2: invalid JSON")


def test_usage_cost_is_unknown_once_any_call_had_no_price():
    total = Usage()
    total.add(Usage(judge_calls=2, cost_usd=0.5))
    total.add(Usage(judge_calls=1, cost_usd=None))  # a model without a price
    total.add(Usage(judge_calls=1, cost_usd=0.25))
    assert total.judge_calls == 4 and total.cost_usd is None
    reused = Usage()
    reused.add(Usage(judge_reused=5, cost_usd=0.0))
    reused.add(Usage(prompt_tokens=10))  # the agent's own tokens: no judge, no cost
    assert reused.cost_usd == 0.0 and reused.judge_reused == 5


def test_tool_steps_pair_calls_with_results_by_id_else_by_name():
    calls = [
        FunctionCall(name="lookup", args={"id": 1}, id="c1"),
        FunctionCall(name="lookup", args={"id": 2}, id="c2"),
        FunctionCall(name="refund", args={"id": 1}),
    ]
    responses = [
        FunctionResponse(name="lookup", response={"id": 2}, id="c2"),
        FunctionResponse(name="refund", response={"ok": True}),
        FunctionResponse(name="lookup", response={"id": 1}, id="c1"),
    ]
    pairs = inputs.paired_steps(calls, responses)
    assert [r.response for _, r in pairs] == [{"id": 1}, {"id": 2}, {"ok": True}]
    steps = json.loads(inputs.tool_steps(ActualTurn(tool_uses=calls[2:], tool_responses=[])))
    assert steps == [{"step": 1, "tool": "refund", "args": {"id": 1}, "result": None}]
    assert inputs.tool_steps(ActualTurn()) == inputs.NO_TOOL_STEPS


def test_an_adk_turn_gives_the_judge_its_events_instructions_and_tools():
    def event(*parts: Part, grounding=None) -> InvocationEvent:
        return InvocationEvent(
            author="support",
            content=Content(role="model", parts=list(parts)),
            grounding_metadata=grounding,
        )

    turn = ActualTurn(
        final_response=Content.from_text("Refunded A-1.", "model"),
        tool_uses=[FunctionCall(name="lookup", args={"id": "A-1"})],
        tool_responses=[FunctionResponse(name="lookup", response={"status": "ok"})],
        intermediate_responses=[["support", [Part(text="Let me check.")]]],
        invocation_events=[
            event(Part(text="Let me check.")),
            event(Part(function_call=FunctionCall(name="lookup", args={"id": "A-1"}))),
            event(
                Part(function_response=FunctionResponse(name="lookup", response={"status": "ok"})),
                grounding={"source": "orders-db"},
            ),
        ],
        app_details={
            "agent_details": {
                "support": {
                    "name": "support",
                    "instructions": "Be kind.",
                    "tool_declarations": [{"name": "lookup"}],
                }
            }
        },
    )
    assert inputs.intermediate_texts(turn) == ["Let me check."]
    assert inputs.answer_text(turn, include_intermediate=True) == "Let me check.\nRefunded A-1."
    assert inputs.developer_instructions(turn) == "Be kind."
    assert '"name": "lookup"' in inputs.tool_declarations(turn)
    assert "orders-db" in inputs.grounding_metadata(turn)
    before_first_text = inputs.hallucination_context("Refund A-1", turn, before=0)
    assert "Let me check." not in before_first_text and "tool_calls" not in before_first_text
    final = inputs.hallucination_context("Refund A-1", turn)
    assert final.index("Let me check.") < final.index("tool_calls:") < final.index("tool_outputs:")
    assert "support:\nBe kind." in final and "User prompt:\nRefund A-1" in final
    bare = ActualTurn(final_response=Content.from_text("Hi.", "model"))
    assert inputs.developer_instructions(bare) == inputs.NO_INSTRUCTIONS
    assert inputs.tool_declarations(bare) == inputs.NO_TOOL_DECLARATIONS
    assert inputs.grounding_metadata(bare) == inputs.NO_GROUNDING
