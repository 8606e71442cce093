"""files.read_lines: a file read a line at a time (the score stage's traces), its total
capped while it is read, so a reader never holds more than one line of it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agent_eval_action.errors import InputError
from agent_eval_action.files import read_lines


def test_lines_split_at_newline_alone_numbered_and_the_last_one_unterminated(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a": "x\xe2\x80\xa8y"}\n\n{"b": 1}')  # U+2028 inside a line
    assert list(read_lines(path, "t.jsonl", 1 << 20)) == [
        (1, '{"a": "x\u2028y"}'),
        (2, ""),
        (3, '{"b": 1}'),
    ]


def test_a_line_that_is_not_utf8_is_refused_naming_the_file_and_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"one\ntwo\nth\xffree\n")
    with pytest.raises(InputError) as err:
        list(read_lines(path, "t.jsonl", 1 << 20))
    assert str(err.value) == "t.jsonl:3: not UTF-8 text (byte 0xff)"


def test_a_sparse_file_past_the_limit_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "t.jsonl"
    with path.open("wb") as out:
        out.truncate(5 << 30)  # 5 GiB that cost no disk
    with pytest.raises(InputError) as err:
        next(read_lines(path, "t.jsonl", 4 << 30))
    assert str(err.value) == f"t.jsonl: file is {5 << 30} bytes; the limit is {4 << 30}"


def test_a_stream_past_the_limit_is_refused_as_it_is_read(tmp_path):
    link = tmp_path / "t.jsonl"
    link.symlink_to("/dev/zero")  # reports no size; never ends, holds no newline
    with pytest.raises(InputError) as err:
        list(read_lines(link, "t.jsonl", 1 << 20))
    assert str(err.value) == f"t.jsonl: file is more than {1 << 20} bytes; the limit is {1 << 20}"


READ_ALL = r"""
import resource, sys
from pathlib import Path
from agent_eval_action.files import read_lines
count = sum(1 for _ in read_lines(Path(sys.argv[1]), "t.jsonl", 1 << 32))
print(count, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def test_the_reader_holds_one_line_at_a_time_never_the_file(tmp_path):
    path = tmp_path / "t.jsonl"
    line = b'{"trace": "' + b"x" * 1000 + b'"}\n'
    with path.open("wb") as out:
        for _ in range(300):
            out.write(line * 1000)  # 300 MB in all
    done = subprocess.run(
        [sys.executable, "-c", READ_ALL, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=os.environ,
    )
    assert done.returncode == 0, done.stderr
    count, peak_kb = map(int, done.stdout.split())
    assert count == 300_000
    assert peak_kb < 150 * 1024, f"{peak_kb} kB for a 300 MB file"
