"""Main's record as a file: what a push run stores beside its Results (`main-record.msgpack`
in its artifact), so that a pull request reads main's older baselines from one file.

The file is MessagePack (msgspec): the case keys, the ways runs passed, and per older
baseline (nearest first) its header and its columns (compare/past.py) as little-endian
bytes. It comes from an artifact, so it is untrusted: every field is typed, every column's
length, every id and every count is checked, scores are finite (or the markers of "no
score" and "no such metric") and within their metric's range, texts are sane ids. Anything
wrong refuses the whole file (ResultsRefused, one line); the caller then reads the older
baselines themselves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import msgspec
import numpy as np

from ..core import AXES, Axis, CaseKey
from ..errors import InputError
from ..files import read_bytes, read_mapped, replacing
from ..results import Instant, Source
from .loading import MAX_RESULTS_BYTES
from .past import ABSENT, DIGEST, RECORDED, SAMPLED, STATUSES, Past, Tables
from .record import MainRecord
from .sanity import MAX_COUNT, MAX_MAGNITUDE, Bounded, ResultsRefused, check_id

RECORD_SUFFIX = ".msgpack"  # how `--history` tells a main record from Results
RECORD_NAME = "main-record" + RECORD_SUFFIX
VERSION = 1
MAX_PASTS = 100  # far above the action's history (at most 20)
MAX_RUNS = 1_000_000  # runs of one case in one Results


class _StoredPast(msgspec.Struct, forbid_unknown_fields=True):
    source: Source
    created_at: Instant  # with its time zone, as Results have it
    rates: dict[str, float | None]
    status: bytes  # uint8 per case: 0 absent, else 1 + the Status's place
    runs: bytes  # int32 per case
    sole: bytes  # DIGEST bytes per case
    noisy: bytes  # uint8 per case
    outcome: bytes  # int32 per run
    why: bytes  # uint8 per run
    scores: dict[str, bytes]  # float64 per case


class _Stored(msgspec.Struct, forbid_unknown_fields=True):
    kind: Literal["agent-eval main record"]
    version: int
    cases: list[tuple[str, str]]
    outcomes: list[dict[str, bool]]
    past: list[_StoredPast]


def write_record(path: Path, record: MainRecord) -> None:
    """Store the record's Pasts at `path`, whole or not at all."""
    with replacing(path) as out:
        out.write(encoded(record))


def encoded(record: MainRecord) -> bytes:
    """The record's Pasts as the file holds them (with the cases and pass mappings they
    still name only: a case main dropped leaves once no Past has it)."""
    pasts = record.past
    size = max((len(p.status) for p in pasts), default=0)
    seen = np.zeros(size, np.bool_)
    for p in pasts:
        seen[: len(p.status)] |= p.status > 0
    keys = record.tables.key_list()
    used = np.unique(np.concatenate([p.outcome for p in pasts] or [np.zeros(0, np.int32)]))
    renumber = np.zeros(len(record.tables.outcomes), np.int32)
    renumber[used] = np.arange(len(used), dtype=np.int32)
    stored = _Stored(
        kind="agent-eval main record",
        version=VERSION,
        cases=[tuple(keys[i]) for i in np.flatnonzero(seen)],  # type: ignore[misc]
        outcomes=[record.tables.outcomes[i] for i in used.tolist()],
        past=[_store(p, seen, renumber) for p in pasts],
    )
    return msgspec.msgpack.encode(stored)


def _store(past: Past, seen: np.ndarray, renumber: np.ndarray) -> _StoredPast:
    kept = seen[: len(past.status)]  # its cases that some Past has (its own among them)

    def column(values: np.ndarray, dtype: str) -> bytes:
        return np.ascontiguousarray(values[kept], dtype=dtype).tobytes()

    return _StoredPast(
        source=past.source,
        created_at=past.created_at,
        rates={str(axis): rate for axis, rate in past.rates.items()},
        status=column(past.status, "u1"),
        runs=column(past.runs, "<i4"),
        sole=column(past.sole, "u1"),
        noisy=column(past.noisy, "u1"),
        outcome=renumber[past.outcome].astype("<i4").tobytes(),
        why=past.why.astype("u1").tobytes(),
        scores={name: column(values, "<f8") for name, values in past.scores.items()},
    )


def read_record(
    path: Path, display: str, bounded: Bounded | None = None, *, mapped: bool = False
) -> MainRecord:
    """The record stored at `path`; ResultsRefused (one line naming `display`) when it is
    not a record this version wrote or anything in it is out of bounds. `mapped`: the file
    is this process's own, taken out of an artifact (files/reading.read_mapped): its
    columns are copied out as they are decoded, so the mapping goes on return."""
    read = read_mapped if mapped else read_bytes
    try:
        data = read(path, display, MAX_RESULTS_BYTES)  # capped as Results are
    except InputError as err:
        raise ResultsRefused(err.message, display) from None
    try:
        stored = msgspec.msgpack.decode(data, type=_Stored)
    except (msgspec.DecodeError, msgspec.ValidationError) as err:
        raise ResultsRefused(f"not a main record: {err}", display) from None
    finally:
        del data
    return _Reader(display, bounded).record(stored)


