"""Our judged scores against ADK's own evaluators, both asking the same fake Gemini, which
answers each turn's samples from one random script: the same verdicts must aggregate to
the same per-turn and overall scores (majority votes, ties, per-rubric votes, pooling).

The prompts differ (ours are our own), so the fake recognises a turn by a marker in the
agent's answer. Scripts avoid the one place where we are deliberately stricter than ADK
(a turn without any readable verdict: ADK skips it, we leave the metric unscored).
"""

from __future__ import annotations

import asyncio
import random
import threading

import pytest
from fakes.gemini import FakeGemini
from test_judge import case, invocation, judge, metric, rubric, said

pytest.importorskip("google.adk.evaluation")

from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_metrics import (
    EvalMetric,
    JudgeModelOptions,
    LlmAsAJudgeCriterion,
    RubricsBasedCriterion,
)
from google.adk.evaluation.eval_rubrics import Rubric, RubricContent
from google.adk.evaluation.final_response_match_v2 import (
    FinalResponseMatchV2Evaluator,
)
from google.adk.evaluation.rubric_based_final_response_quality_v1 import (
    RubricBasedFinalResponseQualityV1Evaluator,
)
from google.genai import types

pytestmark = pytest.mark.adk


class Script:
    """Per turn marker, the judge's answers in order; each side gets a fresh copy."""

    def __init__(self, answers: dict[str, list[str]]):
        self.answers = answers
        self._lock = threading.Lock()
        self._left: dict[str, list[str]] = {}

    def fresh(self):
        with self._lock:
            self._left = {marker: list(texts) for marker, texts in self.answers.items()}

        def respond(prompt: str) -> str:
            with self._lock:
                marker = next(m for m in self._left if m in prompt)
                return self._left[marker].pop(0)

        return respond


def _adk_invocations(turns: list[tuple[str, str, str]]):
    def content(text: str, role: str) -> types.Content:
        return types.Content(role=role, parts=[types.Part(text=text)])

    actual = [
        AdkInvocation(user_content=content(u, "user"), final_response=content(a, "model"))
        for u, a, _ in turns
    ]
    expected = [
        AdkInvocation(user_content=content(u, "user"), final_response=content(r, "model"))
        for u, _, r in turns
    ]
    return actual, expected


def _adk(evaluator, turns):
    actual, expected = _adk_invocations(turns)
    result = asyncio.run(evaluator.evaluate_invocations(actual, expected))
    return result.overall_score, [r.score for r in result.per_invocation_results]


@pytest.fixture(scope="module")
def server():
    with FakeGemini() as fake:
        yield fake


@pytest.fixture
def gemini_env(server, monkeypatch):
    """The fake, also for ADK's own judge (which reads the key and base URL from the env)."""
    server.reset()
    monkeypatch.setenv("GOOGLE_API_KEY", "FAKE_KEY")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
    return server


@pytest.mark.parametrize("seed", range(6))
def test_final_response_match_v2_scores_as_adk(write, gemini_env, seed):
    fake = gemini_env
    rng = random.Random(seed)
    samples = rng.randint(1, 5)
    labels = ["valid", "invalid", "true", "false", "almost", "partially", "unsure"]
    turns, answers = [], {}
    for number in range(rng.randint(1, 4)):
        marker = f"ANS-{seed}-{number}"
        votes = [rng.choice(labels) for _ in range(samples)]
        if all(v == "unsure" for v in votes):
            votes[0] = rng.choice(["valid", "invalid"])
        answers[marker] = [
            f'{{"reasoning": "r", "is_the_agent_response_valid": "{v}"}}' for v in votes
        ]
        turns.append((f"question {number}?", f"answer {marker}.", f"reference {number}."))
    script = Script(answers)

    fake.respond("verdict", script.fresh())
    criterion = LlmAsAJudgeCriterion(
        threshold=0.5, judge_model_options=JudgeModelOptions(num_samples=samples)
    )
    adk_overall, adk_turns = _adk(
        FinalResponseMatchV2Evaluator(
            EvalMetric(metric_name="final_response_match_v2", threshold=0.5, criterion=criterion)
        ),
        turns,
    )
    fake.reset()
    fake.respond("verdict", script.fresh())
    ours, _ = judge(
        write,
        fake,
        {
            "final_response_match_v2": {
                "threshold": 0.5,
                "judge_model_options": {"num_samples": samples},
            }
        },
        [case("c", *(invocation(u, r) for u, _, r in turns))],
        {("c", 1): [said(a) for _, a, _ in turns]},
    )
    scored = metric(ours, "c")
    assert list(scored.invocations[0]) == adk_turns
    assert scored.score == pytest.approx(adk_overall, abs=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_rubric_final_response_quality_scores_as_adk(write, gemini_env, seed):
    fake = gemini_env
    rng = random.Random(100 + seed)
    samples = rng.randint(1, 5)
    rubrics = [(f"r{i}", f"The answer has quality {i}.") for i in range(rng.randint(1, 3))]
    turns, answers = [], {}
    for number in range(rng.randint(1, 3)):
        marker = f"ANS-{seed}-{number}"
        texts = [[] for _ in range(samples)]
        for rid, prop in rubrics:
            verdicts = [rng.choice(["yes", "no", "unsure", None]) for _ in range(samples)]
            if not any(v in ("yes", "no") for v in verdicts):
                verdicts[rng.randrange(samples)] = rng.choice(["yes", "no"])
            for sample, verdict in enumerate(verdicts):
                if verdict is not None:  # None: the judge left this rubric out
                    texts[sample].append(
                        f"ID: {rid}\nProperty: {prop}\nRationale: because\nVerdict: {verdict}\n"
                    )
        answers[marker] = ["\n".join(blocks) or "nothing" for blocks in texts]
        turns.append((f"question {number}?", f"answer {marker}.", "unused reference"))
    script = Script(answers)

    fake.respond("rubrics", script.fresh())
    criterion = RubricsBasedCriterion(
        threshold=0.5,
        judge_model_options=JudgeModelOptions(num_samples=samples),
        rubrics=[
            Rubric(rubric_id=rid, rubric_content=RubricContent(text_property=p))
            for rid, p in rubrics
        ],
    )
    adk_overall, adk_turns = _adk(
        RubricBasedFinalResponseQualityV1Evaluator(
            EvalMetric(
                metric_name="rubric_based_final_response_quality_v1",
                threshold=0.5,
                criterion=criterion,
            )
        ),
        turns,
    )
    fake.reset()
    fake.respond("rubrics", script.fresh())
    ours, _ = judge(
        write,
        fake,
        {
            "rubric_based_final_response_quality_v1": {
                "threshold": 0.5,
                "judge_model_options": {"num_samples": samples},
                "rubrics": [rubric(rid, p) for rid, p in rubrics],
            }
        },
        [case("c", *(invocation(u, r) for u, _, r in turns))],
        {("c", 1): [said(a) for _, a, _ in turns]},
    )
    scored = metric(ours, "c", "rubric_based_final_response_quality_v1")
    assert scored.invocations[0] == pytest.approx(adk_turns, abs=1e-9)
    assert scored.score == pytest.approx(adk_overall, abs=1e-9)
