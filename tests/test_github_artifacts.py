"""Taking files out of untrusted artifact zips (github/artifacts.py): only safe, bounded,
intact input, each wanted file streamed to a file of its own, nothing left on refusal."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from agent_eval_action.github.artifacts import ArtifactError, entry_names, extract_files

SOURCE = "artifact agent-eval-results of run 7"


def make_zip(entries: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as archive:
        for name, data in entries.items():
            archive.writestr(zipfile.ZipInfo(name), data, compress_type=method)
    return buf.getvalue()


@pytest.fixture
def download(tmp_path: Path):
    """The downloaded artifact's file, holding `data`."""

    def write(data: bytes) -> Path:
        path = tmp_path / "artifact.zip"
        path.write_bytes(data)
        return path

    return write


def files_under(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (none when it does not exist), by its relative name."""
    if not folder.exists():
        return {}
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def extract(archive: Path, wanted: set[str] | None = None, **limits: int) -> dict[str, bytes]:
    """The files extracted to the folder `out` beside the archive, by name, as bytes: the
    returned paths must be exactly the files written."""
    dest = archive.parent / "out"
    paths = extract_files(archive, wanted, dest, source=SOURCE, **limits)
    assert all(path == dest / name for name, path in paths.items())
    on_disk = files_under(dest)
    assert sorted(on_disk) == sorted(paths)
    return on_disk


def rejected(archive: Path, match: str, **limits: int) -> str:
    dest = archive.parent / "out"
    with pytest.raises(ArtifactError, match=match) as caught:
        extract_files(archive, {"results.json"}, dest, source=SOURCE, **limits)
    message = str(caught.value)
    assert message.startswith(SOURCE) and "\n" not in message
    assert files_under(dest) == {}, "a refused artifact left files behind"
    return message


def test_reads_the_wanted_file_only(download) -> None:
    archive = download(
        make_zip({"results.json": b"{}", "report.md": b"# r", "traces/t.json": b"[]"})
    )
    assert extract(archive, {"results.json"}) == {"results.json": b"{}"}
    assert entry_names(archive) == ["results.json", "report.md", "traces/t.json"]


def test_reads_every_file_into_its_folders(download) -> None:
    archive = download(make_zip({"results.json": b"{}", "traces/a/t.json": b"[]"}))
    assert extract(archive) == {"results.json": b"{}", "traces/a/t.json": b"[]"}


def test_missing_file_is_absent_not_an_error(download) -> None:
    archive = download(make_zip({"report.md": b"# r"}))
    assert extract(archive, {"results.json"}) == {}
    assert entry_names(archive) == ["report.md"]


def test_raw_unzipped_file_becomes_results_json(download) -> None:
    # upload-artifact v7 `archive: false` stores the single file as is.
    raw = b'{"schema": "agent-eval-results/1"}'
    rejected(download(raw), "over 10 bytes", max_entry_bytes=10)
    assert entry_names(download(raw)) == ["results.json"]
    assert extract(download(raw), {"other"}) == {}
    archive = download(raw)
    assert extract(archive, {"results.json"}) == {"results.json": raw}
    assert not archive.exists()  # moved into place, not copied


def test_empty_zip_holds_nothing(download) -> None:
    assert extract(download(make_zip({}))) == {}


def test_unreadable_download_holds_nothing(download) -> None:
    assert entry_names(download(b"PK\x03\x04 truncated")) == []


@pytest.mark.parametrize(
    "name",
    ["../results.json", "a/../../etc/passwd", "/etc/passwd", "C:/x/results.json",
     "a\\..\\results.json", "a//b", "./results.json"],
)  # fmt: skip
def test_zip_slip_names_are_refused(download, name: str) -> None:
    rejected(download(make_zip({"results.json": b"{}", name: b"evil"})), "entry name")


def test_duplicate_names_are_refused(download) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive, pytest.warns(UserWarning):
        archive.writestr("results.json", b"{}")
        archive.writestr("results.json", b'{"evil": 1}')
    rejected(download(buf.getvalue()), "twice")


def test_too_many_entries(download) -> None:
    data = make_zip({f"f{i}.txt": b"x" for i in range(6)})
    rejected(download(data), "6 entries", max_entries=5)


def test_a_bomb_is_stopped_while_decompressing(download) -> None:
    bomb = make_zip({"results.json": b"\0" * 5_000_000})
    assert len(bomb) < 20_000
    rejected(download(bomb), "1000000", max_entry_bytes=1_000_000)


def test_a_lying_header_does_not_help(download) -> None:
    """The declared size says 10 bytes; the real data is 5 MB: never read past the cap."""
    bomb = bytearray(make_zip({"results.json": b"\0" * 5_000_000}))
    # Patch the uncompressed size in the local header (offset 22) and the central directory.
    bomb[22:26] = (10).to_bytes(4, "little")
    central = bomb.rfind(b"PK\x01\x02")
    bomb[central + 24 : central + 28] = (10).to_bytes(4, "little")
    message = rejected(download(bytes(bomb)), "results.json", max_entry_bytes=1_000_000)
    assert "corrupt" in message or "more than" in message


def test_total_size_is_capped_and_the_files_written_are_removed(download) -> None:
    archive = download(make_zip({f"d/f{i}.json": b"x" * 600 for i in range(3)}))
    dest = archive.parent / "out"
    dest.mkdir()
    (dest / "theirs.txt").write_bytes(b"not the extraction's")
    with pytest.raises(ArtifactError, match="in all"):
        extract_files(archive, None, dest, source=SOURCE, max_total_bytes=1000)
    # the first file was whole, the second half-written when the cap was passed: both gone,
    # and the folder made for them; what was there before stays
    assert files_under(dest) == {"theirs.txt": b"not the extraction's"}
    assert not (dest / "d").exists()


def test_a_file_where_a_folder_is_needed_is_refused(download) -> None:
    rejected(download(make_zip({"traces": b"x", "traces/t.json": b"[]"})), "need a folder")


def test_corrupt_zip(download) -> None:
    data = make_zip({"results.json": b"{}" * 100})
    rejected(download(data[:30] + b"garbage" + data[37:]), "corrupt|not a readable zip")
    rejected(download(b"PK\x03\x04 truncated"), "not a readable zip")


def test_crc_error_is_corrupt(download) -> None:
    data = bytearray(make_zip({"results.json": b"abcdefgh" * 10}, zipfile.ZIP_STORED))
    start = data.find(b"abcdefgh")
    data[start] = ord("X")
    rejected(download(bytes(data)), "corrupt")


def test_encrypted_entries_are_refused(download) -> None:
    data = bytearray(make_zip({"results.json": b"{}"}))
    data[6] |= 0x1  # the local header's flag bits
    central = data.rfind(b"PK\x01\x02")
    data[central + 8] |= 0x1
    rejected(download(bytes(data)), "encrypted")
