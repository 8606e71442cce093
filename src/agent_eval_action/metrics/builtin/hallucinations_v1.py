"""hallucinations_v1 (LLM-judged): split each answer text into sentences, label each one
against what the agent knew at that point; a text scores the share of its labelled
sentences that are supported or not applicable, a turn the mean of its texts, the run the
mean of the turns that had a text to check."""

from __future__ import annotations

import asyncio

from ...evalset.models import Invocation
from ...traces import ActualTurn
from ..criteria import HallucinationsCriterion, JudgeModelOptions
from ..judge.aggregate import label_score
from ..judge.inputs import content_text, hallucination_context, intermediate_texts
from ..judge.metric import (
    NOTHING_TO_CHECK,
    Evaluation,
    JudgedMetric,
    NoVerdict,
    Request,
    unreadable,
)
from ..judge.outcome import JudgedRun
from ..judge.parsing import parse_labels, parse_sentences
from ..judge.service import Answer
from ..registry import mean, register

SENTENCES = Request(
    name="sentences",
    template="hallucinations_v1_sentences",
    parse=parse_sentences,
    parser_version="1",
    sampled=False,
)
LABELS = Request(
    name="labels",
    template="hallucinations_v1_labels",
    parse=parse_labels,
    parser_version="1",
    sampled=False,
)
NOTE = (
    "num_samples is not used, as in ADK: one call splits each answer text into sentences, "
    "one labels them"
)


def one_sample(options: JudgeModelOptions) -> int:
    return 1


async def evaluate(ev: Evaluation) -> JudgedRun:
    criterion = ev.criterion
    every_text = (
        isinstance(criterion, HallucinationsCriterion)
        and criterion.evaluate_intermediate_nl_responses
    )

    def read_sentences(answer: Answer) -> None:
        if not SENTENCES.parse(answer.samples[0].text):
            raise NoVerdict(unreadable(answer, "no sentences"))

    async def step(index: int, number: int, text: str, context: str) -> float | None:
        answer, _ = await ev.judge(
            SENTENCES, SENTENCES.render(response=text), index, read_sentences, number, scored=False
        )
        sentences = SENTENCES.parse(answer.samples[0].text) if answer.samples else []
        if answer.error is not None or not sentences:
            return None
        listed = "\n".join(f"<sentence>{s}</sentence>" for s in sentences)
        _, score = await ev.judge(
            LABELS,
            LABELS.render(context=context, sentences=listed),
            index,
            lambda a: label_score(x.label for x in LABELS.parse(a.samples[0].text)),
            step=number,
        )
        return score

    async def turn(index: int, want: Invocation, got: ActualTurn) -> float | None:
        user = content_text(want.user_content)
        earlier = intermediate_texts(got)
        texts = []
        if every_text:
            texts += [(t, hallucination_context(user, got, i)) for i, t in enumerate(earlier)]
        if final := content_text(got.final_response):
            texts.append((final, hallucination_context(user, got)))
        if not texts:
            return None  # nothing to check in this turn (ADK: not evaluated, and skipped)
        scores = await asyncio.gather(*(step(index, n, t, c) for n, (t, c) in enumerate(texts)))
        return mean(list(scores))

    scores = await ev.each_turn(turn)
    return ev.result(mean(scores), list(scores), nothing=NOTHING_TO_CHECK)


register(
    JudgedMetric(
        name="hallucinations_v1",
        kind="response",
        criterion=HallucinationsCriterion,
        requests=(SENTENCES, LABELS),
        evaluate=evaluate,
        num_samples=one_sample,
        note=NOTE,
        # every intermediate text of a turn is checked: as many as the agent writes
        calls_bounded=lambda c: not getattr(c, "evaluate_intermediate_nl_responses", False),
    )
)
