"""Main's record: what main's Results say of each case, folded one Results at a time.

Main's older baselines (the action fetches 10 by default), the baseline, and the paired
runs on the merge-base's code each tell how a case behaved on main: how many runs
finished, whether they all did the same thing, which metrics each passed
(compare/evidence.py), whether the case was flaky there (its runs or scores disagreed
within one Results, or its status changed between them). Kept as Results, ten older
baselines of a 100,000-case suite held about 2 GB; folded, a case's record is a few
hundred bytes however many Results it came from, and each older baseline leaves the
reports only what they show of it (`Past`: its pass rate per axis, each case's status
and scores, in columns).

A record is extended with `plus`, which leaves the one it came from as it was: the
confirmation rounds extend the same record of the older baselines and the baseline with
each round's paired runs.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from ..core import AXES, Axis, CaseKey
from ..results import CaseResult, Results, Source, Status
from .divergence import behaviour_varies
from .evidence import NO_RUNS, MainRuns, grown

_STATUSES: tuple[Status, ...] = tuple(Status)
_PLACE = {status: place for place, status in enumerate(_STATUSES)}
_ABSENT = float("-inf")  # a metric the case did not have (a score is finite, or None: NaN)


def pass_rates(results: Results) -> dict[Axis, float | None]:
    """Per axis, the percent of the cases with a metric on it that passed every one of them
    (an errored or unscored metric is not a pass); None when no case has one. One pass
    over the cases for every axis."""
    scored = dict.fromkeys(AXES, 0)
    passed = dict.fromkeys(AXES, 0)
    for case in results.cases:
        seen: dict[Axis, bool] = {}  # axis -> every metric on it passed
        for m in case.metrics.values():
            seen[m.axis] = seen.get(m.axis, True) and m.status == Status.PASSED
        for axis, ok in seen.items():
            scored[axis] += 1
            passed[axis] += ok
    return {a: 100.0 * passed[a] / scored[a] if scored[a] else None for a in AXES}


@dataclass(frozen=True)
class PastCase:
    """One case as one of main's Results had it: what the report's history shows."""

    status: Status
    scores: dict[str, float | None]  # metric -> score, in the Results' order

    @classmethod
    def of(cls, case: CaseResult) -> PastCase:
        return cls(case.status, {name: m.score for name, m in case.metrics.items()})


@dataclass
class Past:
    """One of main's Results, folded: where and when it ran, its pass rate per axis, and
    each case's status and scores in columns (by the case's place in `index`, which the
    record's Pasts share): a byte and 8 per metric per case, where Results held ~2 KB."""

    source: Source
    created_at: datetime
    rates: dict[Axis, float | None]
    index: dict[CaseKey, int]  # the record's: every case key it has seen, numbered
    status: bytearray = field(default_factory=bytearray)  # 1 + the Status's place; 0: absent
    scores: dict[str, array[float]] = field(default_factory=dict)  # NaN: None; -inf: absent

    @classmethod
    def of(cls, results: Results, index: dict[CaseKey, int]) -> Past:
        past = cls.header(results)
        past.index = index
        for case in results.cases:
            past._put(index.setdefault(case.key, len(index)), case)
        return past

    @classmethod
    def header(cls, results: Results) -> Past:
        """Where and when the Results ran and their pass rates, without their cases."""
        return cls(results.source, results.created_at, pass_rates(results), {})

    def _put(self, at: int, case: CaseResult) -> None:
        if at >= len(self.status):
            self.status.extend(bytes(at + 1 - len(self.status)))
        self.status[at] = 1 + _PLACE[case.status]
        for name, metric in case.metrics.items():
            column = self.scores.setdefault(name, array("d"))
            if at >= len(column):
                column.extend([_ABSENT] * (at + 1 - len(column)))
            column[at] = float("nan") if metric.score is None else metric.score

    def case(self, key: CaseKey) -> PastCase | None:
        """The case as these Results had it, or None when they did not have it."""
        at = self.index.get(key)
        if at is None or at >= len(self.status) or not self.status[at]:
            return None
        scores = {
            name: None if value != value else value  # NaN: no score
            for name, column in self.scores.items()
            if at < len(column) and (value := column[at]) != _ABSENT
        }
        return PastCase(_STATUSES[self.status[at] - 1], scores)


class MainRecord:
    """Main's record of each case, and of each Results it was made `of` what the reports
    show (`past`: main's older baselines; the baseline and paired runs added with `plus`
    are shown from their own Results)."""

    __slots__ = ("_cases", "_index", "_noisy", "_statuses", "past")

    def __init__(self) -> None:
        self._cases: dict[CaseKey, MainRuns] = {}
        self._statuses: dict[CaseKey, int] = {}  # a bit per Status the case had
        self._noisy: set[CaseKey] = set()  # its runs or scores disagreed in one Results
        self._index: dict[CaseKey, int] = {}
        self.past: tuple[Past, ...] = ()

    @classmethod
    def of(cls, known: Iterable[Results]) -> MainRecord:
        """The record of these Results (main's older baselines), each folded as it comes:
        a generator that loads them one by one never holds two."""
        record = cls()
        for results in known:
            record.add(results)
        return record

    def add(self, results: Results) -> None:
        """Fold one more of main's older baselines into this record."""
        self._fold(results)
        self.past += (Past.of(results, self._index),)

    def plus(self, *more: Results | None) -> MainRecord:
        """This record with `more` Results folded in too (None: nothing); this one is not
        changed."""
        if not any(r is not None for r in more):
            return self
        record = MainRecord()
        record._cases, record._statuses = dict(self._cases), dict(self._statuses)
        record._noisy, record._index, record.past = set(self._noisy), self._index, self.past
        for results in more:
            if results is not None:
                record._fold(results)
        return record

    def _fold(self, results: Results) -> None:
        cases, statuses = self._cases, self._statuses
        for case in results.cases:
            key = case.key
            cases[key] = grown(cases.get(key, NO_RUNS), case)
            statuses[key] = statuses.get(key, 0) | 1 << _PLACE[case.status]
            if behaviour_varies(case) or _scores_disagree(case):
                self._noisy.add(key)

    def runs(self, key: CaseKey) -> MainRuns:
        """The case's finished runs on main (none: a case main never ran)."""
        return self._cases.get(key, NO_RUNS)

    @property
    def flaky(self) -> set[CaseKey]:
        """Cases that were noisy on main: their runs disagreed, or their status changed
        between Results."""
        changed = {key for key, bits in self._statuses.items() if bits & (bits - 1)}
        return self._noisy | changed


def _scores_disagree(case: CaseResult) -> bool:
    return any(len({s for s in m.runs if s is not None}) > 1 for m in case.metrics.values())
