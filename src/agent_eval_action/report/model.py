"""What a report is made from: the Diff, the current Results, the Options, and the cases
grouped into the lists the report shows (before the size budget cuts any of them).

A regressed case is listed under each axis it regressed on, worst first, and nowhere
else; every other case is listed by its change, and once more under flaky when the Diff
says it is (`CaseDiff.flaky`: its runs disagree, or its change was judged against noise),
so the report and the Diff's JSON agree (a regressed case is never listed as flaky:
report/states.py). A case's first divergent turn is shown by one of
these lists (`Report.blocks`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from ..compare.model import REGRESSIONS, CaseDiff, Change, Diff
from ..core import AXES, Axis, CaseKey
from ..results import Results, Status
from .states import IMPROVEMENTS, NOT_COMPARABLE, shown_flaky

DEFAULT_CHECK_NAME = "agent-eval"
DEFAULT_SERVER_URL = "https://github.com"


@dataclass(frozen=True)
class Options:
    """Where the report is shown, and what the action knows that the Diff does not."""

    check_name: str = DEFAULT_CHECK_NAME
    server_url: str = DEFAULT_SERVER_URL
    # e.g. "the PR's merge-base" or "the nearest older commit"; filled by the action
    baseline_relation: str | None = None
    # the files compared, as the command line named them (`compare`, `run --baseline`): what
    # the report calls each side when its Results name no commit, and instead of "this run"
    baseline_file: str | None = None
    current_file: str | None = None
    # the drill-down report.html: the run's artifacts (`…/actions/runs/ID#artifacts`) or the
    # uploaded file (`…/actions/runs/ID/artifacts/ID`); built by the action from the event
    report_url: str | None = None
    # what `accept` would rewrite in this run's eval files (accept/offer.py, the action)
    accept: AcceptOffer | None = None


@dataclass(frozen=True)
class AcceptOffer:
    """The regressed cases whose expectations `accept` can rewrite, with the axes it would
    rewrite in each; the others it refuses; and the file in output-dir holding the change."""

    cases: tuple[tuple[CaseKey, tuple[Axis, ...]], ...]
    refused: int
    patch: str


def key(case: CaseDiff) -> CaseKey:
    return case.key


def gate_counts_failing(diff: Diff) -> bool:
    """Whether a case that fails its thresholds fails the gate by that alone: without a
    baseline (every policy falls back to thresholds), or with `fail-on: threshold`."""
    return diff.baseline is None or "threshold" in diff.policy.fail_on


@dataclass(frozen=True)
class EvalSetRow:
    """One eval set's cases, counted by what happened to them."""

    name: str
    cases: int = 0
    before: int = 0  # passed on the baseline
    now: int = 0
    regressed: int = 0
    improved: int = 0
    still_failing: int = 0
    not_comparable: int = 0


class Block(NamedTuple):
    """A case's first divergent turn, as a list shows it."""

    number: int  # in the order of the full report's blocks (the budget counts them so)
    row: int  # the case's row in the list
    case: CaseDiff


@dataclass(frozen=True)
class Report:
    """The inputs, and the cases grouped into the report's lists."""

    diff: Diff
    current: Results
    options: Options
    regressed: dict[Axis, tuple[CaseDiff, ...]]  # new failures first, then the largest drops
    improvements: tuple[CaseDiff, ...]
    still_failing: tuple[CaseDiff, ...]
    not_comparable: tuple[CaseDiff, ...]
    flaky: tuple[CaseDiff, ...]
    eval_sets: tuple[EvalSetRow, ...]  # in the order their first case comes

    @classmethod
    def of(cls, diff: Diff, current: Results, options: Options) -> Report:
        regressed: dict[Axis, list[CaseDiff]] = {axis: [] for axis in AXES}
        improvements, still_failing, not_comparable, flaky = [], [], [], []
        tallies: dict[str, list[int]] = {}  # per eval set, EvalSetRow's counts in order
        for case in diff.cases:
            axes = [axis for axis in AXES if case.axes.get(axis) in REGRESSIONS]
            counts = tallies.get(case.eval_set_id)
            if counts is None:
                counts = tallies[case.eval_set_id] = [0] * 7
            counts[0] += 1
            counts[1] += case.baseline_status == Status.PASSED
            counts[2] += case.current_status == Status.PASSED
            counts[3] += bool(axes)
            counts[4] += case.change in IMPROVEMENTS
            counts[5] += case.change == Change.STILL_FAILING
            counts[6] += case.change in NOT_COMPARABLE
            for axis in axes:
                regressed[axis].append(case)
            if axes:
                continue
            if case.change in IMPROVEMENTS:
                improvements.append(case)
            elif case.change == Change.STILL_FAILING:
                still_failing.append(case)
            elif case.change in NOT_COMPARABLE:
                not_comparable.append(case)
            if shown_flaky(case):
                flaky.append(case)
        return cls(
            diff,
            current,
            options,
            {axis: _worst_first(cases, axis) for axis, cases in regressed.items()},
            tuple(improvements),
            tuple(still_failing),
            tuple(not_comparable),
            tuple(flaky),
            tuple(EvalSetRow(name, *counts) for name, counts in tallies.items()),
        )

    @cached_property
    def lists(self) -> Mapping[str, tuple[CaseDiff, ...]]:
        """The lists of cases that may show first divergent turns, in report order, by
        name: each axis's regressions, improvements, still_failing, not_comparable, flaky."""
        lists: dict[str, tuple[CaseDiff, ...]] = {axis: self.regressed[axis] for axis in AXES}
        lists["improvements"] = self.improvements
        lists["still_failing"] = self.still_failing
        lists["not_comparable"] = self.not_comparable
        lists["flaky"] = self.flaky
        return lists

    @cached_property
    def blocks(self) -> Mapping[str, tuple[Block, ...]]:
        """The cases with a first divergent turn by the list that shows it (`lists`): the
        first list in the report that has the case, or flaky for a case listed nowhere
        else."""
        placed: set[CaseKey] = set()
        blocks: dict[str, tuple[Block, ...]] = {}
        for place, cases in self.lists.items():
            mine = []
            for row, case in enumerate(cases):
                if case.divergence is None or (place == "flaky" and not _only_flaky(case)):
                    continue
                if (found := key(case)) not in placed:
                    placed.add(found)
                    mine.append(Block(len(placed) - 1, row, case))
            blocks[place] = tuple(mine)
        return blocks


def _only_flaky(case: CaseDiff) -> bool:
    """Listed under flaky alone (its change puts it in no other list)."""
    return case.change == Change.UNCHANGED and not any(a in REGRESSIONS for a in case.axes.values())


def _worst_first(cases: list[CaseDiff], axis: Axis) -> tuple[CaseDiff, ...]:
    return tuple(sorted(cases, key=lambda case: _severity(case, axis)))


def _severity(case: CaseDiff, axis: Axis) -> tuple[bool, float]:
    drops = [m.delta for m in case.metrics if m.axis == axis and m.delta is not None]
    return case.axes.get(axis) != Change.NEW_FAILURE, min(drops, default=0.0)
