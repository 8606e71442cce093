"""The migrations of issue #35 (CHANGELOG.md, Unreleased), each in its old spelling and its new
one: `--out` is Results everywhere and `--report` the report; an eval path after `--history`;
a named baseline that is no Results file; the policy a recorded baseline holds; a full disk."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest
from helpers.factory import case, results
from helpers.paths import python_command
from helpers.table_suite import RIGHT, TABLE_AGENT, order_case

from agent_eval_action.cli import main
from agent_eval_action.files import writing
from agent_eval_action.results import Results, Shard

T = "tool_trajectory_avg_score"
HISTORY_ORDER = "put the eval paths before --history: `run evals/ --history A B --command …`"


@pytest.fixture
def agent(write) -> list[str]:
    """An eval folder of one case the table agent answers right; its --command flags."""
    write("evals/orders.evalset.json", {"eval_set_id": "orders", "eval_cases": [order_case("c1")]})
    write("table.json", {"c1": RIGHT})
    return ["--command", python_command(TABLE_AGENT, "table.json")]


@pytest.fixture
def pair(write) -> None:
    """base.json and cur.json: two Results to compare."""
    write("base.json", results(case("c", {T: [1.0]})).dump_json())
    write("cur.json", results(case("c", {T: [0.0]}, ["skip"])).dump_json())


def compare(*flags: str) -> int:
    return main(["compare", "--baseline", "base.json", "--current", "cur.json", *flags])


# ---- 1. `--out` is Results; `--report` is the report ------------------------------------


def test_compare_report_writes_the_report_and_nothing_else(pair, capsys):
    assert compare("--format", "markdown", "--report", "out/comment.md") == 1
    said = capsys.readouterr()
    assert Path("out/comment.md").read_text().startswith("<!-- agent-eval-action:agent-eval -->")
    assert said.out == "" and "deprecated" not in said.err


def test_compare_out_is_a_deprecated_alias_of_report(pair, capsys):
    assert compare("--format", "markdown", "--report", "new.md") == 1
    assert compare("--format", "markdown", "--out", "old.md") == 1
    said = capsys.readouterr()
    assert Path("old.md").read_text() == Path("new.md").read_text()
    assert said.out == ""
    assert said.err.splitlines()[-1].startswith(
        "warning: compare --out is deprecated: use --report FILE"
    )


def test_compare_out_and_report_together_are_bad_input(pair, capsys):
    assert compare("--out", "a.md", "--report", "b.md") == 2
    assert capsys.readouterr().err.strip() == (
        "error: --out is the old spelling of --report: give --report only"
    )
    assert not Path("a.md").exists() and not Path("b.md").exists()


def test_run_report_writes_the_report_and_out_the_results(agent, capsys):
    argv = ["run", "evals", *agent, "--format", "markdown", "--out", "r.json"]
    assert main([*argv, "--report", "comment.md"]) == 0
    said = capsys.readouterr()
    assert said.out == ""
    assert Path("comment.md").read_text().startswith("<!-- agent-eval-action:agent-eval -->")
    assert Results.from_json(Path("r.json").read_bytes()).cases[0].eval_id == "c1"
    assert "note: --out" not in said.err


def test_run_out_named_like_a_report_still_holds_results_and_says_so(agent, capsys):
    assert main(["run", "evals", *agent, "--format", "markdown", "--out", "comment.md"]) == 0
    said = capsys.readouterr()
    assert json.loads(Path("comment.md").read_text())["schema"] == "agent-eval-results/1"
    assert said.out.startswith("<!-- agent-eval-action:agent-eval -->")  # as before
    assert (
        "note: --out comment.md holds the Results (JSON); --report FILE writes the report"
        in said.err.splitlines()
    )


# ---- 2. eval paths after --history -------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "what"),
    [
        ("evals", "a folder"),
        ("evals/orders.evalset.json", "an eval file"),
        ("evals/orders.evalset.json:c1", "an eval file"),
    ],
)
def test_an_eval_path_after_history_is_refused_with_the_order_that_works(
    agent, pair, capsys, value, what
):
    argv = ["run", "--history", "base.json", "--history", "cur.json", value, *agent]
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip() == (
        f"error: argument --history: {value}: {what}, not a Results file; {HISTORY_ORDER} "
        "(see agent-eval-action run --help)"
    )
    assert not Path("results.json").exists()
    # the order it shows: several paths after one --history, the eval paths before it
    assert main(["run", "evals", "--history", "base.json", "cur.json", *agent]) == 0
    assert Path("results.json").exists()


# ---- 3. a named baseline that is no Results file -----------------------------------------


TRACES = '{"traces": "agent-eval-traces/1", "runner": "command"}\n{"eval_id": "c1"}\n'


@pytest.mark.parametrize(
    ("content", "what"),
    [
        ({"eval_set_id": "orders", "eval_cases": []}, "an ADK eval set"),
        (TRACES, "a traces file (what run-cases writes)"),
        ({"criteria": {T: 1.0}}, "a test_config.json"),
        (
            "{not json",
            "not JSON (line 1: invalid JSON (column 2): Expecting property name enclosed in "
            "double quotes)",
        ),
    ],
)
def test_run_baseline_that_is_no_results_file_is_bad_input(agent, write, capsys, content, what):
    write("base.json", content)
    assert main(["run", "evals", *agent, "--baseline", "base.json"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: base.json: --baseline: {what}, not a Results file "
        "(leave it out to judge by thresholds)"
    )
    assert not Path("results.json").exists()  # refused before any agent ran


def test_compare_baseline_that_is_a_folder_or_an_eval_set_is_bad_input(pair, write, capsys):
    write("evals/orders.evalset.json", {"eval_set_id": "orders", "eval_cases": []})
    for baseline, what in (("evals", "a folder"), ("evals/orders.evalset.json", "an ADK eval set")):
        assert main(["compare", "--baseline", baseline, "--current", "cur.json"]) == 2
        assert capsys.readouterr().err.strip() == (
            f"error: {baseline}: --baseline: {what}, not a Results file "
            "(leave it out to judge by thresholds)"
        )


def test_the_actions_baseline_path_input_follows_the_same_rule(write, tmp_path):
    from agent_eval_action.action.baseline_source import choose_baseline
    from agent_eval_action.action.settings import parse_settings
    from agent_eval_action.compare import load_baseline
    from agent_eval_action.errors import InputError

    write("d.evalset.json", {"eval_set_id": "orders", "eval_cases": []})
    settings = parse_settings({"INPUT_BASELINE": "d.evalset.json", "INPUT_COMMAND": "agent"})
    with pytest.raises(InputError) as refused:
        choose_baseline(settings, None, None, tmp_path)
    assert str(refused.value) == (
        "d.evalset.json: input baseline: an ADK eval set, not a Results file "
        "(leave it out to judge by thresholds)"
    )
    # a baseline the action finds by itself (artifact, data branch) is still "no baseline"
    found, reason = load_baseline("d.evalset.json")
    assert found is None and reason is not None and "not an agent-eval-action Results" in reason


# ---- 4. the policy a recorded baseline holds ---------------------------------------------


def test_a_recorded_baseline_holds_the_policy_prs_are_gated_with(agent, capsys):
    gate = ["--fail-on", "trajectory", "--min-delta", "response=0.3"]
    record = ["--record-baseline", "--baseline-runs", "1"]
    assert main(["run", "evals", *agent, *gate, *record, "--out", "main.json"]) == 0
    recorded = Results.from_json(Path("main.json").read_bytes()).run_config.gate
    assert recorded is not None and recorded.fail_on == ["trajectory"]
    assert recorded.min_delta == {"trajectory": 0.0, "response": 0.3}
    assert main(["run", "evals", *agent, "--out", "pr.json"]) == 0
    capsys.readouterr()
    base = ["compare", "--baseline", "main.json", "--current", "pr.json", "--format", "json"]
    assert main([*base, *gate, "--report", "same.json"]) == 0
    assert main([*base, "--report", "other.json"]) == 0  # the note still tells a real difference
    notes = {
        name: json.loads(Path(name).read_text())["verdict"]["notes"]
        for name in ("same.json", "other.json")
    }
    assert not any("policy differs" in note for note in notes["same.json"])
    assert any("policy differs" in note for note in notes["other.json"])


# ---- 5. a full disk -----------------------------------------------------------------------


class FullDisk:
    """A file that takes nothing: every write fails as a full disk does."""

    def write(self, data) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


@pytest.fixture
def full_disk(monkeypatch):
    real = writing.Behind
    monkeypatch.setattr(writing, "Behind", lambda raw: real(FullDisk()))


def test_a_full_disk_writing_results_is_one_line_naming_the_file(write, full_disk, capsys):
    shard = Shard(index=1, count=1, partition_hash="p", cases_total=1)
    write("shard1.json", results(case("c", {T: [1.0]})).replace(shard=shard).dump_json())
    assert main(["merge", "shard1.json", "--out", "merged.json"]) == 3
    assert capsys.readouterr().err.strip() == (
        "error: merged.json: cannot be written: No space left on device "
        "(free some space, then run again)"
    )
    assert sorted(p.name for p in Path().iterdir()) == ["shard1.json"]  # no temporary file


def test_a_full_disk_writing_a_report_is_one_line_naming_the_file(pair, full_disk, capsys):
    assert compare("--format", "markdown", "--report", "comment.md") == 3
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        "error: comment.md: cannot be written: No space left on device "
        "(free some space, then run again)"
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_a_full_device_is_one_line_naming_it(pair, capsys):
    assert compare("--report", "/dev/full") == 3
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("error: /dev/full: cannot be written: ")


def test_a_full_quota_is_said_as_a_full_disk():
    from agent_eval_action.errors import disk_full_line

    quota = OSError(errno.EDQUOT, "Disk quota exceeded", "results.json")
    assert disk_full_line(quota) == (
        "results.json: cannot be written: Disk quota exceeded (free some space, then run again)"
    )
    assert disk_full_line(OSError(errno.EACCES, "Permission denied", "x")) is None
