"""Metrics by name, each declared once, by the module that scores it (metrics/builtin/).

A metric scores one case-run: the expected invocations from the eval file and the
agent's actual turns. Its declaration says everything else about it: its kind (the axis
it can regress on, or informational), its criterion type (the options test_config.json
may give it), and for an LLM-judged metric how the judge is asked
(metrics/judge/metric.py: JudgedMetric). Custom metrics (test_config.json
`custom_metrics`) are built per config (metrics/custom.py) and not registered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, ClassVar

from ..core import Axis, MetricKind
from .criteria import Criterion

if TYPE_CHECKING:
    from ..evalset.models import Invocation
    from ..traces import ActualTurn


@dataclass(frozen=True)
class RunScore:
    """One case-run's score: overall (None = could not be computed) and per turn."""

    overall: float | None
    invocations: list[float | None] = field(default_factory=list)
    error: str | None = None  # why the score could not be computed


ScoreRun = Callable[[Criterion, "Sequence[Invocation]", "Sequence[ActualTurn]"], RunScore]


@dataclass(frozen=True, kw_only=True)
class Metric:
    """A metric this tool computes: `score_run(criterion, expected, actual)` scores a run."""

    name: str
    kind: MetricKind
    score_run: ScoreRun
    criterion: type[Criterion] = Criterion

    # Custom metrics are the project's own code: they are scored in the agent stage, beside
    # the agent (pipeline/run_cases.py), and the score stage reads their scores from the
    # traces, so the process that scores (and holds the judge's key) runs none of it.
    custom: bool = False

    # The scores it gives (and its thresholds): [0, 1] but for response_evaluation_score,
    # which keeps ADK's coherence scale of 1 to 5.
    score_range: tuple[float, float] = (0.0, 1.0)

    # It compares with the eval file's expected turns, which a scenario case has none of:
    # naming it for an eval set with scenario cases is refused (ADK: not evaluated).
    needs_expected: bool = False

    # How the metric scores with --strip-thoughts (the model's thought parts left out of
    # the answer's text); None: it reads no answer text, or reads it as ADK does either way.
    thoughtless: ScoreRun | None = None

    # LLM-judged metrics (JudgedMetric) are scored from the judge stage's verdicts, not
    # by score_run, which then only says why there is no verdict.
    judged: ClassVar[bool] = False

    def without_thoughts(self) -> Metric:
        """The metric as --strip-thoughts has it score."""
        if self.thoughtless is None:
            return self
        return replace(self, score_run=self.thoughtless, thoughtless=None)

    @property
    def decides(self) -> bool:
        """Whether its status is part of a case's (pass, fail): it is on an axis. An
        informational metric is shown beside the case and never changes its status."""
        return self.kind != "informational"

    @property
    def axis(self) -> Axis:
        """The axis a failure of this metric regresses (Results' `axis`)."""
        if self.kind == "trajectory":
            return "trajectory"
        if self.kind == "response":
            return "response"
        raise ValueError(f"metric {self.name!r} is informational: it is on no axis")


@dataclass(frozen=True, kw_only=True)
class NotScored:
    """An ADK metric this tool knows by name but does not compute: naming it in criteria
    is an error that says why. `reason` None: ADK adds it to every result by itself."""

    name: str
    kind: MetricKind
    reason: str | None = None

    def error(self) -> str:
        if self.reason is None:
            return (
                f'"{self.name}" is informational and added by ADK itself; remove it from criteria'
            )
        return f'metric "{self.name}" is not supported: {self.reason}'


_METRICS: dict[str, Metric] = {}
_NOT_SCORED: dict[str, NotScored] = {}


def register(entry: Metric | NotScored) -> None:
    """Declare a built-in metric (or an ADK metric this tool does not compute)."""
    if entry.name in _METRICS or entry.name in _NOT_SCORED:
        raise ValueError(f"metric {entry.name!r} is declared twice")
    if isinstance(entry, NotScored):
        _NOT_SCORED[entry.name] = entry
    else:
        _METRICS[entry.name] = entry


def find(name: str) -> Metric | None:
    """The built-in metric of this name, if this tool computes it."""
    return _METRICS.get(name)


def not_scored(name: str) -> NotScored | None:
    return _NOT_SCORED.get(name)


def names() -> list[str]:
    """The built-in metrics' names, sorted."""
    return sorted(_METRICS)


def metrics() -> list[Metric]:
    """The built-in metrics, by name."""
    return [_METRICS[name] for name in names()]


def not_scored_entries() -> list[NotScored]:
    return [_NOT_SCORED[name] for name in sorted(_NOT_SCORED)]


def mean(values: Sequence[float | None]) -> float | None:
    """Mean of the values that could be computed; None when none could.

    Added one by one, as ADK's evaluators do: `sum()` compensates rounding since
    Python 3.12 and could then differ from ADK in the last bit.
    """
    known = [v for v in values if v is not None]
    if not known:
        return None
    total = 0.0
    for value in known:
        total += value
    return total / len(known)
