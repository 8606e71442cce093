"""pr.json (action/pr_record.py): written by the PR run, read back from its artifact by the
comment job with a record's size cap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_eval_action.action.pr_record import MAX_BYTES, PrRecord, read
from agent_eval_action.errors import InputError

SOURCE = "artifact agent-eval-results of run 7"
HEAD = "a" * 40


def test_a_written_record_reads_back(tmp_path: Path) -> None:
    path = PrRecord(7, HEAD, "b" * 40).write(tmp_path)
    assert read(path, SOURCE) == PrRecord(7, HEAD, "b" * 40)


def test_a_file_over_the_cap_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "pr.json"
    record = {"schema": "agent-eval-pr/1", "number": 7, "head_sha": HEAD}
    path.write_text(json.dumps(record) + " " * MAX_BYTES, encoding="utf-8")
    with pytest.raises(InputError, match="limit is 4096") as caught:
        read(path, SOURCE)
    assert str(caught.value).startswith(f"pr.json of {SOURCE}: ")


@pytest.mark.parametrize(
    ("text", "why"),
    [("{not json", "not JSON"), ('{"schema": "other"}', "not a PR record"),
     ('{"schema": "agent-eval-pr/1", "number": 0, "head_sha": "x"}', "PR number")],
)  # fmt: skip
def test_a_bad_record_is_bad_input(tmp_path: Path, text: str, why: str) -> None:
    path = tmp_path / "pr.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=why):
        read(path, SOURCE)
