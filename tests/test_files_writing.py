"""files/writing.py: a file is written whole or not at all, and a device or pipe named as
the output (`--out /dev/null`) is written into, never replaced by a file. Blocks are written
by a thread of their own (`Behind`): every byte in order, its errors raised in the caller. The pipe here
stands in for /dev/null: renaming over the real device as root would break the machine.
A file moved into place replaces a link there; a file written a line at a time holds each
line once flushed; an appended one keeps what it held."""

from __future__ import annotations

import errno
import itertools
import os
import stat
import threading
from pathlib import Path

import pytest

from agent_eval_action.files import (
    append_text,
    line_by_line,
    move,
    replacing,
    write_whole,
    writing,
)


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


# ---- written behind: a thread of its own writes the blocks ------------------------------

BLOCK = writing._BUFFER


@pytest.mark.parametrize("size", [0, 1, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + BLOCK // 2])
def test_a_file_written_behind_holds_every_byte_in_order(tmp_path: Path, size: int):
    data = os.urandom(size)
    path = tmp_path / "results.json"
    with replacing(path) as out:
        at = 0
        for step in itertools.cycle([1, 7, 65_536, BLOCK - 3, 2 * BLOCK + 5]):
            if at >= size:
                break
            out.write(memoryview(data)[at : at + step])  # pieces across the blocks' edges
            at += step
    assert path.read_bytes() == data
    assert not _writers()


def test_what_is_handed_over_is_copied_so_the_caller_may_reuse_it(tmp_path: Path):
    path = tmp_path / "out"
    piece = bytearray(b"a" * (BLOCK // 2))
    with replacing(path) as out:
        for letter in b"abcd":
            piece[:] = bytes([letter]) * len(piece)
            out.write(piece)
    assert path.read_bytes() == b"".join(bytes([c]) * (BLOCK // 2) for c in b"abcd")


class FullDisk:
    """A file that takes `room` bytes, then fails as a full disk does."""

    def __init__(self, room: int) -> None:
        self.room, self.taken = room, bytearray()

    def write(self, data) -> int:
        if len(self.taken) + len(data) > self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.taken += data
        return len(data)


def _writers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "write-behind"]


def test_the_writing_threads_error_reaches_the_caller_and_no_thread_is_left():
    sink = FullDisk(room=BLOCK)  # the second block does not fit
    with pytest.raises(OSError, match="No space left"), writing.Behind(sink) as out:
        for _ in range(8):
            out.write(b"x" * BLOCK)
    assert len(sink.taken) == BLOCK
    assert not _writers()


def test_an_error_in_the_last_block_is_raised_by_close():
    sink = FullDisk(room=2 * BLOCK)
    out = writing.Behind(sink)
    out.write(b"x" * (2 * BLOCK + 10))  # two blocks handed over, ten bytes kept
    with pytest.raises(OSError, match="No space left"):
        out.close()
    assert not _writers()


def test_a_full_disk_leaves_the_old_file_and_no_temporary_one(tmp_path: Path, monkeypatch):
    path = tmp_path / "results.json"
    path.write_text("old\n", encoding="utf-8")
    real = writing.Behind
    monkeypatch.setattr(writing, "Behind", lambda raw: real(FullDisk(room=BLOCK)))
    with pytest.raises(OSError, match="No space left"), replacing(path) as out:
        out.write(b"y" * (3 * BLOCK))
    assert path.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
    assert not _writers()


def test_an_error_of_the_caller_stops_the_thread_and_removes_the_temporary_file(tmp_path: Path):
    path = tmp_path / "diff.json"
    with pytest.raises(KeyboardInterrupt), replacing(path) as out:
        out.write(b"z" * (2 * BLOCK + 1))  # the thread is writing
        raise KeyboardInterrupt  # a cancelled job
    assert list(tmp_path.iterdir()) == []
    assert not _writers()


# ---- moved into place, written a line at a time, appended to -----------------------------


def test_a_file_moved_into_place_replaces_a_link_there_and_writes_nothing_through_it(
    tmp_path: Path,
):
    target, elsewhere = tmp_path / "run" / "results.json", tmp_path / "elsewhere.json"
    elsewhere.write_text("theirs\n", encoding="utf-8")
    target.parent.mkdir()
    target.symlink_to(elsewhere)
    (tmp_path / "taken.json").write_text("ours\n", encoding="utf-8")
    move(tmp_path / "taken.json", target)
    assert not target.is_symlink() and target.read_text(encoding="utf-8") == "ours\n"
    assert elsewhere.read_text(encoding="utf-8") == "theirs\n"
    move(target, tmp_path / "new" / "results.json")  # missing folders are made
    assert (tmp_path / "new" / "results.json").read_text(encoding="utf-8") == "ours\n"


def test_a_line_is_in_the_file_once_flushed_and_an_appended_file_keeps_what_it_held(
    tmp_path: Path,
):
    traces = tmp_path / "stage" / "traces.jsonl"
    out = line_by_line(traces)
    out.write("{}\n")
    out.flush()
    assert traces.read_text(encoding="utf-8") == "{}\n"  # the writer is still at work
    out.close()
    summary = tmp_path / "summary.md"
    append_text(summary, "one\n")
    append_text(summary, "two é\n")
    assert summary.read_text(encoding="utf-8") == "one\ntwo é\n"
