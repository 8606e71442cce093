"""Reading untrusted artifact zips (github/artifacts.py): only safe, bounded, intact input."""

from __future__ import annotations

import io
import zipfile

import pytest

from agent_eval_action.github.artifacts import ArtifactError, entry_names, read_files

SOURCE = "artifact agent-eval-results of run 7"


def make_zip(entries: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as archive:
        for name, data in entries.items():
            archive.writestr(zipfile.ZipInfo(name), data, compress_type=method)
    return buf.getvalue()


def rejected(data: bytes, match: str, **limits: int) -> str:
    with pytest.raises(ArtifactError, match=match) as caught:
        read_files(data, {"results.json"}, source=SOURCE, **limits)
    message = str(caught.value)
    assert message.startswith(SOURCE) and "\n" not in message
    return message


def test_reads_the_wanted_file_only() -> None:
    data = make_zip({"results.json": b"{}", "report.md": b"# r", "traces/t.json": b"[]"})
    assert read_files(data, {"results.json"}, source=SOURCE) == {"results.json": b"{}"}
    everything = read_files(data, None, source=SOURCE)
    assert sorted(everything) == ["report.md", "results.json", "traces/t.json"]


def test_missing_file_is_absent_not_an_error() -> None:
    data = make_zip({"report.md": b"# r"})
    assert read_files(data, {"results.json"}, source=SOURCE) == {}
    assert entry_names(data) == ["report.md"]


def test_raw_unzipped_file_is_results_json() -> None:
    # upload-artifact v7 `archive: false` stores the single file as is.
    raw = b'{"schema": "agent-eval-results/1"}'
    assert read_files(raw, {"results.json"}, source=SOURCE) == {"results.json": raw}
    assert read_files(raw, {"other"}, source=SOURCE) == {}
    rejected(raw, "over 10 bytes", max_entry_bytes=10)


def test_empty_zip_holds_nothing() -> None:
    assert read_files(make_zip({}), None, source=SOURCE) == {}


@pytest.mark.parametrize(
    "name",
    ["../results.json", "a/../../etc/passwd", "/etc/passwd", "C:/x/results.json",
     "a\\..\\results.json", "a//b", "./results.json"],
)  # fmt: skip
def test_zip_slip_names_are_refused(name: str) -> None:
    rejected(make_zip({"results.json": b"{}", name: b"evil"}), "entry name")


def test_duplicate_names_are_refused() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive, pytest.warns(UserWarning):
        archive.writestr("results.json", b"{}")
        archive.writestr("results.json", b'{"evil": 1}')
    rejected(buf.getvalue(), "twice")


def test_too_many_entries() -> None:
    data = make_zip({f"f{i}.txt": b"x" for i in range(6)})
    rejected(data, "6 entries", max_entries=5)


def test_a_bomb_is_stopped_while_decompressing() -> None:
    bomb = make_zip({"results.json": b"\0" * 5_000_000})
    assert len(bomb) < 20_000
    rejected(bomb, "1000000", max_entry_bytes=1_000_000)


def test_a_lying_header_does_not_help() -> None:
    """The declared size says 10 bytes; the real data is 5 MB: never read past the cap."""
    bomb = bytearray(make_zip({"results.json": b"\0" * 5_000_000}))
    # Patch the uncompressed size in the local header (offset 22) and the central directory.
    bomb[22:26] = (10).to_bytes(4, "little")
    central = bomb.rfind(b"PK\x01\x02")
    bomb[central + 24 : central + 28] = (10).to_bytes(4, "little")
    message = rejected(bytes(bomb), "results.json", max_entry_bytes=1_000_000)
    assert "corrupt" in message or "more than" in message


def test_total_size_is_capped() -> None:
    data = make_zip({f"f{i}.json": b"x" * 600 for i in range(3)})
    with pytest.raises(ArtifactError, match="in all"):
        read_files(data, None, source=SOURCE, max_total_bytes=1000)


def test_corrupt_zip() -> None:
    data = make_zip({"results.json": b"{}" * 100})
    rejected(data[:30] + b"garbage" + data[37:], "corrupt|not a readable zip")
    rejected(b"PK\x03\x04 truncated", "not a readable zip")


def test_crc_error_is_corrupt() -> None:
    data = bytearray(make_zip({"results.json": b"abcdefgh" * 10}, zipfile.ZIP_STORED))
    start = data.find(b"abcdefgh")
    data[start] = ord("X")
    rejected(bytes(data), "corrupt")


def test_encrypted_entries_are_refused() -> None:
    data = bytearray(make_zip({"results.json": b"{}"}))
    data[6] |= 0x1  # the local header's flag bits
    central = data.rfind(b"PK\x01\x02")
    data[central + 8] |= 0x1
    rejected(bytes(data), "encrypted")
