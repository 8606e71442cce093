"""Main's sampling (compare/confirm.to_sample, pipeline/confirm.sampling_rounds): a run that
records main's baseline runs a case again until main has enough runs of it, or it is seen to
be deterministic; the sampling runs are main's record of the case (noise, pass rate), never
the baseline's own scores. Through the CLI (`run --record-baseline`) and the action (a push).
How much it buys a pull request's verdict is bench/gate_trust_single.py's business."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import noisy_suite
from helpers.action_harness import repository, zipped
from helpers.factory import case, results
from helpers.noisy_suite import NOISY_AGENT
from helpers.paths import ROOT, python_command

from agent_eval_action.compare import compare
from agent_eval_action.compare.confirm import originals, to_sample
from agent_eval_action.compare.record import MainRecord
from agent_eval_action.compare.statistics_policy import DEFAULT as STATISTICS
from agent_eval_action.core import CaseKey, Purpose
from agent_eval_action.pipeline.confirm import sampling_rounds
from agent_eval_action.results import SAMPLING_RUN, CaseResult, Results, purpose_fields

R = "response_match_score"


def _sampled(c: CaseResult, scores: list[float], behaviours: list[str]) -> CaseResult:
    """The case with sampling runs after its own run: scored into its metric (as the score
    stage scores every run), each saying why it ran."""
    grown = case(c.eval_id, {R: [*c.metrics[R].runs, *scores]}, ["own", *behaviours])
    runs = [
        c.runs[0],
        *(
            run.replace(confirms=f"{SAMPLING_RUN}: {i} of 10 runs")
            for i, run in enumerate(grown.runs[1:], start=1)
        ),
    ]
    return c.replace(metrics=grown.metrics, runs=runs, status=grown.status)


def test_a_case_with_one_run_on_main_is_sampled_and_says_why():
    recorded = results(case("noisy", {R: [1.0]}, ["a"]), case("steady", {R: [1.0]}))
    wanted = to_sample(recorded, MainRecord(), 10)
    assert [key.eval_id for key, _ in wanted] == ["noisy", "steady"]
    assert all(why == Purpose("sampling", f"{SAMPLING_RUN}: 1 of 10 runs") for _, why in wanted)
    assert to_sample(recorded, MainRecord(), 1) == []  # 1: off


def test_older_baselines_count_and_enough_of_them_leave_nothing_to_sample():
    now = results(case("c", {R: [1.0]}, ["a"]))
    older = [results(case("c", {R: [1.0]}, [f"b{i}"])) for i in range(9)]
    assert to_sample(now, MainRecord.of(older[:5]), 10) == [
        (CaseKey("s", "c"), Purpose("sampling", f"{SAMPLING_RUN}: 6 of 10 runs"))
    ]
    assert to_sample(now, MainRecord.of(older), 10) == []


def test_a_case_whose_runs_all_did_the_same_thing_is_settled_as_deterministic():
    runs = STATISTICS.sampling_settled
    steady = results(case("c", {R: [1.0] * runs}, ["same"] * runs))
    assert to_sample(steady, MainRecord(), 10) == []
    varied = results(case("c", {R: [1.0] * runs}, ["same"] * (runs - 1) + ["other"]))
    assert len(to_sample(varied, MainRecord(), 10)) == 1  # one run that differed: noisy, sampled on
    two = results(case("c", {R: [1.0, 1.0]}, ["same", "same"]))
    assert len(to_sample(two, MainRecord(), 10)) == 1  # two alike are not yet enough to stop


def test_a_case_with_no_finished_run_is_not_sampled():
    crashed = results(case("c", {R: [None]}, errored_runs=(1,)))
    assert to_sample(crashed, MainRecord(), 10) == []


def _grow(current: Results, wanted, answer) -> Results:
    """`current` with one more run of each wanted case: `answer(eval_id, run)` says its
    behaviour, or None for a run that crashed."""
    chosen = dict(wanted)
    cases = []
    for c in current.cases:
        if c.key not in chosen:
            cases.append(c)
            continue
        said = answer(c.eval_id, len(c.runs) + 1)
        one = case(c.eval_id, {R: [1.0]}, [said or "x"]).runs[0]
        new = one.replace(
            run=len(c.runs) + 1,
            error="crashed" if said is None else None,
            **purpose_fields(chosen[c.key]),
        )
        cases.append(c.replace(runs=[*c.runs, new]))
    return current.replace(cases=cases)


def test_sampling_rounds_bring_noisy_cases_to_the_target_and_stop_steady_ones():
    current = results(
        case("noisy", {R: [1.0]}, ["n1"]), case("steady", {R: [1.0]}), case("crash", {R: [1.0]})
    )
    calls = []

    def answer(eval_id: str, run: int) -> str | None:
        return {"noisy": f"n{run}", "steady": "same", "crash": None}[eval_id]

    def sample(wanted, round_number):
        calls.append((round_number, sorted(k.eval_id for k, _ in wanted)))
        nonlocal current
        current = _grow(current, wanted, answer)
        return current

    added = sampling_rounds(current, known=MainRecord(), runs=5, sample=sample)
    runs = {c.eval_id: c.runs for c in current.cases}
    assert len(runs["noisy"]) == 5  # its own run and four sampling runs
    assert len(runs["steady"]) == STATISTICS.sampling_settled  # alike three times: deterministic
    # a case whose runs crash gains none; the rounds still end, after runs - 1 of them
    assert len(calls) == 4 and calls[-1] == (4, ["crash", "noisy"])
    assert added == sum(len(names) for _, names in calls)
    record = MainRecord().plus(current)
    assert len(record.runs(CaseKey("s", "noisy")).recorded) == 5  # main's first look weighs them


def test_a_cancelled_sampling_round_ends_the_sampling():
    current = results(case("c", {R: [1.0]}, ["a"]))
    assert sampling_rounds(current, known=MainRecord(), runs=10, sample=lambda wanted, n: None) == 0


def test_sampling_runs_are_mains_record_not_the_baselines_scores():
    """A baseline whose own run passed and whose sampling runs show the case failing now and
    then: compared, the case is the baseline's pass; a pull request's single failing run is
    weighed against main's record of the case, which shows the failure before."""
    own = case("c", {R: [1.0]}, ["own"])
    sampled = _sampled(own, [0.2, 1.0, 1.0, 0.2], ["s1", "s2", "s3", "s4"])
    assert sampled.metrics[R].score < 0.8  # the score stage scored every run
    baseline = results(sampled, case("steady", {R: [1.0]}))
    assert originals(baseline).cases[0].metrics[R].score == 1.0
    assert originals(results(own)).cases[0] is own  # nothing re-run: the same records
    pr = results(case("c", {R: [0.2]}, ["pr"]), case("steady", {R: [1.0]}))
    pr = pr.replace(run_config=pr.run_config.replace(confirm_runs=3))
    with_sampling = compare(pr, baseline)
    (case_diff,) = [c for c in with_sampling.cases if c.eval_id == "c"]
    assert case_diff.metrics[0].baseline_score == 1.0  # the baseline's own run
    without = compare(pr, results(own, case("steady", {R: [1.0]})))
    (alone,) = [c for c in without.cases if c.eval_id == "c"]
    # one failing run against a record that never failed is a regression to confirm; against
    # a record that failed two runs in five, no number of re-runs could blame it
    assert alone.change == "new_failure" and not alone.likely_noise
    assert case_diff.likely_noise and with_sampling.verdict.passed


