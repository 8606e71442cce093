"""What every loaded Results must be (compare/sanity.py, pipeline/bounds.py): finite numbers
of sensible size, printable ids and paths, built-in metrics' scores within [0, 1]. Through
the loaders, so the current Results is bad input and a baseline is no baseline."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from helpers.factory import case, results
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_eval_action.compare.loading import load_baseline, load_results
from agent_eval_action.compare.sanity import (
    MAX_ID_CHARS,
    ResultsRefused,
    check_results,
    check_text,
)
from agent_eval_action.errors import InputError
from agent_eval_action.pipeline.bounds import bounded_metric, check_scores


def written(tmp_path: Path, edit=None) -> str:
    base = results(
        case("a", {"tool_trajectory_avg_score": [1.0], "my_latency_ms": [1234.5]}),
        case("b", {"response_match_score": [0.5]}),
    )
    data = json.loads(base.dump_json())
    if edit is not None:
        edit(data)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_honest_results_load(tmp_path: Path) -> None:
    path = written(tmp_path)
    loaded = load_results(path)
    check_scores(loaded, path)  # the custom metric's 1234.5 is not bounded
    assert load_baseline(path)[1] is None


def _score(value: float):
    def edit(data: dict) -> None:
        data["cases"][0]["metrics"]["tool_trajectory_avg_score"]["score"] = value

    return edit


def _set(*keys: str | int, value: object):
    def edit(data: dict) -> None:
        target = data
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return edit


BAD = [
    ("score-huge", _score(1e308), "tool_trajectory_avg_score.score: 1e+308 is not a finite"),
    ("score-negative-huge", _score(-1e13), "is not a finite number of sensible size"),
    ("threshold-huge", _set("cases", 0, "metrics", "my_latency_ms", "threshold", value=1e300),
     "my_latency_ms.threshold"),
    ("runs-huge", _set("cases", 1, "metrics", "response_match_score", "runs", value=[1e200]),
     "response_match_score.runs"),
    ("file-nul", _set("cases", 0, "file", value="/w/evals/a\u0000.json"), "file: "),
    ("eval-id-newline", _set("cases", 0, "eval_id", value="a\nb"), "cases[0].eval_id"),
    ("eval-id-bidi", _set("cases", 0, "eval_id", value="a\u202eb"), "control character"),
    ("eval-id-long", _set("cases", 0, "eval_id", value="x" * (MAX_ID_CHARS + 1)),
     f"more than {MAX_ID_CHARS}"),
    ("metric-name-tab", _set("cases", 0, "metrics", "bad\tname",
                             value={"axis": "response", "score": 1.0, "threshold": 0.5,
                                    "status": "passed"}), "metric name"),
    ("line-negative", _set("cases", 0, "line", value=-1), "line: -1 is not a count"),
    ("tokens-huge", _set("usage", "prompt_tokens", value=10**30), "usage.prompt_tokens"),
    ("source-repo-newline", _set("source", "repo", value="a/b\nc"), "source.repo"),
    ("shard-count-huge", _set("shard", value={"index": 1, "count": 10**12,
                                              "partition_hash": "p", "cases_total": 2}),
     "shard.count"),
    ("duration-huge", _set("timing", "duration_s", value=1e20), "timing.duration_s"),
    ("tool-count-negative", _set("cases", 0, "runs", 0, "tools",
                                 value={"from_eval_file": 0, "from_recording": -3, "live": 0}),
     "run 1 tools.from_recording: -3 is not a count"),
]  # fmt: skip


@pytest.mark.parametrize(("edit", "phrase"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_insane_results_are_refused_in_one_line(tmp_path: Path, edit, phrase: str) -> None:
    path = written(tmp_path, edit)
    with pytest.raises(ResultsRefused) as raised:
        load_results(path)
    text = str(raised.value)
    assert isinstance(raised.value, InputError) and "\n" not in text
    assert text.startswith(f"{path}: refused Results: ") and phrase in text, text
    baseline, reason = load_baseline(path)
    assert baseline is None and reason is not None
    assert reason.startswith("the baseline is refused (") and phrase in reason


@pytest.mark.parametrize(
    ("literal", "phrase"),
    [('"score": 1.0', r"\.score: inf is not a finite number"), ('"threshold": 1.0}', r"criteria")],
)
def test_infinity_from_an_overflowing_literal_is_refused(
    tmp_path: Path, literal: str, phrase: str
) -> None:
    """JSON has no Infinity (the reader refuses it), but 1e999 reads as one."""
    path = Path(written(tmp_path))
    text = path.read_text(encoding="utf-8")
    assert literal in text
    path.write_text(text.replace(literal, literal.replace("1.0", "1e999"), 1), encoding="utf-8")
    with pytest.raises(ResultsRefused, match=phrase):
        load_results(str(path))


def test_free_text_may_hold_anything(tmp_path: Path) -> None:
    """Answers, errors, notes and warnings are escaped where shown, never refused: an agent
    that answers with a NUL must not make its own run bad input."""

    def edit(data: dict) -> None:
        data["cases"][0]["note"] = "a\u0000b\nc\u202e"
        data["warnings"] = ["line\u0000one\nline two"]
        turn = data["cases"][0]["runs"][0]["invocations"][0]
        turn["actual"]["final_response"]["parts"][0]["text"] = "\u0000\x1b[31m red"

    load_results(written(tmp_path, edit))


def test_loaded_turns_are_compact_json_of_their_own(tmp_path: Path) -> None:
    """The file is indented; each run's turns are kept as compact JSON (checked by
    decoding them once), not as the file's indented bytes."""
    path = written(tmp_path)
    Path(path).write_text(json.dumps(json.loads(Path(path).read_bytes()), indent=4))
    loaded = load_results(path)
    for run in (run for one in loaded.cases for run in one.runs):
        kept = bytes(run.invocations)  # type: ignore[arg-type]
        assert kept.startswith(b"[{") and b"\n" not in kept and b": " not in kept
        assert run.turns()[0].user_content.parts  # and they still read


