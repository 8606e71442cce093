"""Paired runs on the merge-base's code (pipeline/paired.py, `run --paired REF`): each
confirmation round's cases run once more on main's code, in a git worktree; those runs are
main's record of the cases (merge-base.json), and `compare --history merge-base.json`
gives the same verdict from the files."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers.paths import python_command
from helpers.table_suite import RIGHT, SKIPS_THE_TOOL, TABLE_AGENT, order_case

from agent_eval_action.cli import main
from agent_eval_action.pipeline import paired as pairing
from agent_eval_action.results import PAIRED_RUN, Results

# the agent reads table.json from the folder it starts in: the checkout, or the worktree
AGENT = ["--command", python_command(TABLE_AGENT, "table.json")]


def git(repo: Path, *arguments: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"]
    ident += ["-c", "safe.directory=*"]  # a checkout the runner's user owns
    done = subprocess.run(
        ["git", *ident, *arguments], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def commit(repo: Path, table: dict, message: str, extra: str = "") -> str:
    (repo / "table.json").write_text(json.dumps(table))
    (repo / "NOTES.md").write_text(extra)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout with the eval set; the tests commit main's agent, then the PR's."""
    repo = tmp_path / "repo"
    (repo / "evals").mkdir(parents=True)
    suite = {"eval_set_id": "shop", "eval_cases": [order_case("a"), order_case("b")]}
    (repo / "evals" / "shop.evalset.json").write_text(json.dumps(suite))
    (repo / ".gitignore").write_text("out/\n")
    git(repo, "init", "-q")
    monkeypatch.chdir(repo)
    return repo


def _run(*flags: str, out: str = "out/results.json") -> int:
    return main(["run", "evals", *AGENT, "--out", out, *flags])


def _diff_case(eval_id: str) -> dict:
    diff = json.loads(Path("out/diff.json").read_text())
    return next(c for c in diff["cases"] if c["eval_id"] == eval_id)


def test_a_real_regression_is_confirmed_with_main_side_runs_recorded(repo: Path, capsys):
    base = commit(repo, {"a": RIGHT, "b": RIGHT}, "main")
    assert _run(out="out/base.json") == 0
    commit(repo, {"a": RIGHT, "b": SKIPS_THE_TOOL}, "the PR drops a tool call")
    capsys.readouterr()
    assert _run("--baseline", "out/base.json", "--paired", base) == 1
    # deprecated: said once on stderr and kept in the Results' warnings, and it still runs
    warned = [line for line in capsys.readouterr().err.splitlines() if "deprecated" in line]
    assert warned == [f"warning: {pairing.DEPRECATED.format(what='run --paired')}"]
    results = Results.from_json(Path("out/results.json").read_text())
    assert f"warning: {results.warnings[-1]}" == warned[0]
    paired = Results.from_json(Path("out/merge-base.json").read_text())
    assert paired.source.sha == base
    assert [c.eval_id for c in paired.cases] == ["b"]  # only the re-run case
    runs = paired.cases[0].runs
    assert [r.run for r in runs] == [2, 3, 4]  # paired with the PR's re-runs 2, 3, 4
    assert all(r.confirms.startswith(f"{PAIRED_RUN} {base[:12]}: ") for r in runs)
    assert paired.cases[0].status.value == "passed"  # main's code still calls the tool
    b = _diff_case("b")
    assert b["change"] == "new_failure" and b["confirmation"] == {
        "runs": 3,
        "reproduced": 3,
        "inconclusive": 0,
    }
    # the worktree is gone, and the files alone give the same verdict
    assert git(repo, "worktree", "list").count("\n") == 0
    again = ["compare", "--baseline", "out/base.json", "--current", "out/results.json"]
    assert main([*again, "--history", "out/merge-base.json"]) == 1


