"""files/writing.py: a file is written whole or not at all, and a device or pipe named as
the output (`--out /dev/null`) is written into, never replaced by a file. The pipe here
stands in for /dev/null: renaming over the real device as root would break the machine."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from agent_eval_action.files import replacing, write_whole


def test_a_file_is_written_whole_and_nothing_is_left_beside_it(tmp_path: Path):
    path = tmp_path / "new" / "report.md"
    write_whole(path, "## é\n")
    assert path.read_text(encoding="utf-8") == "## é\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["report.md"]


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary_one(tmp_path: Path):
    path = tmp_path / "report.md"
    path.write_text("old\n", encoding="utf-8")
    with pytest.raises(RuntimeError), replacing(path) as out:
        out.write(b"half")
        raise RuntimeError("interrupted")
    assert path.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]


def reading(fifo: Path) -> tuple[threading.Thread, list[bytes]]:
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    return reader, got


def test_a_pipe_is_written_into_and_stays_a_pipe(tmp_path: Path):
    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    reader, got = reading(fifo)
    write_whole(fifo, "text\n")
    reader.join(timeout=10)
    assert got == [b"text\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
