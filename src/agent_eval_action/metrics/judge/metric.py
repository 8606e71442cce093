"""An LLM-judged metric, declared once (metrics/builtin/): its requests to the judge (each
with its prompt template, parser and parser version), its sample-count rule, its note, the
evaluator that judges one case-run, and what must hold before any agent runs.

An evaluator builds the prompts of a case-run, asks the judge through an `Evaluation`,
reads and aggregates its verdicts with ADK's rules (aggregate.py), and says what went
wrong. Unlike ADK, a turn whose judging failed (an API error after retries, no key, or
no readable verdict in any sample) leaves the run without a score (`not_evaluated`):
ADK would drop that turn and score the others, which can pass a case on partial evidence.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from ...errors import InputError
from ...evalset.models import Content, EvalCase, Invocation
from ...results import JudgeRecord, JudgeVerdict, Usage
from ...traces import ActualTurn
from ..criteria import Criterion, JudgeCriterion, JudgeModelOptions, judge_options
from ..registry import Metric, RunScore, ScoreRun, mean
from .caps import check_generation, check_retry, judge_model_refusal
from .inputs import content_text
from .outcome import JudgedRun
from .prompts import template
from .service import Answer, Ask, JudgeService
from .settings import generation_config, user_retry

_T = TypeVar("_T")
_V = TypeVar("_V")

JUDGE_NOT_RUN = "the LLM judge did not run for this metric"
NOTHING_TO_CHECK = "no turn had an answer text to check"


@dataclass(frozen=True, kw_only=True)
class Request(Generic[_V]):
    """One kind of question a judged metric asks: rendered from a prompt template
    (prompts/<template>.txt), answered by `parse` (parsing.py). `parser_version` is part of
    every verdict's key: bump it when the parser changes what it reads. `sampled`: asked
    num_samples times (the verdict is the samples' vote), else once."""

    name: str  # in Results' verdicts: verdict, rubrics, sentences, labels, safety
    template: str
    parse: Callable[[str | None], _V]
    parser_version: str
    sampled: bool = True

    def render(self, **values: str) -> str:
        return template(self.template).render(**values)


def adk_num_samples(options: JudgeModelOptions) -> int:
    """ADK's rule: judge_model_options.num_samples, 5 unless set."""
    return options.num_samples


def one_sample_unless_set(options: JudgeModelOptions) -> int:
    """One call per request unless judge_model_options.num_samples is set: the rule of this
    tool's stand-ins for ADK's Vertex AI metrics, which have no samples in ADK."""
    return options.num_samples if "num_samples" in options.model_fields_set else 1


def not_comparable(name: str, how: str) -> str:
    """The note every stand-in for one of ADK's Vertex AI metrics carries (Results' judge
    record, the reports): one policy, docs/adk-differences.md "Vertex AI metrics"."""
    return (
        f"{name} here is this tool's own Gemini judge ({how}); ADK's {name} calls Vertex AI's "
        "evaluation service, so the scores are not comparable with ADK's Vertex score"
    )


def judge_not_run(
    criterion: Criterion, expected: Sequence[Invocation], actual: Sequence[ActualTurn]
) -> RunScore:
    """Judged metrics are scored from the judge stage's verdicts; without them, not evaluated."""
    return RunScore(overall=None, error=JUDGE_NOT_RUN)


Evaluator = Callable[["Evaluation"], Awaitable[JudgedRun]]
# (metric name, criterion, case, expected turn) -> why the turn cannot be judged, or None
TurnCheck = Callable[[str, Criterion, EvalCase, Invocation], "str | None"]


@dataclass(frozen=True, kw_only=True)
class JudgedMetric(Metric):
    """A metric scored by the LLM judge (the judge stage, pipeline/judge.py, runs
    `evaluate` on every finished case-run; without it, `score_run` says it did not run)."""

    criterion: type[Criterion] = JudgeCriterion
    requests: tuple[Request[Any], ...]
    evaluate: Evaluator
    num_samples: Callable[[JudgeModelOptions], int] = adk_num_samples
    note: str | None = None  # shown with its results, e.g. how it differs from ADK's
    check_turn: TurnCheck | None = None
    score_run: ScoreRun = judge_not_run
    # whether its calls per turn are known from the criterion (pipeline/key_budget.py): each
    # request once a turn, and once more for the run
    calls_bounded: Callable[[Criterion], bool] = lambda criterion: True

    judged: ClassVar[bool] = True


def judge_header(metric: JudgedMetric, criterion: Criterion, model_pin: str | None) -> JudgeRecord:
    """How a metric is judged under a criterion: model, prompt and parser versions, config."""
    options = judge_options(criterion)
    return JudgeRecord(
        model=model_pin or options.judge_model,
        prompt_version="+".join(template(r.template).label for r in metric.requests),
        parser_version="+".join(f"{r.name}@{r.parser_version}" for r in metric.requests),
        num_samples=metric.num_samples(options),
        generation_config=generation_config(options.judge_model_config),
        note=metric.note,
    )


@dataclass
class Evaluation:
    """One judged metric on one finished case-run."""

    metric: JudgedMetric
    criterion: Criterion
    header: JudgeRecord
    case: EvalCase
    run: int
    expected: Sequence[Invocation]
    turns: Sequence[ActualTurn]
    service: JudgeService

    def __post_init__(self) -> None:
        options = judge_options(self.criterion)
        self.limit = asyncio.Semaphore(options.parallelism_limit)
        self.retry = user_retry(options.judge_model_config)
        self.verdicts: list[JudgeVerdict] = []
        self.problems: list[tuple[int, str]] = []  # (turn, why it has no score)
        self.outage = False
        self.no_key = 0
        self.usage = Usage(cost_usd=0.0)

    async def evaluate(self) -> JudgedRun:
        return await self.metric.evaluate(self)

    async def each_turn(
        self, judge_turn: Callable[[int, Invocation, ActualTurn], Awaitable[_T]]
    ) -> list[_T]:
        """judge_turn(index, expected, actual) for every turn at once, results in turn order."""
        pairs = enumerate(zip(self.expected, self.turns, strict=True))
        return list(await asyncio.gather(*(judge_turn(i, want, got) for i, (want, got) in pairs)))

    def ask(self, request: Request[Any], prompt: str) -> Ask:
        return Ask(
            request.name,
            request.parser_version,
            prompt,
            self.header.model,
            self.header.generation_config,
            self.header.num_samples if request.sampled else 1,
            self.limit,
            self.retry,
        )

    async def judge(
        self,
        request: Request[Any],
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
                error = unreadable(answer)
        self.verdicts.append(
            JudgeVerdict(
                key=answer.key,
                run=self.run,
                turn=turn,
                request=request.name,
                step=step,
                source=answer.source,
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
        order = {request.name: index for index, request in enumerate(self.metric.requests)}
        verdicts = sorted(  # verdicts arrive as the calls finish: a stable order for Results
            self.verdicts,
            key=lambda v: (v.turn, -1 if v.step is None else v.step, order.get(v.request, 0)),
        )
        return JudgedRun(score, verdicts, rubric_scores, self.outage, self.no_key, self.usage)


class NoVerdict(Exception):
    """The judge answered, but not with a usable verdict; the message says why."""


def unreadable(answer: Answer, what: str = "no verdict") -> str:
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


_SIMULATED = Invocation(user_content=Content(role="user", parts=[]))


class _Config(Protocol):
    """What the checks read of an eval set's config (metrics/config.py's EvalConfig)."""

    @property
    def source(self) -> str: ...

    @property
    def lines(self) -> dict[str, int]: ...


class JudgedEvalSet(Protocol):
    """What the checks below read of an eval set (pipeline/suite.py's LoadedEvalSet)."""

    @property
    def file(self) -> str: ...

    @property
    def cases(self) -> list[EvalCase]: ...

    @property
    def case_lines(self) -> dict[str, int]: ...

    @property
    def config(self) -> _Config: ...


def check_judge_inputs(
    eval_set: JudgedEvalSet, metrics: Mapping[str, Metric], criteria: Mapping[str, Criterion]
) -> None:
    """Raise InputError (file and line) for judged metrics that could not be judged at all,
    before any agent runs (so a suite that cannot be judged fails with exit 2, not after
    paying for it): a judge_model_config google-genai refuses or past a cap (caps.py), or
    a turn a metric's own check refuses (e.g. no rubrics)."""
    config = eval_set.config
    for name, metric in metrics.items():
        if not isinstance(metric, JudgedMetric):
            continue
        options = judge_options(criteria[name])
        if options.judge_model_config is not None:
            try:  # ValueError: google-genai's, or a cap (caps.py)
                check_generation(generation_config(options.judge_model_config), "the judge")
                check_retry(user_retry(options.judge_model_config))
            except ValueError as err:
                raise InputError(
                    f'criterion "{name}": judge_model_config: {err}',
                    config.source,
                    config.lines.get(name),
                ) from None
        if metric.check_turn is None:
            continue
        for case in eval_set.cases:
            # a scenario's turns are not known before it runs: check one with no rubrics
            turns = case.conversation if case.conversation is not None else [_SIMULATED]
            for number, turn in enumerate(turns, start=1):
                problem = metric.check_turn(name, criteria[name], case, turn)
                if problem is not None:
                    raise InputError(
                        f'case "{case.eval_id}", turn {number}: {problem}',
                        eval_set.file,
                        eval_set.case_lines.get(case.eval_id),
                    )


def check_judge_models(
    eval_set: JudgedEvalSet,
    metrics: Mapping[str, Metric],
    criteria: Mapping[str, Criterion],
    allowed: Sequence[str],
    pin: str | None,
) -> None:
    """Raise InputError (the config's file and the criterion's line) for a judged metric
    whose judge model is not in the allow-list (caps.py), before any agent runs. Under a
    pin (`--judge-model`, checked on its own) the criteria's models are not called."""
    if pin is not None:
        return
    config = eval_set.config
    for name, metric in metrics.items():
        if not isinstance(metric, JudgedMetric):
            continue
        why = judge_model_refusal(judge_options(criteria[name]).judge_model, allowed)
        if why is not None:
            raise InputError(
                f'criterion "{name}": judge_model_options: judge_model: {why}',
                config.source,
                config.lines.get(name),
            )


def reply_judge(
    request: Request[Any], vote: Callable[[list[Any]], float | None]
) -> Callable[[Evaluation], Awaitable[JudgedRun]]:
    """The `evaluate` of a metric that judges each turn's answer against its user message
    alone: `request` rendered with `user_message` and `reply`, the samples' parsed answers
    combined by `vote` into the turn's score, the run the mean over the turns with an answer
    (a turn without one is skipped)."""

    async def evaluate(ev: Evaluation) -> JudgedRun:
        async def turn(index: int, want: Invocation, got: ActualTurn) -> float | None:
            reply = content_text(got.final_response)
            if not reply:
                return None
            text = request.render(user_message=content_text(want.user_content), reply=reply)
            _, score = await ev.judge(
                request, text, index, lambda a: vote([request.parse(s.text) for s in a.samples])
            )
            return score

        scores = await ev.each_turn(turn)
        return ev.result(mean(scores), list(scores), nothing=NOTHING_TO_CHECK)

    return evaluate
