"""Every number the gate's statistics decide with, in one frozen value (docs/statistics.md).

Three families of tests can fail a gate on a case that did not change:

- the **per-case test**: a noisy metric with enough runs on both sides gets an exact
  permutation test, and Benjamini-Hochberg holds its false-discovery rate over the metrics
  tested. With confirmation re-runs on it only *nominates* a case for them; with them off it
  decides alone, at a level small enough to fit the budget;
- the **case-level blame after re-runs** (streaks): a regression every re-run showed again
  is blamed only when an unchanged case with its record on main would fail that often
  rarely enough (Bonferroni over the cases compared); a case the per-case test nominated
  and the confirm limit left without re-runs is decided by the same rule on its own runs;
- the **suite-level test**: one stratified test over the noisy cases per axis, taken in one
  look or, with one run per case and re-runs on, in looks with suite rounds between them.

`StatisticsPolicy.budget` sums the families a run configuration can reach: an unchanged
suite fails its gate at most that often (a union bound). The deterministic rule (steady runs
on both sides: any drop counts) has no false-alarm rate of its own and is not a family.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from ..core import Axis

Family = Literal["per-case test", "case blame after re-runs", "suite-level test"]


@dataclass(frozen=True, slots=True)
class Share:
    """One family's nominal share of the chance that an unchanged suite fails its gate."""

    family: Family
    share: float
    why: str


@dataclass(frozen=True, slots=True)
class Budget:
    """The families a run configuration can reach, and their shares."""

    shares: tuple[Share, ...]

    @property
    def total(self) -> float:
        return sum(s.share for s in self.shares)


@dataclass(frozen=True, slots=True, kw_only=True)
class StatisticsPolicy:
    """The thresholds, alphas, looks and round limits of the gate's decision."""

    # deterministic rule (steady runs on both sides; no false-alarm share): how far a score
    # must drop (or rise) to count, per axis; `--min-delta` overrides it
    min_delta: MappingProxyType[Axis, float] = field(
        default_factory=lambda: MappingProxyType({"trajectory": 0.0, "response": 0.1})
    )
    # per-case test: runs needed on each side before one noisy metric is tested alone
    case_min_runs: int = 5
    # per-case test: Benjamini-Hochberg level that nominates a worse metric for confirmation
    # re-runs (re-runs on)
    case_nominate_alpha: float = 0.05
    # per-case test: Benjamini-Hochberg level at which it decides alone (confirm-runs 0): a
    # worse metric regressed, a better one improved; under an unchanged suite it bounds the
    # chance of any blame
    case_alone_alpha: float = 0.0025
    # case blame after re-runs: the suite's chance of blaming one unchanged case for a
    # streak of failures, split over the cases compared (Bonferroni), with its re-runs or,
    # for a nominated case the confirm limit left without them, with its own runs
    blame_alpha: float = 0.0025
    # suite-level test, one look (several runs per case, re-runs off, or merged shards):
    # family-wise over the axes (max-T)
    suite_alpha: float = 0.0075
    # suite-level test in looks (one run per case, re-runs on, the whole suite at hand):
    # the first look's alpha on the one run per case
    suite_first_alpha: float = 0.0025
    # ... a suite round runs when an axis's first look falls below this without being
    # significant
    suite_round_below: float = 0.12
    # ... another while the test with the rounds' runs stays below this
    suite_round_continue: float = 0.02
    # ... the alpha of each look after a round
    suite_round_alpha: float = 0.001
    # ... and the most rounds
    suite_rounds: int = 3
    # ... each adding this many runs of every case it runs
    suite_round_runs: int = 1
    # main's sampling (no gate family): runs on main, all alike, that settle a case as
    # deterministic
    sampling_settled: int = 3
    # report only (no gate family): the broad drop a report says the suite can detect, and
    # the power at which it reports the smallest drop caught
    detect_drop: float = 0.2
    detect_power: float = 0.8

    def __post_init__(self) -> None:
        looks = self.suite_first_alpha + self.suite_rounds * self.suite_round_alpha
        if looks > self.suite_alpha + 1e-12:
            raise ValueError("the suite test's looks must stay within its one-look alpha")
        if self.suite_round_continue >= self.suite_round_below:
            raise ValueError("a later suite round needs a stronger hint than the first")

    def suite_in_looks(self, num_runs: int, confirm_runs: int | None, sharded: bool) -> bool:
        """Whether the suite-level test is taken in looks with suite rounds between them: one
        run per case, re-runs on, and the whole suite at hand with an agent to run it (a
        shard leaves the test to its merge, and merged shards' test is one look)."""
        return num_runs == 1 and bool(confirm_runs) and not sharded

    def budget(self, num_runs: int, confirm_runs: int | None, sharded: bool = False) -> Budget:
        """Per family that can fail the gate of a run with `num_runs` runs per case on each
        side, `confirm_runs` re-runs allowed (0 or None: off) and sharded (then merged) or
        not, its nominal share of the chance that an unchanged suite fails the gate."""
        shares = []
        if confirm_runs:
            shares.append(
                Share(
                    "case blame after re-runs",
                    self.blame_alpha,
                    "streaks after re-runs (or, for a nominated case the confirm limit left "
                    "without them, of its own runs), each case at its Bonferroni share",
                )
            )
            if num_runs >= self.case_min_runs:
                shares.append(Share("per-case test", 0.0, "nominates for re-runs only"))
        elif num_runs >= self.case_min_runs:
            shares.append(
                Share(
                    "per-case test",
                    self.case_alone_alpha,
                    "decides alone: Benjamini-Hochberg bounds any rejection under an "
                    "unchanged suite by its level",
                )
            )
        if self.suite_in_looks(num_runs, confirm_runs, sharded):
            looks = self.suite_first_alpha + self.suite_rounds * self.suite_round_alpha
            why = f"{1 + self.suite_rounds} looks at most (a union bound)"
            shares.append(Share("suite-level test", looks, why))
        else:
            shares.append(Share("suite-level test", self.suite_alpha, "one look"))
        return Budget(tuple(shares))


DEFAULT = StatisticsPolicy()
# the most an unchanged suite may fail its gate, whatever the run configuration
FALSE_ALARM_BUDGET = 0.01
