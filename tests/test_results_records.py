"""Results and Diff are records (msgspec Structs): Results written before they were still
load and write back unchanged, a run's turns stay JSON until read, and its behaviour
fingerprint is what compare uses to tell whether runs behaved alike."""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path

import msgspec
import pytest
from helpers.factory import case, results
from helpers.paths import ROOT

from agent_eval_action.compare import compare
from agent_eval_action.compare.divergence import behaviour_varies
from agent_eval_action.compare.loading import load_baseline, load_results
from agent_eval_action.compare.model import Diff
from agent_eval_action.errors import InputError
from agent_eval_action.results import (
    Content,
    FunctionCall,
    Part,
    Results,
    RunRecord,
    behaviour_fingerprint,
)

# Written by the pydantic records of 2026-12-01 (before the fingerprint was recorded): a real
# run of examples/customer_support, and two hand-built ones using every optional field.
OLD = ROOT / "tests" / "data" / "results_v1"
OLD_RESULTS = sorted(OLD.glob("*.results.json"))
T, R = "tool_trajectory_avg_score", "response_match_score"


def _kept(old: object, new: object, where: str = "") -> None:
    """Every value of `old` is in `new`, unchanged (`new` may hold fields added since)."""
    if isinstance(old, dict):
        assert isinstance(new, dict), where
        for key, value in old.items():
            assert key in new, f"{where}.{key} was lost"
            _kept(value, new[key], f"{where}.{key}")
    elif isinstance(old, list):
        assert isinstance(new, list) and len(new) == len(old), where
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            _kept(a, b, f"{where}[{i}]")
    else:
        assert old == new and type(old) is type(new), f"{where}: {old!r} became {new!r}"


@pytest.mark.parametrize("path", OLD_RESULTS, ids=[p.name for p in OLD_RESULTS])
def test_results_of_the_pydantic_version_load_and_write_back_unchanged(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    loaded = load_results(str(path))
    written = loaded.dump_json()
    _kept(json.loads(text), json.loads(written))
    assert Results.from_json(written) == Results.from_json(text)
    assert all(run.fingerprint is None for c in loaded.cases for run in c.runs)


def test_a_diff_of_the_pydantic_version_loads_and_compare_still_makes_it() -> None:
    """Compare on the old files decides every case as it did when they were written (the
    suite-level test and the notes' wording have moved on since: those are not compared)."""
    stored = (OLD / "rich.diff.json").read_text(encoding="utf-8")
    _kept(json.loads(stored), json.loads(Diff.from_json(stored).dump_json()))
    current = load_results(str(OLD / "rich.results.json"))
    baseline, _ = load_baseline(str(OLD / "rich-baseline.results.json"))
    now, then = json.loads(compare(current, baseline).dump_json()), json.loads(stored)
    for key in ("cases", "not_run", "comparable"):
        _kept(then[key], now[key], key)  # fields added since (e.g. TurnDiff.simulated) aside
    for key in ("passed", "counts", "trajectory_regressions", "response_regressions"):
        assert now["verdict"][key] == then["verdict"][key], key


def test_every_kind_of_content_part_survives_the_round_trip() -> None:
    loaded = load_results(str(OLD / "rich.results.json"))
    (turn,) = loaded.cases[0].runs[1].turns()
    parts = turn.actual.final_response.parts
    assert parts[0].thought is True and parts[0].text == "thinking"
    assert parts[1].inline_data == {"mime_type": "text/plain", "data": "aGk="}
    assert parts[2].function_call.args == {"id": "y", "n": [1, 2.5, None]}
    assert parts[3].function_response.will_continue is False
    assert turn.actual.tool_responses[0].response == {"ok": True}


def test_a_runs_turns_stay_json_until_read() -> None:
    loaded = load_results(str(OLD / "customer_support.results.json"))
    run = loaded.cases[0].runs[0]
    assert isinstance(run.invocations, msgspec.Raw)  # checked at load, then let go
    turns = run.turns()
    assert turns and run.invocations is turns  # decoded once, then kept
    turns[0].duration_s = 9.0  # what is read is what is written
    assert '"duration_s": 9.0' in loaded.dump_json()


def test_bad_turns_are_refused_at_load_in_one_line(tmp_path: Path) -> None:
    data = json.loads((OLD / "rich.results.json").read_text(encoding="utf-8"))
    data["cases"][1]["runs"][0]["invocations"][0]["user_content"]["parts"] = [{"txt": "x"}]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError) as raised:
        load_results(str(path))
    text = str(raised.value)
    assert text.startswith(f"{path}: invalid Results: ") and "\n" not in text
    assert 'case "s / b": run 1 invocations' in text and "txt" in text
    baseline, reason = load_baseline(str(path))
    assert baseline is None and reason.startswith("the baseline is unreadable (")


