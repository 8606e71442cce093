"""Against real `adk eval` (google-adk[eval] 2.13): the same behaviour and scores from
`run --agent`, and its `.adk/eval_history` ingested with `--adk-history` in every
format ADK has written (the older ones converted from the real file here)."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.paths import ROOT

from agent_eval_action.cli import main
from agent_eval_action.results import Results

# with -n, the tests of the module-scoped `adk eval` run share one worker and one run
pytestmark = pytest.mark.xdist_group("adk_eval")
EXAMPLE = ROOT / "examples" / "customer_support"
EVALSET = EXAMPLE / "evals" / "refund_flow.evalset.json"
PASSED, FAILED = 1, 2  # ADK's EvalStatus, as written


@pytest.fixture(scope="module")
def adk_eval(tmp_path_factory):
    """Run `adk eval` once on a copy of the example; return its one result file's JSON."""
    root = tmp_path_factory.mktemp("adk_eval")
    # what earlier runs left in the example (its eval history) is not the example
    shutil.copytree(EXAMPLE, root / "customer_support", ignore=shutil.ignore_patterns(".adk"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "google.adk.cli",
            "eval",
            "customer_support",
            "customer_support/evals/refund_flow.evalset.json",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    # 2.13 exits 1 when a case fails; the example has one failure on purpose.
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Tests passed: 4" in done.stdout and "Tests failed: 1" in done.stdout
    [result_file] = (root / "customer_support" / ".adk" / "eval_history").iterdir()
    assert result_file.name.startswith("customer_support_refund_flow_")
    return json.loads(result_file.read_text())


def adk_behaviour(result: dict) -> dict:
    """Per case: status, scores of the two deterministic metrics, and per turn the tool
    calls and answer, from ADK's own result file."""
    cases = {}
    for case in result["eval_case_results"]:
        scores = {
            m["metric_name"]: m["score"]
            for m in case["overall_eval_metric_results"]
            if m["metric_name"] in ("tool_trajectory_avg_score", "response_match_score")
        }
        turns = []
        for item in case["eval_metric_result_per_invocation"]:
            actual = item["actual_invocation"]
            events = actual["intermediate_data"]["invocation_events"]
            calls = [
                (p["function_call"]["name"], p["function_call"]["args"])
                for e in events
                if e.get("content")
                for p in e["content"]["parts"]
                if p.get("function_call")
            ]
            answer = "\n".join(p["text"] for p in actual["final_response"]["parts"] if p["text"])
            turns.append((calls, answer))
        status = "passed" if case["final_eval_status"] == PASSED else "failed"
        cases[case["eval_id"]] = (status, scores, turns)
    return cases


def our_behaviour(results: Results) -> dict:
    cases = {}
    for case in results.cases:
        [run] = case.runs
        turns = [
            (
                [(u.name, u.args) for u in inv.actual.tool_uses],
                inv.actual.final_response.text(),
            )
            for inv in run.turns()
        ]
        scores = {name: m.score for name, m in case.metrics.items()}
        cases[case.eval_id] = (case.status.value, scores, turns)
    return cases


def run_ours(tmp_path: Path, *flags: str) -> tuple[int, Results]:
    out = tmp_path / "results.json"
    code = main(["run", str(EVALSET), *flags, "--out", str(out)])
    return code, Results.from_json(out.read_text())


def assert_same(ours: dict, adks: dict) -> None:
    assert ours.keys() == adks.keys()
    for eval_id, (status, scores, turns) in adks.items():
        our_status, our_scores, our_turns = ours[eval_id]
        assert our_status == status, eval_id
        assert our_turns == turns, eval_id
        assert our_scores.keys() == scores.keys(), eval_id
        for name, score in scores.items():
            assert our_scores[name] == pytest.approx(score, abs=1e-9), (eval_id, name)


@pytest.mark.adk
@pytest.mark.e2e
def test_run_agent_matches_adk_eval(adk_eval, tmp_path):
    code, results = run_ours(tmp_path, "--agent", str(EXAMPLE))
    adks = adk_behaviour(adk_eval)
    assert code == 1
    assert_same(our_behaviour(results), adks)
    # Not trivially equal: the suite has a failure, multi-turn cases and inexact answers.
    assert adks["gold_damaged_refund"][0] == "failed"
    assert len(adks["damaged_item_refund"][2]) == 3
    assert any(0 < s["response_match_score"] < 1 for _, s, _ in adks.values())


def write_history(directory: Path, results: list[dict], double_encode: bool = False) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for index, result in enumerate(results):
        text = json.dumps(result, indent=2)
        if double_encode:
            text = json.dumps(text)
        (directory / f"customer_support_refund_flow_{index}.evalset_result.json").write_text(text)
    return directory


def per_case_files(result: dict) -> list[dict]:
    """ADK 1.x: one result file per case."""
    return [
        {**result, "eval_case_results": [case], "creation_timestamp": result["creation_timestamp"]}
        for case in result["eval_case_results"]
    ]


def with_tool_uses(result: dict) -> dict:
    """ADK before 1.20: actual invocations hold tool_uses/tool_responses, not events."""
    old = copy.deepcopy(result)
    for case in old["eval_case_results"]:
        for item in case["eval_metric_result_per_invocation"]:
            events = item["actual_invocation"]["intermediate_data"]["invocation_events"]
            parts = [p for e in events if e.get("content") for p in e["content"]["parts"]]
            item["actual_invocation"]["intermediate_data"] = {
                "tool_uses": [p["function_call"] for p in parts if p.get("function_call")],
                "tool_responses": [
                    p["function_response"] for p in parts if p.get("function_response")
                ],
                "intermediate_responses": [],
            }
    return old


@pytest.mark.adk
@pytest.mark.e2e
@pytest.mark.parametrize(
    "variant",
    ["2.x per set", "1.22+ per case", "<=1.21 double-encoded per case", "<1.20 tool_uses"],
)
def test_history_in_every_format_scores_as_adk_did(adk_eval, tmp_path, variant):
    files = {
        "2.x per set": ([adk_eval], False),
        "1.22+ per case": (per_case_files(adk_eval), False),
        "<=1.21 double-encoded per case": (per_case_files(adk_eval), True),
        "<1.20 tool_uses": ([with_tool_uses(adk_eval)], False),
    }
    results_list, double = files[variant]
    history = write_history(tmp_path / ".adk" / "eval_history", results_list, double)
    code, results = run_ours(tmp_path, "--adk-history", str(history))
    assert code == 1
    assert results.run_config.runner == "adk_history"
    assert_same(our_behaviour(results), adk_behaviour(adk_eval))
    if variant == "2.x per set":  # durations come from ADK's invocation timings
        assert all(c.runs[0].turns()[0].duration_s > 0 for c in results.cases)


@pytest.mark.adk
@pytest.mark.e2e
def test_history_runs_pick_the_newest_results(adk_eval, tmp_path):
    older = copy.deepcopy(adk_eval)
    older["creation_timestamp"] -= 100
    for case in older["eval_case_results"]:
        for item in case["eval_metric_result_per_invocation"]:
            item["actual_invocation"]["final_response"]["parts"][0]["text"] = "Older answer."
    history = write_history(tmp_path / "h", [adk_eval, older])

    _, one = run_ours(tmp_path, "--adk-history", str(history))
    assert "Older answer." not in one.dump_json()  # the newest only

    _, two = run_ours(tmp_path, "--adk-history", str(history), "--num-runs", "2")
    parcel = next(c for c in two.cases if c.eval_id == "where_is_my_parcel")
    texts = [run.turns()[0].actual.final_response.text() for run in parcel.runs]
    assert texts == ["Older answer.", "Order A-5120 is on its way and should arrive on Thursday."]
    assert parcel.metrics["response_match_score"].runs[1] == 1.0

    _, three = run_ours(tmp_path, "--adk-history", str(history), "--num-runs", "3")
    parcel = next(c for c in three.cases if c.eval_id == "where_is_my_parcel")
    assert parcel.status == "errored"
    assert parcel.runs[2].error == (
        "the history has 2 adk eval result(s) for this case, not the 3 runs asked for"
    )


@pytest.mark.adk
@pytest.mark.e2e
def test_history_gaps_and_mismatches_are_errored_with_a_note(adk_eval, tmp_path):
    result = copy.deepcopy(adk_eval)
    cases = {c["eval_id"]: c for c in result["eval_case_results"]}
    result["eval_case_results"].remove(cases["unverified_customer"])  # never ran
    failed = cases["large_refund_escalated"]  # ADK's inference failed
    failed.update(final_eval_status=FAILED, eval_metric_result_per_invocation=[])
    changed = cases["where_is_my_parcel"]["eval_metric_result_per_invocation"][0]
    changed["actual_invocation"]["user_content"]["parts"][0]["text"] = "Something else"
    history = write_history(tmp_path / "h", [result])

    code, results = run_ours(tmp_path, "--adk-history", str(history))
    by_id = {case.eval_id: case for case in results.cases}
    assert code == 1
    assert by_id["unverified_customer"].status == "errored"
    assert "no adk eval result for this case in the --adk-history files" in (
        by_id["unverified_customer"].note
    )
    assert "its inference failed" in by_id["large_refund_escalated"].note
    assert "turn 1's user message in the adk eval result differs from the eval file's" in (
        by_id["where_is_my_parcel"].note
    )
    assert by_id["damaged_item_refund"].status == "passed"


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"eval_case_results": [', "invalid JSON"),
        (
            '{"eval_set_id": "x"}',
            'not an adk eval result (an EvalSetResult with "eval_case_results")',
        ),
        ('"[1, 2]"', "not an adk eval result"),
        (
            '{"eval_case_results": [{"eval_id": 3}]}',
            "eval_case_results[0] is not an eval case result",
        ),
    ],
)
def test_bad_history_file_is_one_line_exit_2(tmp_path, capsys, content, message):
    bad = tmp_path / "bad.evalset_result.json"
    bad.write_text(content)
    code = main(["run", str(EVALSET), "--adk-history", str(bad), "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert err.startswith(f"error: {bad.as_posix()}") and message in err


def test_missing_or_empty_history_path_is_exit_2(tmp_path, capsys):
    assert main(["run", str(EVALSET), "--adk-history", str(tmp_path / "none")]) == 2
    assert "adk eval history file or directory not found" in capsys.readouterr().err
    assert main(["run", str(EVALSET), "--adk-history", str(tmp_path)]) == 2
    assert "no *.evalset_result.json files in this directory" in capsys.readouterr().err
