"""files.read_lines: a file read a line at a time (the score stage's traces), its total
capped while it is read, so a reader never holds more than one line of it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from agent_eval_action.errors import InputError
from agent_eval_action.files import read_lines


def test_lines_split_at_newline_alone_numbered_and_the_last_one_unterminated(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a": "x\xe2\x80\xa8y"}\n\n{"b": 1}')  # U+2028 inside a line
    assert list(read_lines(path, "t.jsonl", 1 << 20, 1 << 10)) == [
        (1, '{"a": "x\u2028y"}'),
        (2, ""),
        (3, '{"b": 1}'),
    ]


def test_a_line_that_is_not_utf8_is_refused_naming_the_file_and_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"one\ntwo\nth\xffree\n")
    with pytest.raises(InputError) as err:
        list(read_lines(path, "t.jsonl", 1 << 20, 1 << 10))
    assert str(err.value) == "t.jsonl:3: not UTF-8 text (byte 0xff)"


def test_a_sparse_file_past_the_limit_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "t.jsonl"
    with path.open("wb") as out:
        out.truncate(5 << 30)  # 5 GiB that cost no disk
    with pytest.raises(InputError) as err:
        next(read_lines(path, "t.jsonl", 4 << 30, 1 << 10))
    assert str(err.value) == f"t.jsonl: file is {5 << 30} bytes; the limit is {4 << 30}"


def test_a_stream_past_the_limit_is_refused_as_it_is_read(tmp_path):
    link = tmp_path / "t.jsonl"
    link.symlink_to("/dev/zero")  # reports no size; never ends, holds no newline
    with pytest.raises(InputError) as err:
        list(read_lines(link, "t.jsonl", 1 << 20, 1 << 30))
    assert str(err.value) == f"t.jsonl: file is more than {1 << 20} bytes; the limit is {1 << 20}"


READ_ALL = r"""
import resource, sys
from pathlib import Path
from agent_eval_action.files import read_lines
count = sum(1 for _ in read_lines(Path(sys.argv[1]), "t.jsonl", 1 << 32, 1 << 20))
print(count, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _peak_kb(path) -> tuple[int, int]:
    """(lines read, the reading process's peak memory in kB)."""
    done = subprocess.run(
        [sys.executable, "-c", READ_ALL, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=os.environ,
    )
    assert done.returncode == 0, done.stderr
    count, peak_kb = map(int, done.stdout.split())
    return count, peak_kb


def test_the_reader_holds_one_line_at_a_time_never_the_file(tmp_path):
    line = b'{"trace": "' + b"x" * 1000 + b'"}\n'
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    small.write_bytes(line * 1000)  # 1 MB
    with large.open("wb") as out:
        for _ in range(300):
            out.write(line * 1000)  # 300 MB in all
    _, floor = _peak_kb(small)  # the interpreter and its imports, as this machine has them
    count, peak_kb = _peak_kb(large)
    assert count == 300_000
    assert peak_kb - floor < 100 * 1024, f"{peak_kb} kB for a 300 MB file, {floor} kB for 1 MB"


def test_a_line_past_the_line_limit_is_refused_naming_it(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"x" * 1024 + b"\n" + b"y" * 1025 + b"\nz\n")
    lines = read_lines(path, "t.jsonl", 1 << 20, 1024)
    assert next(lines) == (1, "x" * 1024)  # exactly at the limit
    with pytest.raises(InputError) as err:
        next(lines)
    assert str(err.value) == "t.jsonl:2: a line of more than 1024 bytes; the limit is 1024"


def test_a_stream_of_nuls_under_the_file_limit_is_refused_as_one_long_line(tmp_path):
    link = tmp_path / "t.jsonl"
    link.symlink_to("/dev/zero")  # what a sparse file under the cap reads as
    with pytest.raises(InputError) as err:
        next(read_lines(link, "t.jsonl", 1 << 30, 1 << 16))
    assert str(err.value).startswith("t.jsonl:1: a line of more than 65536 bytes")


def test_a_trace_past_the_line_limit_is_written_as_its_case_run_errored(tmp_path, monkeypatch):
    """The agent stage never writes a line the score stage would refuse with the file."""
    from types import SimpleNamespace

    from agent_eval_action.pipeline import run_cases
    from agent_eval_action.traces import ActualTurn, CaseRunTrace

    monkeypatch.setattr(run_cases, "MAX_TRACE_LINE_BYTES", 4096)
    path = tmp_path / "traces.jsonl"
    writer = run_cases.TracesWriter(path, SimpleNamespace(kind="command", target="a"))
    small = CaseRunTrace(eval_set_id="s", eval_id="a", run=1, turns=[ActualTurn()])
    big = CaseRunTrace(
        eval_set_id="s", eval_id="b", run=1, turns=[ActualTurn(intermediate_responses=["x" * 9000])]
    )
    writer.add(small)
    writer.add(big)
    writer.finish(False)
    lines = [json.loads(text) for _, text in read_lines(path, "traces", 1 << 20, 4096)]
    assert lines[1]["trace"]["turns"] and lines[1]["trace"]["error"] is None
    kept = lines[2]["trace"]
    assert (kept["eval_id"], kept["turns"]) == ("b", [])
    assert kept["error"] == "its trace is more than 4096 bytes, the limit: not scored"
