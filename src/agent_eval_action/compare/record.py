"""Main's record: what main's Results say of each case, folded into what the gate reads.

Main's older baselines (the action fetches 10 by default), the baseline, and the paired
runs on the merge-base's code each tell how a case behaved on main: how many runs
finished, whether they all did the same thing, which metrics each passed
(compare/evidence.py), whether the case was flaky there (its runs or scores disagreed
within one Results, or its status changed between them).

An older baseline is kept as a `Past` (compare/past.py: its cases in columns), and the
Pasts are folded together in a few vectorised steps the first time the record is read.
The Results folded on top with `plus` (the baseline, the paired runs of each confirmation
round) are folded case by case into `MainRuns`, leaving the record they extend as it was.
A record of Pasts is what main's push runs store beside their Results
(compare/record_file.py), so that a pull request reads one baseline and one record,
not ten baselines.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..core import CaseKey
from ..results import Results
from .evidence import NO_RUNS, MainRuns, grown
from .past import (
    DIGEST,
    PLACE,
    RECORDED,
    SAMPLED,
    Past,
    PastCase,
    Tables,
    fingerprint,
    noisy_case,
    pass_rates,
)

__all__ = ["MainRecord", "Past", "PastCase", "pass_rates"]


def _padded(column: np.ndarray, size: int) -> np.ndarray:
    """A Past's column over the record's `size` cases (those it never saw: zero)."""
    if len(column) == size:
        return column
    return np.concatenate([column, np.zeros((size - len(column), *column.shape[1:]), column.dtype)])


@dataclass(frozen=True)
class _Folded:
    """A record's Pasts folded together, per case by its place in the record's keys."""

    # read case by case, so lists (a numpy element is slow to read alone), but `sole`
    runs: list[int]  # finished runs on main
    sole: np.ndarray  # (cases, DIGEST) bytes: the behaviour of the first Past with runs
    has_sole: list[bool]  # every run did that same thing
    starts: list[int]  # (cases + 1): where each case's runs are in outcome and why
    outcome: list[int]  # per run: its pass mapping's number, nearest Past first
    why: list[int]  # per run: RECORDED | SAMPLED bits
    bits: list[int]  # a bit per Status the case had
    flaky: frozenset[CaseKey]

    @classmethod
    def of(cls, pasts: tuple[Past, ...], tables: Tables) -> _Folded:
        if not pasts:
            return cls([], np.zeros((0, DIGEST), np.uint8), [], [0], [], [], [], frozenset())
        size = len(tables.keys)
        runs = np.stack([_padded(p.runs, size) for p in pasts])
        present = runs > 0
        # a digest as four 64-bit words: a Past's runs all did the same when it is not zero
        soles = np.stack([_padded(p.sole, size) for p in pasts]).view(np.uint64)
        first = soles[present.argmax(axis=0), np.arange(size)]
        alike = (~present[..., None] | (soles == first)).all(axis=(0, 2))
        varied = (present & ~soles.any(axis=2)).any(axis=0)
        total = runs.sum(axis=0, dtype=np.int64)
        place = np.concatenate(
            [np.repeat(np.arange(len(p.runs), dtype=np.int64), p.runs) for p in pasts]
        )
        order = np.argsort(place, kind="stable")  # by case, the nearest Past's runs first
        starts = np.zeros(size + 1, np.int64)
        np.cumsum(np.bincount(place, minlength=size), out=starts[1:])
        bits = np.zeros(size, np.int64)
        noisy = np.zeros(size, np.bool_)
        for p in pasts:
            status = _padded(p.status, size).astype(np.int64)
            bits |= np.where(status > 0, np.left_shift(1, np.maximum(status - 1, 0)), 0)
            noisy |= _padded(p.noisy, size)
        keys = tables.key_list()
        flaky = noisy | ((bits & (bits - 1)) != 0)
        return cls(
            total.tolist(),
            np.ascontiguousarray(first).view(np.uint8).reshape(size, DIGEST),
            ((total > 0) & alike & ~varied).tolist(),
            starts.tolist(),
            np.concatenate([p.outcome for p in pasts])[order].tolist(),
            np.concatenate([p.why for p in pasts])[order].tolist(),
            bits.tolist(),
            frozenset(keys[i] for i in np.flatnonzero(flaky)),
        )

    def runs_at(self, at: int | None, outcomes: list[dict[str, bool]]) -> MainRuns:
        """The case's runs in the Pasts (at: its place in the keys; None: never seen)."""
        runs = self.runs
        if at is None or at >= len(runs) or not runs[at]:
            return NO_RUNS
        lo, hi = self.starts[at], self.starts[at + 1]
        passed = tuple([outcomes[i] for i in self.outcome[lo:hi]])
        flags = self.why[lo:hi]
        # most runs are baselines' own, counted in all three: then one tuple serves them
        if flags.count(RECORDED | SAMPLED) == len(flags):
            recorded = sampled = passed
        else:
            recorded = _where(passed, flags, RECORDED)
            sampled = _where(passed, flags, SAMPLED)
        sole = fingerprint(self.sole[at].tobytes()) if self.has_sole[at] else None
        return MainRuns(runs[at], sole, passed, recorded, sampled)

    def bits_at(self, at: int | None) -> int:
        return 0 if at is None or at >= len(self.bits) else self.bits[at]


