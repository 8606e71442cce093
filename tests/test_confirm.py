"""Confirmation re-runs (compare/confirm.py, pipeline/confirm.py): a regression seen in one
run of a case not known to be deterministic is re-run before it is blamed; the re-runs are
in the Results, so `compare` gives the same verdict from the files."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.paths import python_command
from helpers.table_suite import RIGHT, SKIPS_THE_TOOL, TABLE_AGENT, order_case

from agent_eval_action.cli import main
from agent_eval_action.results import Results


def _run(write, table: dict, *flags: str, out: str = "results.json") -> int:
    write(
        "evals/shop.evalset.json",
        {"eval_set_id": "shop", "eval_cases": [order_case("a"), order_case("b")]},
    )
    write("table.json", table)
    agent = ["--command", python_command(TABLE_AGENT, "table.json")]
    return main(["run", "evals", *agent, "--out", out, *flags])


def _baseline(write) -> None:
    assert _run(write, {"a": RIGHT, "b": RIGHT}, out="base.json") == 0


def _case_of(path: str, eval_id: str):
    results = Results.from_json(Path(path).read_text())
    return next(c for c in results.cases if c.eval_id == eval_id), results


def _diff_case(eval_id: str) -> dict:
    diff = json.loads(Path("diff.json").read_text())
    return next(c for c in diff["cases"] if c["eval_id"] == eval_id)


def test_a_flip_that_a_re_run_does_not_show_again_is_likely_noise(write):
    _baseline(write)
    # run 1 skips the tool; its first re-run (run 2) does not
    table = {"a": RIGHT, "b": RIGHT, "b/0/1": SKIPS_THE_TOOL}
    assert _run(write, table, "--baseline", "base.json") == 0
    case, _ = _case_of("results.json", "b")
    assert [run.run for run in case.runs] == [1, 2]
    assert case.runs[0].confirms is None and "tool_trajectory_avg_score" in case.runs[1].confirms
    b = _diff_case("b")
    assert b["confirmation"] == {"runs": 1, "reproduced": 0, "inconclusive": 0}
    assert b["flaky"] and b["change"] not in ("regressed", "new_failure")
    reason = next(m["reason"] for m in b["metrics"] if m["metric"] == "tool_trajectory_avg_score")
    assert reason.startswith("not reproduced: 0/1 re-runs")
    # the files alone give the same verdict
    assert main(["compare", "--baseline", "base.json", "--current", "results.json"]) == 0


def test_a_regression_every_re_run_shows_again_is_confirmed(write):
    _baseline(write)
    assert _run(write, {"a": RIGHT, "b": SKIPS_THE_TOOL}, "--baseline", "base.json") == 1
    case, _ = _case_of("results.json", "b")
    assert [run.run for run in case.runs] == [1, 2, 3, 4]  # the run and 3 re-runs
    b = _diff_case("b")
    assert (
        b["confirmation"] == {"runs": 3, "reproduced": 3, "inconclusive": 0}
        and b["change"] == "new_failure"
    )
    reason = next(m["reason"] for m in b["metrics"] if m["metric"] == "tool_trajectory_avg_score")
    assert reason.endswith("confirmed in 3/3 re-runs")
    a, _ = _case_of("results.json", "a")
    assert len(a.runs) == 1  # an unchanged case is never re-run
    assert main(["compare", "--baseline", "base.json", "--current", "results.json"]) == 1


def test_a_case_known_to_be_deterministic_is_not_re_run(write):
    assert _run(write, {"a": RIGHT, "b": RIGHT}, "--num-runs", "2", out="base.json") == 0
    table = {"a": RIGHT, "b": SKIPS_THE_TOOL}
    assert _run(write, table, "--baseline", "base.json", "--num-runs", "2") == 1
    case, _ = _case_of("results.json", "b")
    assert all(run.confirms is None for run in case.runs) and len(case.runs) == 2
    assert _diff_case("b")["confirmation"] is None


def test_no_confirmation_with_confirm_runs_0_and_the_limit_is_said(write):
    _baseline(write)
    table = {"a": SKIPS_THE_TOOL, "b": SKIPS_THE_TOOL}
    assert _run(write, table, "--baseline", "base.json", "--confirm-runs", "0") == 1
    case, _ = _case_of("results.json", "b")
    assert len(case.runs) == 1
    assert _run(write, table, "--baseline", "base.json", "--confirm-limit", "1") == 1
    _, results = _case_of("results.json", "b")
    confirmed = [c for c in results.cases if any(run.confirms for run in c.runs)]
    assert len(confirmed) == 1  # one re-run in all: the other case kept its regression
    assert any("limit of 1 extra case-runs" in w for w in results.warnings)


def test_single_runs_of_a_noisy_agent_get_one_line_of_advice(write, capsys):
    _baseline(write)
    table = {"a": RIGHT, "b": RIGHT, "b/0/1": SKIPS_THE_TOOL}
    _run(write, table, "--baseline", "base.json")
    err = capsys.readouterr().err
    assert err.count("note: 1 case(s) answered differently") == 1
    _run(write, {"a": RIGHT, "b": RIGHT}, "--baseline", "base.json")
    assert "answered differently" not in capsys.readouterr().err


def test_the_comparison_scores_a_case_without_its_re_runs_as_the_score_stage_does():
    from agent_eval_action.results import case_score

    assert case_score([0.5], [[0.5]]) == 0.5  # one run: its own score
    assert case_score([1.0, 0.5], [[1.0, 1.0], [0.0, 1.0]]) == 0.75  # several: all turns
    assert case_score([0.5, 1.0], [[0.5], []]) == 0.75  # a run without turn scores: the runs
    assert case_score([0.5, 1.0], [[None], [None]]) == 0.75  # no turn scored: the runs
    assert case_score([0.5, None], [[0.5], []]) is None and case_score([], []) is None


def test_the_cli_judges_each_question_once_across_its_confirmation_rounds(tmp_path, monkeypatch):
    """Issue 33's case (helpers/judged_suite.py): 20 cases, one changed answer, num_samples
    3, no history. Each round's score finds the verdicts the run gave before, and the run
    finds main's: 3 judge calls in all, and the Results count them once, with every verdict
    they reused."""
    from fakes.gemini import FakeGemini
    from helpers import judged_suite as suite

    monkeypatch.chdir(tmp_path)
    suite.write_judged_suite(tmp_path)
    (tmp_path / "main.json").write_text(json.dumps(suite.MAIN))
    (tmp_path / "pr.json").write_text(json.dumps(suite.PR))
    with FakeGemini() as gemini:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", gemini.url)
        monkeypatch.setenv("GOOGLE_API_KEY", "k")
        steady = ["--command", python_command(TABLE_AGENT, "main.json")]
        assert main(["run", "evals", *steady, "--out", "base.json"]) == 0
        gemini.reset()
        broken = ["--command", python_command(TABLE_AGENT, "pr.json")]
        code = main(["run", "evals", *broken, "--baseline", "base.json", "--out", "r.json"])
        calls = gemini.calls()
    assert code == 1
    case, results = _case_of("r.json", suite.CHANGED)
    assert len(case.runs) == 1 + suite.CONFIRM_RUNS  # confirmed in every re-run, one answer
    assert all(len(c.runs) == 1 for c in results.cases if c is not case)
    assert calls == suite.CALLS == 3, calls  # once, not once per round (it was 12)
    assert results.usage.judge_calls == suite.CALLS
    assert results.usage.judge_reused == suite.REUSED == 66  # 19 x 3 main's, 3 x 3 re-runs'


def _recorded(path: str) -> list[tuple]:
    """What the Results record of each case-run, durations and times left out."""
    results = Results.from_json(Path(path).read_text())
    return [
        (c.key, r.run, r.kind, r.confirms, r.fingerprint, r.error, c.status)
        for c in results.cases
        for r in c.runs
    ]


def test_a_round_starts_ahead_only_what_later_rounds_could_want_and_what_fits():
    """The re-runs a round starts beside its own on idle slots (pipeline/session.py and the
    gate-trust bench share the rule)."""
    from agent_eval_action.core import CaseKey, Purpose
    from agent_eval_action.pipeline.confirm import runs_ahead

    def need(count: int, kind="confirmation") -> list:
        return [(CaseKey("shop", f"c{n}"), Purpose(kind, "why")) for n in range(count)]

    def ahead(cases: int, round_number: int, concurrency=8, limit_left=300, kind="confirmation"):
        return runs_ahead(
            need(cases, kind),
            round_number,
            confirm_runs=3,
            concurrency=concurrency,
            limit_left=limit_left,
        )

    assert ahead(1, 1) == 2 and ahead(1, 2) == 1 and ahead(1, 3) == 0  # the rounds to come
    assert ahead(3, 1) == 1 and ahead(4, 1) == 1 and ahead(5, 1) == 0  # what the slots hold
    assert ahead(1, 1, concurrency=2) == 1 and ahead(1, 1, concurrency=1) == 0
    assert ahead(1, 1, limit_left=2) == 1 and ahead(2, 1, limit_left=3) == 0  # the limit
    assert ahead(1, 1, kind="suite_round") == 0 and ahead(0, 1) == 0  # a look of its own


def test_re_runs_started_ahead_on_idle_slots_decide_as_one_a_round(write, capsys):
    """With slots to spare, a round also starts the later re-runs its cases may need; each
    round still decides from its own run, and what no round took is not recorded: the same
    runs, verdict and Results as one re-run a round (--concurrency 1)."""
    _baseline(write)
    cases = {
        # not reproduced at the second re-run: the third, started ahead, is discarded
        "b": SKIPS_THE_TOOL,
        "b/0/3": RIGHT,
    }
    one = _run(write, {"a": RIGHT, **cases}, "--baseline", "base.json", "--concurrency", "1")
    capsys.readouterr()
    ahead = _run(write, {"a": RIGHT, **cases}, "--baseline", "base.json", out="ahead.json")
    said = capsys.readouterr().err
    assert one == ahead == 0
    assert _recorded("results.json") == _recorded("ahead.json")
    case, _ = _case_of("ahead.json", "b")
    assert [run.run for run in case.runs] == [1, 2, 3]
    assert "re-runs: 2 used of 3 made (1 started ahead on idle slots were not needed)" in said
    assert main(["compare", "--baseline", "base.json", "--current", "ahead.json"]) == 0
    # confirmed in every re-run: all three taken, nothing discarded, nothing said
    table = {"a": RIGHT, "b": SKIPS_THE_TOOL}
    assert _run(write, table, "--baseline", "base.json", out="all.json") == 1
    assert "re-runs:" not in capsys.readouterr().err
    case, _ = _case_of("all.json", "b")
    assert [run.run for run in case.runs] == [1, 2, 3, 4]


def test_a_re_run_that_errors_neither_shows_nor_clears_a_regression(write):
    """A fault in a re-run (a crash, a 429, a timeout) is no evidence: the re-runs that
    finished decide, and the errored one is counted apart."""
    _baseline(write)
    table = {"a": RIGHT, "b": SKIPS_THE_TOOL, "b/0/2": {"error": "429 RESOURCE_EXHAUSTED"}}
    assert _run(write, table, "--baseline", "base.json") == 1
    case, _ = _case_of("results.json", "b")
    assert [run.run for run in case.runs] == [1, 2, 3, 4] and case.runs[1].error
    b = _diff_case("b")
    assert b["confirmation"] == {"runs": 3, "reproduced": 2, "inconclusive": 1}
    assert b["change"] == "new_failure" and not b["flaky"]
    metric = next(m for m in b["metrics"] if m["metric"] == "tool_trajectory_avg_score")
    assert metric["rule"] == "confirmed" and metric["reason"].endswith("confirmed in 2/2 re-runs")
    assert main(["compare", "--baseline", "base.json", "--current", "results.json"]) == 1


def test_a_regression_whose_every_re_run_errors_stands(write):
    """Were an errored re-run "not shown again", one 429 on a re-run, or an agent that fails
    its re-runs on purpose, would turn any regression into a pass."""
    _baseline(write)
    table = {"a": RIGHT, "b": SKIPS_THE_TOOL}
    table.update({f"b/0/{run}": {"error": "boom"} for run in (2, 3, 4)})
    assert _run(write, table, "--baseline", "base.json") == 1
    b = _diff_case("b")
    assert b["confirmation"] == {"runs": 3, "reproduced": 0, "inconclusive": 3}
    assert b["change"] == "new_failure" and not b["flaky"]
    metric = next(m for m in b["metrics"] if m["metric"] == "tool_trajectory_avg_score")
    assert metric["rule"] == "unconfirmed"
    assert "not confirmed: 3 re-runs errored or went unscored" in metric["reason"]
    assert main(["compare", "--baseline", "base.json", "--current", "results.json"]) == 1