def test_only_built_in_metrics_are_bounded(tmp_path: Path) -> None:
    assert bounded_metric("tool_trajectory_avg_score") and bounded_metric("response_match_score")
    assert not bounded_metric("my_latency_ms")  # a custom metric: any finite score
    assert not bounded_metric("tool_trajectory_avg_score_count")

    def five(data: dict) -> None:
        metric = data["cases"][1]["metrics"]["response_match_score"]
        metric["score"], metric["runs"], metric["invocations"] = 1.0, [1.0], [[5.0]]

    path = written(tmp_path, five)
    loaded = load_results(path)  # in compare/ nothing knows which metrics are bounded
    with pytest.raises(ResultsRefused, match=r"response_match_score.invocations: 5.0 is outside"):
        check_scores(loaded, path)

    def custom(data: dict) -> None:
        metric = data["cases"][0]["metrics"]["my_latency_ms"]
        metric["score"], metric["runs"] = -7.5, [-7.5]

    path = written(tmp_path, custom)
    check_scores(load_results(path), path)


def test_check_results_on_a_model_built_in_memory() -> None:
    built = results(case("a", {"tool_trajectory_avg_score": [1.0]}))
    check_results(built, "built")
    bad = copy.deepcopy(built)
    bad.cases[0].metrics["tool_trajectory_avg_score"].runs = [float("nan")]
    with pytest.raises(ResultsRefused, match=r"^built: refused Results: .*nan"):
        check_results(bad, "built")


LONE = [
    ("high-alone", '"\\ud800"'),
    ("low-alone", '"\\udc00 x"'),
    ("high-then-high", '"\\ud83d\\ud83d"'),
    ("high-then-text", '"\\ud83dx\\ude00"'),
    ("after-escaped-backslashes", '"\\\\\\udfff"'),  # an escaped backslash, then \udfff
]
FINE = [
    ("pair", '"\\ud83d\\ude00"'),  # json.dumps(ensure_ascii=True) writes an emoji so
    ("escaped-backslash", '"\\\\udc00"'),  # the text \udc00, not an escape
    ("two-pairs", '"\\uD83D\\uDE00\\ud83d\\ude01"'),
]


@pytest.mark.parametrize("literal", [x[1] for x in LONE], ids=[x[0] for x in LONE])
def test_a_lone_surrogate_anywhere_is_refused(tmp_path: Path, literal: str) -> None:
    """Python reads "\\udc00", but nothing can write it again: the report, the comment and
    results.json would fail with a traceback. No Results this tool writes holds one."""
    path = Path(written(tmp_path))
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('"answer same"', literal, 1), encoding="utf-8")
    with pytest.raises(ResultsRefused, match=r"refused Results: line \d+: \\u[dD]\w{3} is half"):
        load_results(str(path))
    assert load_baseline(str(path))[0] is None


@pytest.mark.parametrize("literal", [x[1] for x in FINE], ids=[x[0] for x in FINE])
def test_surrogate_pairs_and_escaped_backslashes_are_fine(tmp_path: Path, literal: str) -> None:
    path = Path(written(tmp_path))
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('"answer same"', literal, 1), encoding="utf-8")
    loaded = load_results(str(path))
    loaded.dump_json()  # and it can be written again


# pieces of a JSON string's text: escapes of each half of a pair, runs of backslashes
_PIECES = ["\\ud83d", "\\uDE00", "\\udc00", "\\uD800", "\\\\", "\\", "u", "x", "\\u0041", "d8"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=12))
def test_a_lone_surrogate_is_refused_exactly_when_json_reads_one(pieces: list[str]) -> None:
    """Python's json is the oracle: check_text refuses a string literal exactly when what
    json reads from it is not UTF-8 (it holds half of a pair), as text and as bytes; a
    literal json cannot read at all is not check_text's to judge (msgspec refuses it)."""
    literal = '"' + "".join(pieces) + '"'
    try:
        value = json.loads(literal)
    except json.JSONDecodeError:
        return
    try:
        value.encode("utf-8")
        lone = False
    except UnicodeEncodeError:
        lone = True
    for text in (literal, literal.encode("utf-8")):
        if lone:
            with pytest.raises(ResultsRefused, match="half of a UTF-16 pair"):
                check_text(text, "x")
        else:
            check_text(text, "x")