@pytest.fixture
def order_suite(tmp_path: Path) -> Path:
    return noisy_suite.order_suite(tmp_path)


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "agent_eval_action", *argv]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)


@pytest.mark.e2e
def test_run_record_baseline_samples_noisy_cases_and_settles_steady_ones(
    order_suite: Path, tmp_path: Path
):
    out = tmp_path / "baseline.json"
    noisy = python_command(NOISY_AGENT, "4")
    done = _cli(
        "run", str(order_suite), "--command", noisy, "--record-baseline", "--baseline-runs", "5",
        "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "main's sampling:" in done.stderr
    recorded = json.loads(out.read_text())
    runs = {c["eval_id"]: c["runs"] for c in recorded["cases"]}
    for case_runs in runs.values():
        assert case_runs[0]["confirms"] is None  # the baseline's own run
        assert all(r["confirms"].startswith(SAMPLING_RUN) for r in case_runs[1:])
        assert [r["run"] for r in case_runs] == list(range(1, len(case_runs) + 1))
    # order4 and order5 answer the same every run: settled after three; order0-2 reword
    # their answer now and then (most seeds show it within five runs)
    assert len(runs["order4"]) == len(runs["order5"]) == STATISTICS.sampling_settled
    assert max(len(runs[f"order{n}"]) for n in range(3)) == 5
    assert recorded["run_config"]["num_runs"] == 1


@pytest.mark.e2e
def test_run_record_baseline_counts_the_history_it_is_given(order_suite: Path, tmp_path: Path):
    steady = python_command(NOISY_AGENT, "4")
    older = []
    for n in range(2):
        older.append(tmp_path / f"older{n}.json")
        done = _cli("run", str(order_suite), "--command", steady, "--out", str(older[-1]))
        assert older[-1].exists(), done.stderr  # (exit 1: a reworded answer fails its threshold)
    out = tmp_path / "baseline.json"
    history = [arg for path in older for arg in ("--history", str(path))]
    done = _cli(
        "run", str(order_suite), "--command", steady, "--record-baseline", "--baseline-runs",
        "3", "--baseline", str(older[0]), *history[2:], "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    runs = [c["runs"] for c in json.loads(out.read_text())["cases"]]
    assert all(len(r) == 1 for r in runs)  # two older runs and its own: three, enough


def test_bad_baseline_runs_is_a_usage_error(order_suite: Path):
    done = _cli("run", str(order_suite), "--command", "true", "--baseline-runs", "0")
    assert done.returncode == 2
    assert "--baseline-runs" in done.stderr and "Traceback" not in done.stderr


def _push(runner, evals: Path, sha: str, **inputs: str):
    payload = {"ref": "refs/heads/main", "after": sha, "repository": repository()}
    command = python_command(NOISY_AGENT, "4")
    env = runner.env("push", payload, evals=str(evals), command=command, **inputs)
    env["GITHUB_SHA"], env["GITHUB_REF"] = sha, "refs/heads/main"
    return runner.run(env)


@pytest.mark.e2e
def test_the_actions_first_baseline_is_sampled_and_a_later_one_with_history_is_not(
    runner, order_suite: Path
):
    fake = runner.fake
    main = fake.linear_history(2)
    done = _push(runner, order_suite, main[0], **{"baseline-runs": "4"})
    assert done.returncode == 0, done.stdout + done.stderr
    first = json.loads((runner.out_dir / "results.json").read_text())
    runs = {c["eval_id"]: c["runs"] for c in first["cases"]}
    assert len(runs["order4"]) == STATISTICS.sampling_settled  # steady: settled
    assert max(len(runs[f"order{n}"]) for n in range(3)) == 4  # noisy: sampled to 4
    assert all(r["confirms"].startswith(SAMPLING_RUN) for c in runs.values() for r in c[1:])
    assert first["run_config"]["num_runs"] == 1 and first["partial"] is False
    # that baseline is main's record now: the next push finds enough runs of every case
    run = fake.add_workflow_run(
        head_sha=main[0], path=".github/workflows/agent-eval.yml", event="push"
    )
    data = (runner.out_dir / "results.json").read_bytes()
    fake.add_artifact("agent-eval-results", zipped({"results.json": data}), run_id=run["id"])
    done = _push(runner, order_suite, main[1], **{"baseline-runs": "4"})
    assert done.returncode == 0, done.stdout + done.stderr
    second = json.loads((runner.out_dir / "results.json").read_text())
    assert [len(c["runs"]) for c in second["cases"]] == [1] * 6
    assert "sampling" not in done.stderr


def test_a_sampled_baselines_own_report_shows_its_own_run():
    own = case("c", {R: [1.0]}, ["own"])
    recorded = results(_sampled(own, [0.2, 0.2, 0.2], ["s1", "s2", "s3"]))
    assert recorded.cases[0].status == "failed"  # every run scored: mostly failing
    alone = compare(recorded, None)
    assert alone.cases[0].current_status == "passed" and alone.verdict.passed
