"""ADK's four efficiency metrics, computed for every case-run as ADK 2.13 adds them to every
eval (`google/adk/evaluation/_efficiency_evaluators.py`): informational, never a pass or a
fail of a case, and never named in `criteria` (ADK raises there; so do we, exit 2).

Per turn, as ADK computes it:

- `tool_call_count_v1`: the turn's function calls (`transfer_to_agent` included);
- `inference_call_count_v1`: its model calls, the events that carry usage metadata or a
  model version (n/a when the runner records no events: `--command`);
- `token_usage_v1`: input (prompt + tool-use prompt) plus output (candidates + thoughts)
  tokens over those events (n/a when no call reported usage). A `--command` agent's
  `usage` (prompt + output + thinking tokens) stands in for the events it does not have;
- `invocation_duration_v1`: the turn's wall-clock seconds (n/a when the turn was not
  timed: a stored result without durations).

A run's value is ADK's: the mean per turn over the turns with a value (token usage: over
every turn, a turn without a count adding 0, as long as one turn has one). Reports and
budgets read the per-case total instead: each run's turns summed, the mean over the runs.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..traces import ActualTurn


def _tool_calls(turn: ActualTurn) -> float | None:
    return float(len(turn.tool_uses))


def _inference_calls(turn: ActualTurn) -> float | None:
    if turn.invocation_events is None:
        return None
    return float(
        sum(
            e.usage_metadata is not None or e.model_version is not None
            for e in turn.invocation_events
        )
    )


def _count(usage: Mapping[str, Any], *names: str) -> int | None:
    """The sum of the counts reported among `names` (camelCase accepted); None if none was."""
    values = []
    for name in names:
        value = usage.get(name)
        if value is None:
            head, *rest = name.split("_")
            value = usage.get(head + "".join(word.title() for word in rest))
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            values.append(value)
    return sum(values) if values else None


def _tokens(turn: ActualTurn) -> float | None:
    if turn.invocation_events is None:
        usage = turn.usage
        if usage is None:
            return None
        return float(usage.prompt_tokens + usage.output_tokens + usage.thinking_tokens)
    total: int | None = None
    for event in turn.invocation_events:
        usage = event.usage_metadata
        if not isinstance(usage, Mapping):
            continue
        sides = (
            _count(usage, "prompt_token_count", "tool_use_prompt_token_count"),
            _count(usage, "candidates_token_count", "thoughts_token_count"),
        )
        if any(side is not None for side in sides):
            total = (total or 0) + sum(side or 0 for side in sides)
    return None if total is None else float(total)


def _seconds(turn: ActualTurn) -> float | None:
    # 0.0 is what a runner records for a turn it did not time (a stored result without
    # durations): ADK reports such a turn as n/a, never as instant
    return round(turn.duration_s, 3) if turn.duration_s > 0 else None


@dataclass(frozen=True)
class EfficiencyMetric:
    name: str
    label: str  # how reports name its per-case total: "tool calls", "tokens"
    unit: str  # after a number: "" or " s"
    turn_value: Callable[[ActualTurn], float | None]
    # ADK's run value: the mean over the turns with a value, or (token usage) over every
    # turn, a turn without a count adding nothing
    mean_over_every_turn: bool = False
    # the smallest change of a per-case total a report calls notable (with NOTABLE_FACTOR)
    notable: float = 2.0
    digits: int | None = None  # ADK rounds a duration's mean to milliseconds
    # it measures time, which a tool call answered instead of run (hermetic tools) does not
    # take: such a case's value is marked, and neither judged on a budget nor compared
    timed: bool = False

    def run_value(self, turns: Sequence[float | None]) -> float | None:
        """ADK's overall value of one run from its per-turn values."""
        known = [value for value in turns if value is not None]
        if not known:
            return None
        total = 0.0
        for value in known:  # added one by one, as ADK does
            total += value
        mean = total / (len(turns) if self.mean_over_every_turn else len(known))
        return mean if self.digits is None else round(mean, self.digits)


EFFICIENCY: tuple[EfficiencyMetric, ...] = (
    EfficiencyMetric("tool_call_count_v1", "tool calls", "", _tool_calls),
    EfficiencyMetric("inference_call_count_v1", "model calls", "", _inference_calls),
    EfficiencyMetric(
        "token_usage_v1", "tokens", "", _tokens, mean_over_every_turn=True, notable=1000.0
    ),
    EfficiencyMetric(
        "invocation_duration_v1", "seconds", " s", _seconds, notable=5.0, digits=3, timed=True
    ),
)
BY_NAME: dict[str, EfficiencyMetric] = {metric.name: metric for metric in EFFICIENCY}
# A per-case total is notable when it grew or shrank by this factor (and by `notable`).
NOTABLE_FACTOR = 1.5


@dataclass(frozen=True)
class Measured:
    """One efficiency metric of one case, from its finished runs."""

    score: float | None  # ADK's value: one run's own; several runs, every turn pooled
    total: float | None  # the per-case total: each run's turns summed, mean over the runs
    runs: list[float | None]
    invocations: list[list[float | None]]


def measure(metric: EfficiencyMetric, runs: Sequence[Sequence[ActualTurn]]) -> Measured:
    """The metric over the turns of each finished run of a case."""
    invocations = [[metric.turn_value(turn) for turn in turns] for turns in runs]
    values = [metric.run_value(turns) for turns in invocations]
    totals = [
        math.fsum(v for v in turns if v is not None)
        for turns in invocations
        if any(v is not None for v in turns)
    ]
    if len(invocations) == 1:
        score = values[0]
    else:  # as AgentEvaluator pools a metric's per-turn values over the runs
        pooled = [v for turns in invocations for v in turns if v is not None]
        score = statistics.fmean(pooled) if pooled else None
    total = statistics.fmean(totals) if totals else None
    if total is not None and metric.digits is not None:
        total = round(total, metric.digits)
    return Measured(
        score=score,
        total=total,
        runs=values,
        invocations=invocations,
    )


def parse_budget(text: str) -> tuple[str, float]:
    """One `METRIC=MAX` budget: an efficiency metric's name and the most its per-case total
    may be (ValueError with the reason)."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or name not in BY_NAME:
        raise ValueError(
            f"{text!r}: give METRIC=MAX with METRIC one of {', '.join(BY_NAME)}"
            if sep
            else f"{text!r} is not METRIC=MAX"
        )
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"{name}: {value.strip()!r} is not a number") from None
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{name}: the budget must be a number of at least 0, got {value.strip()}")
    return name, number
