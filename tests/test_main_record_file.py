"""Main's record in columns and as a file (compare/past.py, compare/record.py,
compare/record_file.py): the Pasts folded in vectorised steps must say what folding the
same Results case by case says; the file a push run stores must give back that record
exactly; and, coming from an artifact, anything wrong in it must refuse it in one line."""

from __future__ import annotations

import os
import random
from pathlib import Path

import msgspec
import pytest
from helpers.factory import case, results

from agent_eval_action.cli import main
from agent_eval_action.compare.record import MainRecord
from agent_eval_action.compare.record_file import RECORD_NAME, encoded, read_record, write_record
from agent_eval_action.compare.sanity import ResultsRefused
from agent_eval_action.core import CaseKey
from agent_eval_action.results import PAIRED_RUN, SAMPLING_RUN, SUITE_ROUND, Results

T, R = "tool_trajectory_avg_score", "response_match_score"
CONFIRMS = [
    None,
    None,
    f"{SAMPLING_RUN}: too few runs",
    f"{PAIRED_RUN}: s / c1",
    f"{PAIRED_RUN}: {SUITE_ROUND}",
    "re-run: confirms a regression",
]


def _older(rng: random.Random, n: int, ids: list[str]) -> Results:
    """One of main's Results: some of the cases, 1-3 runs each, scores, errors, confirms,
    behaviours repeating across Results (so some cases stay deterministic)."""
    cases = []
    for eval_id in rng.sample(ids, rng.randint(1, len(ids))):
        runs = rng.randint(1, 3)
        scores: dict[str, list[float | None]] = {
            T: [rng.choice([0.0, 1.0]) for _ in range(runs)],
        }
        if rng.random() < 0.6:
            scores[R] = [rng.choice([None, 0.2, 0.9, 1.0]) for _ in range(runs)]
        words = rng.choice(["same", "same", "other", f"new{n}"])
        behaviour = [words if rng.random() < 0.8 else f"odd{n}" for _ in range(runs)]
        errored = (runs,) if runs > 1 and rng.random() < 0.2 else ()
        made = case(eval_id, scores, behaviour, errored_runs=errored)
        for run in made.runs:
            run.confirms = rng.choice(CONFIRMS)
            if rng.random() < 0.7:
                run.fingerprint = run.behaviour()
        cases.append(made)
    return results(*cases, sha=f"main{n}")


def _suite(seed: int, count: int = 6) -> list[Results]:
    rng = random.Random(seed)
    ids = [f"c{i}" for i in range(8)]
    return [_older(rng, n, ids) for n in range(count)]


def _keys(record: MainRecord) -> list[CaseKey]:
    return [*record.tables.keys, CaseKey("s", "never")]


def _same(one: MainRecord, other: MainRecord) -> None:
    for key in _keys(one):
        assert one.runs(key) == other.runs(key), key
    assert one.flaky == other.flaky


@pytest.mark.parametrize("seed", range(12))
def test_pasts_folded_in_columns_say_what_folding_case_by_case_says(seed):
    older = _suite(seed)
    columns = MainRecord.of(older)
    case_by_case = MainRecord().plus(*older)  # `plus` folds each case into MainRuns
    _same(columns, case_by_case)
    assert any(columns.runs(k).known_deterministic for k in columns.tables.keys) or seed
    baseline = _suite(seed + 100, 1)[0]  # and the baseline folded on top of either
    _same(columns.plus(baseline), case_by_case.plus(baseline))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("mapped", [False, True])
def test_the_stored_record_reads_back_as_it_was(tmp_path, seed, mapped):
    record = MainRecord.of(_suite(seed))
    path = tmp_path / RECORD_NAME
    write_record(path, record)
    back = read_record(path, "main-record.msgpack", mapped=mapped)
    if Path("/proc/self/maps").exists():  # a mapped file's columns were copied out of it
        assert str(path.resolve()) not in Path("/proc/self/maps").read_text(encoding="utf-8")
    path.write_bytes(b"")  # so a file cut shorter later harms nothing read from it
    _same(back, record)
    assert [p.source for p in back.past] == [p.source for p in record.past]
    assert [p.created_at for p in back.past] == [p.created_at for p in record.past]
    for key in _keys(record):
        assert [p.case(key) for p in back.past] == [p.case(key) for p in record.past]


def test_each_push_run_passes_on_the_record_with_its_baseline_first_and_history_long():
    older = _suite(3, 5)
    record = MainRecord.of(older[1:])
    passed_on = record.then(older[0], 3)
    assert [p.source.sha for p in passed_on.past] == ["main0", "main1", "main2"]
    _same(passed_on, MainRecord.of(older[:3]))
    nothing = record.then(older[0], 0)  # history 0: a record of no older baseline
    assert nothing.past == ()
    stored = msgspec.msgpack.decode(encoded(nothing))
    assert (stored["cases"], stored["past"]) == ([], [])


def test_a_case_no_kept_older_baseline_has_leaves_the_stored_record():
    gone = results(case("gone", {T: [1.0]}), sha="main2")
    record = MainRecord.of([results(case("kept", {T: [1.0]}), sha="main1"), gone])
    stored = msgspec.msgpack.decode(encoded(record.first(1)))
    assert stored["cases"] == [["s", "kept"]]


