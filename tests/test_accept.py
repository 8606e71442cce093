"""`accept` (accept/, docs/accept.md): the chosen cases' eval files rewritten to expect what
the agent now does, on the chosen axes, in place; every other byte as it was; and each case
it cannot accept refused with the reason. The agent is the table agent
(tests/workers/table_agent.py), so a test decides what each run does; after accepting, the
same agent run again passes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers.paths import python_command
from helpers.table_suite import RIGHT, TABLE_AGENT, order_case

from agent_eval_action.accept.splice import Style, add, replace, span
from agent_eval_action.cli import main

NEW = {"text": "Shipped: it arrives Friday.", "tools": [["track", {"id": "A-1"}], ["notify", {}]]}


def _agent(write, table: dict) -> list[str]:
    write("table.json", table)
    return ["--command", python_command(TABLE_AGENT, "table.json")]


def _run(write, table: dict, out: str = "r.json", *flags: str) -> int:
    return main(["run", "evals", *_agent(write, table), "--out", out, *flags])


def _suite(write, text: str, name: str = "evals/shop.evalset.json") -> Path:
    path = write(name, b"")
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def _evalset(cases: list[dict], **dumps: Any) -> str:
    return json.dumps({"eval_set_id": "shop", "eval_cases": cases}, **dumps)


# --- the whole round trip, every supported form and style -------------------------------------

FORMS = {
    "evalset, 2 spaces": lambda: _evalset([order_case("a"), order_case("b")], indent=2) + "\n",
    "evalset, 4 spaces, camelCase, CRLF, BOM": lambda: (
        "\ufeff"
        + json.dumps(
            {
                "evalSetId": "shop",
                "evalCases": [
                    {
                        "evalId": e,
                        "conversation": [
                            {
                                "userContent": {
                                    "role": "user",
                                    "parts": [{"text": "Where is it?"}],
                                },
                                "finalResponse": {
                                    "role": "model",
                                    "parts": [{"text": RIGHT["text"]}],
                                },
                                "intermediateData": {"toolUses": [{"name": "track", "args": {}}]},
                            }
                        ],
                    }
                    for e in ("a", "b")
                ],
            },
            indent=4,
        ).replace("\n", "\r\n")
    ),
    "evalset, one line, raw UTF-8": lambda: _evalset(
        [order_case("a"), order_case("b")], separators=(",", ":"), ensure_ascii=False
    ).replace("Where is my order?", "Où est ma commande ?"),
    "evalset, no expected calls or answer written": lambda: _evalset(
        [
            order_case("a"),
            {"eval_id": "b", "conversation": [{"user_content": {"parts": [{"text": "Hi?"}]}}]},
        ],
        indent=2,
    ),
}


@pytest.mark.parametrize("form", list(FORMS))
def test_an_accepted_case_passes_on_the_next_run_and_nothing_else_moved(write, form):
    path = _suite(write, FORMS[form]())
    write(
        "evals/test_config.json",
        {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}},
    )
    before = path.read_bytes()
    table = {"a": RIGHT, "b": NEW}
    assert _run(write, table) == 1  # b does something new
    assert main(["accept", "r.json", "shop/b"]) == 0
    after = path.read_bytes()
    assert after != before
    assert after.startswith(b"\xef\xbb\xbf") == before.startswith(b"\xef\xbb\xbf")
    assert (b"\r\n" in after) == (b"\r\n" in before)
    assert _run(write, table, "again.json") == 0  # the same agent passes now
    # case a, and everything of b but its expectations, byte for byte
    old, new = json.loads(before.decode("utf-8-sig")), json.loads(after.decode("utf-8-sig"))
    cases = "evalCases" if "evalCases" in old else "eval_cases"
    assert old[cases][0] == new[cases][0]
    assert {k: v for k, v in old.items() if k != cases} == {
        k: v for k, v in new.items() if k != cases
    }
    assert _text_outside_case_b(before) == _text_outside_case_b(after)


def _text_outside_case_b(raw: bytes) -> str:
    text = raw.decode("utf-8-sig")
    key = "evalCases" if '"evalCases"' in text else "eval_cases"
    start, end = span(text, (key, 1))
    return text[:start] + text[end:]


def test_legacy_rows_and_legacy_cases_are_rewritten_in_their_own_keys(write):
    rows = [
        {
            "query": "Where is my order?",
            "expected_tool_use": [{"tool_name": "track", "tool_input": {}}],
            "reference": RIGHT["text"],
        }
    ]
    write("evals/legacy/order.test.json", rows)
    write("evals/legacy/cases.test.json", [{"name": "b", "data": rows}])
    write(
        "evals/legacy/test_config.json",
        {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}},
    )
    table = {"order": NEW, "b": NEW}  # ids: the file's name, and the case's name
    write("evals/shop.evalset.json", _evalset([order_case("a")], indent=2))
    write("evals/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    assert _run(write, {**table, "a": RIGHT}) == 1
    results = json.loads(Path("r.json").read_text())
    failing = [
        f"{c['eval_set_id']}/{c['eval_id']}" for c in results["cases"] if c["status"] == "failed"
    ]
    assert len(failing) == 2, failing
    assert main(["accept", "r.json"]) == 0  # the failing cases of the Results
    order = json.loads(Path("evals/legacy/order.test.json").read_text())
    assert order[0]["expected_tool_use"] == [
        {"tool_name": "track", "tool_input": {"id": "A-1"}},
        {"tool_name": "notify", "tool_input": {}},
    ]
    assert order[0]["reference"] == NEW["text"]
    assert json.loads(Path("evals/legacy/cases.test.json").read_text())[0]["data"] == order
    assert _run(write, {**table, "a": RIGHT}, "again.json") == 0


def test_one_axis_rewrites_only_what_that_axis_compares(write):
    _suite(write, _evalset([order_case("b")], indent=2))
    write(
        "evals/test_config.json",
        {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}},
    )
    assert _run(write, {"b": NEW}) == 1
    assert main(["accept", "r.json", "b", "--axis", "trajectory"]) == 0
    turn = json.loads(Path("evals/shop.evalset.json").read_text())["eval_cases"][0]["conversation"][
        0
    ]
    assert turn["final_response"]["parts"][0]["text"] == RIGHT["text"]  # the old answer stays
    assert [c["name"] for c in turn["intermediate_data"]["tool_uses"]] == ["track", "notify"]


def test_accepting_nothing_leaves_every_file_byte_for_byte(write, capsys):
    path = _suite(write, _evalset([order_case("a")], indent=3) + "\n\n")
    write("evals/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    before = path.read_bytes()
    assert _run(write, {"a": RIGHT}) == 0
    assert main(["accept", "r.json"]) == 0
    assert path.read_bytes() == before
    assert "nothing to accept" in capsys.readouterr().err


def test_a_dry_run_prints_the_change_and_writes_nothing(write, capsys):
    path = _suite(write, _evalset([order_case("b")], indent=2))
    write("evals/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    before = path.read_bytes()
    assert _run(write, {"b": NEW}) == 1
    capsys.readouterr()
    assert main(["accept", "r.json", "--dry-run"]) == 0
    said = capsys.readouterr()
    assert path.read_bytes() == before
    assert said.out.startswith("--- a/evals/shop.evalset.json\n+++ b/evals/shop.evalset.json")
    assert '+                "name": "notify",' in said.out
    assert "would accept shop / b (trajectory, response, run 1)" in said.err


def test_only_the_cases_regressed_in_a_diff_on_their_regressed_axis(write):
    _suite(write, _evalset([order_case("a"), order_case("b")], indent=2))
    write(
        "evals/test_config.json",
        {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}},
    )
    assert _run(write, {"a": RIGHT, "b": RIGHT}, "base.json") == 0
    # a fails now as it failed on main; b calls another tool: b regressed, on trajectory alone
    write(
        "evals/test_config.json",
        {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}},
    )
    wrong = {"text": "No idea.", "tools": []}
    assert _run(write, {"a": wrong, "b": RIGHT}, "base.json") == 1
    changed = {"text": RIGHT["text"], "tools": [["notify", {}]]}
    assert _run(write, {"a": wrong, "b": changed}, "r.json", "--confirm-runs", "0") == 1
    before = json.loads(Path("evals/shop.evalset.json").read_text())
    assert main(["accept", "r.json", "--baseline", "base.json"]) == 0
    after = json.loads(Path("evals/shop.evalset.json").read_text())
    assert after["eval_cases"][0] == before["eval_cases"][0]
    b = after["eval_cases"][1]["conversation"][0]
    assert b["intermediate_data"]["tool_uses"] == [{"name": "notify", "args": {}}]
    assert b["final_response"] == before["eval_cases"][1]["conversation"][0]["final_response"]


# --- refusals -----------------------------------------------------------------------------------


def test_an_eval_file_edited_since_the_run_is_refused_untouched(write, capsys):
    path = _suite(write, _evalset([order_case("b")], indent=2))
    write("evals/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    assert _run(write, {"b": NEW}) == 1
    path.write_text(path.read_text() + " ")
    edited = path.read_bytes()
    assert main(["accept", "r.json"]) == 1
    assert path.read_bytes() == edited
    assert (
        "refused shop / b: evals/shop.evalset.json: changed since the run"
        in capsys.readouterr().err
    )


def test_runs_that_disagree_are_refused_unless_one_is_picked(write, capsys):
    _suite(write, _evalset([order_case("b")], indent=2))
    write("evals/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    table = {"b/0/1": NEW, "b/0/2": {"text": "x", "tools": [["refund", {}]]}}
    assert _run(write, table, "r.json", "--num-runs", "2") == 1
    assert main(["accept", "r.json"]) == 1
    assert (
        "its 2 runs did different things on trajectory/response; pick one (--run N)"
        in capsys.readouterr().err
    )
    assert main(["accept", "r.json", "--run", "2"]) == 0
    turn = json.loads(Path("evals/shop.evalset.json").read_text())["eval_cases"][0]["conversation"][
        0
    ]
    assert turn["intermediate_data"]["tool_uses"] == [{"name": "refund", "args": {}}]


def test_a_metric_no_expectation_decides_is_refused_with_its_name(write, capsys):
    from helpers.factory import case, results

    # a response metric that fails and that no reference answer decides
    failing = case("b", {"rubric_based_final_response_quality_v1": [0.0]})
    write("r.json", results(failing).dump_json())
    assert main(["accept", "r.json", "s/b"]) == 1
    said = capsys.readouterr().err
    assert "refused s / b: rubric_based_final_response_quality_v1 failed or regressed" in said


def test_a_scenario_case_is_refused(write, capsys):
    from helpers.factory import case, results

    scenario = case("talk", {"tool_trajectory_avg_score": [0.0]}).replace(scenario=True)
    write("r.json", results(scenario).dump_json())
    assert main(["accept", "r.json"]) == 1
    assert "conversation_scenario case expects no turns" in capsys.readouterr().err


def test_a_file_reached_through_a_link_out_of_the_root_is_refused(write, tmp_path, capsys):
    _suite(write, _evalset([order_case("b")], indent=2))
    write("evals/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    assert _run(write, {"b": NEW}) == 1
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "shop.evalset.json").write_bytes(Path("evals/shop.evalset.json").read_bytes())
    Path("evals/shop.evalset.json").unlink()
    os.symlink(outside / "shop.evalset.json", "evals/shop.evalset.json")
    kept = (outside / "shop.evalset.json").read_bytes()
    assert main(["accept", "r.json"]) == 1
    assert "not below . once its links are followed" in capsys.readouterr().err
    assert (outside / "shop.evalset.json").read_bytes() == kept


# --- tool responses, and ADK's recorded form of the expected turn -----------------------------

TRACKED = {"text": RIGHT["text"], "tools": [["track", {"id": "A-1"}]]}
ANSWERED = {
    "text": RIGHT["text"],
    "tools": [["track", {"id": "A-1"}], ["notify", {}]],
    "responses": [["track", {"status": "shipped"}], ["notify", {"sent": True}]],
}


def _part_keys(camel: bool) -> tuple[str, str]:
    return ("functionCall", "functionResponse") if camel else ("function_call", "function_response")


def _events_case(eval_id: str, camel: bool = False) -> dict:
    """A case whose expected turn is ADK's recorded form: a call of `track` with its answer,
    and a sub-agent's text between them."""
    call, response = _part_keys(camel)
    case = order_case(eval_id)
    case["conversation"][0]["intermediate_data"] = {
        "invocation_events": [
            {
                "author": "shop_agent",
                "content": {
                    "role": "model",
                    "parts": [{call: {"id": "adk-1", "name": "track", "args": {"id": "A-1"}}}],
                },
            },
            {
                "author": "shop_agent",
                "content": {
                    "role": "user",
                    "parts": [{response: {"id": "adk-1", "name": "track", "response": {"s": 1}}}],
                },
            },
            {"author": "helper", "content": {"role": "model", "parts": [{"text": "Looking."}]}},
        ]
    }
    return case


