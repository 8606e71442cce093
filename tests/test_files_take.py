"""files.safe.take_untrusted: a file another user wrote, made the caller's without a copy
where it can be (a rename), refused by its size before its bytes are touched."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from agent_eval_action.files.safe import Refused, take_untrusted


def _folder(path: Path) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY)


def test_a_file_on_the_same_file_system_is_renamed_and_made_the_callers(tmp_path):
    (tmp_path / "theirs").mkdir()
    (tmp_path / "mine").mkdir()
    source = tmp_path / "theirs" / "t.jsonl"
    source.write_bytes(b"a\nb\n")
    source.chmod(0o644)
    inode = source.stat().st_ino
    folder = _folder(tmp_path / "theirs")
    try:
        target = tmp_path / "mine" / "t.jsonl"
        assert take_untrusted(folder, "t.jsonl", os.getuid(), target, 4) == 4
    finally:
        os.close(folder)
    assert not source.exists()
    info = target.stat()
    assert (info.st_ino, info.st_uid, info.st_mode & 0o777) == (inode, os.getuid(), 0o600)


def test_a_file_larger_than_it_may_be_is_refused_by_its_size_and_left(tmp_path):
    source = tmp_path / "t.jsonl"
    with source.open("wb") as out:
        out.truncate(5 << 30)  # sparse: costs nothing to make
    folder = _folder(tmp_path)
    try:
        with pytest.raises(Refused, match="more than"):
            take_untrusted(folder, "t.jsonl", None, tmp_path / "taken", 4 << 30)
    finally:
        os.close(folder)
    assert source.exists() and not (tmp_path / "taken").exists()


def test_a_hard_link_is_refused(tmp_path):
    (tmp_path / "t.jsonl").write_bytes(b"x\n")
    os.link(tmp_path / "t.jsonl", tmp_path / "other")
    folder = _folder(tmp_path)
    try:
        with pytest.raises(Refused, match="hard link"):
            take_untrusted(folder, "t.jsonl", None, tmp_path / "taken", 100)
    finally:
        os.close(folder)
    assert not (tmp_path / "taken").exists()


def test_across_file_systems_it_is_copied(tmp_path):
    if not Path("/dev/shm").is_dir() or os.stat("/dev/shm").st_dev == tmp_path.stat().st_dev:
        pytest.skip("needs /dev/shm on a file system of its own")
    (tmp_path / "t.jsonl").write_bytes(b"x\n" * 10)
    folder = _folder(tmp_path)
    with tempfile.TemporaryDirectory(dir="/dev/shm") as other:
        target = Path(other) / "taken"
        try:
            assert take_untrusted(folder, "t.jsonl", None, target, 100) == 20
        finally:
            os.close(folder)
        assert target.read_bytes() == b"x\n" * 10