def test_a_lucky_baseline_is_not_blamed_when_main_fails_the_same_way(repo: Path, capsys):
    """Main's code skips the tool in every run but the baseline's (run 1): the PR, which
    changed nothing that matters, fails every run. Without paired runs the one lucky run on
    main makes it look like a change; main's own re-runs show it is not."""
    table = {"a": RIGHT, "b": SKIPS_THE_TOOL, "b/0/1": RIGHT}
    base = commit(repo, table, "main")
    assert _run(out="out/base.json") == 0
    commit(repo, {"a": RIGHT, "b": SKIPS_THE_TOOL}, "the PR", extra="docs only")
    assert _run("--baseline", "out/base.json") == 1  # blamed: main's record is one run
    assert _run("--baseline", "out/base.json", "--paired", base) == 0
    paired = Results.from_json(Path("out/merge-base.json").read_text())
    assert paired.cases[0].status.value == "failed"  # main's code fails its re-runs too
    b = _diff_case("b")
    assert b["flaky"] and b["change"] not in ("regressed", "new_failure")
    reason = next(m["reason"] for m in b["metrics"] if m["metric"] == "tool_trajectory_avg_score")
    assert "on main" in reason, reason
    again = ["compare", "--baseline", "out/base.json", "--current", "out/results.json"]
    assert main([*again, "--history", "out/merge-base.json"]) == 0
    assert main(again) == 1  # without main's paired runs the files blame it
    # a merge-base.json written before runs had kinds (read by their words) clears it too:
    # paired runs are deprecated, but the Results they left keep comparing as before
    older = json.loads(Path("out/merge-base.json").read_text())
    for case in older["cases"]:
        for run in case["runs"]:
            assert run.pop("kind") == "paired" and run.pop("paired_with") == "confirmation"
    Path("out/older-merge-base.json").write_text(json.dumps(older))
    assert main([*again, "--history", "out/older-merge-base.json"]) == 0


def test_a_shallow_clone_skips_paired_runs_with_a_note(repo: Path, tmp_path, monkeypatch, capsys):
    commit(repo, {"a": RIGHT, "b": RIGHT}, "main")
    commit(repo, {"a": RIGHT, "b": SKIPS_THE_TOOL}, "the PR")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(clone))
    monkeypatch.chdir(clone)
    (clone / "table.json").write_text(json.dumps({"a": RIGHT, "b": RIGHT}))
    assert _run(out="out/base.json") == 0
    (clone / "table.json").write_text(json.dumps({"a": RIGHT, "b": SKIPS_THE_TOOL}))
    assert _run("--baseline", "out/base.json", "--paired", "HEAD~1") == 1  # gated as without
    results = Results.from_json(Path("out/results.json").read_text())
    note = next(w for w in results.warnings if w.startswith("paired runs"))
    assert "shallow" in note and "fetch-depth: 0" in note
    assert f"note: {note}" in capsys.readouterr().err
    assert not Path("out/merge-base.json").exists()


def test_an_unknown_revision_or_no_checkout_skips_with_a_note(repo: Path, tmp_path, capsys):
    commit(repo, {"a": RIGHT, "b": RIGHT}, "main")
    assert _run(out="out/base.json") == 0
    assert _run("--baseline", "out/base.json", "--paired", "no-such-branch") == 0
    results = Results.from_json(Path("out/results.json").read_text())
    assert any("no-such-branch is not in the checkout" in w for w in results.warnings)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    found = pairing.find("HEAD", outside, "command")
    assert isinstance(found, str) and "not in a git checkout" in found


def test_only_an_agent_the_tool_starts_is_paired(repo: Path):
    commit(repo, {"a": RIGHT}, "main")
    for target in ("adk-api", "adk-history"):
        note = pairing.find("HEAD", repo, target)
        assert isinstance(note, str) and "--agent or --command" in note and target in note
    assert isinstance(pairing.find("HEAD", repo, "command"), pairing.Commit)
    assert isinstance(pairing.find("--output=x", repo, "command"), str)  # never an option


def test_paired_without_a_baseline_says_it_did_nothing(repo: Path, capsys):
    commit(repo, {"a": RIGHT, "b": RIGHT}, "main")
    assert _run("--paired", "HEAD") == 0
    results = Results.from_json(Path("out/results.json").read_text())
    assert any("none run here" in w for w in results.warnings)


