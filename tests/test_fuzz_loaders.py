"""Fuzzing every loader of user input: the only outcomes are a load or a clear InputError.

Each loader gets (a) valid documents mutated around their schema (keys dropped, renamed
to camelCase, added with odd unicode; values of another type, huge or non-finite numbers,
deep nesting) and (b) random bytes. A load may succeed or raise the package's InputError,
whose message is one line naming the file; anything else (a traceback) is a bug.
`load_baseline` never raises at all: it returns (Results, None) or (None, why).

Derandomized and small, so the whole file takes a few seconds and CI is stable.
"""

from __future__ import annotations

import copy
import json
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from helpers.factory import case, results
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic.alias_generators import to_camel

from agent_eval_action.action.event import load_event
from agent_eval_action.action.settings import CLEANERS, input_env_name, parse_settings
from agent_eval_action.compare.loading import load_baseline, load_results
from agent_eval_action.errors import InputError
from agent_eval_action.metrics.config import load_config
from agent_eval_action.pipeline.plan import plan
from agent_eval_action.pipeline.suite import load_suite
from agent_eval_action.results import Results, Shard

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "evals"

FUZZ = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,  # the same examples on every run: CI stays stable
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- valid documents to start from ------------------------------------------------------

EVALSET = json.loads((EXAMPLES / "support.evalset.json").read_text(encoding="utf-8"))
EVALSET = {**EVALSET, "eval_cases": EVALSET["eval_cases"][:2]}  # small: two cases
EVALSET["eval_cases"][1]["rubrics"] = [
    {"rubric_id": "r1", "rubric_content": {"text_property": "Polite."}, "type": "FINAL_RESPONSE"}
]
EVALSET["eval_cases"].append(
    {
        "eval_id": "from_events",
        "conversation": [
            {
                "user_content": {"role": "user", "parts": [{"text": "hi", "thought": None}]},
                "final_response": {"role": "model", "parts": [{"text": "hello"}]},
                "intermediate_data": {
                    "invocation_events": [
                        {
                            "author": "agent",
                            "content": {
                                "parts": [
                                    {"function_call": {"name": "lookup_order", "args": {"x": 1}}}
                                ]
                            },
                        }
                    ]
                },
            }
        ],
    }
)
SCENARIO_CASE = {
    "eval_id": "simulated",
    "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "ask for a refund"},
    "session_input": {"app_name": "a", "user_id": "u", "state": {}},
}
LEGACY_ROWS = json.loads((EXAMPLES / "legacy" / "faq.test.json").read_text(encoding="utf-8"))
LEGACY_ROWS[0]["expected_intermediate_agent_responses"] = [{"author": "agent", "text": "hm"}]
LEGACY_CASES = [
    {"name": "first", "data": LEGACY_ROWS, "initial_session": {"app_name": "a", "state": {}}}
]
SESSION = {"app_name": "support_agent", "user_id": "user-1", "state": {"tier": "gold"}}
CONFIG = {
    "criteria": {
        "tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "IN_ORDER"},
        "response_match_score": 0.8,
        "final_response_match_v2": {
            "threshold": 0.5,
            "judge_model_options": {"judge_model": "gemini-2.5-flash", "num_samples": 3},
        },
        "rubric_based_tool_use_quality_v1": {
            "threshold": 1.0,
            "rubrics": [{"rubric_id": "r", "rubric_content": {"text_property": "Looks up."}}],
        },
        "mine": 0.5,
    },
    "custom_metrics": {"mine": {"code_config": {"name": "my_metrics.mine"}, "axis": "trajectory"}},
}
_RESULTS = results(
    case("a", {"tool_trajectory_avg_score": [1.0, 0.0], "response_match_score": [0.5, None]}),
    case("b", {"response_match_score": [1.0]}, eval_set_id="t"),
)
RESULTS = json.loads(_RESULTS.dump_json())
SHARD_RESULTS = json.loads(
    _RESULTS.replace(shard=Shard(index=1, count=2, partition_hash="p", cases_total=4)).dump_json()
)
EVENTS = {
    "pull_request": {
        "pull_request": {
            "number": 7,
            "head": {"sha": "h", "ref": "feature", "repo": {"full_name": "fork/r"}},
            "base": {"sha": "b", "ref": "main"},
            "labels": [{"name": "agent-eval:accept"}],
        },
        "repository": {"full_name": "o/r", "default_branch": "main"},
    },
    "merge_group": {
        "merge_group": {
            "head_sha": "h",
            "head_ref": "gh-readonly",
            "base_sha": "b",
            "base_ref": "main",
        }
    },
    "push": {"ref": "refs/heads/main", "after": "a", "repository": {"default_branch": "main"}},
    "workflow_run": {
        "workflow_run": {
            "id": 9,
            "conclusion": None,
            "event": "pull_request",
            "head_sha": "h",
            "head_branch": "feature",
            "pull_requests": [{"number": 7}],
            "head_repository": {"full_name": "fork/r"},
            "path": ".github/workflows/eval.yml",
        },
        "repository": {"full_name": "o/r"},
    },
    "workflow_dispatch": {"inputs": {"pr-number": "7", "other": None}},
}

