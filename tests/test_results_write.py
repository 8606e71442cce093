"""Results.write and Diff.write stream a record to its file a batch of cases at a time
(results.write_json): the bytes on disk are exactly `dump_json`'s, and the write is atomic."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.factory import case, results
from helpers.paths import ROOT

from agent_eval_action import results as results_module
from agent_eval_action.compare import compare
from agent_eval_action.compare.loading import load_results
from agent_eval_action.compare.model import Diff
from agent_eval_action.results import (
    Actual,
    Content,
    Expected,
    InvocationRecord,
    Results,
    RunRecord,
)

T, R = "tool_trajectory_avg_score", "response_match_score"
OLD = ROOT / "tests" / "data" / "results_v1"
RICH = OLD / "rich.results.json"


def _turn(text: str) -> InvocationRecord:
    return InvocationRecord(
        user_content=Content.from_text(text, "user"),
        expected=Expected(final_response=Content.from_text(text, "model")),
        actual=Actual(final_response=Content.from_text(f'{text}: «ok» "quoted"\n', "model")),
    )


def _several() -> Results:
    """Three cases of 1 to 3 runs, one of whose runs has three turns, some text not ASCII."""
    first = case("a", {T: [1.0, 0.0], R: [0.9, None]}, ["x", "y"])
    second = case("b", {T: [1.0]}, eval_set_id="other", errored_runs=(1,))
    third = case("c", {R: [0.5, 0.6, 0.7]})
    turns = [_turn("hello"), _turn("and then"), _turn("日本語")]
    third.runs[1] = RunRecord(run=2, invocations=turns, duration_s=1.5)
    return results(first, second, third)


@pytest.mark.parametrize(
    "built",
    [_several, lambda: results(), lambda: load_results(str(RICH))],
    ids=["several cases, runs and turns", "no cases", "read from a file (turns kept as JSON)"],
)
def test_the_streamed_file_is_dump_json_byte_for_byte(tmp_path: Path, built) -> None:
    record = built()
    path = tmp_path / "deeper" / "results.json"
    record.write(path)
    assert path.read_bytes() == record.dump_json().encode("utf-8")
    assert Results.from_json(path.read_bytes()) == Results.from_json(record.dump_json())
    assert [p.name for p in path.parent.iterdir()] == ["results.json"]


@pytest.mark.parametrize("batch", [1, 2, 3, 4])
def test_every_batching_of_the_cases_writes_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    """Cases are encoded a batch at a time: batches of one, of a part, of exactly all, and
    of more than there are come out as dump_json does."""
    monkeypatch.setattr(results_module, "_BATCH", batch)
    record = _several()
    record.write(tmp_path / "results.json")
    assert (tmp_path / "results.json").read_bytes() == record.dump_json().encode("utf-8")


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text("old", encoding="utf-8")
    broken = _several()
    broken.cases[2].runs[0].duration_s = object()  # type: ignore[assignment]  # not JSON
    with pytest.raises(TypeError):
        broken.write(path)
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
    assert path.read_text(encoding="utf-8") == "old"


@pytest.mark.parametrize(
    "built",
    [
        lambda: compare(
            load_results(str(RICH)), load_results(str(OLD / "rich-baseline.results.json"))
        ),
        lambda: compare(_several(), _several().replace(cases=[])),
        lambda: compare(results(), results()),
        lambda: Diff.from_json((OLD / "rich.diff.json").read_bytes()),
    ],
    ids=["compared", "all cases new", "no cases", "read from a file"],
)
def test_a_diff_is_written_as_dump_json_and_a_line_break(tmp_path: Path, built) -> None:
    diff = built()
    path = tmp_path / "diff.json"
    diff.write(path)
    assert path.read_bytes() == (diff.dump_json() + "\n").encode("utf-8")
    assert Diff.from_json(path.read_bytes()) == diff