def test_an_agent_folder_missing_at_the_merge_base_is_a_note(repo: Path, tmp_path):
    base = commit(repo, {"a": RIGHT}, "main")
    (repo / "agent").mkdir()
    (repo / "agent" / "__init__.py").write_text("")
    commit(repo, {"a": RIGHT}, "the PR adds the agent")
    tree = pairing.Worktree(pairing.Commit(repo, base), tmp_path / "scratch")
    (tmp_path / "scratch").mkdir()
    path = tree.open()
    assert isinstance(path, Path) and (path / "table.json").exists()
    try:
        note = pairing.agent_there("agent", "agent", repo, pairing.Commit(repo, base), path)
        assert isinstance(note, str) and "not in the merge-base" in note
        flags, start = pairing.agent_there("command", "x", repo / "evals", tree.commit, path)  # type: ignore[misc]
        assert flags == ["--command", "x"] and start == path / "evals"
    finally:
        tree.close()
    assert not path.exists()


def test_a_shard_skips_paired_runs_with_a_note(repo: Path):
    base = commit(repo, {"a": RIGHT, "b": RIGHT}, "main")
    assert _run(out="out/base.json") == 0
    commit(repo, {"a": SKIPS_THE_TOOL, "b": SKIPS_THE_TOOL}, "the PR")
    _run("--baseline", "out/base.json", "--shard", "1/2", "--paired", base)
    results = Results.from_json(Path("out/results.json").read_text())
    assert any("not in a shard" in w for w in results.warnings)
    assert not Path("out/merge-base.json").exists()


def test_main_runs_its_own_agent_by_name_and_the_checkouts_paths_in_the_worktree(
    repo: Path, tmp_path: Path
):
    """The PR's checkout makes the agent's folder a link to another of main's agents, and
    its command names files of the checkout by absolute path: main's stage takes the agent
    at its name in the worktree, and the command's paths there."""
    for name in ("agent_a", "agent_old"):
        (repo / name).mkdir()
        (repo / name / "__init__.py").write_text(f"# {name}\n")
    base = commit(repo, {"a": RIGHT}, "main")
    subprocess.run(["git", "rm", "-rq", "agent_a"], cwd=repo, check=True)
    (repo / "agent_a").symlink_to("agent_old")
    commit(repo, {"a": RIGHT}, "the PR links agent_a to agent_old")
    tree = pairing.Worktree(pairing.Commit(repo, base), tmp_path / "scratch")
    (tmp_path / "scratch").mkdir()
    path = tree.open()
    assert isinstance(path, Path)
    try:
        there = pairing.agent_there("agent", "agent_a", repo, tree.commit, path)
        assert there == (["--agent", str(path / "agent_a")], path)
        assert (path / "agent_a" / "__init__.py").read_text() == "# agent_a\n"
        there = pairing.agent_there("agent", f"{repo}/agent_a/", repo, tree.commit, path)
        assert there == (["--agent", str(path / "agent_a")], path)
        command = f"python {repo}/agent.py --config={repo}/c.json {repo}2/x /x{repo}"
        flags, _ = pairing.agent_there("command", command, repo, tree.commit, path)  # type: ignore[misc]
        assert flags[1] == f"python {path}/agent.py --config={path}/c.json {repo}2/x /x{repo}"
    finally:
        tree.close()


def test_an_agent_that_is_a_link_at_the_merge_base_is_a_note(repo: Path, tmp_path: Path):
    (repo / "agent_old").mkdir()
    (repo / "agent_old" / "__init__.py").write_text("")
    (repo / "agent_a").symlink_to("agent_old")
    base = commit(repo, {"a": RIGHT}, "main")
    tree = pairing.Worktree(pairing.Commit(repo, base), tmp_path / "scratch")
    (tmp_path / "scratch").mkdir()
    path = tree.open()
    assert isinstance(path, Path)
    try:
        note = pairing.agent_there("agent", "agent_a", repo, tree.commit, path)
        assert isinstance(note, str) and "is a link in the merge-base" in note
    finally:
        tree.close()