def test_a_case_listed_twice_in_an_older_baseline_counts_once_and_misplaces_nothing():
    older = results(
        case("twice", {T: [1.0, 0.0]}, ["a", "b"]),
        case("other", {T: [1.0]}),
        case("twice", {T: [0.0]}),
    )
    record = MainRecord.of([older])
    assert record.runs(CaseKey("s", "twice")).runs == 2  # the first of the two
    assert record.runs(CaseKey("s", "other")).failures(T) == (0, 1)
    back = read_record_bytes(encoded(record))
    _same(back, record)


def read_record_bytes(data: bytes) -> MainRecord:
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"record-{os.getpid()}.msgpack"
    path.write_bytes(data)
    try:
        return read_record(path, RECORD_NAME)
    finally:
        path.unlink()


def test_records_with_their_own_numbering_join_as_if_folded_together(tmp_path):
    older = _suite(5)
    first = MainRecord.of(older[:3])
    joined = MainRecord.of(older[3:4])  # numbered its own way
    joined.extend(first)  # after it: older still
    _same(joined, MainRecord.of([older[3], *older[:3]]))


def test_compare_reads_a_stored_record_as_history_as_it_reads_the_results(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = results(case("c", {T: [1.0]}), case("d", {T: [1.0]}))
    worse = results(case("c", {T: [0.0]}, ["skip"]), case("d", {T: [1.0]}))
    old = results(case("c", {T: [0.0]}, ["other"]), case("d", {T: [1.0]}))
    for name, value in (("base.json", base), ("worse.json", worse), ("old.json", old)):
        Path(name).write_text(value.dump_json(), encoding="utf-8")
    write_record(Path(RECORD_NAME), MainRecord.of([old]))
    argv = ["compare", "--baseline", "base.json", "--current", "worse.json", "--history"]
    assert main([*argv, "old.json"]) == 0  # c was flaky on main: not blamed
    assert main([*argv, RECORD_NAME]) == 0
    assert main(argv[:-1]) == 1  # without main's record it is a regression


def _tampered(change) -> bytes:
    record = MainRecord.of(_suite(1, 2))
    stored = msgspec.msgpack.decode(encoded(record))
    change(stored)
    return msgspec.msgpack.encode(stored)


def _set(path: str, value):
    def change(stored):
        *parents, last = path.split(".")
        node = stored
        for part in parents:
            node = node[int(part)] if part.isdecimal() else node[part]
        node[int(last) if last.isdecimal() else last] = value

    return change


TAMPERED = {
    "garbage": (None, "not a main record"),
    "another kind": (_set("kind", "results"), "not a main record"),
    "a newer version": (_set("version", 2), "version 2"),
    "an unknown field": (_set("extra", 1), "not a main record"),
    "a short column": (_set("past.0.runs", b"\x01"), "runs column"),
    "a status out of range": (
        lambda s: s["past"][0].update(status=b"\x09" + s["past"][0]["status"][1:]),
        "status",
    ),
    "runs of an absent case": (
        lambda s: s["past"][0].update(status=b"\x00" + s["past"][0]["status"][1:]),
        "runs of a case it does not have",
    ),
    "more cases than listed": (_set("past.0.status", b"\x01" * 99), "more than the record"),
    "an outcome out of range": (lambda s: s["outcomes"].clear(), "outcome"),
    "flags out of range": (
        lambda s: s["past"][0].update(why=b"\x07" * len(s["past"][0]["why"])),
        "flags",
    ),
    "a control character": (_set("cases.0.1", "c\u202e1"), "control character"),
    "a case twice": (lambda s: s["cases"].__setitem__(1, s["cases"][0]), "twice"),
    "a pass rate over 100": (_set("past.0.rates.trajectory", 150.0), "pass rate"),
    "a time without its zone": (_set("past.0.created_at", "2026-12-01T10:00:00"), "not a main"),
    "an axis without its pass rate": (
        lambda s: s["past"][0]["rates"].pop("response"),
        "pass rates for",
    ),
    "a score out of range": (
        lambda s: s["past"][0]["scores"].update(
            {T: b"\x00\x00\x00\x00\x00\x00\xf8\x3f" * len(s["past"][0]["status"])}
        ),
        "outside [0, 1]",
    ),
    "an infinite score": (
        lambda s: s["past"][0]["scores"].update(
            {T: b"\x00\x00\x00\x00\x00\x00\xf0\x7f" * len(s["past"][0]["status"])}
        ),
        "not a finite number",
    ),
}


@pytest.mark.parametrize("name", TAMPERED)
def test_a_tampered_record_is_refused_in_one_line_naming_it(tmp_path, name):
    change, said = TAMPERED[name]
    path = tmp_path / RECORD_NAME
    path.write_bytes(b"\xc1 not msgpack" if change is None else _tampered(change))
    with pytest.raises(ResultsRefused) as raised:
        read_record(path, "the artifact of run 5: main-record.msgpack", lambda name: name == T)
    message = str(raised.value)
    assert said in message and "\n" not in message
    assert message.startswith("the artifact of run 5: main-record.msgpack: ")


def test_a_tampered_history_record_is_left_out_of_compare_with_a_warning(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    base = results(case("c", {T: [1.0]}))
    Path("base.json").write_text(base.dump_json(), encoding="utf-8")
    Path(RECORD_NAME).write_bytes(_tampered(_set("version", 9)))
    argv = ["compare", "--baseline", "base.json", "--current", "base.json"]
    assert main([*argv, "--history", RECORD_NAME]) == 0
    err = capsys.readouterr().err
    assert f"warning: --history {RECORD_NAME}: refused main record" in err
