"""Results files the job took out of an artifact are mapped, not read into memory
(files/reading.read_mapped, compare/loading `mapped=True`): the same Results and the same
errors as reading them, the UTF-8 check exact across its chunks, and no mapping left once
the Results are loaded (a mapped file cut shorter would kill the process)."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest
from helpers.paths import ROOT

from agent_eval_action.compare.loading import load_baseline, load_results
from agent_eval_action.errors import InputError
from agent_eval_action.files import read_bytes, read_mapped, reading, utf8_bytes

OLD = ROOT / "tests" / "data" / "results_v1"
RICH = OLD / "rich.results.json"


def _mappings_of(path: Path) -> int:
    return Path("/proc/self/maps").read_text(encoding="utf-8").count(str(path.resolve()))


@pytest.mark.parametrize("name", ["rich.results.json", "rich-baseline.results.json"])
def test_mapped_and_read_give_the_same_results(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes((OLD / name).read_bytes())
    mapped = load_results(str(path), mapped=True)
    assert mapped == load_results(str(path))
    assert load_baseline(str(path), mapped=True)[0] == load_baseline(str(path))[0]
    assert (
        load_baseline(str(path), turns=False, mapped=True)[0]
        == (load_baseline(str(path), turns=False)[0])
    )
    assert mapped.dump_json() == load_results(str(path)).dump_json()


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux's /proc")
def test_no_mapping_is_left_once_the_results_are_loaded(tmp_path: Path) -> None:
    """Every run's turns are copied out of the file as they are checked: the mapping goes
    with the last reference to it, before the loader returns, so nothing can later read a
    page of a file another process has cut shorter meanwhile."""
    path = tmp_path / "results.json"
    path.write_bytes(RICH.read_bytes())
    data = read_mapped(path, "results.json")
    assert _mappings_of(path) == 1  # the test sees mappings
    del data
    assert _mappings_of(path) == 0
    loaded = [load_results(str(path), mapped=True), load_baseline(str(path), mapped=True)[0]]
    loaded.append(load_baseline(str(path), turns=False, mapped=True)[0])
    assert all(r is not None and r.cases for r in loaded)
    assert _mappings_of(path) == 0
    path.write_bytes(b"")  # and cutting the file short is harmless
    assert [r.dump_json() for r in loaded if r is not None]


BAD = [
    ("not JSON", b'{\n "schema": "agent-eval-results/1",\n "cases": [\n'),
    ("not UTF-8", b'{"schema": "agent-eval-results/1", "x": "\xff"}'),
    ("UTF-16", codecs.BOM_UTF16_LE + '{"schema": 1}'.encode("utf-16-le")),
    ("a lone surrogate", b'{"schema": "agent-eval-results/1",\n "x": "\\udc00"}'),
    ("another schema", b'{"schema": "something-else/1"}'),
]


@pytest.mark.parametrize("text", [b[1] for b in BAD], ids=[b[0] for b in BAD])
def test_a_bad_file_is_refused_alike_mapped_or_read(tmp_path: Path, text: bytes) -> None:
    path = tmp_path / "results.json"
    path.write_bytes(text)
    with pytest.raises(InputError) as read:
        load_results(str(path))
    with pytest.raises(InputError) as mapped:
        load_results(str(path), mapped=True)
    assert str(mapped.value) == str(read.value)
    assert str(path) in str(read.value)
    assert load_baseline(str(path), mapped=True)[1] == load_baseline(str(path))[1]


def test_a_utf8_byte_order_mark_is_skipped_mapped_or_read(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_bytes(codecs.BOM_UTF8 + RICH.read_bytes())
    assert load_results(str(path), mapped=True) == load_results(str(RICH))
    assert load_results(str(path)) == load_results(str(RICH))


def test_what_cannot_be_mapped_is_read(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    assert read_mapped(empty, "empty.json") == b""
    with pytest.raises(InputError, match=r"empty\.json:1: invalid JSON"):
        load_results(str(empty), mapped=True)
    with pytest.raises(InputError, match=r"^zero\.json: file is more than 65536 bytes"):
        read_mapped(Path("/dev/zero"), "zero.json", limit=1 << 16)  # reported size 0


def test_the_cap_and_missing_files_are_refused_as_when_read(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(b"x" * 100)
    assert bytes(read_mapped(path, "r.json", limit=100)) == b"x" * 100
    for read in (read_bytes, read_mapped):
        with pytest.raises(InputError, match=r"^r\.json: file is 100 bytes; the limit is 99$"):
            read(path, "r.json", limit=99)
        with pytest.raises(InputError, match="no such file"):
            read(tmp_path / "gone.json", "gone.json")
        with pytest.raises(InputError, match="is a directory"):
            read(tmp_path, "dir")


CHUNK = reading._CHUNK


@pytest.mark.parametrize(
    ("text", "fine"),
    [
        # a character split by the chunks' boundary
        (b"a" * (CHUNK - 1) + "é".encode() + b"b" * 10, True),
        (b"a" * (CHUNK - 2) + "€".encode() + b"b" * CHUNK, True),
        # a character begun at the end of a chunk, broken by the ASCII chunk after it
        (b"a" * (CHUNK - 1) + b"\xc3" + b"b" * CHUNK + b"\xa9", False),
        # begun at the very end of the text
        (b"a" * (2 * CHUNK - 1) + b"\xe2\x82", False),
        (b"a" * CHUNK + b"\xff" + b"a" * CHUNK, False),
        (b"a" * (3 * CHUNK), True),
    ],
    ids=["split", "split-3", "broken-by-ascii", "cut-at-end", "bad-byte", "ascii"],
)
def test_the_utf8_check_is_exact_across_chunks(tmp_path: Path, text: bytes, fine: bool) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(text)
    for raw in (read_bytes(path, "t.json"), read_mapped(path, "t.json")):
        if fine:
            assert bytes(utf8_bytes(raw, "t.json")) == text
            text.decode("utf-8")
        else:
            with pytest.raises(InputError, match=r"^t\.json:\d+: not UTF-8 text"):
                utf8_bytes(raw, "t.json")
            with pytest.raises(UnicodeDecodeError):
                text.decode("utf-8")
