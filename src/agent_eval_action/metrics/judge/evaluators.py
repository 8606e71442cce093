"""One evaluator per judged metric: build the prompts of a case-run, ask the judge, read
and aggregate its verdicts with ADK's rules (aggregate.py), and say what went wrong.

Unlike ADK, a turn whose judging failed (an API error after retries, no key, or no
readable verdict in any sample) leaves the run without a score (`not_evaluated`):
ADK would drop that turn and score the others, which can pass a case on partial
evidence.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from ...evalset.config import Criterion
from ...evalset.models import EvalCase, Invocation
from ...results import JudgeRecord, JudgeVerdict, Usage
from ...traces import ActualTurn
from ..registry import RunScore, mean
from .aggregate import label_score, majority, pooled_rubric_score, rubric_means, vote_rubrics
from .inputs import (
    answer_text,
    content_text,
    developer_instructions,
    grounding_metadata,
    hallucination_context,
    intermediate_texts,
    reference_text,
    tool_declarations,
    tool_steps,
)
from .outcome import JudgedRun
from .parsing import (
    PARSER_VERSIONS,
    normalize_property,
    parse_labels,
    parse_rubric_answers,
    parse_safety,
    parse_sentences,
    parse_validity,
)
from .prompts import properties_text, template
from .rubrics import effective_rubrics
from .service import Answer, Ask, JudgeService
from .settings import DEFAULT_JUDGE_MODEL, generation_config, user_retry

_T = TypeVar("_T")

SAFETY_NOTE = (
    "safety_v1 here is this tool's own Gemini judge with its own harmlessness rubric; "
    "ADK's safety_v1 calls Vertex AI's evaluation service, so the scores are not comparable"
)
HALLUCINATIONS_NOTE = (
    "num_samples is not used, as in ADK: one call splits each answer text into sentences, "
    "one labels them"
)
NOTHING_TO_CHECK = "no turn had an answer text to check"

# metric -> (the requests it makes, its prompt templates)
REQUESTS = {
    "final_response_match_v2": (("verdict",), ("final_response_match_v2",)),
    "rubric_based_final_response_quality_v1": (
        ("rubrics",),
        ("rubric_based_final_response_quality_v1",),
    ),
    "rubric_based_tool_use_quality_v1": (("rubrics",), ("rubric_based_tool_use_quality_v1",)),
    "hallucinations_v1": (
        ("sentences", "labels"),
        ("hallucinations_v1_sentences", "hallucinations_v1_labels"),
    ),
    "safety_v1": (("safety",), ("safety_v1",)),
}


def _num_samples(metric: str, criterion: Criterion) -> int:
    options = criterion.judge_model_options
    if metric == "hallucinations_v1":
        return 1
    if metric == "safety_v1":  # ours: one call per answer unless num_samples is set
        return options.num_samples if options and "num_samples" in options.model_fields_set else 1
    return options.num_samples if options is not None else 5


def judge_header(metric: str, criterion: Criterion, model_pin: str | None) -> JudgeRecord:
    """How a metric is judged under a criterion: model, prompt and parser versions, config."""
    options = criterion.judge_model_options
    requests, templates = REQUESTS[metric]
    note = {"safety_v1": SAFETY_NOTE, "hallucinations_v1": HALLUCINATIONS_NOTE}.get(metric)
    return JudgeRecord(
        model=model_pin or (options.judge_model if options else DEFAULT_JUDGE_MODEL),
        prompt_version="+".join(template(name).label for name in templates),
        parser_version="+".join(f"{r}@{PARSER_VERSIONS[r]}" for r in requests),
        num_samples=_num_samples(metric, criterion),
        generation_config=generation_config(options.judge_model_config if options else None),
        note=note,
    )


@dataclass
class Evaluation:
    """One judged metric on one finished case-run."""

    metric: str
    criterion: Criterion
    header: JudgeRecord
    case: EvalCase
    run: int
    expected: Sequence[Invocation]
    turns: Sequence[ActualTurn]
    service: JudgeService

    def __post_init__(self) -> None:
        options = self.criterion.judge_model_options
        self.limit = asyncio.Semaphore(options.parallelism_limit if options else 1)
        self.retry = user_retry(options.judge_model_config if options else None)
        self.verdicts: list[JudgeVerdict] = []
        self.problems: list[tuple[int, str]] = []  # (turn, why it has no score)
        self.outage = False
        self.no_key = 0
        self.usage = Usage(cost_usd=0.0)

    async def each_turn(
        self, judge_turn: Callable[[int, Invocation, ActualTurn], Awaitable[_T]]
    ) -> list[_T]:
        """judge_turn(index, expected, actual) for every turn at once, results in turn order."""
        pairs = enumerate(zip(self.expected, self.turns, strict=True))
        return list(await asyncio.gather(*(judge_turn(i, want, got) for i, (want, got) in pairs)))

    def ask(self, request: str, prompt: str) -> Ask:
        samples = self.header.num_samples if request in ("verdict", "rubrics", "safety") else 1
        return Ask(
            request,
            prompt,
            self.header.model,
            self.header.generation_config,
            samples,
            self.limit,
            self.retry,
        )

    async def judge(
        self,
        request: str,
        prompt: str,
        turn: int,
        read: Callable[[Answer], float | None],
        step: int | None = None,
        scored: bool = True,
    ) -> tuple[Answer, float | None]:
        """Ask, read the answer, record the verdict. `read` raises NoVerdict, or returns
        None, when the answer holds no verdict (unless the request is not `scored`)."""
        ask = self.ask(request, prompt)
        answer = await self.service.ask(ask)
        self.usage.add(answer.usage)
        score, error = None, answer.error
        if error is None:
            try:
                score = read(answer)
            except NoVerdict as err:
                error = str(err)
            if error is None and score is None and scored:
                error = _unreadable(answer)
        self.verdicts.append(
            JudgeVerdict(
                key=answer.key,
                run=self.run,
                turn=turn,
                request=request,
                step=step,
                source=answer.source,  # type: ignore[arg-type]
                samples=answer.samples,
                score=score,
                error=error,
            )
        )
        if error is None:
            self.service.keep(answer, ask)
        else:
            self.problems.append((turn, error))
            self.outage = self.outage or answer.outage
            self.no_key += answer.no_key
        return answer, score

    def result(
        self,
        overall: float | None,
        per_turn: list[float | None],
        rubric_scores: dict[str, float | None] | None = None,
        nothing: str | None = None,
    ) -> JudgedRun:
        if self.problems:
            score = RunScore(None, per_turn, _summary(self.problems))
        else:
            score = RunScore(overall, per_turn, nothing if overall is None else None)
        return JudgedRun(score, self.verdicts, rubric_scores, self.outage, self.no_key, self.usage)


class NoVerdict(Exception):
    """The judge answered, but not with a usable verdict; the message says why."""


def _unreadable(answer: Answer, what: str = "no verdict") -> str:
    reasons = Counter(s.finish_reason or "no text" for s in answer.samples if not s.text)
    detail = ", ".join(f"{r} x{n}" if n > 1 else r for r, n in sorted(reasons.items()))
    return f"{what} could be read from the judge's answer" + (
        f" (finish reason: {detail})" if detail else ""
    )


def _summary(problems: list[tuple[int, str]]) -> str:
    """'turn 1: why; turns 2, 3: why', each reason once, in turn order."""
    by_reason: dict[str, list[int]] = {}
    for turn, reason in sorted(problems):
        turns = by_reason.setdefault(reason, [])
        if turn + 1 not in turns:
            turns.append(turn + 1)
    return "; ".join(
        f"turn{'s' if len(turns) > 1 else ''} {', '.join(map(str, turns))}: {reason}"
        for reason, turns in by_reason.items()
    )


async def final_response_match(ev: Evaluation) -> JudgedRun:
    """final_response_match_v2: is the answer as correct as the reference? Majority vote."""
    include = bool(getattr(ev.criterion, "include_intermediate_responses_in_final", False))
    prompt = template("final_response_match_v2")

    async def turn(index: int, want: Invocation, got: ActualTurn) -> float | None:
        text = prompt.render(
            user_message=content_text(want.user_content),
            agent_answer=answer_text(got, include),
            reference_answer=reference_text(want, include),
        )
        _, score = await ev.judge(
            "verdict", text, index, lambda a: majority(parse_validity(s.text) for s in a.samples)
        )
        return score

    scores = await ev.each_turn(turn)
    return ev.result(mean(scores), list(scores))


def _rubric_votes(
    answer: Answer, rubric_ids: list[str], by_text: dict[str, str]
) -> dict[str, float | None]:
    samples = []
    for sample in answer.samples:
        scores: dict[str, float | None] = {}
        for found in parse_rubric_answers(sample.text):
            rid = found.rubric_id if found.rubric_id in rubric_ids else None
            rid = rid or by_text.get(normalize_property(found.property_text))
            if rid is not None and rid not in scores:
                scores[rid] = found.score
        samples.append(scores)
    return vote_rubrics(rubric_ids, samples)


async def rubric_quality(ev: Evaluation) -> JudgedRun:
    """The two rubric metrics: per rubric a majority vote, pooled over the turns."""
    include = bool(getattr(ev.criterion, "include_intermediate_responses_in_final", False))
    prompt = template(ev.metric)
    final_answer = ev.metric == "rubric_based_final_response_quality_v1"

    async def turn(index: int, want: Invocation, got: ActualTurn) -> dict[str, float | None]:
        rubrics = effective_rubrics(ev.metric, ev.criterion, ev.case, want)
        listed = [(r.rubric_id, r.rubric_content.text_property or "") for r in rubrics]
        values = {
            "tool_declarations": tool_declarations(got),
            "user_message": content_text(want.user_content),
            "tool_steps": tool_steps(got),
            "properties": properties_text(listed),
        }
        if final_answer:
            values |= {
                "developer_instructions": developer_instructions(got),
                "grounding_metadata": grounding_metadata(got),
                "final_answer": answer_text(got, include),
            }
        ids = [rid for rid, _ in listed]
        by_text = {normalize_property(text): rid for rid, text in listed}
        votes: dict[str, float | None] = {}

        def read(answer: Answer) -> float | None:
            votes.update(_rubric_votes(answer, ids, by_text))
            missing = [rid for rid, score in votes.items() if score is None]
            if missing and len(missing) < len(ids):  # stricter than ADK, which drops them
                raise NoVerdict(f"the judge gave no verdict for rubric {', '.join(missing)}")
            return None if missing else mean(list(votes.values()))

        await ev.judge("rubrics", prompt.render(**values), index, read)
        return votes

    turns = await ev.each_turn(turn)
    per_turn = [mean(list(votes.values())) for votes in turns]
    return ev.result(pooled_rubric_score(turns), per_turn, rubric_means(turns))


async def hallucinations(ev: Evaluation) -> JudgedRun:
    """hallucinations_v1: split each answer text into sentences, label each against the
    turn's context; the share of supported or not-applicable sentences."""
    split, label = template("hallucinations_v1_sentences"), template("hallucinations_v1_labels")
    every_text = bool(getattr(ev.criterion, "evaluate_intermediate_nl_responses", False))

    def read_sentences(answer: Answer) -> None:
        if not parse_sentences(answer.samples[0].text):
            raise NoVerdict(_unreadable(answer, "no sentences"))

    async def step(index: int, number: int, text: str, context: str) -> float | None:
        answer, _ = await ev.judge(
            "sentences", split.render(response=text), index, read_sentences, number, scored=False
        )
        sentences = parse_sentences(answer.samples[0].text) if answer.samples else []
        if answer.error is not None or not sentences:
            return None
        listed = "\n".join(f"<sentence>{s}</sentence>" for s in sentences)
        _, score = await ev.judge(
            "labels",
            label.render(context=context, sentences=listed),
            index,
            lambda a: label_score(x.label for x in parse_labels(a.samples[0].text)),
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


async def safety(ev: Evaluation) -> JudgedRun:
    """safety_v1 (ours): is each answer harmless? 1 safe, 0 unsafe; mean over turns."""
    prompt = template("safety_v1")

    async def turn(index: int, want: Invocation, got: ActualTurn) -> float | None:
        reply = content_text(got.final_response)
        if not reply:
            return None
        text = prompt.render(user_message=content_text(want.user_content), reply=reply)
        _, score = await ev.judge(
            "safety", text, index, lambda a: majority(parse_safety(s.text) for s in a.samples)
        )
        return score

    scores = await ev.each_turn(turn)
    return ev.result(mean(scores), list(scores), nothing=NOTHING_TO_CHECK)


EVALUATORS: dict[str, Callable[[Evaluation], Awaitable[JudgedRun]]] = {
    "final_response_match_v2": final_response_match,
    "rubric_based_final_response_quality_v1": rubric_quality,
    "rubric_based_tool_use_quality_v1": rubric_quality,
    "hallucinations_v1": hallucinations,
    "safety_v1": safety,
}
