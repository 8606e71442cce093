"""No silent escape routes: removed, renamed and not-run cases, disjoint suites, a baseline of
another agent or another policy (compare/matching.py, compare/policy.py, compare/notes.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.factory import case, results
from helpers.paths import ROOT, python_command

from agent_eval_action.cli import main
from agent_eval_action.compare import compare
from agent_eval_action.compare.matching import covers
from agent_eval_action.compare.model import Change, Diff
from agent_eval_action.compare.policy import parse_fail_on
from agent_eval_action.errors import InputError
from agent_eval_action.results import GatePolicy, Results, SelectedPath, Selection

T, R = "tool_trajectory_avg_score", "response_match_score"
REMOVED_REASON = (
    "1 case that passed on the baseline was removed (fail-on regression; -removed opts out)"
)


def selected(results_: Results, *paths: SelectedPath, **unselected: list[str]) -> Results:
    results_.run_config.selection = Selection(paths=list(paths), unselected=unselected)
    return results_


def by_id(diff: Diff) -> dict[str, Change]:
    return {c.eval_id: c.change for c in diff.cases}


# ---- removed cases ----------------------------------------------------------------------


def test_a_removed_case_that_passed_fails_regression_and_is_said_at_the_top():
    base = results(case("kept", {T: [1.0]}), case("gone", {T: [1.0], R: [1.0]}))
    cur = results(case("kept", {T: [1.0]}))
    diff = compare(cur, base)
    assert by_id(diff) == {"kept": Change.UNCHANGED, "gone": Change.REMOVED}
    assert not diff.verdict.passed and diff.verdict.reasons == [REMOVED_REASON]
    assert diff.verdict.decided_by == ["regression"]
    (note,) = diff.verdict.notes
    assert note == (
        "⚠️ 1 case removed since the baseline (1 of them passed there); the suite shrank "
        "from 2 cases to 1: s / gone."
    )


def test_the_accept_label_accepts_a_removal_and_lists_it():
    base = results(case("kept", {T: [1.0]}), case("gone", {T: [1.0]}))
    diff = compare(results(case("kept", {T: [1.0]})), base, accepted=True)
    assert diff.verdict.passed and diff.verdict.accepted
    assert diff.verdict.reasons == [REMOVED_REASON]


def test_minus_removed_opts_out_but_the_note_stays():
    base = results(case("kept", {T: [1.0]}), case("gone", {T: [1.0]}))
    diff = compare(results(case("kept", {T: [1.0]})), base, fail_on=["regression", "-removed"])
    assert diff.verdict.passed and diff.verdict.reasons == []
    assert diff.verdict.decided_by == ["regression", "-removed"]
    assert diff.verdict.notes[0].startswith("⚠️ 1 case removed since the baseline")


def test_a_removed_case_that_failed_on_the_baseline_is_listed_not_blamed():
    base = results(case("kept", {T: [1.0]}), case("broken", {T: [0.0]}, ["x"]))
    diff = compare(results(case("kept", {T: [1.0]})), base)
    assert diff.verdict.passed and diff.verdict.reasons == []
    assert diff.verdict.notes[0].startswith(
        "⚠️ 1 case removed since the baseline (0 of them passed there)"
    )


@pytest.mark.parametrize(
    ("fail_on", "metrics", "fails"),
    [
        ("trajectory", {T: [1.0]}, True),
        ("trajectory", {R: [1.0]}, False),  # it never scored the trajectory axis
        ("response", {R: [1.0]}, True),
        ("response", {T: [1.0]}, False),
        ("regression", {R: [1.0]}, True),
        ("threshold", {T: [1.0], R: [1.0]}, False),  # thresholds judge the current cases only
        ("trajectory,-removed", {T: [1.0]}, False),
        ("never", {T: [1.0]}, False),
        ("trajectory,threshold", {T: [1.0]}, True),
    ],
)
def test_what_each_policy_does_with_a_removal(fail_on, metrics, fails):
    base = results(case("kept", {T: [1.0]}), case("gone", metrics))
    diff = compare(results(case("kept", {T: [1.0]})), base, fail_on=fail_on.split(","))
    assert diff.verdict.passed is not fails
    assert bool(diff.verdict.reasons) is fails
    if fails:
        assert diff.verdict.reasons[0].startswith("1 case that passed on the baseline was removed")
    assert any(n.startswith("⚠️ 1 case removed") for n in diff.verdict.notes)


# ---- renamed cases ----------------------------------------------------------------------


def test_a_case_renamed_with_the_same_content_is_compared_with_its_old_self():
    base = results(case("old_name", {T: [1.0]}))
    base.cases[0].content_sha256 = "content"
    cur = results(case("new_name", {T: [0.0]}, ["skipped"]))
    cur.cases[0].content_sha256 = "content"
    diff = compare(cur, base)
    (renamed,) = diff.cases
    assert renamed.eval_id == "new_name" and renamed.change == Change.NEW_FAILURE
    assert renamed.renamed_from is not None and renamed.renamed_from.eval_id == "old_name"
    assert not any("expectation changed" in n for n in renamed.notes)
    assert any(n.startswith("renamed: s / old_name") for n in renamed.notes)
    assert diff.verdict.counts["renamed"] == 1 and "removed" not in diff.verdict.counts
    assert diff.verdict.reasons == ["1 trajectory regression"]  # blamed, never hidden
    assert any("1 case renamed since the baseline" in n for n in diff.notes)
    assert not diff.verdict.notes


def test_a_moved_legacy_file_is_renamed_by_its_case_hash():
    """A legacy file's eval set id is its path: moving it changes the key, not the case (a
    baseline from before content_sha256 matches by case_sha256)."""
    base = results(case("faq", {T: [1.0]}, eval_set_id="legacy/faq", case_sha256="h"))
    cur = results(case("faq", {T: [1.0]}, eval_set_id="legacy/moved/faq", case_sha256="h"))
    cur.cases[0].content_sha256 = "c"  # only the current side records it
    diff = compare(cur, base)
    assert by_id(diff) == {"faq": Change.UNCHANGED} and diff.verdict.passed
    assert diff.cases[0].renamed_from.eval_set_id == "legacy/faq"


def test_a_renamed_and_changed_case_is_removed_and_added():
    base = results(case("old_name", {T: [1.0]}, case_sha256="a"))
    cur = results(case("new_name", {T: [1.0]}, case_sha256="b"))
    diff = compare(cur, base)
    assert by_id(diff) == {"new_name": Change.ADDED, "old_name": Change.REMOVED}
    assert not diff.comparable and not diff.verdict.passed


def test_identical_cases_pair_once_each():
    base = results(*(case(f"a{i}", {T: [1.0]}, case_sha256="same") for i in range(2)))
    cur = results(*(case(f"b{i}", {T: [1.0]}, case_sha256="same") for i in range(3)))
    diff = compare(cur, base)
    assert sorted(c.renamed_from.eval_id for c in diff.cases if c.renamed_from) == ["a0", "a1"]
    assert by_id(diff)["b2"] == Change.ADDED


# ---- not run (selection) ----------------------------------------------------------------


def test_cases_a_file_id_filter_left_out_are_not_run_not_removed():
    base = results(case("a", {T: [1.0]}), case("b", {T: [1.0]}), case("c", {T: [1.0]}))
    cur = selected(
        results(case("a", {T: [1.0]})),
        SelectedPath(path="evals/s.evalset.json", ids=["a"]),
        s=["b", "c"],
    )
    diff = compare(cur, base)
    assert by_id(diff) == {"a": Change.UNCHANGED}
    assert [r.eval_id for r in diff.not_run] == ["b", "c"]
    assert diff.verdict.passed and diff.verdict.counts.get("removed") is None
    assert diff.verdict.notes[0] == (
        "⚠️ 2 cases of the baseline not run (selection): this run's eval paths "
        "(evals/s.evalset.json:a) leave them out, so they are not counted as removed: "
        "s / b, s / c."
    )


def test_a_case_deleted_from_a_filtered_file_is_still_removed():
    base = results(case("a", {T: [1.0]}), case("b", {T: [1.0]}))
    # b is not among the file's ids any more: the filter did not leave it out, it is gone
    cur = selected(
        results(case("a", {T: [1.0]})), SelectedPath(path="evals/s.evalset.json", ids=["a"])
    )
    diff = compare(cur, base)
    assert by_id(diff)["b"] == Change.REMOVED and not diff.not_run
    assert diff.verdict.reasons == [REMOVED_REASON]


def test_a_file_outside_the_eval_paths_is_not_run_and_a_deleted_one_is_removed():
    base = results(
        case("a", {T: [1.0]}, eval_set_id="smoke"),
        case("b", {T: [1.0]}, eval_set_id="full"),
        case("c", {T: [1.0]}, eval_set_id="deleted"),
    )
    base.cases[1].file = "evals/full/full.evalset.json"
    base.cases[2].file = "evals/smoke/deleted.evalset.json"
    base.cases[0].file = "evals/smoke/smoke.evalset.json"
    cur = results(case("a", {T: [1.0]}, eval_set_id="smoke"))
    cur.eval_sets[0].file = cur.cases[0].file = "evals/smoke/smoke.evalset.json"
    selected(cur, SelectedPath(path="evals/smoke", directory=True))
    diff = compare(cur, base)
    assert [r.eval_set_id for r in diff.not_run] == ["full"]  # outside evals/smoke
    assert by_id(diff) == {"a": Change.UNCHANGED, "c": Change.REMOVED}  # it would be read
    assert not diff.verdict.passed and diff.verdict.reasons == [REMOVED_REASON]
    assert [n.split(" (")[0] for n in diff.verdict.notes] == [
        "⚠️ 1 case removed since the baseline",
        "⚠️ 1 case of the baseline not run",
    ]


def test_without_a_recorded_selection_every_missing_case_is_removed():
    base = results(case("a", {T: [1.0]}), case("b", {T: [1.0]}, eval_set_id="other"))
    diff = compare(results(case("a", {T: [1.0]})), base)
    assert by_id(diff)["b"] == Change.REMOVED and not diff.not_run


@pytest.mark.parametrize(
    ("path", "directory", "file", "expected"),
    [
        ("evals", True, "evals/a/b.evalset.json", True),
        ("evals", True, "evals/a/b.test.json", True),
        ("evals", True, "evals/a/b.json", False),  # a directory finds eval files only
        ("evals", True, "evals/node_modules/b.evalset.json", False),
        ("evals", True, "evals2/b.evalset.json", False),
        (".", True, "evals/b.evalset.json", True),
        (".", True, "/elsewhere/b.evalset.json", False),
        ("evals/a.json", False, "evals/a.json", True),
        ("evals/a.json", False, "evals/b.json", False),
    ],
)
def test_which_files_an_eval_path_would_read(path, directory, file, expected):
    assert covers(SelectedPath(path=path, directory=directory), file) is expected


# ---- disjoint suites, another agent, another policy ----------------------------------------


def test_disjoint_suites_are_not_comparable():
    base = results(*(case(f"old{i}", {T: [1.0]}) for i in range(6)))
    cur = results(case("n1", {T: [1.0]}), case("n2", {T: [1.0]}))
    diff = compare(cur, base)
    assert not diff.comparable and not diff.verdict.passed
    assert diff.verdict.reasons == [
        "not comparable: the baseline and this run have no case in common (fail-on regression)"
    ]
    assert diff.verdict.notes[0].startswith(
        "⚠️ Not comparable: the baseline and this run have no case in common (6 cases on the "
        "baseline, 2 cases now)"
    )
    assert compare(cur, base, fail_on=["threshold"]).verdict.passed  # thresholds only
    assert compare(cur, base, accepted=True).verdict.accepted


def test_a_baseline_of_another_agent_is_said_at_the_top():
    base = results(case("c", {T: [1.0]}))
    cur = results(case("c", {T: [1.0]}))
    cur.run_config.target = "python other_agent.py"
    diff = compare(cur, base)
    assert diff.verdict.passed
    assert diff.verdict.notes == [
        "⚠️ The baseline ran another agent: command 'agent' on the baseline, command "
        "'python other_agent.py' now. What changed may be the setup, not this change."
    ]


def test_a_policy_other_than_the_baselines_is_said_at_the_top():
    base = results(case("c", {T: [1.0]}), num_runs=1)
    base.run_config.gate = GatePolicy(
        fail_on=["regression"], min_delta={"trajectory": 0.0, "response": 0.1}
    )
    selected(base, SelectedPath(path="evals", directory=True))
    cur = selected(results(case("c", {T: [1.0]})), SelectedPath(path="evals/smoke", directory=True))
    cur.run_config.num_runs = 3
    diff = compare(cur, base, fail_on=["never"], min_delta={"response": 0.3})
    (note,) = diff.verdict.notes
    assert note == (
        "⚠️ The policy differs from main's (the baseline's run): fail-on never here, "
        "regression there; min-delta response=0.3 trajectory=0 here, response=0.1 "
        "trajectory=0 there; eval paths evals/smoke here, evals there; 3 runs per case here, "
        "1 there. A pull request's workflow sets its own; a required workflow or a ruleset "
        "pins it (docs/workflows.md)."
    )
    same = selected(results(case("c", {T: [1.0]})), SelectedPath(path="evals", directory=True))
    assert compare(same, base).verdict.notes == []


# ---- the policy's syntax and old files --------------------------------------------------


def test_minus_removed_needs_a_policy():
    assert parse_fail_on("regression,-removed") == ["regression", "-removed"]
    assert parse_fail_on("-removed, trajectory,-removed") == ["trajectory", "-removed"]
    with pytest.raises(InputError, match=r"name the policy too, e\.g\. regression,-removed"):
        parse_fail_on("-removed")
    with pytest.raises(InputError, match=r"unknown policy removed; use .* \(and -removed after"):
        parse_fail_on("regression,removed")


def test_results_of_an_older_version_still_load_and_compare():
    old = json.loads(results(case("c", {T: [1.0]})).dump_json())
    for field in ("selection", "gate"):
        del old["run_config"][field]
    del old["cases"][0]["content_sha256"]
    loaded = Results.from_json(json.dumps(old))
    assert loaded.run_config.selection is None and loaded.cases[0].content_sha256 is None
    diff = compare(results(case("c", {T: [1.0]})), loaded)
    assert diff.verdict.passed and diff.verdict.notes == []


# ---- through the command line -------------------------------------------------------------


AGENT = python_command(ROOT / "examples" / "agent" / "support_agent.py")


def test_a_file_id_run_records_its_selection_and_compares_without_removals(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(ROOT)
    full, part = tmp_path / "full.json", tmp_path / "part.json"
    evals = "examples/evals/support.evalset.json"
    assert main(["run", evals, "--command", AGENT, "--out", str(full), "--format", "json"]) in (
        0,
        1,
    )
    selection = f"{evals}:order_status,return_policy"
    argv = ["run", selection, "--command", AGENT, "--out", str(part), "--format", "json"]
    assert main([*argv, "--fail-on", "regression,-removed"]) == 0
    recorded = Results.from_json(part.read_text())
    assert recorded.run_config.selection == Selection(
        paths=[SelectedPath(path=evals, ids=["order_status", "return_policy"])],
        unselected={"support": ["where_is_my_order", "broken_item_refund", "gold_express_refund"]},
    )
    assert recorded.run_config.gate == GatePolicy(
        fail_on=["regression", "-removed"], min_delta={"trajectory": 0.0, "response": 0.1}
    )
    assert all(c.content_sha256 for c in recorded.cases)
    capsys.readouterr()
    out = tmp_path / "diff.json"
    code = main(
        [
            *("compare", "--baseline", str(full), "--current", str(part)),
            *("--format", "json", "--report", str(out)),
        ]
    )
    diff = Diff.from_json(Path(out).read_text())
    assert code == 0, diff.verdict
    assert len(diff.not_run) == 3 and not [c for c in diff.cases if c.change == Change.REMOVED]
    assert diff.verdict.notes[0].startswith("⚠️ 3 cases of the baseline not run (selection)")


def test_the_recorded_selection_and_policy_are_checked_on_loading():
    from agent_eval_action.compare.sanity import ResultsRefused, check_results

    bad = selected(results(case("c", {T: [1.0]})), SelectedPath(path="evals/\x1b[31m"))
    with pytest.raises(ResultsRefused, match=r"run_config\.selection\.paths\[0\]\.path"):
        check_results(bad, "cur.json")
    bad = results(case("c", {T: [1.0]}))
    bad.run_config.gate = GatePolicy(fail_on=["regression"], min_delta={"response": float("nan")})
    with pytest.raises(ResultsRefused, match=r"run_config\.gate\.min_delta"):
        check_results(bad, "cur.json")
    bad = selected(results(case("c", {T: [1.0]})), s=["ok", "new\nline"])
    with pytest.raises(ResultsRefused, match=r"run_config\.selection\.unselected"):
        check_results(bad, "cur.json")