# --- mutations ---------------------------------------------------------------------------

# Placeholders replaced in the JSON text: what json.dumps cannot write from Python values.
DEEP, LONG_NUMBER = "\x00deep\x00", "\x00long\x00"

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True),  # NaN/Infinity: json.dumps writes them
    st.text(max_size=12),
    st.sampled_from(
        ["", "EXACT", "in_order", "2", "0.5", "agent-eval-results/1", DEEP, LONG_NUMBER]
    ),
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
odd_keys = st.one_of(
    st.text(max_size=10),
    st.sampled_from(
        [
            "eval_id",
            "evalId",
            "name",
            "args",
            "tool_name",
            "tool_input",
            "query",
            "__class__",
            "schema",
            "threshold",
        ]
    ),
)


def _paths(value: Any, prefix: tuple = ()) -> Iterator[tuple]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


OPS = ["replace", "retype", "retype", "drop", "camel", "twin", "add_key", "wrap", "empty", "double"]


def mutate(draw: Callable[[Any], Any], document: Any) -> Any:
    """A copy of `document` with one to three changes, each at a random place in it."""
    document = copy.deepcopy(document)
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3]))):
        path = draw(st.sampled_from(list(_paths(document))))
        op = draw(st.sampled_from(OPS))
        if not path:
            document = draw(json_values) if op == "replace" else [document]
            continue
        parent = document
        for step in path[:-1]:
            parent = parent[step]
        key, value = path[-1], parent[path[-1]]
        camel = to_camel(key) if isinstance(key, str) and isinstance(parent, dict) else None
        if op == "replace":
            parent[key] = draw(json_values)
        elif op == "retype":
            parent[key] = draw(scalars)
        elif op == "drop":
            del parent[key]
        elif op == "camel" and camel is not None:
            parent[camel] = parent.pop(key)
        elif op == "twin" and camel is not None:
            parent[camel] = copy.deepcopy(value)  # the same key in both spellings (or twice)
        elif op == "add_key" and isinstance(value, dict):
            value[draw(odd_keys)] = draw(json_values)
        elif op == "empty":
            parent[key] = type(value)() if isinstance(value, dict | list | str) else None
        elif op == "double" and isinstance(value, list) and value:
            value.append(copy.deepcopy(value[0]))  # e.g. a duplicate case
        else:  # "wrap", or an op that does not apply here
            parent[key] = [value]
    return document


def dump(draw: Callable[[Any], Any], value: Any) -> bytes:
    """JSON text of `value` in a random layout, with the placeholders filled in."""
    text = json.dumps(
        value, indent=draw(st.sampled_from([None, 1, 2])), ensure_ascii=draw(st.booleans())
    )
    deep = draw(st.sampled_from([3, 50, 5000]))
    text = text.replace(json.dumps(DEEP), "[" * deep + "]" * deep)
    text = text.replace(json.dumps(LONG_NUMBER), "7" * draw(st.sampled_from([20, 5000])))
    return text.encode("utf-8", errors="surrogatepass")  # a lone surrogate is not UTF-8


