"""Asking the judge: reuse an earlier answer when the key matches, else call Gemini.

Every judge request of the suite goes through one JudgeService, which bounds the calls
in flight over the whole suite (settings.parallelism) while each metric evaluation also
keeps ADK's own `parallelism_limit` for its samples.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...results import JudgeSample, Results, Usage, VerdictSource
from .cache import DirectoryCache, baseline_verdicts, verdict_key
from .caps import with_token_caps
from .client import GeminiClient, JudgeCallError, Reply
from .settings import NO_KEY, JudgeSettings

NO_KEY_REASON = (
    f"{NO_KEY}: this answer is new or changed since the baseline, so it needs a judge call"
)


@dataclass(frozen=True)
class Ask:
    request: str  # verdict, rubrics, sentences, labels, safety
    parser_version: str  # of the parser that reads the answer (part of the key)
    prompt: str
    model: str
    config: dict[str, Any]
    num_samples: int
    limit: asyncio.Semaphore  # the metric evaluation's parallelism_limit
    retry: dict[str, Any] | None = None


@dataclass
class Answer:
    key: str
    source: VerdictSource
    samples: list[JudgeSample] = field(default_factory=list)
    error: str | None = None
    outage: bool = False
    no_key: bool = False
    usage: Usage = field(default_factory=lambda: Usage(cost_usd=0.0))


class JudgeService:
    def __init__(
        self,
        settings: JudgeSettings,
        baseline: Results | None = None,
        earlier: Mapping[str, list[JudgeSample]] | None = None,
    ):
        """`earlier`: the verdicts this run gave before (its earlier rounds), by key: reused
        as repeats, so a question is judged once per run."""
        self.settings = settings
        self.warnings: list[str] = []
        self._baseline = baseline_verdicts(baseline)
        self._earlier = dict(earlier or {})
        self._cache = DirectoryCache(settings.cache_dir) if settings.cache_dir else None
        self._client = GeminiClient(settings)
        self._asked: dict[str, asyncio.Future[Answer]] = {}
        self._in_flight = asyncio.Semaphore(settings.parallelism)

    async def ask(self, ask: Ask) -> Answer:
        key = verdict_key(
            ask.request, ask.parser_version, ask.prompt, ask.model, ask.config, ask.num_samples
        )
        earlier = self._asked.get(key)
        if earlier is not None:  # the same question in this run (e.g. another run, same answer)
            first = await asyncio.shield(earlier)
            reused = ask.num_samples if first.error is None else 0
            return Answer(
                key,
                "repeat",
                first.samples,
                first.error,
                first.outage,
                first.no_key,
                Usage(judge_reused=reused, cost_usd=0.0),
            )
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._asked[key] = future
        try:
            answer = await self._answer(key, ask)
        except BaseException as err:
            future.set_exception(err)
            future.exception()  # retrieved: a repeat re-raises it, nobody else needs to
            raise
        future.set_result(answer)
        return answer

    def keep(self, answer: Answer, ask: Ask) -> None:
        """Store an answer that gave a verdict in the cache directory, for later runs."""
        if self._cache is None or answer.source != "call":
            return
        try:
            self._cache.put(answer.key, ask.request, ask.model, answer.samples, answer.usage)
        except OSError as err:
            warning = f"warning: cannot write the judge cache {self.settings.cache_dir}: {err}"
            if warning not in self.warnings:
                self.warnings.append(warning)

    async def close(self) -> None:
        await self._client.close()

    async def _answer(self, key: str, ask: Ask) -> Answer:
        reused = Usage(judge_reused=ask.num_samples, cost_usd=0.0)
        samples = self._earlier.get(key)
        if samples is not None and len(samples) == ask.num_samples:
            return Answer(key, "repeat", list(samples), usage=reused)
        samples = self._baseline.get(key)
        if samples is not None and len(samples) == ask.num_samples:
            return Answer(key, "baseline", list(samples), usage=reused)
        entry = self._cache.get(key) if self._cache is not None else None
        if entry is not None and len(entry.samples) == ask.num_samples:
            if self.settings.cache_this_run and entry.usage is not None:
                return Answer(key, "call", entry.samples, usage=entry.usage)  # asked this run
            return Answer(key, "cache", entry.samples, usage=reused)
        if not self.settings.api_key:
            return Answer(key, "call", error=NO_KEY_REASON, no_key=True)
        budget = self.settings.budget
        if not budget.take(ask.num_samples, "judge"):  # none of its samples is asked
            refused = Usage(judge_refused=ask.num_samples, cost_usd=0.0)
            return Answer(key, "call", error=f"refused: {budget.refusal()}", usage=refused)
        results = await asyncio.gather(
            *(self._call(ask) for _ in range(ask.num_samples)), return_exceptions=True
        )
        answer = Answer(key, "call")
        usage = Usage(cost_usd=0.0)
        for result in results:
            if isinstance(result, asyncio.CancelledError):
                raise result
            if isinstance(result, JudgeCallError):
                answer.error = answer.error or result.args[0]
                answer.outage = answer.outage or result.outage
                continue
            if isinstance(result, BaseException):
                raise result
            answer.samples.append(JudgeSample(text=result.text, finish_reason=result.finish_reason))
            usage.add(self._usage(ask.model, result))
        answer.usage = usage
        return answer

    async def _call(self, ask: Ask) -> Reply:
        async with ask.limit, self._in_flight:
            # the output cap sent where the criterion leaves it open; the verdict's key keeps
            # the config as the criterion gave it (the cap is this tool's, not the question's)
            config = with_token_caps(ask.config, thinking=False)
            return await self._client.generate(ask.model, ask.prompt, config, ask.retry)

    def _usage(self, model: str, reply: Reply) -> Usage:
        return Usage(
            judge_calls=1,
            judge_prompt_tokens=reply.prompt_tokens,
            judge_output_tokens=reply.output_tokens,
            judge_thinking_tokens=reply.thinking_tokens,
            cost_usd=self.settings.prices.cost(
                model,
                reply.prompt_tokens,
                reply.output_tokens,
                reply.thinking_tokens,
                reply.cached_tokens,
            ),
        )
