"""Re-runs on idle slots (docs/statistics.md): which later confirmation re-runs a round
starts at once, which round takes each, and how many were made and used. One bookkeeping
for every route: `run` and the pytest route keep the traces themselves here
(pipeline/session.py), the action keeps where its agent stage left them (the traces file
and the stage's plan: action/agent_run.py), so the decisions are made once.

A run started ahead is taken only by the round that would have made it, with that round's
purpose; the rounds still decide from their own run alone, in run order
(pipeline/confirm.rounds). What no round took is discarded, never recorded or judged.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ..core import CaseKey, Purpose, RunKey
from .confirm import Wanted

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

    def extent(self, need: Wanted, round_number: int, *, scenario: bool) -> int:
        """How many later runs of each needed case the round's stage starts beside its own:
        on the slots it leaves idle, no more than later rounds could ask for
        (pipeline/confirm.rounds asks for at most `confirm_runs`), within `confirm_limit`
        counting what was made. None for a scenario case (its user simulator spends the
        judge's key) or a round that is no confirmation round."""
        if not need or scenario or any(why.kind != "confirmation" for _, why in need):
            return 0
        left = self.confirm_runs - round_number
        room = min(self.concurrency, self.confirm_limit - self.made) // len(need) - 1
        return max(0, min(left, room))

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
