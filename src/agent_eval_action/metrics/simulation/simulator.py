"""The user simulator: writes each user turn of a scenario case-run, with ADK 2.13's turn
loop and stop rules (LlmBackedUserSimulator):

- the first user turn is the scenario's starting prompt, written without a call;
- before each turn, the turn limit: once `max_allowed_invocations` turns were written
  (the starting prompt counts; -1: config.MAX_USER_TURNS), the conversation ends
  (`turn_limit`);
- every later turn asks Gemini with the prompt (prompt.py); a reply that contains the stop
  signal (any case) ends the conversation (`stop_signal`); an empty reply, or a call that
  fails after its retries, errors the case-run (UserTurnError), as ADK's RuntimeError does.

It runs in the process that holds the judge's key and asks google-genai through the
judge's client (its retries, endpoint and price table); the agent's process only ever sees
the user turns. Every call counts in the case-run's usage and cost (traces.Simulation), and
so does every request refused at a cap (a prompt over config.MAX_PROMPT_CHARS, or a call
the job's budget on the key cannot pay for: judge/budget.py), which asks nothing
(`refuse`; the user-turn relay refuses through it too).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from ...core import CaseKey, RunKey
from ...evalset.models import Content, ConversationScenario
from ...traces import ActualTurn, CaseRunRequest, Simulation, SimulatorUsage, UserTurnError
from ..judge.client import GeminiClient, JudgeCallError
from ..judge.settings import JudgeSettings
from .config import STOP_SIGNAL, OverCap, SimulatorConfig
from .prompt import render


def is_stop(reply: str) -> bool:
    """ADK's rule: the reply contains the stop signal, in any case."""
    return STOP_SIGNAL.lower() in reply.lower()


class UserSimulator:
    """Writes the user turns of every scenario case-run of a suite; `configs`: each eval
    set's simulator config (by eval_set_id), `scenarios` each case's (personas resolved)."""

    def __init__(
        self,
        settings: JudgeSettings,
        configs: Mapping[str, SimulatorConfig],
        scenarios: Mapping[CaseKey, ConversationScenario],
    ) -> None:
        self._settings = settings
        self._configs = configs
        self._scenarios = scenarios
        self._client = GeminiClient(settings)
        self._in_flight = asyncio.Semaphore(settings.parallelism)
        self._runs: dict[RunKey, Simulation] = {}

    def simulation(self, eval_set_id: str, eval_id: str, run: int) -> Simulation | None:
        """How a case-run's conversation ended and what it cost (None: not simulated)."""
        return self._runs.get(RunKey(eval_set_id, eval_id, run))

    async def next_user(
        self, request: CaseRunRequest, turns: Sequence[ActualTurn]
    ) -> Content | None:
        """The next user turn after `turns`, or None when the conversation is over."""
        scenario = self._scenarios.get(request.key)
        if scenario is None:  # a static case: its own turns
            index = len(turns)
            return request.user_contents[index] if index < len(request.user_contents) else None
        config = self._configs.get(request.eval_set_id) or SimulatorConfig()
        record = self._runs.setdefault(request.run_key, Simulation())
        if len(turns) >= config.turn_limit:
            record.stop = "turn_limit"
            return None
        if not turns:
            return Content.from_text(scenario.starting_prompt, "user")
        try:
            prompt = render(config, scenario, turns)
        except OverCap as err:
            raise self.refuse(request.run_key, str(err)) from None
        reply = await self._ask(config, prompt, request.run_key, record.usage)
        if is_stop(reply):
            record.stop = "stop_signal"
            return None
        return Content.from_text(reply, "user")

    def refuse(self, key: RunKey, why: str) -> UserTurnError:
        """Count a refused request on its case-run (no call was made; the first refusal's
        reason is kept, and errors the case-run) and return the error to answer with."""
        record = self._runs.setdefault(key, Simulation())
        record.usage.refused += 1
        record.refused = record.refused or why
        return UserTurnError(f"refused: {why}")

    async def _ask(
        self, config: SimulatorConfig, prompt: str, key: RunKey, usage: SimulatorUsage
    ) -> str:
        if not self._settings.api_key:
            raise UserTurnError("the user simulator has no Gemini API key")
        if not self._settings.budget.take(1, "simulator"):  # the job's calls are spent
            raise self.refuse(key, self._settings.budget.refusal())
        try:
            async with self._in_flight:
                reply = await self._client.generate(config.model, prompt, config.generation())
        except JudgeCallError as err:
            raise UserTurnError(f"the user simulator's Gemini call failed: {err}") from None
        usage.calls += 1
        usage.prompt_tokens += reply.prompt_tokens
        usage.output_tokens += reply.output_tokens
        usage.thinking_tokens += reply.thinking_tokens
        cost = self._settings.prices.cost(
            config.model,
            reply.prompt_tokens,
            reply.output_tokens,
            reply.thinking_tokens,
            reply.cached_tokens,
        )
        usage.cost_usd = None if cost is None or usage.cost_usd is None else usage.cost_usd + cost
        if not reply.text:
            why = f" (finish reason: {reply.finish_reason})" if reply.finish_reason else ""
            raise UserTurnError(f"the user simulator wrote no message{why}")
        return reply.text

    async def close(self) -> None:
        await self._client.close()