class _Reader:
    def __init__(self, display: str, bounded: Bounded | None):
        self.display, self.bounded = display, bounded
        self.checked: dict[str, bool] = {}  # metric name -> bounded

    def refuse(self, why: str) -> ResultsRefused:
        return ResultsRefused(f"refused main record: {why}", self.display)

    def text(self, value: str | None, where: str) -> None:
        check_id(value, where, self.display)

    def record(self, stored: _Stored) -> MainRecord:
        if stored.version != VERSION:
            raise self.refuse(f"a main record of version {stored.version}, not {VERSION}")
        if len(stored.past) > MAX_PASTS:
            raise self.refuse(f"{len(stored.past)} older baselines (at most {MAX_PASTS})")
        tables = Tables()
        for eval_set_id, eval_id in stored.cases:
            self.text(eval_set_id, "a case's eval set id")
            self.text(eval_id, "a case's eval id")
            tables.keys.setdefault(CaseKey(eval_set_id, eval_id), len(tables.keys))
        if len(tables.keys) != len(stored.cases):
            raise self.refuse("a case is listed twice")
        for outcome in stored.outcomes:
            for name in outcome:
                self.text(name, "a metric name")
            tables.outcome(outcome)
        pasts = tuple(self.past(p, n, tables) for n, p in enumerate(stored.past, start=1))
        return MainRecord(tables, pasts)

    def past(self, stored: _StoredPast, n: int, tables: Tables) -> Past:
        where = f"older baseline {n}"
        for field in msgspec.structs.astuple(stored.source):
            self.text(field, f"{where}: source")
        if sorted(stored.rates) != sorted(AXES):
            raise self.refuse(f"{where}: pass rates for {sorted(stored.rates)}, not {list(AXES)}")
        rates: dict[Axis, float | None] = {}
        for axis in AXES:
            rate = rates[axis] = stored.rates[axis]
            if rate is not None and not 0.0 <= rate <= 100.0:
                raise self.refuse(f"{where}: a pass rate {axis!r}: {rate!r}")
        size = len(stored.status)
        if size > len(tables.keys):
            raise self.refuse(f"{where}: {size} cases, more than the record's")
        status = self.column(stored.status, "u1", size, where, "status", most=len(STATUSES))
        runs = self.column(stored.runs, "<i4", size, where, "count of runs", most=MAX_RUNS)
        if (runs[status == 0] > 0).any():
            raise self.refuse(f"{where}: runs of a case it does not have")
        total = int(runs.sum(dtype=np.int64))
        last = len(tables.outcomes) - 1
        outcome = self.column(stored.outcome, "<i4", total, where, "run's outcome", most=last)
        why = self.column(stored.why, "u1", total, where, "run's flags", most=RECORDED | SAMPLED)
        noisy = self.column(stored.noisy, "u1", size, where, "noisy flag", most=1)
        sole = self.column(stored.sole, "u1", size * DIGEST, where, "sole").reshape(size, DIGEST)
        scores = {name: self.scores(name, raw, size, where) for name, raw in stored.scores.items()}
        return Past(
            stored.source,
            stored.created_at,
            rates,
            status,
            scores,
            runs,
            sole,
            noisy.astype(np.bool_),
            outcome,
            why,
            tables.keys,
        )

    def column(
        self, raw: bytes, dtype: str, length: int, where: str, name: str, most: int | None = None
    ) -> np.ndarray:
        """The column of `length` values, each from 0 to `most` when given; read-only,
        over the decoded bytes (no copy)."""
        width = np.dtype(dtype).itemsize
        if len(raw) != length * width or length > MAX_COUNT:
            raise self.refuse(
                f"{where}: its {name} column has {len(raw)} bytes, not {length * width}"
            )
        values = np.frombuffer(raw, dtype)
        if most is not None and values.size and (values.min() < 0 or values.max() > most):
            raise self.refuse(f"{where}: a {name} out of range")
        return values

    def scores(self, name: str, raw: bytes, size: int, where: str) -> np.ndarray:
        self.text(name, f"{where}: a metric name")
        values = self.column(raw, "<f8", size, where, f"{name!r} scores").astype(
            np.float64, copy=False
        )
        present = values[(values != ABSENT) & ~np.isnan(values)]
        if not np.isfinite(present).all() or (np.abs(present) > MAX_MAGNITUDE).any():
            raise self.refuse(f"{where}: a score of {name} is not a finite number")
        if name not in self.checked:
            self.checked[name] = self.bounded is not None and self.bounded(name)
        if self.checked[name] and ((present < 0.0) | (present > 1.0)).any():
            raise self.refuse(f"{where}: a score of {name} is outside [0, 1]")
        return values
