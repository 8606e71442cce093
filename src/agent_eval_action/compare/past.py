"""One of main's older baselines, folded into columns: what main's record (compare/record.py)
keeps of it, and what the report's history shows of it.

Per case, by its place in the record's `Tables.keys`: its status and scores (the drill-down's
history), its finished runs on main (how many; the one behaviour they shared, as a
fingerprint's 32-byte digest, zero when they differed; whether its runs or scores disagreed),
and which metrics each run passed (an id into `Tables.outcomes`, with two bits saying whether
the run counts as one main recorded for itself and as one taken whatever the case did:
compare/evidence.py). A few dozen bytes per case where the Results held kilobytes, in numpy
columns, so that ten of them fold in a few vectorised steps, and are stored as they are
(compare/record_file.py): main's push runs carry main's record from one to the next.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from ..core import AXES, Axis, CaseKey
from ..results import CaseResult, Results, Source, Status
from .divergence import behaviour_varies
from .evidence import kept_runs, passes, recorded_run, sampled_run

STATUSES: tuple[Status, ...] = tuple(Status)
PLACE = {status: place for place, status in enumerate(STATUSES)}
ABSENT = float("-inf")  # a metric the case did not have (a score is finite, or None: NaN)
RECORDED, SAMPLED = 1, 2  # a run's bits in `why`
DIGEST = 32  # bytes of a behaviour's digest; all zero: the runs did not all do the same
_PREFIX = "sha256:"


def digest(fingerprint: str) -> bytes:
    """A behaviour fingerprint ("sha256:" and 64 hex digits, as the score stage writes it)
    as its 32 bytes; any other string as the SHA-256 of it."""
    hexed = fingerprint[len(_PREFIX) :] if fingerprint.startswith(_PREFIX) else ""
    if len(hexed) == 2 * DIGEST:
        try:
            return bytes.fromhex(hexed)
        except ValueError:
            pass
    return hashlib.sha256(fingerprint.encode("utf-8", "surrogatepass")).digest()


def fingerprint(raw: bytes) -> str:
    """The fingerprint a digest stands for (as the score stage writes them)."""
    return _PREFIX + raw.hex()


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


@dataclass
class Tables:
    """What a record's Pasts share: every case key seen (numbered in order), and each way
    a run passed its metrics (numbered: a suite's runs pass in a few ways)."""

    keys: dict[CaseKey, int] = field(default_factory=dict)
    outcomes: list[dict[str, bool]] = field(default_factory=list)
    _outcome_ids: dict[int, int] = field(default_factory=dict)  # id(mapping) -> its number

    def key_list(self) -> list[CaseKey]:
        return list(self.keys)

    def outcome(self, passed: dict[str, bool]) -> int:
        """The number of a pass mapping (evidence.passes shares equal ones)."""
        found = self._outcome_ids.get(id(passed))
        if found is None:
            found = self._outcome_ids[id(passed)] = len(self.outcomes)
            self.outcomes.append(passed)
        return found


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
    """One of main's Results in columns (see the module's docstring); the columns may be
    shorter than the record's keys (cases first seen later): those cases it did not have."""

    source: Source
    created_at: datetime
    rates: dict[Axis, float | None]
    status: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))  # 1 + place
    scores: dict[str, np.ndarray] = field(default_factory=dict)  # float64; NaN, ABSENT
    runs: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    sole: np.ndarray = field(default_factory=lambda: np.zeros((0, DIGEST), np.uint8))
    noisy: np.ndarray = field(default_factory=lambda: np.zeros(0, np.bool_))
    outcome: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # per run
    why: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))  # per run
    # (outcome and why: the runs of each case together, the cases in the order of places)
    keys: dict[CaseKey, int] = field(default_factory=dict)  # the record's, shared

    @classmethod
    def header(cls, results: Results) -> Past:
        """Where and when the Results ran and their pass rates, without their cases."""
        return cls(results.source, results.created_at, pass_rates(results))

    @classmethod
    def of(cls, results: Results, tables: Tables | None = None) -> Past:
        """The Results in columns, their cases numbered in `tables` (a new one: alone)."""
        tables = tables if tables is not None else Tables()
        keys = tables.keys
        places = [keys.setdefault(case.key, len(keys)) for case in results.cases]
        size = max(places, default=-1) + 1
        status = np.zeros(size, np.uint8)
        runs = np.zeros(size, np.int32)
        noisy = np.zeros(size, np.bool_)
        sole = bytearray(size * DIGEST)
        scores: dict[str, np.ndarray] = {}
        outcome: list[int] = []
        why: list[int] = []
        owner: list[int] = []  # each run's case's place
        for at, case in zip(places, results.cases, strict=True):
            if status[at]:
                continue  # a case listed twice: its first counts (the columns hold one)
            status[at] = 1 + PLACE[case.status]
            for name, metric in case.metrics.items():
                column = scores.get(name)
                if column is None:
                    column = scores[name] = np.full(size, ABSENT)
                column[at] = np.nan if metric.score is None else metric.score
            noisy[at] = noisy_case(case)
            kept = kept_runs(case)
            if not kept:
                continue
            runs[at] = len(kept)
            behaviours = {case.runs[i].behaviour() for i in kept}
            if len(behaviours) == 1:
                sole[at * DIGEST : (at + 1) * DIGEST] = digest(behaviours.pop())
            for i, passed in zip(kept, passes(case, kept), strict=True):
                outcome.append(tables.outcome(passed))
                owner.append(at)
                run = case.runs[i]
                why.append(RECORDED * recorded_run(run) | SAMPLED * sampled_run(run))
        # the runs in the order of their cases' places (the Results may list them otherwise)
        order = np.argsort(np.array(owner, np.int64), kind="stable")
        return cls(
            results.source,
            results.created_at,
            pass_rates(results),
            status,
            scores,
            runs,
            np.frombuffer(bytes(sole), np.uint8).reshape(size, DIGEST),
            noisy,
            np.array(outcome, np.int32)[order],
            np.array(why, np.uint8)[order],
            keys,
        )

    def moved(self, tables: Tables, into: Tables) -> Past:
        """This Past, numbered by `tables`, renumbered into `into` (its keys and ways of
        passing added there as needed)."""
        keys = tables.key_list()[: len(self.status)]
        places = np.array([into.keys.setdefault(k, len(into.keys)) for k in keys], np.int64)
        size = int(places.max(initial=-1)) + 1

        def scattered(column: np.ndarray, fill: float = 0) -> np.ndarray:
            moved = np.full((size, *column.shape[1:]), fill, column.dtype)
            moved[places] = column
            return moved

        # a run's entries stay in the order of their cases' places
        owner = places[np.repeat(np.arange(len(self.runs)), self.runs)]
        order = np.argsort(owner, kind="stable")
        renumber = np.array([into.outcome(o) for o in tables.outcomes] or [0], np.int32)
        return Past(
            self.source,
            self.created_at,
            self.rates,
            scattered(self.status),
            {name: scattered(column, ABSENT) for name, column in self.scores.items()},
            scattered(self.runs),
            scattered(self.sole),
            scattered(self.noisy),
            renumber[self.outcome[order]],
            self.why[order],
            into.keys,
        )

    def case(self, key: CaseKey) -> PastCase | None:
        """The case as these Results had it, or None when they did not have it."""
        at = self.keys.get(key)
        if at is None or at >= len(self.status) or not self.status[at]:
            return None
        scores = {
            name: None if value != value else value  # NaN: no score
            for name, column in self.scores.items()
            if at < len(column) and (value := float(column[at])) != ABSENT
        }
        return PastCase(STATUSES[self.status[at] - 1], scores)


def noisy_case(case: CaseResult) -> bool:
    """Whether one Results saw the case disagree with itself: its finished runs did
    different things, or got different scores on some metric."""
    return behaviour_varies(case) or any(
        len({s for s in m.runs if s is not None}) > 1 for m in case.metrics.values()
    )


__all__ = ["ABSENT", "DIGEST", "Past", "PastCase", "Tables", "digest", "fingerprint"]