def _where(
    passed: tuple[dict[str, bool], ...], why: list[int], bit: int
) -> tuple[dict[str, bool], ...]:
    """The runs whose flags have `bit`."""
    return tuple(p for p, w in zip(passed, why, strict=True) if w & bit)


class MainRecord:
    """Main's record of each case: its older baselines as Pasts (`past`, nearest first, for
    the reports too), and the Results folded on top with `plus`."""

    __slots__ = ("_cases", "_folded", "_noisy", "_statuses", "past", "tables")

    def __init__(self, tables: Tables | None = None, past: tuple[Past, ...] = ()) -> None:
        self.tables = tables if tables is not None else Tables()
        self.past = past
        self._folded: _Folded | None = None
        self._cases: dict[CaseKey, MainRuns] = {}  # folded on top of the Pasts
        self._statuses: dict[CaseKey, int] = {}  # a bit per Status, the Pasts' included
        self._noisy: set[CaseKey] = set()  # its runs or scores disagreed in one Results

    @classmethod
    def of(cls, known: Iterable[Results]) -> MainRecord:
        """The record of these Results (main's older baselines, nearest first), each folded
        as it comes: a generator that loads them one by one never holds two."""
        record = cls()
        for results in known:
            record.add(results)
        return record

    def add(self, results: Results) -> None:
        """Keep one more of main's older baselines (the next older one) as a Past."""
        assert not self._cases, "older baselines go below what was folded on top"
        self.past += (Past.of(results, self.tables),)
        self._folded = None

    def extend(self, older: MainRecord) -> None:
        """Keep the older baselines of another record too, after this one's."""
        assert not self._cases, "older baselines go below what was folded on top"
        if older.tables is self.tables:
            self.past += older.past
        else:
            self.past += tuple(p.moved(older.tables, self.tables) for p in older.past)
        self._folded = None

    def first(self, count: int) -> MainRecord:
        """This record with its `count` nearest older baselines only."""
        return self if count >= len(self.past) else MainRecord(self.tables, self.past[:count])

    def then(self, results: Results, count: int) -> MainRecord:
        """The record a later baseline's pull requests read: `results` (the baseline before
        it) as the nearest Past, then this record's, `count` in all."""
        newest = Past.of(results, self.tables)
        return MainRecord(self.tables, (newest, *self.past)[: max(count, 0)])

    def plus(self, *more: Results | None) -> MainRecord:
        """This record with `more` Results folded in too (None: nothing); this one is not
        changed."""
        if not any(r is not None for r in more):
            return self
        record = MainRecord(self.tables, self.past)
        record._folded = self._fold_pasts()
        record._cases, record._statuses = dict(self._cases), dict(self._statuses)
        record._noisy = set(self._noisy)
        for results in more:
            if results is not None:
                record._fold(results)
        return record

    def _fold_pasts(self) -> _Folded:
        if self._folded is None:
            self._folded = _Folded.of(self.past, self.tables)
        return self._folded

    def _fold(self, results: Results) -> None:
        cases, statuses = self._cases, self._statuses
        folded, keys = self._fold_pasts(), self.tables.keys
        for case in results.cases:
            key = case.key
            main = cases.get(key)
            if main is None:
                at = keys.get(key)
                main, was = folded.runs_at(at, self.tables.outcomes), folded.bits_at(at)
            else:
                was = statuses[key]
            cases[key] = grown(main, case)
            statuses[key] = was | 1 << PLACE[case.status]
            if noisy_case(case):
                self._noisy.add(key)

    def runs(self, key: CaseKey) -> MainRuns:
        """The case's finished runs on main (none: a case main never ran)."""
        found = self._cases.get(key)
        if found is not None:
            return found
        if not self.past:
            return NO_RUNS
        return self._fold_pasts().runs_at(self.tables.keys.get(key), self.tables.outcomes)

    @property
    def flaky(self) -> set[CaseKey]:
        """Cases that were noisy on main: their runs disagreed, or their status changed
        between Results."""
        changed = {key for key, bits in self._statuses.items() if bits & (bits - 1)}
        return set(self._fold_pasts().flaky) | self._noisy | changed
