"""Confirmation re-runs in shards (pipeline/shard.py, compare/confirm.family_size): a shard
confirms its own regressed cases (`run --shard I/N --baseline B`), and its per-case evidence
is held over the whole suite's family, so sharding does not loosen the suite's chance of one
false blame. Each shard records how many of the whole suite's cases are compared with the
baseline, and compares its own cases with the baseline without the other shards' cases."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.factory import case, results
from helpers.paths import python_command
from helpers.table_suite import RIGHT, SKIPS_THE_TOOL, TABLE_AGENT, order_case

from agent_eval_action.cli import main
from agent_eval_action.compare import compare
from agent_eval_action.compare.confirm import to_confirm
from agent_eval_action.compare.model import Change
from agent_eval_action.compare.record import MainRecord
from agent_eval_action.pipeline.job import prepare
from agent_eval_action.pipeline.options import RunOptions
from agent_eval_action.pipeline.score import case_sha256
from agent_eval_action.pipeline.suite import load_suite
from agent_eval_action.results import CaseResult, Results, Shard

EVALS = Path(__file__).resolve().parents[1] / "examples" / "evals"
TRAJ = "tool_trajectory_avg_score"


def _steady(n: int) -> list[CaseResult]:
    return [case(f"steady{i}", {TRAJ: [1.0]}, ["ok"]) for i in range(n)]


def _main() -> tuple[Results, MainRecord]:
    """main's record of a 20-case suite: b answered in other words on each of 6 runs and never
    failed; 19 cases steady."""
    runs = [
        results(case("b", {TRAJ: [1.0]}, [f"w{i}"]), *_steady(19), sha=f"main{i}") for i in range(6)
    ]
    return runs[-1], MainRecord.of(runs[:-1])


def _streak() -> CaseResult:
    """b fails its run and its 3 re-runs, in other words each time."""
    b = case("b", {TRAJ: [0.0] * 4}, ["x1", "x2", "x3", "x4"])
    for run in b.runs[1:]:
        run.confirms = f"trajectory {TRAJ}: passed -> failed"
    return b


def _shard_of(cases: list[CaseResult], compared: int | None) -> Results:
    """Shard 1 of 10 of the suite: b and one steady case."""
    current = results(*cases, num_runs=1, sha="pr")
    current.run_config.confirm_runs = 3
    current.shard = Shard(
        index=1, count=10, partition_hash="h", cases_total=20, cases_compared=compared
    )
    return current


def _change(diff) -> Change:
    return next(c for c in diff.cases if c.eval_id == "b").change


def test_a_shard_weighs_a_streak_as_the_merged_suite_does():
    baseline, history = _main()
    # the shard compares with the baseline without the other shards' cases
    mine = baseline.replace(cases=[c for c in baseline.cases if c.eval_id in ("b", "steady0")])
    merged = compare(
        results(_streak(), *_steady(19), num_runs=1, sha="pr"), baseline, history=history
    )
    merged_change = _change(merged)
    assert merged_change == Change.UNCHANGED  # 0 of 6 on main, 4 of 4 here: noise in 20 cases
    shard = compare(_shard_of([_streak(), *_steady(1)], 20), mine, history=history)
    assert _change(shard) == merged_change
    # held over the shard's own 2 cases, the same streak would blame b: the bound loosened
    loose = compare(_shard_of([_streak(), *_steady(1)], None), mine, history=history)
    assert _change(loose) == Change.NEW_FAILURE


def test_a_shard_re_runs_only_while_the_whole_suites_bar_can_be_reached():
    baseline, history = _main()
    mine = baseline.replace(cases=[c for c in baseline.cases if c.eval_id in ("b", "steady0")])
    first = case("b", {TRAJ: [0.0]}, ["x1"])  # one failing run, not yet re-run
    for compared, expected in ((20, []), (None, ["b"])):
        current = _shard_of([first, *_steady(1)], compared)
        diff = compare(current, mine, history=history)
        wanted = to_confirm(diff, current, history.plus(mine), runs=3)
        # with the whole suite's family no 3 re-runs could blame b (it varies on main), so
        # it is not re-run, as the merged suite would not; with the shard's own, it would be
        assert [key.eval_id for key, _ in wanted] == expected


def _baseline_file(tmp_path: Path) -> Path:
    """A baseline of the example suite: four cases under their own ids, one renamed (same
    content, other id), one missing (added since), and one case the suite no longer has."""
    suite = load_suite([str(EVALS)])
    pairs = [(s, c) for s in suite.eval_sets for c in s.cases]
    assert len(pairs) == 6
    cases = []
    for i, (eval_set, eval_case) in enumerate(pairs[:5]):
        renamed = i == 4
        made = case(
            f"was_{eval_case.eval_id}" if renamed else eval_case.eval_id,
            {TRAJ: [1.0]},
            eval_set_id=eval_set.eval_set_id,
        )
        made.content_sha256 = case_sha256(eval_case, with_id=False)
        cases.append(made)
    cases.append(case("gone", {TRAJ: [1.0]}, eval_set_id=pairs[0][0].eval_set_id))
    path = tmp_path / "base.json"
    path.write_text(results(*cases, sha="main").dump_json())
    return path


def test_every_shard_records_the_whole_suites_compared_cases(tmp_path):
    base = _baseline_file(tmp_path)
    options = RunOptions()
    jobs = [
        prepare([str(EVALS)], options, baseline=str(base), shard=(i, 3), import_custom=False)
        for i in (1, 2, 3)
    ]
    # 4 by key and 1 renamed, whichever shard holds them; the added one and `gone` are not
    assert {job.shard.cases_compared for job in jobs if job.shard} == {5}
    for job in jobs:
        own = set(job.plan.cases)
        assert job.baseline.results is not None
        kept = {c.key for c in job.baseline.results.cases}
        # its own cases, and the ones the suite no longer has (removed, or renamed from)
        suite_keys = {k for j in jobs for k in j.plan.cases}
        assert kept - own == {c.key for c in job.baseline.results.cases if c.key not in suite_keys}
        assert {c.eval_id for c in job.baseline.results.cases if c.key not in own} >= {"gone"}
    unsharded = prepare([str(EVALS)], options, baseline=str(base), import_custom=False)
    assert unsharded.shard is None and len(unsharded.baseline.results.cases) == 6


# --- run --shard I/N --baseline B confirms as run does ---------------------------------

DURATIONS = {"noisy": 4.0, "real": 3.0, "steady2": 2.0, "steady1": 1.0}  # shard 1: noisy, steady1


def _cli_run(table: str, out: str, *flags: str) -> int:
    agent = ["--command", python_command(TABLE_AGENT, table)]
    return main(["run", "evals", *agent, "--out", out, *flags])


def _by_id(path: str) -> dict:
    return {c["eval_id"]: c for c in json.loads(Path(path).read_text())["cases"]}


def test_cli_shards_confirm_their_own_flips_and_merge_to_the_same_verdict(write, capsys):
    write(
        "evals/shop.evalset.json",
        {"eval_set_id": "shop", "eval_cases": [order_case(c) for c in DURATIONS]},
    )
    write("steady.json", dict.fromkeys(DURATIONS, RIGHT))
    assert _cli_run("steady.json", "base.json") == 0
    base = json.loads(Path("base.json").read_text())
    for c in base["cases"]:
        c["duration_s"] = DURATIONS[c["eval_id"]]
    write("base.json", base)
    # noisy skips the tool in its first run only; real in every run
    write(
        "pr.json",
        {**dict.fromkeys(DURATIONS, RIGHT), "noisy/0/1": SKIPS_THE_TOOL, "real": SKIPS_THE_TOOL},
    )
    capsys.readouterr()
    for i in (1, 2):
        # a shard does not gate: the real regression in shard 2 exits 0 too
        assert (
            _cli_run("pr.json", f"shard-{i}.json", "--shard", f"{i}/2", "--baseline", "base.json")
            == 0
        )
    err = capsys.readouterr().err
    assert "shard 1/2: 0 of its 2 cases regressed" in err  # noisy: not reproduced
    assert "shard 2/2: 1 of its 2 cases regressed" in err  # real: confirmed
    assert "for the suite-level test" not in err  # no suite round in a shard
    one, two = _by_id("shard-1.json"), _by_id("shard-2.json")
    assert [r["confirms"] is not None for r in one["noisy"]["runs"]] == [False, True]
    assert [r["confirms"] is not None for r in two["real"]["runs"]] == [False, True, True, True]
    assert main(["merge", "shard-1.json", "shard-2.json", "--out", "merged.json"]) == 0
    merged = _by_id("merged.json")
    assert merged["noisy"]["runs"] == one["noisy"]["runs"]
    assert merged["real"]["runs"] == two["real"]["runs"]
    capsys.readouterr()
    code = main(
        ["compare", "--baseline", "base.json", "--current", "merged.json", "--format", "json"]
    )
    assert code == 1  # the real regression, confirmed
    cases = {c["eval_id"]: c for c in json.loads(capsys.readouterr().out)["cases"]}
    assert cases["real"]["change"] == "new_failure"
    assert cases["real"]["confirmation"] == {"runs": 3, "reproduced": 3, "inconclusive": 0}
    assert cases["noisy"]["confirmation"] == {"runs": 1, "reproduced": 0, "inconclusive": 0}
    assert cases["noisy"]["flaky"] and cases["noisy"]["change"] == "unchanged"