@contextmanager
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def check_error(err: InputError, file: str | None = None) -> None:
    """The clear-error path: one line, naming the file."""
    text = str(err)
    assert text and len(text.splitlines()) == 1, repr(text)
    if file is not None:
        assert err.file is not None and file in err.file, text


def load_eval(tmp: Path, name: str, raw: bytes, session: bytes | None = None) -> None:
    path = tmp / name
    path.write_bytes(raw)
    if session is not None:
        (tmp / "initial.session.json").write_bytes(session)
    try:
        suite = load_suite([str(path)])
    except InputError as err:
        check_error(err)
        assert err.file is not None, str(err)
        return
    for warning in suite.warnings:
        assert len(warning.splitlines()) == 1, repr(warning)
    assert suite.case_count > 0
    try:  # what `run` does next with a loaded suite, before any agent starts
        plan(suite, 2, "strict")
    except InputError as err:
        check_error(err)


# --- eval files ------------------------------------------------------------------------------


@FUZZ
@given(st.data())
def test_evalset_documents(data: st.DataObject) -> None:
    document = {**EVALSET, "eval_cases": [*EVALSET["eval_cases"], SCENARIO_CASE]}
    with folder() as tmp:
        load_eval(tmp, "fuzz.evalset.json", dump(data.draw, mutate(data.draw, document)))


@FUZZ
@given(st.data())
def test_legacy_documents(data: st.DataObject) -> None:
    document = data.draw(st.sampled_from([LEGACY_ROWS, LEGACY_CASES]))
    session = data.draw(st.none() | st.just(SESSION))
    with folder() as tmp:
        load_eval(
            tmp,
            "fuzz.test.json",
            dump(data.draw, mutate(data.draw, document)),
            None if session is None else dump(data.draw, mutate(data.draw, session)),
        )


@FUZZ
@given(st.data())
def test_config_documents(data: st.DataObject) -> None:
    with folder() as tmp:
        path = tmp / "test_config.json"
        path.write_bytes(dump(data.draw, mutate(data.draw, CONFIG)))
        warnings: list[str] = []
        try:
            loaded = load_config(path, "test_config.json", warnings)
        except InputError as err:
            check_error(err, "test_config.json")
            return
        assert loaded.criteria and all(0 <= c.threshold <= 1 for c in loaded.criteria.values())
        assert all(len(w.splitlines()) == 1 for w in warnings)


# --- Results -------------------------------------------------------------------------------


@FUZZ
@given(st.data())
def test_results_documents(data: st.DataObject) -> None:
    document = data.draw(st.sampled_from([RESULTS, SHARD_RESULTS]))
    with folder() as tmp:
        path = tmp / "results.json"
        path.write_bytes(dump(data.draw, mutate(data.draw, document)))
        try:
            loaded = load_results(str(path))
        except InputError as err:
            check_error(err, "results.json")
            loaded = None
        baseline, reason = load_baseline(str(path))
        assert (baseline is None) == (loaded is None)
        assert (baseline is None) != (reason is None)
        assert isinstance(baseline, Results | None) and isinstance(reason, str | None)


@FUZZ
@given(st.data())
def test_the_fast_results_reader_accepts_only_what_json_reads_and_keeps_it(
    data: st.DataObject,
) -> None:
    """Results are decoded by msgspec, not json: whatever it accepts, json must read as
    the same cases, and it must write back to what it read (nothing lost or made up)."""
    from agent_eval_action.compare.loading import _parse

    document = data.draw(st.sampled_from([RESULTS, SHARD_RESULTS]))
    with folder() as tmp:
        path = tmp / "results.json"
        path.write_bytes(dump(data.draw, mutate(data.draw, document)))
        try:
            loaded = _parse(path, "results.json")
        except InputError as err:
            check_error(err, "results.json")
            return
        whole = json.loads(path.read_text(encoding="utf-8"))
    assert [(c["eval_set_id"], c["eval_id"]) for c in whole["cases"]] == [
        (c.eval_set_id, c.eval_id) for c in loaded.cases
    ]
    again = Results.from_json(loaded.dump_json())
    assert again.dump_json() == loaded.dump_json()
    assert [[r.turns() for r in c.runs] for c in again.cases] == [
        [r.turns() for r in c.runs] for c in loaded.cases
    ]


