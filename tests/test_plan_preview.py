"""The cost preview (`run --plan`, pipeline/preview.py): what a run will do and the most it
may spend, printed before anything runs; then the real run, against the fake Gemini with
the real google-genai client, stays within every bound it printed (issue 36)."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from fakes.gemini import FakeGemini
from helpers.paths import ROOT, python_command
from helpers.table_suite import RIGHT, SKIPS_THE_TOOL, TABLE_AGENT, order_case
from test_example_scenarios import EXAMPLE, SCENARIOS, customer

# imported here, not in a test: outputs binds its default log stream when first imported,
# which inside a test using capsys would be a stream closed after it
from agent_eval_action.action import outputs
from agent_eval_action.action.stages import preview_block
from agent_eval_action.cli import main
from agent_eval_action.pipeline.preview import TIMES
from agent_eval_action.results import Results

SUPPORT_AGENT = python_command(ROOT / "examples" / "agent" / "support_agent.py")

FIRST = re.compile(
    rf"^plan: (?P<cases>\d+) cases? {TIMES} (?P<runs>\d+) runs? = (?P<case_runs>[\d,]+) case-runs?; "
    r"(?:no re-runs|at most (?P<extra>[\d,]+) more to (?:confirm|sample main)[^;]*); "
    r"(?:no call on the judge's key|at most (?P<judge>[\d,]+) judge calls?, "
    r"(?P<simulator>[\d,]+) simulator calls?(?:, (?P<all>[\d,]+) in all)?) "
    r"\(judge-max-calls [\d,]+\)$"
)


@dataclass
class Bounds:
    case_runs: int
    extra: int
    judge: int
    simulator: int
    together: int


def bounds(line: str) -> Bounds:
    found = FIRST.match(line)
    assert found, line

    def number(name: str) -> int:
        return int((found[name] or "0").replace(",", ""))

    together = number("all") or number("judge") + number("simulator")
    return Bounds(
        number("case_runs"), number("extra"), number("judge"), number("simulator"), together
    )


def planned(capsys, argv: list[str]) -> tuple[Bounds, list[str]]:
    """`run ... --plan`: exit 0, the preview on stdout, nothing written."""
    before = set(Path().iterdir())
    assert main([*argv, "--plan"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert set(Path().iterdir()) == before  # no Results, no diff.json
    return bounds(printed[0]), printed


def ran_within(capsys, argv: list[str], plan: Bounds, first: str) -> Results:
    """The real run: it prints the preview's first line before its agent runs, and its
    Results' usage and runs are within the bounds."""
    main([*argv, "--out", "results.json"])
    err = capsys.readouterr().err
    assert first in err.splitlines()
    results = Results.from_json(Path("results.json").read_text())
    usage = results.usage
    case_runs = sum(len(case.runs) for case in results.cases)
    assert case_runs - plan.case_runs <= plan.extra
    assert usage.judge_calls + usage.judge_refused <= plan.judge
    assert usage.simulator_calls + usage.simulator_refused <= plan.simulator
    spent = usage.judge_calls + usage.judge_refused + usage.simulator_calls
    assert spent + usage.simulator_refused <= plan.together
    return results


@pytest.fixture
def fake(monkeypatch):
    with FakeGemini() as server:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
        monkeypatch.setenv("GOOGLE_API_KEY", "fake")
        yield server