@pytest.mark.parametrize("camel", [False, True], ids=["snake_case", "camelCase parts"])
def test_invocation_events_get_the_new_calls_and_keep_what_still_pairs(write, camel):
    path = _suite(write, _evalset([order_case("a"), _events_case("b", camel)], indent=2))
    write("evals/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    table = {"a": RIGHT, "b": {"text": RIGHT["text"], "tools": NEW["tools"]}}
    before = path.read_bytes()
    assert _run(write, table) == 1
    assert main(["accept", "r.json", "--axis", "trajectory"]) == 0
    call, response = _part_keys(camel)
    events = json.loads(path.read_text())["eval_cases"][1]["conversation"][0]["intermediate_data"][
        "invocation_events"
    ]
    assert events == [
        {
            "author": "shop_agent",
            "content": {
                "role": "model",
                "parts": [{call: {"name": "track", "args": {"id": "A-1"}}}],
            },
        },
        # the file's own answer to a call it still expects stays, without the old call's id
        {
            "author": "shop_agent",
            "content": {
                "role": "user",
                "parts": [{response: {"name": "track", "response": {"s": 1}}}],
            },
        },
        {
            "author": "shop_agent",
            "content": {"role": "model", "parts": [{call: {"name": "notify", "args": {}}}]},
        },
        {"author": "helper", "content": {"role": "model", "parts": [{"text": "Looking."}]}},
    ]
    assert _text_outside_case_b(before) == _text_outside_case_b(path.read_bytes())
    assert _run(write, table, "again.json") == 0


def test_invocation_events_without_an_author_are_refused_untouched(write, capsys):
    case = order_case("b")
    case["conversation"][0]["intermediate_data"] = {"invocation_events": []}
    path = _suite(write, _evalset([case], indent=2))
    write("evals/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    assert _run(write, {"b": NEW}) == 1
    before = path.read_bytes()
    assert main(["accept", "r.json", "--axis", "trajectory"]) == 1
    assert "name no author to write the calls under" in capsys.readouterr().err
    assert path.read_bytes() == before


def _with_responses(case: dict, responses: list[dict]) -> dict:
    data = case["conversation"][0]["intermediate_data"]
    data["tool_uses"] = [{"name": "track", "args": {"id": "A-1"}}, {"name": "cancel", "args": {}}]
    data["tool_responses"] = responses
    return case


@pytest.mark.parametrize(
    ("answer", "kept"),
    [
        # track still expected: its answer stays; cancel's goes with it; notify has none
        (NEW, [{"name": "track", "response": {"s": 1}}]),
        # notify comes first and has no answer: none is kept, or track's would pair with it
        ({"text": "x", "tools": [["notify", {}], ["track", {"id": "A-1"}]]}, []),
    ],
    ids=["a call still expected", "a new call first"],
)
def test_tool_responses_of_calls_still_expected_are_kept_in_their_pairing(write, answer, kept):
    responses = [{"name": "track", "response": {"s": 1}}, {"name": "cancel", "response": {}}]
    path = _suite(write, _evalset([_with_responses(order_case("b"), responses)], indent=2))
    write("evals/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    assert _run(write, {"b": answer}) == 1
    assert main(["accept", "r.json", "--axis", "trajectory"]) == 0
    data = json.loads(path.read_text())["eval_cases"][0]["conversation"][0]["intermediate_data"]
    assert [c["name"] for c in data["tool_uses"]] == [c[0] for c in answer["tools"]]
    assert data["tool_responses"] == kept


def test_with_tool_responses_writes_what_the_run_s_tools_answered_in_every_form(write):
    responses = [{"name": "track", "response": {"s": 1}}]
    case = order_case("b")
    case["conversation"][0]["intermediate_data"]["tool_responses"] = responses
    path = _suite(write, _evalset([case, _events_case("c")], indent=2))
    rows = [{"query": "Where?", "expected_tool_use": [], "reference": RIGHT["text"]}]
    legacy = write("evals/legacy/order.test.json", rows)
    write("evals/legacy/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    write("evals/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    table = {"b": ANSWERED, "c": ANSWERED, "order": ANSWERED}
    assert _run(write, table) == 1
    assert main(["accept", "r.json", "--axis", "trajectory", "--with-tool-responses"]) == 0
    written = [
        {"name": "track", "response": {"status": "shipped"}},
        {"name": "notify", "response": {"sent": True}},
    ]
    cases = json.loads(path.read_text())["eval_cases"]
    assert cases[0]["conversation"][0]["intermediate_data"]["tool_responses"] == written
    events = cases[1]["conversation"][0]["intermediate_data"]["invocation_events"]
    said = [
        p["function_response"]
        for e in events
        for p in e["content"]["parts"]
        if "function_response" in p
    ]
    assert said == written
    assert json.loads(legacy.read_text())[0]["expected_tool_use"] == [
        {
            "tool_name": "track",
            "tool_input": {"id": "A-1"},
            "mock_tool_output": {"status": "shipped"},
        },
        {"tool_name": "notify", "tool_input": {}, "mock_tool_output": {"sent": True}},
    ]
    assert _run(write, table, "again.json") == 0
    # the same calls again, with other answers: only the answers change
    table = {
        k: {**v, "responses": [["track", {"status": "late"}], ["notify", {}]]}
        for k, v in table.items()
    }
    assert _run(write, table, "third.json") == 0
    assert main(["accept", "third.json", "b", "--with-tool-responses"]) == 0
    data = json.loads(path.read_text())["eval_cases"][0]["conversation"][0]["intermediate_data"]
    assert data["tool_responses"][0]["response"] == {"status": "late"}
    assert _run(write, table, "fourth.json") == 0
    before = path.read_bytes()
    assert main(["accept", "fourth.json", "b"]) == 0  # without the flag: the same calls
    assert path.read_bytes() == before  # and the answers the file has stay


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["accept", "r.json", "nobody"], '"nobody": no case of that name in the Results'),
        (["accept", "missing.json"], "missing.json"),
        (["accept", "r.json", "--diff", "r.json"], "not a Diff"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(write, capsys, argv, said):
    _suite(write, _evalset([order_case("b")], indent=2))
    write("evals/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    assert _run(write, {"b": NEW}) == 1
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err


# --- the splice itself ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "dumps",
    [{"indent": 2}, {"indent": 4}, {"indent": "\t"}, {}, {"separators": (",", ":")}],
    ids=["2", "4", "tab", "one line", "compact"],
)
def test_a_replaced_or_added_value_is_written_as_the_file_writes_values(dumps):
    data = {"a": {"b": [1, {"c": "é"}], "d": {}}, "e": 1}
    text = json.dumps(data, **dumps)
    style = Style.of(text)
    changed = replace(text, ("a", "b", 1), {"c": "ü", "x": [1, 2]}, style)
    assert json.loads(changed)["a"]["b"][1] == {"c": "ü", "x": [1, 2]}
    whole = {**data, "a": {**data["a"], "b": [1, {"c": "ü", "x": [1, 2]}]}}
    assert changed == json.dumps(whole, **dumps)  # as the file's own writer would have written it
    added = add(text, ("a", "d"), "k", [1], style)
    assert json.loads(added)["a"]["d"] == {"k": [1]}
    added = add(text, ("a",), "k", True, style)
    assert json.loads(added)["a"]["k"] is True
    assert added == json.dumps({**data, "a": {**data["a"], "k": True}}, **dumps)


# --- the offer in the report ------------------------------------------------------------------


def test_the_comment_offers_accept_only_with_cases_to_accept_and_never_in_the_minimal_report():
    from report_diffs import mixed

    from agent_eval_action.core import CaseKey
    from agent_eval_action.report import markdown
    from agent_eval_action.report.model import AcceptOffer

    diff, results = mixed()
    offer = AcceptOffer(((CaseKey("s", "a_b"), ("trajectory",)),), 2, "accept.patch")
    shown = markdown.comment(diff, results, markdown.Options(accept=offer))
    assert "**Intended?** `accept` rewrites what the eval files expect of 1 case" in shown
    assert "s / a\\_b (trajectory) (2 others it cannot: see its output)" in shown
    assert "`agent-eval-action accept results.json --diff diff.json`" in shown
    assert "Intended?" not in markdown.comment(diff, results, markdown.Options())
    none = AcceptOffer((), 1, "accept.patch")
    assert "Intended?" not in markdown.comment(diff, results, markdown.Options(accept=none))


def test_the_patch_applies_to_a_file_without_a_last_line_break_and_with_u2028(write, tmp_path):
    """git marks a last line without its line break, and breaks lines at "\\n" alone: a
    one-line eval file holding U+2028 inside a string gets a patch `git apply` takes."""
    import shutil
    import subprocess

    text = _evalset([order_case("b")], ensure_ascii=False).replace("Where is", "Where\u2028is")
    path = _suite(write, text)
    write("evals/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    assert _run(write, {"b": NEW}) == 1
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "evals", copy / "evals")
    assert main(["accept", "r.json", "--dry-run"]) == 0
    assert main(["accept", "r.json"]) == 0  # the file as accept writes it
    from agent_eval_action.accept.apply import edit
    from agent_eval_action.accept.plan import choose
    from agent_eval_action.compare import load_results

    results = load_results("r.json")
    path.write_text(text, encoding="utf-8")  # back as the run read it
    (edited,), _ = edit(results, choose(results, ())[0], Path("."))
    patch = tmp_path / "accept.patch"
    patch.write_text(edited.diff(), encoding="utf-8")
    applied = subprocess.run(["git", "apply", str(patch)], cwd=copy, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    assert (copy / "evals" / "shop.evalset.json").read_text(encoding="utf-8") == edited.after


def test_answers_with_thoughts_are_accepted_only_where_thoughts_are_stripped(write, capsys):
    """response_match_score reads thought parts as answer text unless stripped (ADK's way):
    a reference written without them would fail the next run, so accept refuses, and says
    how to accept with them stripped."""
    path = _suite(write, _evalset([order_case("b")], indent=2))
    write("evals/test_config.json", {"criteria": {"response_match_score": 0.8}})
    thinking = {"b": {**NEW, "thought": "The user wants the order; it shipped, so say when."}}
    before = path.read_bytes()
    assert _run(write, thinking) == 1
    assert main(["accept", "r.json"]) == 1
    assert "run with --strip-thoughts" in capsys.readouterr().err
    assert path.read_bytes() == before
    assert _run(write, thinking, "stripped.json", "--strip-thoughts") == 1
    assert main(["accept", "stripped.json"]) == 0
    assert json.loads(path.read_text())["eval_cases"][0]["conversation"][0]["final_response"] == {
        "parts": [{"text": NEW["text"]}],
        "role": "model",
    }
    assert _run(write, thinking, "again.json", "--strip-thoughts") == 0


def _compact_cases(cases: list[dict]) -> str:
    """An indented file whose cases are each written on one line (two of them per line)."""
    rows = [json.dumps(c) for c in cases]
    pairs = [", ".join(rows[i : i + 2]) for i in range(0, len(rows), 2)]
    return (
        '{\n  "eval_set_id": "shop",\n  "eval_cases": [\n    ' + ",\n    ".join(pairs) + "\n  ]\n}"
    )


MANY = {
    "indented": lambda cases: _evalset(cases, indent=2) + "\n",
    "one line, no last line break": lambda cases: _evalset(cases),
    "cases on shared lines, CRLF": lambda cases: _compact_cases(cases).replace("\n", "\r\n"),
}


@pytest.mark.parametrize("style", list(MANY))
def test_many_cases_edited_apart_give_the_patch_git_applies_and_the_file_accept_writes(
    write, tmp_path, capsys, style
):
    """Each accepted case is edited within its own lines (accept/patch.py): the patch and the
    file written agree with each other, wherever the cases sit, and the others stay put."""
    import shutil
    import subprocess

    ids = [f"c{i:02}" for i in range(30)]
    changed = set(ids[1::3]) | {ids[-1]}
    text = MANY[style]([order_case(i) for i in ids])
    path = _suite(write, text)
    write("evals/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    assert _run(write, {i: NEW if i in changed else RIGHT for i in ids}) == 1
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "evals", copy / "evals")
    capsys.readouterr()
    assert main(["accept", "r.json", "--dry-run"]) == 0
    said = capsys.readouterr().out
    (tmp_path / "accept.patch").write_text(said, encoding="utf-8", newline="")
    assert main(["accept", "r.json"]) == 0
    patch = str(tmp_path / "accept.patch")
    applied = subprocess.run(["git", "apply", patch], cwd=copy, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    assert (copy / "evals" / "shop.evalset.json").read_bytes() == path.read_bytes()
    after = json.loads(path.read_bytes())["eval_cases"]
    before = json.loads(text)["eval_cases"]
    assert [c["eval_id"] for c in after] == ids
    moved = {c["eval_id"] for c, was in zip(after, before, strict=True) if c != was}
    assert moved == changed
    if "\r\n" in text:  # every line the edit wrote ends as the file's do
        assert b"\n" not in path.read_bytes().replace(b"\r\n", b"")


def test_a_region_of_thousands_of_like_lines_is_not_compared_pair_by_pair(tmp_path, monkeypatch):
    """A case whose expected arguments are 20,000 like lines, and the agent's one more: no
    region reaches difflib with more than MAX_COMPARED line pairs (its cost grows with their
    product: a hostile review's accept offer took a minute for 16,000), and the patch still
    applies."""
    import difflib
    import subprocess

    from agent_eval_action.accept import patch as patches
    from agent_eval_action.accept.patch import MAX_COMPARED, Region, applied, unified

    compared: list[int] = []

    class Counted(difflib.SequenceMatcher):
        def __init__(self, junk, a, b, autojunk=True):
            compared.append(len(a) * len(b))
            super().__init__(junk, a, b, autojunk)

    monkeypatch.setattr(patches.difflib, "SequenceMatcher", Counted)
    items = '    "a",\n' * 20_000
    for before, new in [
        ('{"args": [\n' + items + '    "a"\n]}\n', '{"args": [\n' + items * 2 + '    "b"\n]}\n'),
        ("[\n" + items + '"x"]\n', "[\n" + items.replace('"a"', '"c"') + '"y"]\n'),
    ]:
        regions = [Region(0, len(before), new)]
        text = unified("args.json", before, regions)
        assert max(compared) <= MAX_COMPARED, max(compared)
        (tmp_path / "args.json").write_text(before)
        (tmp_path / "p.patch").write_text(text)
        done = subprocess.run(
            ["git", "apply", "p.patch"], cwd=tmp_path, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "args.json").read_text() == applied(before, regions) == new
