"""The rounds after a run's agent stage, in one order for every route (`Rounds`), and the
re-runs on idle slots (`Ahead`, docs/statistics.md): which later confirmation re-runs a
round starts at once, which round takes each, and how many were made and used. A route
gives the rounds its `Stages`: `run` and the pytest route run and score in process and
keep the traces themselves (pipeline/session.py); the action starts an agent stage as the
PR's user and a score stage, each a child, and keeps where the agent stage left each run
(its traces file and plan: action/agent_run.py). The order and the decisions are here once.

A run started ahead is taken only by the round that would have made it, with that round's
purpose; the rounds still decide from their own run alone, in run order
(pipeline/confirm.rounds). What no round took is discarded, never recorded or judged.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

from ..core import CaseKey, Purpose, RunKey
from .confirm import Wanted, rounds, runs_ahead, sampling_rounds

if TYPE_CHECKING:
    from ..compare.model import Diff
    from ..compare.record import MainRecord
    from ..results import Results

Holder = TypeVar("Holder")  # what holds a run started ahead: its trace, or where a stage wrote it


@dataclass
class Ahead(Generic[Holder]):
    """The re-runs started ahead and not yet taken, by run; `concurrency`, `confirm_runs`,
    `confirm_limit`: the run's options."""

    concurrency: int
    confirm_runs: int
    confirm_limit: int
    waiting: dict[RunKey, Holder] = field(default_factory=dict)
    made: int = 0  # re-runs started (each round's own and those ahead)
    used: int = 0  # re-runs a round took: the recorded ones

    def take(
        self, wanted: Wanted, run: int
    ) -> tuple[list[tuple[CaseKey, Purpose, Holder]], Wanted]:
        """(the wanted cases whose run `run` was started ahead, each with what holds it;
        the cases still to run). A round that is no confirmation round ends them: what is
        left is discarded."""
        if any(why.kind != "confirmation" for _, why in wanted):
            self.waiting.clear()
        taken, need = [], []
        for key, why in wanted:
            held = self.waiting.pop(RunKey(*key, run), None)
            if held is None:
                need.append((key, why))
            else:
                taken.append((key, why, held))
        self.used += len(taken)
        return taken, need

    def fresh(self, num_runs: int) -> Callable[[Wanted, int], int]:
        """How many of a round's wanted runs are still to start (not started ahead), for
        pipeline/confirm.rounds to hold to `confirm_limit`."""

        def count(wanted: Wanted, round_number: int) -> int:
            run = num_runs + round_number
            return sum(RunKey(*key, run) not in self.waiting for key, _ in wanted)

        return count

    def extent(self, need: Wanted, round_number: int, *, scenario: bool) -> int:
        """How many later runs of each needed case the round's stage starts beside its own:
        on the slots it leaves idle, no more than later rounds could ask for
        (pipeline/confirm.rounds asks for at most `confirm_runs`), within `confirm_limit`
        counting what was made. None (0) for a scenario case (its user simulator spends
        the judge's key) or a round that is no confirmation round."""
        if scenario:
            return 0
        return runs_ahead(
            need,
            round_number,
            confirm_runs=self.confirm_runs,
            concurrency=self.concurrency,
            limit_left=self.confirm_limit - self.made,
        )

    def started(self, runs: int, ahead: dict[RunKey, Holder]) -> None:
        """A round's stage made `runs` re-runs: its own, which it takes (counted used), and
        `ahead`, held for the later rounds."""
        self.made += runs
        self.used += runs - len(ahead)
        self.waiting.update(ahead)

    def finish(self) -> None:
        """The rounds are over: discard what none took, and say so when some were made."""
        self.waiting.clear()
        if self.made > self.used:
            print(
                f"re-runs: {self.used} used of {self.made} made ({self.made - self.used} "
                "started ahead on idle slots were not needed)",
                file=sys.stderr,
            )


Taken = list[tuple[CaseKey, Purpose, Holder]]  # a round's runs, each with why and its holder


@dataclass(frozen=True)
class Stages(Generic[Holder]):
    """How a route runs a round. `run(need, run, ahead)`: run `run` of each needed case and
    its next `ahead` runs (the agent stage); what holds each run made, by run, or None when
    it was cancelled or failed. `record(taken, run, wanted)`: record the round's runs (each
    with the round's purpose, whatever the stage that made it said) and score every run
    again (the score stage); the new Results, or None when cancelled or failed.
    `scenario(key)`: a scenario case, whose re-runs never start ahead."""

    run: Callable[[Wanted, int, int], dict[RunKey, Holder] | None]
    record: Callable[[Taken[Holder], int, Wanted], Results | None]
    scenario: Callable[[CaseKey], bool]


@dataclass(frozen=True)
class Limits:
    """The run's options the rounds follow (pipeline/options.py)."""

    num_runs: int
    concurrency: int
    confirm_runs: int
    confirm_limit: int
    baseline_runs: int


class Rounds(Generic[Holder]):
    """Confirmation and suite rounds against a baseline (pipeline/confirm.rounds), or main's
    sampling (pipeline/confirm.sampling_rounds), each round through a route's `stages`:
    the runs it takes that an earlier stage started ahead, an agent stage for the rest
    (starting, on the slots they leave idle, the later re-runs they may need), then a
    score stage over what the round took."""

    def __init__(self, stages: Stages[Holder], limits: Limits) -> None:
        self.stages, self.limits = stages, limits
        self.ahead: Ahead[Holder] = Ahead(
            limits.concurrency, limits.confirm_runs, limits.confirm_limit
        )

    def round(self, wanted: Wanted, round_number: int) -> Results | None:
        """The wanted cases once more, numbered after the suite's own runs: the round's
        Results, or None when it was cancelled or failed."""
        run = self.limits.num_runs + round_number
        taken, need = self.ahead.take(wanted, run)
        if need:
            scenario = any(self.stages.scenario(key) for key, _ in need)
            later = self.ahead.extent(need, round_number, scenario=scenario)
            made = self.stages.run(need, run, later)
            if made is None:
                return None
            self.ahead.started(len(made), {k: held for k, held in made.items() if k.run != run})
            taken += [
                (key, why, made[RunKey(*key, run)])
                for key, why in need
                if RunKey(*key, run) in made
            ]
        return self.stages.record(taken, run, wanted)

    def confirm(
        self,
        diff: Diff,
        current: Results,
        *,
        known: Callable[[], MainRecord],
        compare: Callable[[Results], Diff],
    ) -> list[str]:
        """Confirmation and suite rounds from the run's `diff` and Results; `compare` gives
        a round's diff from its Results, `known()` main's record as it stands. The
        warnings for the Results."""

        def confirm(wanted: Wanted, round_number: int) -> tuple[Diff, Results] | None:
            results = self.round(wanted, round_number)
            return None if results is None else (compare(results), results)

        try:
            _, warnings = rounds(
                diff,
                current,
                known=known,
                runs=self.limits.confirm_runs,
                limit=self.limits.confirm_limit,
                confirm=confirm,
                made=lambda: self.ahead.made,
                fresh=self.ahead.fresh(self.limits.num_runs),
            )
        finally:
            self.ahead.finish()
        return warnings

    def sample(self, current: Results, known: MainRecord) -> int:
        """Main's sampling of a run that records the baseline: the case-runs it added."""
        added = sampling_rounds(
            current, known=known, runs=self.limits.baseline_runs, sample=self.round
        )
        if added:
            print(f"main's sampling: {added} more case-run(s)", file=sys.stderr)
        return added