def test_the_framework_free_example_plans_no_call_and_runs_its_six_case_runs(
    fake, capsys, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    argv = ["run", str(ROOT / "examples" / "evals"), "--command", SUPPORT_AGENT]
    plan, printed = planned(capsys, argv)
    assert printed[0].startswith(f"plan: 6 cases {TIMES} 1 run = 6 case-runs; no re-runs;")
    assert (plan.judge, plan.simulator) == (0, 0)
    assert any("no call" in line for line in printed)
    results = ran_within(capsys, argv, plan, printed[0])
    assert sum(len(case.runs) for case in results.cases) == 6
    assert fake.calls() == 0


def test_the_judged_example_stays_within_its_preview_alone_and_against_its_baseline(
    fake, capsys, tmp_path, monkeypatch
):
    config = str(ROOT / "examples" / "evals-judged" / "test_config.json")
    evals = str(ROOT / "examples" / "evals")
    monkeypatch.chdir(tmp_path)
    argv = ["run", evals, "--config", config, "--command", SUPPORT_AGENT]
    plan, printed = planned(capsys, argv)
    # 10 turns, 3 samples each, and once more per case-run for the run: no re-run without
    # a baseline to confirm against
    assert plan.case_runs == 6 and plan.extra == 0 and plan.simulator == 0
    assert plan.judge == 3 * (10 + 6)
    assert any(line.startswith("  tokens: at most") for line in printed)
    results = ran_within(capsys, argv, plan, printed[0])
    assert results.usage.judge_calls == 30  # it did judge: the bound is not vacuous
    Path("results.json").rename("base.json")
    # against its own baseline: confirmation may add re-runs, each judged
    argv += ["--baseline", "base.json"]
    plan, printed = planned(capsys, argv)
    assert plan.extra == 6 * (3 + 3)  # confirm-runs 3, then 3 suite rounds, one run per case
    assert plan.judge == 3 * (10 + 6) + plan.extra * 3 * (3 + 1)  # the costliest: 3 turns
    ran_within(capsys, argv, plan, printed[0])


def test_the_scenario_example_stays_within_its_preview_while_main_samples_it(
    fake, capsys, tmp_path, monkeypatch
):
    pytest.importorskip("google.adk")
    fake.respond("user", customer)
    monkeypatch.chdir(tmp_path)
    argv = ["run", str(SCENARIOS), "--agent", str(EXAMPLE), "--record-baseline"]
    argv += ["--baseline-runs", "4"]
    plan, printed = planned(capsys, argv)
    assert plan.case_runs == 1 and plan.extra == 3 and plan.simulator > 0 and plan.judge > 0
    assert any(line.startswith("  main's sampling:") for line in printed)
    results = ran_within(capsys, argv, plan, printed[0])
    assert results.usage.simulator_calls > 0 and results.usage.judge_calls > 0
    # the scripted agent is deterministic: main's sampling settles it before its limit
    assert 1 < len(results.cases[0].runs) <= 1 + plan.extra


def test_confirmation_rounds_with_a_judge_stay_within_the_preview(fake, capsys, write):
    config = {
        "criteria": {
            "tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "IN_ORDER"},
            "final_response_match_v2": {"threshold": 0.5},
        }
    }
    write("evals/shop.evalset.json", {"eval_set_id": "shop", "eval_cases": [order_case("a")]})
    write("evals/test_config.json", config)
    write("right.json", {"a": RIGHT})
    write("wrong.json", {"a": {**SKIPS_THE_TOOL, "text": "It ships today, I think."}})

    def argv(table: str) -> list[str]:
        return ["run", "evals", "--command", python_command(TABLE_AGENT, table)]

    assert main([*argv("right.json"), "--out", "base.json"]) == 0
    capsys.readouterr()
    pr = [*argv("wrong.json"), "--baseline", "base.json", "--confirm-limit", "2"]
    plan, printed = planned(capsys, pr)
    assert plan.extra == 2  # the limit, not confirm-runs and suite rounds
    assert "confirm-limit 2" in "\n".join(printed)
    results = ran_within(capsys, pr, plan, printed[0])
    # the regression was confirmed up to the limit, each re-run judged
    assert len(results.cases[0].runs) == 1 + 2
    assert results.usage.judge_calls > 0  # the new answer was judged: the bound held a spend


@pytest.mark.parametrize(
    ("flag", "named"),
    [
        (["--report", "report.md"], "--report"),
        (["--html", "report.html"], "--html"),
        (["--key-spent", "spent.json"], "--key-spent"),
    ],
)
def test_plan_refuses_what_it_cannot_honour_in_one_line(write, capsys, flag, named):
    write("evals/shop.evalset.json", {"eval_set_id": "shop", "eval_cases": [order_case("a")]})
    argv = ["run", "evals", "--command", "true", "--plan", *flag]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and named in err and "Traceback" not in err
    assert not Path(flag[1]).exists()


def test_plan_on_bad_input_is_one_line_naming_the_file(write, capsys):
    write("evals/shop.evalset.json", "{ not json")
    assert main(["run", "evals", "--command", "true", "--plan"]) == 2
    err = capsys.readouterr().err
    assert "shop.evalset.json" in err and err.count("\n") == 1


HOSTILE = "x\n::error::forged ```\n@team #12 \u202eevil"


def test_hostile_eval_file_names_stay_text_in_the_preview_the_log_and_the_summary(write, capsys):
    # the names are the PR's: a line break would start a workflow command in a log, a
    # backtick run would close the summary's code block
    write(f"evals/{HOSTILE}.evalset.json", {"eval_set_id": "a", "eval_cases": [order_case("a")]})
    write("evals/b.evalset.json", {"eval_set_id": "b", "eval_cases": [order_case("b")]})
    assert main(["run", "evals", "--command", "true", "--plan"]) == 0
    printed = capsys.readouterr().out.splitlines()
    [listed] = [line for line in printed if line.startswith("  eval files:")]
    assert "::error::forged" in listed and "\u202e" not in listed  # on the line, as text
    assert not any(line.startswith("::") for line in printed)
    log = io.StringIO()  # (say's default stream is bound when outputs is first imported)
    for line in printed:
        outputs.say(line, log)
    said = log.getvalue().splitlines()
    assert len(said) == len(printed) and not any(line.startswith("::") for line in said)
    block = preview_block(printed)
    fence = block.splitlines()[0]
    assert set(fence) == {"`"} and len(fence) > 3  # longer than the name's backtick run
    assert block.splitlines()[-1] == fence and block.count(fence) == 2


def test_a_shards_job_planned_on_the_whole_suite_says_so(write):
    # the action's root plans every shard's job on the whole suite: an upper bound
    from agent_eval_action.pipeline.options import RunOptions
    from agent_eval_action.pipeline.plan import plan
    from agent_eval_action.pipeline.preview import lines, preview
    from agent_eval_action.pipeline.suite import load_suite

    cases = [order_case("a"), order_case("b")]
    write("evals/shop.evalset.json", {"eval_set_id": "shop", "eval_cases": cases})
    the_plan = plan(load_suite(["evals"]), 1, import_custom=False)
    said = lines(
        preview(the_plan, RunOptions(), confirms=True, records=False, whole_of_shard=(2, 3))
    )
    assert said[0].startswith(f"plan: 2 cases {TIMES} 1 run = 2 case-runs; at most 12 more")
    assert said[1] == (
        "  shard 2/3: the numbers are the whole suite's, at most what this job's part of it may do"
    )
    alone = lines(preview(the_plan, RunOptions(), confirms=True, records=False))
    assert not any("shard" in line for line in alone)


def test_the_report_is_fitted_below_the_preview_in_the_job_summary(tmp_path, monkeypatch):
    # the summary's limit is the runner's, per step: the preview's block, written first,
    # leaves the report less room, and the report takes only what is left
    from report_diffs import mixed

    from agent_eval_action.action.publish import write_reports
    from agent_eval_action.report.model import Options, Report

    diff, current = mixed()
    report = Report.of(diff, current, Options())
    _, full = write_reports(tmp_path, report, page=False)
    summary = tmp_path / "step_summary"
    monkeypatch.setattr(outputs, "SUMMARY_LIMIT", len(full.encode()) + 2_000)
    preview = "```\nplan: ...\n" + "p" * 3_000 + "\n```"  # more than the report's margin
    assert outputs.append_summary(str(summary), preview)
    room = outputs.summary_room(str(summary))
    _, fitted = write_reports(tmp_path, report, page=False, room=room)
    assert len(fitted.encode()) <= room < len(full.encode())
    assert outputs.append_summary(str(summary), fitted)  # written whole, not dropped
    assert summary.read_text(encoding="utf-8").startswith(preview)


def test_prompts_are_bounded_only_where_no_judge_reads_the_answers():
    from agent_eval_action.pipeline.key_budget import Calls, ExtraRuns, KeyCalls
    from agent_eval_action.pipeline.options import RunOptions
    from agent_eval_action.pipeline.preview import Preview, lines

    def tokens(calls: KeyCalls) -> str:
        shown = Preview(
            (("a.evalset.json", 1),), 1, 1, ExtraRuns(0, 0), False, False, calls, RunOptions()
        )
        return next(line for line in lines(shown) if line.startswith("  tokens:"))

    # the simulator alone: its prompt cap times its calls
    assert "prompts at most 800,000 characters in all" in tokens(KeyCalls(Calls(0, 4), 4))
    assert "at most 65,536 output tokens" in tokens(KeyCalls(Calls(0, 4), 4))
    # a judge reads the agent's answers: no bound, and none without a bound of calls
    assert "prompt tokens not bounded" in tokens(KeyCalls(Calls(1, 4), 5))
    assert "prompt tokens not bounded" in tokens(KeyCalls(None, 7))


def test_plan_starts_no_agent_imports_none_and_calls_no_gemini(fake, capsys, write):
    # each agent would leave a file the moment it started or was imported
    write("evals/shop.evalset.json", {"eval_set_id": "shop", "eval_cases": [order_case("a")]})
    write(
        "evals/test_config.json",
        {"criteria": {"final_response_match_v2": {"threshold": 0.5}}},
    )
    write("started.py", "open('started', 'w').close()\n")
    write("my_agent/__init__.py", "open('imported', 'w').close()\nfrom . import agent\n")
    write("my_agent/agent.py", "open('imported', 'w').close()\n")
    write("my_agent/custom.py", "open('imported', 'w').close()\n")
    for agent in (["--command", python_command(Path("started.py"))], ["--agent", "my_agent"]):
        plan, _ = planned(capsys, ["run", "evals", *agent])
        assert plan.judge > 0  # the judged metric is planned, not asked
    assert not Path("started").exists() and not Path("imported").exists()
    assert fake.calls() == 0


def test_a_baseline_recorded_with_one_run_samples_nothing_and_says_so(write, capsys):
    write("evals/shop.evalset.json", {"eval_set_id": "shop", "eval_cases": [order_case("a")]})
    argv = ["run", "evals", "--command", "true", "--record-baseline", "--baseline-runs", "1"]
    plan, printed = planned(capsys, argv)
    assert plan.extra == 0 and "; no re-runs; " in printed[0]
    assert "  main's sampling: off (baseline-runs 1)" in printed