# --- events and action inputs ------------------------------------------------------------


@FUZZ
@given(st.data())
def test_event_payloads(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(EVENTS)))
    with folder() as tmp:
        path = tmp / "event.json"
        path.write_bytes(dump(data.draw, mutate(data.draw, EVENTS[name])))
        try:
            load_event(name, str(path))
        except InputError as err:
            check_error(err, "event.json")


PLAUSIBLE = {
    "num-runs": ["3", "0", "-1", "1.5", "x", "9" * 5000],
    "concurrency": ["16", "0"],
    "timeout": ["30", "-1", "nan", "inf", "1e400", "0"],
    "shard": ["1/2", "5/4", "0/4", "a/b", "1/0", "1/" + "9" * 5000],
    "fail-on": ["regression", "response,never", "bogus", "", ","],
    "min-delta": ["0.05", "response=0.1", "speed=0.1", "2", "nan", "trajectory=", "=0.1"],
    "comment": ["true", "FALSE", "maybe"],
    "adk-api": ["http://127.0.0.1:8000 app", "ftp://x app", "http://x", "http:// app"],
    "mode": ["auto", "merge", "publish"],
    "trajectory-policy": ["business", "loose"],
    "evals": ["evals 'unclosed", "a b"],
    "command": ["python 'x", "python agent.py"],
}


@FUZZ
@given(st.data())
def test_action_inputs(data: st.DataObject) -> None:
    names = data.draw(st.lists(st.sampled_from(sorted(CLEANERS)), max_size=4, unique=True))
    env = {}
    for name in names:
        text = st.text(max_size=12) | st.sampled_from(PLAUSIBLE.get(name, ["", "x"]))
        env[input_env_name(name)] = data.draw(text)
    github = st.sampled_from(["REPOSITORY", "REPOSITORY_ID", "API_URL", "SHA", "WORKFLOW_REF"])
    for name in data.draw(st.lists(github, max_size=2)):
        env[f"GITHUB_{name}"] = data.draw(
            st.text(max_size=12) | st.sampled_from(["o/r", "²", "12"])
        )
    try:
        parse_settings(env)
    except InputError as err:
        check_error(err)


# --- random bytes -------------------------------------------------------------------------

BYTES = st.one_of(
    st.binary(max_size=64),
    st.builds(
        lambda head, tail: head + tail,
        st.sampled_from([b"{", b"[", b"\xef\xbb\xbf{", b"\xff\xfe{\x00"]),
        st.binary(max_size=32),
    ),
)


@settings(FUZZ, max_examples=60)
@given(
    BYTES,
    st.sampled_from(["e.evalset.json", "e.test.json", "test_config.json", "r.json", "event.json"]),
)
def test_random_bytes(raw: bytes, name: str) -> None:
    with folder() as tmp:
        path = tmp / name
        path.write_bytes(raw)
        try:
            if name.endswith((".evalset.json", ".test.json")):
                load_suite([str(path)])
            elif name == "test_config.json":
                load_config(path, name, [])
            elif name == "r.json":
                assert load_baseline(str(path))[0] is None
                load_results(str(path))
            else:
                load_event("push", str(path))
        except InputError as err:
            check_error(err, name)


def test_results_nested_deeper_than_any_stack_is_one_line_naming_the_file(tmp_path: Path):
    """Deep enough that msgspec and the standard library both give up (a RecursionError,
    which depends on how deep the caller's stack already is): one line, never a traceback."""
    deep = "[" * 100_000 + "]" * 100_000
    path = tmp_path / "results.json"
    path.write_text(f'{{"schema": "agent-eval-results/1", "cases": [{{"eval_set_id": {deep}}}]}}')
    with pytest.raises(InputError) as raised:
        load_results(str(path))
    assert str(raised.value) == f"{path}: invalid JSON: nested too deeply"
    baseline, reason = load_baseline(str(path))
    assert baseline is None and reason is not None and "nested too deeply" in reason
