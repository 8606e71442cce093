"""What main's runs of a case say (the baseline's and older baselines'), and how unlikely a
streak of failures here would be for an unchanged case (docs/statistics.md).

The gate weighs a regression seen in this run against the case's own record on main: a
case that never failed there and now fails run after run has changed; a case that fails
there one run in three can fail three times in a row here by chance, and with many such
cases in a suite, some will.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from math import comb

import msgspec
import numpy as np

from ..core import RunKind
from ..results import CaseResult, RunRecord
from .statistics_policy import DEFAULT as STATISTICS
from .statistics_policy import StatisticsPolicy

_GRID = np.linspace(0.0, 1.0, 2001)
# What main's record keeps of a case's runs (`runs[].kind`, core.RunKind): the suite's own
# runs, paired runs on the merge-base's code (picked for the PR's regression, not for their
# own outcome: one of main's runs like any other) and main's sampling runs; never re-runs
# that confirmed something. What the suite-level test weighs at its first look: the runs
# main recorded for itself. Taken whatever the case did here: those, and runs paired with a
# suite round (every case alike).
ON_MAIN: frozenset[RunKind] = frozenset({"suite", "paired", "sampling"})
RECORDED: frozenset[RunKind] = frozenset({"suite", "sampling"})


class MainRuns(msgspec.Struct, frozen=True, gc=False):
    """The finished runs of one case on main: how many, whether they all did the same
    thing, and which metrics each passed.

    One per case, 100,000 in a large suite, whatever the number of main's Results it was
    folded from (compare/record.py): counts, one behaviour, and tuples of shared mappings
    the garbage collector has no need to scan. Never changed: `grown` makes the next one,
    so a record extended by one more Results shares the rest with the one it came from."""

    runs: int = 0
    sole: str | None = None  # the behaviour of every run, when all did the same
    passed: tuple[dict[str, bool], ...] = ()  # metric -> reached threshold
    # what the suite-level test weighs: at its first look main's recorded runs (no paired
    # ones: a look with more runs would be one more look), after suite rounds those and the
    # rounds' paired runs; never runs paired with one case's regression (a case gets them
    # because its run here failed, which would tilt the test)
    recorded: tuple[dict[str, bool], ...] = ()
    sampled: tuple[dict[str, bool], ...] = ()

    def failures(self, metric: str) -> tuple[int, int]:
        """(runs that failed the metric, runs that scored it)."""
        scored = [run[metric] for run in self.passed if metric in run]
        return scored.count(False), len(scored)

    def varies(self, metric: str) -> bool:
        """Whether main's runs did different things, or passed the metric in some runs and
        failed it in others."""
        return (self.runs > 0 and self.sole is None) or len(
            {run[metric] for run in self.passed if metric in run}
        ) > 1

    @property
    def deterministic(self) -> bool:
        """At least one run, and every run did the same thing."""
        return self.sole is not None

    @property
    def known_deterministic(self) -> bool:
        """Two or more runs, all alike: enough to call the case deterministic."""
        return self.runs >= 2 and self.deterministic


NO_RUNS = MainRuns()


def grown(main: MainRuns, case: CaseResult) -> MainRuns:
    """`main` with the case's finished runs of one Results added (re-runs that confirmed
    something left out: they were picked for having regressed; paired runs on the
    merge-base kept)."""
    kept = kept_runs(case)
    if not kept:
        return main
    behaviours = {case.runs[i].behaviour() for i in kept}
    sole = main.sole if main.runs else next(iter(behaviours))
    if sole is not None and behaviours != {sole}:
        sole = None
    passed = passes(case, kept)
    recorded = tuple(p for p, i in zip(passed, kept, strict=True) if recorded_run(case.runs[i]))
    sampled = tuple(p for p, i in zip(passed, kept, strict=True) if sampled_run(case.runs[i]))
    every = main.passed + tuple(passed)
    # most runs are the baseline's own, in all three: then one tuple serves them
    if main.recorded is main.passed and len(recorded) == len(kept):
        recorded_all = every
    else:
        recorded_all = main.recorded + recorded
    if main.sampled is main.recorded and sampled == recorded:
        sampled_all = recorded_all
    else:
        sampled_all = main.sampled + sampled
    return MainRuns(len(kept) + main.runs, sole, every, recorded_all, sampled_all)


def kept_runs(case: CaseResult) -> list[int]:
    """The indexes of the case's runs that are main's record of it: finished, and not re-runs
    that confirmed something (paired runs on the merge-base and sampling runs are kept)."""
    return [i for i, run in enumerate(case.runs) if run.error is None and on_main(run)]


def on_main(run: RunRecord) -> bool:
    """Whether a run is one of main's record of its case (ON_MAIN)."""
    return run.purpose()[0] in ON_MAIN


def recorded_run(run: RunRecord) -> bool:
    """Whether a run is one main recorded for itself: a baseline's own, or a sampling run."""
    return run.purpose()[0] in RECORDED


def sampled_run(run: RunRecord) -> bool:
    """Whether a run on main was taken whatever the case did here: one main recorded for
    itself, or one paired with a suite round (every case alike)."""
    kind, paired_with = run.purpose()
    return kind in RECORDED or (kind == "paired" and paired_with == "suite_round")


def passes(case: CaseResult, runs: Iterable[int]) -> list[dict[str, bool]]:
    """Per run (by index), which metrics reached their threshold (unscored ones left out).
    Runs that passed alike share one mapping (read, never changed): a suite's runs pass in
    a few ways, and main's record keeps one per run of every case."""
    scored = [
        (name, m.runs, m.threshold) for name, m in case.metrics.items() if m.threshold is not None
    ]
    return [
        _alike(
            tuple(
                (name, score >= threshold)
                for name, scores, threshold in scored
                if i < len(scores) and (score := scores[i]) is not None
            )
        )
        for i in runs
    ]


@cache
def _alike(outcome: tuple[tuple[str, bool], ...]) -> dict[str, bool]:
    return dict(outcome)


@cache
def unchanged_p(main_failed: int, main_runs: int, failed: int, runs: int) -> float:
    """How likely, at most, an unchanged case fails at most `main_failed` of its `main_runs`
    on main and at least `failed` of its `runs` here: the largest, over every failure rate q
    the case may have, of P(Binomial(main_runs, q) <= main_failed) * P(Binomial(runs, q) >=
    failed)."""
    q = _GRID
    on_main = sum(_binomial(main_runs, k, q) for k in range(main_failed + 1))
    here = sum(_binomial(runs, k, q) for k in range(failed, runs + 1))
    return float(np.max(on_main * here))


def _binomial(n: int, k: int, q: np.ndarray) -> np.ndarray:
    return comb(n, k) * q**k * (1 - q) ** (n - k)


def blame_level(family: int, policy: StatisticsPolicy = STATISTICS) -> float:
    """The p-value one case's streak must reach in a suite of `family` compared cases: the
    policy's `blame_alpha` split over them (statistics_policy.py)."""
    return policy.blame_alpha / max(family, 1)


def same_runs(case: CaseResult) -> str | None:
    """The one behaviour of all the case's finished runs here (re-runs included), or None
    when they differ or none finished."""
    seen = {run.behaviour() for run in case.runs if run.error is None}
    return next(iter(seen)) if len(seen) == 1 else None