def test_the_fingerprint_is_the_behaviour_compare_looks_at() -> None:
    same = results(case("a", {T: [1.0, 1.0]}, ["x", "x"])).cases[0]
    differ = results(case("a", {T: [1.0, 1.0]}, ["x", "y"])).cases[0]
    a, b = (behaviour_fingerprint(run.turns()) for run in differ.runs)
    assert a != b and a.startswith("sha256:") and len(a) == len("sha256:") + 64
    assert behaviour_fingerprint(same.runs[0].turns()) == behaviour_fingerprint(
        same.runs[1].turns()
    )
    # the user's words, durations and tool responses are not behaviour; the answer is
    turns = same.runs[0].turns()
    turns[0].user_content = Content.from_text("another question", "user")
    turns[0].duration_s = 3.0
    assert behaviour_fingerprint(turns) == behaviour_fingerprint(same.runs[1].turns())
    turns[0].actual.final_response = Content.from_text("another answer", "model")
    assert behaviour_fingerprint(turns) != behaviour_fingerprint(same.runs[1].turns())
    assert not behaviour_varies(results(case("a", {T: [1.0, 1.0]}, ["x", "x"])).cases[0])
    assert behaviour_varies(differ)


def test_compare_reads_the_recorded_fingerprint_and_not_the_turns() -> None:
    """Two runs recorded as alike are alike to compare, whatever their turns hold: compare
    reads one string per run (the score stage writes it from the turns)."""
    noisy = results(case("a", {T: [1.0, 1.0]}, ["x", "y"])).cases[0]
    for run in noisy.runs:
        run.fingerprint = "sha256:" + "0" * 64
        run.invocations = msgspec.Raw(b"[{")  # never decoded: it would fail
    assert not behaviour_varies(noisy)
    noisy.runs[1].fingerprint = "sha256:" + "1" * 64
    assert behaviour_varies(noisy)


def test_the_score_stage_records_each_runs_fingerprint(tmp_path: Path) -> None:
    written = results(case("a", {T: [1.0]}))
    run = written.cases[0].runs[0]
    assert run.fingerprint is None  # the factory builds records by hand
    path = tmp_path / "r.json"
    run.fingerprint = behaviour_fingerprint(run.turns())
    written.write(path)
    again = Results.from_json(path.read_bytes()).cases[0].runs[0]
    assert again.fingerprint == run.fingerprint == again.behaviour()
    assert again.behaviour() == RunRecord(run=1, invocations=again.turns()).behaviour()


def test_records_are_small_and_untracked_by_the_cyclic_collector() -> None:
    part = Part(text="hello")
    call = FunctionCall(name="lookup", args={"id": 1})
    assert not gc.is_tracked(part) and not gc.is_tracked(call)
    assert not hasattr(part, "__dict__")
    assert sys.getsizeof(part) <= 152  # 17 slots of 8 bytes and the object's header
    assert msgspec.json.encode(part) == b'{"text":"hello"}'  # unset fields are not written


def test_no_tricks_on_pydantic_internals_or_the_garbage_collector() -> None:
    """What issue 16 removed stays removed: the records are small by construction."""
    src = ROOT / "src" / "agent_eval_action"
    text = "\n".join(p.read_text(encoding="utf-8") for p in src.rglob("*.py"))
    for trick in ("__pydantic_fields_set__", "gc.disable", "gc.freeze", "LeanModel"):
        assert trick not in text, trick
