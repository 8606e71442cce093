"""`compare` and `merge` from the command line: exit codes, formats, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.factory import case, results

from agent_eval_action.cli import main
from agent_eval_action.results import Shard

T = "tool_trajectory_avg_score"


def save(path: str, value) -> str:
    Path(path).write_text(value.dump_json() if hasattr(value, "dump_json") else value)
    return path


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    save("base.json", results(case("c", {T: [1.0]}), case("d", {T: [1.0]})))
    save("same.json", results(case("c", {T: [1.0]}), case("d", {T: [1.0]})))
    save("worse.json", results(case("c", {T: [0.0]}, ["skip"]), case("d", {T: [1.0]})))


def test_unchanged_exits_0(files, capsys):
    assert main(["compare", "--baseline", "base.json", "--current", "same.json"]) == 0
    assert capsys.readouterr().out.startswith(
        "PASS (fail-on regression): no regressions · 2 unchanged"
    )


def test_regression_exits_1_and_names_the_case(files, capsys):
    assert main(["compare", "--baseline", "base.json", "--current", "worse.json"]) == 1
    out = capsys.readouterr().out
    assert (
        out.startswith("FAIL (fail-on regression): 1 trajectory regression ·")
        and "s / c" in out
        and "new failure" in out
    )


def test_json_format_to_a_file(files, capsys):
    assert (
        main(
            [
                "compare",
                "--baseline",
                "base.json",
                "--current",
                "worse.json",
                "--format",
                "json",
                "--out",
                "out/diff.json",
            ]
        )
        == 1
    )
    diff = json.loads(Path("out/diff.json").read_text())
    assert diff["schema"] == "agent-eval-diff/1" and diff["verdict"]["trajectory_regressions"] == 1
    assert capsys.readouterr().out == ""


def test_fail_on_and_min_delta_flags(files):
    assert (
        main(
            [
                "compare",
                "--baseline",
                "base.json",
                "--current",
                "worse.json",
                "--fail-on",
                "response,never",
            ]
        )
        == 2
    )
    assert (
        main(
            ["compare", "--baseline", "base.json", "--current", "worse.json", "--fail-on", "never"]
        )
        == 0
    )
    assert (
        main(
            [
                "compare",
                "--baseline",
                "base.json",
                "--current",
                "worse.json",
                "--fail-on",
                "response",
            ]
        )
        == 0
    )
    save("b2.json", results(case("c", {"response_match_score": [0.95]})))
    save("c2.json", results(case("c", {"response_match_score": [0.9]}, ["b"])))
    assert main(["compare", "--baseline", "b2.json", "--current", "c2.json"]) == 0
    assert (
        main(
            [
                "compare",
                "--baseline",
                "b2.json",
                "--current",
                "c2.json",
                "--min-delta",
                "response=0.05",
            ]
        )
        == 1
    )
    assert (
        main(["compare", "--baseline", "b2.json", "--current", "c2.json", "--min-delta", "0.01"])
        == 1
    )


@pytest.mark.parametrize(
    "flag", [["--fail-on", "sometimes"], ["--min-delta", "speed=0.1"], ["--min-delta", "2"]]
)
def test_bad_gate_flags_exit_2(files, capsys, flag):
    with pytest.raises(SystemExit) as exit_info:
        code = main(["compare", "--baseline", "base.json", "--current", "same.json", *flag])
        raise SystemExit(code)
    assert exit_info.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('{"schema": "agent-eval-results/9"}', "newer agent-eval-action"),
        ('{"schema": "agent-eval-results/1", "cases": 3}', "unreadable"),
    ],
)
def test_unusable_baseline_means_no_baseline_said_loudly(files, capsys, content, reason):
    if content is not None:
        save("bad.json", content)
    assert main(["compare", "--baseline", "bad.json", "--current", "same.json"]) == 0
    out = capsys.readouterr().out
    assert "No baseline:" in out and reason in out


def test_a_baseline_path_that_does_not_exist_is_bad_input(files, capsys):
    assert main(["compare", "--baseline", "gone.json", "--current", "same.json"]) == 2
    assert capsys.readouterr().err.startswith("error: gone.json: --baseline: no such file")


def test_bad_current_results_exit_2(files, capsys):
    save("cur.json", '{"schema": "something-else"}')
    assert main(["compare", "--baseline", "base.json", "--current", "cur.json"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: cur.json: not an agent-eval-action Results file (schema 'something-else', expected \"agent-eval-results/1\")"
    )


def test_history_marks_flaky_cases(files):
    save("old.json", results(case("c", {T: [0.0]}, ["other"]), case("d", {T: [1.0]})))
    assert (
        main(
            [
                "compare",
                "--baseline",
                "base.json",
                "--current",
                "worse.json",
                "--history",
                "old.json",
            ]
        )
        == 0
    )


def shards(*parts, count=None, cases_total=None, **shard):
    whole = [c for part in parts for c in part]
    count = count or len(parts)
    out = []
    for index, part in enumerate(parts, start=1):
        info = {
            "index": index,
            "count": count,
            "partition_hash": "p",
            "cases_total": cases_total or len(whole),
            **shard,
        }
        out.append(save(f"shard{index}.json", results(*part).replace(shard=Shard(**info))))
    return out


def test_merge_cli(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    paths = shards([case("a", {T: [1.0]}, line=1)], [case("b", {T: [0.0]}, line=2)])
    assert main(["merge", *paths, "--out", "merged.json"]) == 0
    merged = json.loads(Path("merged.json").read_text())
    assert [c["eval_id"] for c in merged["cases"]] == ["a", "b"] and merged["shard"] is None


def test_merge_missing_shard_exits_3(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    paths = shards([case("a", {T: [1.0]})], [case("b", {T: [1.0]})], count=3, cases_total=3)
    assert main(["merge", *paths, "--out", "merged.json"]) == 3
    assert "shard 3/3 missing" in capsys.readouterr().err and not Path("merged.json").exists()


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: shards([case("a", {T: [1.0]})], [case("a", {T: [1.0]})], cases_total=1),
            'case "s / a" is also in shard1.json',
        ),
        (lambda: [save("x.json", results(case("a", {T: [1.0]})))], "is not a shard's Results"),
        (
            lambda: shards([case("a", {T: [1.0]})], [case("b", {T: [1.0]})], cases_total=3),
            "the shards hold 2 cases but the partition has 3",
        ),
    ],
)
def test_merge_rejects_inconsistent_shards(tmp_path, monkeypatch, capsys, build, message):
    monkeypatch.chdir(tmp_path)
    assert main(["merge", *build(), "--out", "merged.json"]) == 2
    assert message in capsys.readouterr().err and not Path("merged.json").exists()


def test_merge_rejects_mixed_partitions(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    first = shards([case("a", {T: [1.0]})], [case("b", {T: [1.0]})])
    other = results(case("b", {T: [1.0]})).replace(
        shard=Shard(index=2, count=2, partition_hash="other", cases_total=2)
    )
    save("shard2.json", other)
    assert main(["merge", *first, "--out", "m.json"]) == 2
    assert "shard2.json: the partition differs from shard1.json's" in capsys.readouterr().err


def test_multi_value_flags_repeat_and_leave_the_eval_paths_alone():
    from agent_eval_action.cli.args import spread

    assert spread(["run", "--adk-history", "h", "evals"]) == ["run", "--adk-history", "h", "evals"]
    assert spread(["run", "e", "--history", "a", "b", "--out", "x"]) == [
        "run", "e", "--history", "a", "--history", "b", "--out", "x",
    ]  # fmt: skip
    assert spread(["run", "e", "--history", "a", "b", "--"]) == [
        "run", "e", "--history", "a", "--history", "b", "--",
    ]  # fmt: skip
    assert spread(["run", "--history", "a", "e1", "e2"]) == ["run", "--history", "a", "e1", "e2"]


def test_a_reader_that_leaves_early_gets_no_traceback(tmp_path):
    import subprocess
    import sys

    from helpers.factory import case, results

    many = results(*(case(f"c{i}", {"response_match_score": [0.9]}) for i in range(3000)))
    (tmp_path / "r.json").write_text(many.dump_json())
    argv = [sys.executable, "-m", "agent_eval_action", "compare", "--baseline", "r.json"]
    argv += ["--current", "r.json", "--format", "json"]
    child = subprocess.Popen(
        argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdout.read(10)
    child.stdout.close()  # as `| head -1` does
    err = child.stderr.read() if child.stderr else ""
    assert child.wait(timeout=60) == 141 and "Traceback" not in err, err


def test_a_fault_of_the_tool_is_exit_3_with_its_traceback_never_a_gate_failure(
    files, capsys, monkeypatch
):
    from agent_eval_action.pipeline import gate

    def planted(*args, **kwargs):  # a bug in the comparison: nothing is decided
        raise KeyError("tool_trajectory_avg_score")

    monkeypatch.setattr(gate, "gate", planted)
    assert main(["compare", "--baseline", "base.json", "--current", "worse.json"]) == 3
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert err.splitlines()[-1] == (
        "error: internal error, KeyError: 'tool_trajectory_avg_score' (the traceback is above)"
    )


def test_json_on_stdout_is_the_file_byte_for_byte_and_the_diffs_own_json(files):
    import subprocess
    import sys

    from agent_eval_action.compare.model import Diff

    argv = ["compare", "--baseline", "base.json", "--current", "worse.json", "--format", "json"]
    cli = [sys.executable, "-m", "agent_eval_action", *argv]
    printed = subprocess.run(cli, capture_output=True, timeout=120)
    assert printed.returncode == 1, printed.stderr
    assert main([*argv, "--out", "diff.json"]) == 1
    written = Path("diff.json").read_bytes()
    when = json.loads(written)["created_at"]  # the two comparisons ran at other instants
    same = printed.stdout.replace(json.loads(printed.stdout)["created_at"].encode(), when.encode())
    assert same == written  # streamed a case at a time, as diff.json is written
    assert written == (Diff.from_json(written).dump_json() + "\n").encode()
    assert not list(Path().glob(".*.tmp"))


@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_out_to_a_device_or_pipe_writes_into_it_and_leaves_it_one(files, tmp_path, fmt):
    """`--out /dev/null` (a pipe here: the real device must not be risked) is written into,
    never replaced by a file."""
    import os
    import stat
    import threading

    fifo = tmp_path / "sink"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    argv = ["compare", "--baseline", "base.json", "--current", "worse.json", "--format", fmt]
    assert main([*argv, "--out", str(fifo)]) == 1
    reader.join(timeout=30)
    assert stat.S_ISFIFO(fifo.stat().st_mode) and got and got[0].strip()
