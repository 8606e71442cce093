"""Lines in errors and warnings that come from the lazy route of files/jsonpos.py: the top
two levels of a file are placed while parsing; a deeper value's line is found by scanning
only the case (or entry) that holds it, when an error or a warning asks for it."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_eval_action.errors import InputError
from agent_eval_action.files import jsonpos
from agent_eval_action.pipeline.suite import load_suite

TURN = {
    "user_content": {"role": "user", "parts": [{"text": "What is the weather in Paris?"}]},
    "final_response": {"role": "model", "parts": [{"text": "18 degrees."}]},
    "intermediate_data": {"tool_uses": [{"name": "get_weather", "args": {"city": "Paris"}}]},
}


def cases(n: int) -> list[dict]:
    return [{"eval_id": f"c{i}", "conversation": [copy.deepcopy(TURN)]} for i in range(n)]


def line_of(text: str, needle: str, nth: int = 0) -> int:
    """1-based line of the nth occurrence of `needle` in `text`."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    return text.count("\n", 0, at) + 1


def load_error(path: str) -> InputError:
    with pytest.raises(InputError) as caught:
        load_suite([path])
    return caught.value


def test_a_bad_field_deep_in_case_250_names_its_line(write):
    evals = cases(300)
    evals[250]["conversation"][0]["intermediate_data"]["tool_uses"][0]["args"] = "MARK"
    path = write("big.evalset.json", {"eval_set_id": "big", "eval_cases": evals})
    err = load_error(path.name)
    text = path.read_text()
    assert err.line == line_of(text, '"MARK"')
    assert "eval_cases[250].conversation[0].intermediate_data.tool_uses[0].args" in str(err)


def test_a_duplicate_key_deep_in_a_case_names_both_lines(write):
    evals = cases(300)
    text = json.dumps({"eval_set_id": "big", "eval_cases": evals}, indent=2)
    # case 250's tool call gets its "name" twice, the second on a line of its own
    at = [i for i in range(len(text)) if text.startswith('"name": "get_weather"', i)][250]
    text = text[:at] + '"name": "first",\n"name": "get_weather"' + text[at + 21 :]
    path = write("dup.evalset.json", text)
    err = load_error(path.name)
    first = line_of(text, '"name": "first"')
    assert err.line == first + 1
    assert f'duplicate key "name" (first at line {first})' in str(err)


def test_a_duplicate_key_at_the_top_of_the_file(write):
    path = write(
        "top.evalset.json", '{"eval_set_id": "a",\n "eval_cases": [],\n "eval_set_id": "b"}'
    )
    err = load_error(path.name)
    assert err.line == 3 and 'duplicate key "eval_set_id" (first at line 1)' in str(err)


def test_escaped_quotes_before_colons_in_strings_neither_hide_nor_invent_a_duplicate(write):
    """Key ends are counted in the text to skip the exact duplicate check: text such as
    `{\\"a\\": 1}` inside a string, or a key that ends in a backslash, must not fool it."""
    evals = cases(3)
    evals[1]["conversation"][0]["final_response"]["parts"][0]["text"] = '{"a": 1, "b" : ":"}'
    evals[2]["conversation"][0]["intermediate_data"]["tool_uses"][0]["args"] = {"k\\": ":x"}
    data = {"eval_set_id": "s", "eval_cases": evals}
    clean = write("clean.evalset.json", data)
    (loaded,) = load_suite([clean.name]).eval_sets
    assert loaded.cases[1].conversation[0].final_response.text() == '{"a": 1, "b" : ":"}'
    text = json.dumps(data, indent=2).replace('"k\\\\": ":x"', '"k\\\\": ":x", "k\\\\" : 2')
    dup = write("dup.evalset.json", text)
    err = load_error(dup.name)
    assert err.line == line_of(text, '"k\\\\" : 2') and 'duplicate key "k\\"' in str(err)


def test_a_warning_deep_in_a_late_case_names_its_line(write):
    evals = cases(300)
    evals[280]["surprise"] = 1
    path = write("warn.evalset.json", {"eval_set_id": "w", "eval_cases": evals})
    suite = load_suite([path.name])
    line = line_of(path.read_text(), '"surprise"')
    assert suite.warnings == [
        f'{path.name}:{line}: warning: case "c280": unknown key "surprise" is ignored'
    ]


def test_case_lines_of_a_compact_file_are_all_line_1_and_of_an_indented_one_exact(write):
    data = {"eval_set_id": "s", "eval_cases": cases(40)}
    compact = write("compact.evalset.json", json.dumps(data, separators=(",", ":")))
    (loaded,) = load_suite([compact.name]).eval_sets
    assert set(loaded.case_lines.values()) == {1}
    pretty = write("pretty.evalset.json", data)
    (loaded,) = load_suite([pretty.name]).eval_sets
    text = pretty.read_text()
    for i in range(40):
        assert loaded.case_lines[f"c{i}"] == line_of(text, f'"eval_id": "c{i}"') - 1


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='ab:"\\\n '),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet='ab:"\\ ', max_size=3), inner, max_size=4)
    ),
    max_leaves=25,
)


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


@settings(max_examples=200, deadline=None)
@given(value=json_values, indent=st.sampled_from([None, 1, 2]))
def test_every_value_line_is_the_one_a_full_scan_gives(value, indent):
    """Whatever the shape, the line of every path (and of paths that are not there) is the
    one a token scan of the whole text gives, the route every line took before."""
    text = json.dumps(value, indent=indent)
    located = jsonpos.parse(text, "f.json")
    assert located.data == value
    full = jsonpos._value_lines(text, "f.json", 0, 1, ())
    for path in _paths(value):
        assert located.line(path) == full[path]
        assert located.line((*path, "missing", 0)) == full[path]


def test_a_file_json_reads_but_with_a_duplicate_anywhere_is_refused(tmp_path: Path):
    for text, line in [
        ('[{"a": 1}, {"b": [{"c": 1,\n"c": 2}]}]', 2),
        ('{"a": {"b": 1,\n "b": 2}}', 2),
        ('[[{"x": ":",\n\n"x": 1}]]', 3),
    ]:
        with pytest.raises(InputError) as caught:
            jsonpos.parse(text, "f.json")
        assert caught.value.line == line and "duplicate key" in str(caught.value)


@pytest.mark.parametrize("key", ['"tool_name"', '"tool\\u005fname"'])
def test_legacy_tool_keys_are_named_however_the_key_is_spelled(write, key):
    """The loader skips its walk for legacy keys when the text cannot hold them; a key
    spelled with a \\u escape is still found."""
    evals = cases(30)
    evals[20]["conversation"][0]["intermediate_data"]["tool_uses"][0] = {"LEGACY": "f"}
    text = json.dumps({"eval_set_id": "s", "eval_cases": evals}, indent=2)
    path = write("legacy.evalset.json", text.replace('"LEGACY"', key))
    err = load_error(path.name)
    assert 'tool call uses "tool_name"/"tool_input"' in str(err)
    assert err.line == line_of(path.read_text(), key) - 1
