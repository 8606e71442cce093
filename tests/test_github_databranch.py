"""Branch mode (github/databranch.py): storing Results on a data branch and reading them back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.github import REPO
from helpers.factory import case, results

from agent_eval_action.compare.loading import load_baseline
from agent_eval_action.github.baseline import BaselineFound, NoBaseline
from agent_eval_action.github.client import GitHub, GitHubError
from agent_eval_action.github.databranch import (
    DATA_BRANCH,
    DataBranchError,
    find_branch_baseline,
    store_results,
)


def results_json(sha: str) -> bytes:
    return results(case("c1", {"tool_trajectory_avg_score": [1.0]}), sha=sha).dump_json().encode()


@pytest.fixture
def gh(github_fake) -> GitHub:
    return GitHub("t", github_fake.url, retries=1, backoff=0, sleep=lambda s: None)


@pytest.fixture
def graph(github_fake) -> dict[str, list[str]]:
    main = github_fake.linear_history(10)
    pr = github_fake.linear_history(2, parent=main[5], prefix="pr", branch="feature")
    return {"main": main, "pr": pr}


def index(fake) -> list[str]:
    data = json.loads(fake.branch_files(DATA_BRANCH)["index.json"])
    return [e["sha"] for e in data["results"]]


def find(gh: GitHub, graph, tmp_path: Path, **kwargs) -> BaselineFound | NoBaseline:
    options = dict(
        start_sha=graph["main"][-1], head_sha=graph["pr"][-1], dest=tmp_path / "baseline"
    )
    options.update(kwargs)
    return find_branch_baseline(gh, REPO, **options)


def loaded_sha(path: Path) -> str:
    baseline, why = load_baseline(str(path))
    assert baseline is not None, why
    return baseline.source.sha


# ---- store ----------------------------------------------------------------------------------
def test_store_creates_the_branch_as_an_orphan(gh: GitHub, github_fake, graph) -> None:
    sha = graph["main"][9]
    data = results_json(sha)
    commit = store_results(gh, REPO, sha=sha, data=data)
    assert github_fake.refs[f"heads/{DATA_BRANCH}"] == commit
    assert github_fake.commits[commit]["parents"] == []
    files = github_fake.branch_files(DATA_BRANCH)
    assert files[f"results/{sha}.json"] == data
    assert index(github_fake) == [sha]
    assert len(github_fake.calls("create_ref")) == 1


def test_second_store_appends_a_commit(gh: GitHub, github_fake, graph) -> None:
    main = graph["main"]
    first = store_results(gh, REPO, sha=main[8], data=results_json(main[8]))
    second = store_results(gh, REPO, sha=main[9], data=results_json(main[9]))
    assert github_fake.commits[second]["parents"] == [first]
    assert github_fake.branch_log(DATA_BRANCH) == [second, first]
    files = github_fake.branch_files(DATA_BRANCH)
    assert {f"results/{main[8]}.json", f"results/{main[9]}.json"} <= files.keys()
    assert index(github_fake) == [main[9], main[8]]
    # Storing the same commit again replaces its file and moves it to the front.
    store_results(gh, REPO, sha=main[8], data=b'{"again": true}')
    assert github_fake.branch_files(DATA_BRANCH)[f"results/{main[8]}.json"] == b'{"again": true}'
    assert index(github_fake) == [main[8], main[9]]


def test_store_keeps_the_newest(gh: GitHub, github_fake, graph) -> None:
    main = graph["main"]
    for sha in main[:4]:
        store_results(gh, REPO, sha=sha, data=results_json(sha), keep=2)
    files = github_fake.branch_files(DATA_BRANCH)
    assert sorted(p for p in files if p.startswith("results/")) == sorted(
        f"results/{s}.json" for s in main[2:4]
    )
    assert index(github_fake) == [main[3], main[2]]


def test_a_racing_writer_is_retried(gh: GitHub, github_fake, graph) -> None:
    main = graph["main"]
    store_results(gh, REPO, sha=main[7], data=results_json(main[7]))
    # Another job commits to the branch between our read and our ref update.
    github_fake.before["update_ref"].append(
        lambda: github_fake.commit_files(DATA_BRANCH, {"results/other.json": b"{}"})
    )
    store_results(gh, REPO, sha=main[8], data=results_json(main[8]))
    assert [c.status for c in github_fake.calls("update_ref")] == [422, 200]
    files = github_fake.branch_files(DATA_BRANCH)
    assert {"results/other.json", f"results/{main[7]}.json", f"results/{main[8]}.json"} <= set(
        files
    )
    assert len(github_fake.branch_log(DATA_BRANCH)) == 3


def test_a_racing_creator_is_retried(gh: GitHub, github_fake, graph) -> None:
    main = graph["main"]
    github_fake.before["create_ref"].append(
        lambda: github_fake.commit_files(DATA_BRANCH, {"results/other.json": b"{}"})
    )
    store_results(gh, REPO, sha=main[9], data=results_json(main[9]))
    assert [c.status for c in github_fake.calls("create_ref")] == [422]
    assert len(github_fake.calls("update_ref")) == 1
    assert "results/other.json" in github_fake.branch_files(DATA_BRANCH)


def test_racing_is_bounded(gh: GitHub, github_fake, graph) -> None:
    main = graph["main"]
    store_results(gh, REPO, sha=main[7], data=results_json(main[7]))
    for _ in range(5):
        github_fake.inject("update_ref", 422)
    with pytest.raises(DataBranchError, match="5 tries"):
        store_results(gh, REPO, sha=main[8], data=results_json(main[8]))


def test_store_refuses_a_bad_sha(gh: GitHub, github_fake) -> None:
    with pytest.raises(ValueError):
        store_results(gh, REPO, sha="../../etc", data=b"{}")
    assert github_fake.log == []


def test_store_outage_raises(gh: GitHub, github_fake, graph) -> None:
    github_fake.inject("create_blob", 502, 502)
    with pytest.raises(GitHubError):
        store_results(gh, REPO, sha=graph["main"][9], data=b"{}")
    assert len(github_fake.calls("create_blob")) == 2  # content-addressed: repeated once


# ---- find -----------------------------------------------------------------------------------
def test_find_walks_to_the_nearest_ancestor_with_results(
    gh: GitHub, github_fake, graph, tmp_path: Path
) -> None:
    main = graph["main"]
    for sha in (main[9], main[3], main[2], main[0]):  # main[9] is newer than the merge-base
        store_results(gh, REPO, sha=sha, data=results_json(sha))
    found = find(gh, graph, tmp_path)
    assert isinstance(found, BaselineFound), found
    assert found.sha == main[3] and found.distance == 2
    assert found.relation == (
        f"{main[3][:7]}, 2 commits before the merge-base {main[5][:7]} "
        "(the nearest with stored results)"
    )
    assert found.run_id is None and found.path == tmp_path / "baseline" / "results.json"
    assert loaded_sha(found.path) == main[3]
    assert [loaded_sha(p) for p in found.history] == [main[2], main[0]]
    assert [r.source.sha for r in found.older] == [main[2], main[0]]  # loaded once, kept


def test_find_at_the_merge_base(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    main = graph["main"]
    store_results(gh, REPO, sha=main[5], data=results_json(main[5]))
    found = find(gh, graph, tmp_path)
    assert isinstance(found, BaselineFound)
    assert found.relation == f"the merge-base {main[5][:7]}" and found.history == []


def test_absent_branch_is_no_baseline(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    found = find(gh, graph, tmp_path)
    assert found == NoBaseline(f"the data branch {DATA_BRANCH} does not exist yet")
    assert github_fake.calls("compare") == []  # no walk without a branch


def test_no_results_in_reach(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    main = graph["main"]
    store_results(gh, REPO, sha=main[0], data=results_json(main[0]))
    store_results(gh, REPO, sha=main[9], data=results_json(main[9]))
    blobs_read = len(github_fake.calls("get_blob"))
    found = find(gh, graph, tmp_path, max_commits=3)
    assert found == NoBaseline(
        f"the data branch {DATA_BRANCH} has no results for the merge-base {main[5][:7]} "
        "or its 2 nearest ancestors"
    )
    assert len(github_fake.calls("get_blob")) == blobs_read  # nothing downloaded


def test_unusable_stored_results_are_skipped(
    gh: GitHub, github_fake, graph, tmp_path: Path
) -> None:
    main = graph["main"]
    store_results(gh, REPO, sha=main[5], data=b"{broken")
    found = find(gh, graph, tmp_path)
    assert isinstance(found, NoBaseline) and "unreadable" in found.reason
    store_results(gh, REPO, sha=main[4], data=results_json(main[4]))
    found = find(gh, graph, tmp_path, history=0)
    assert isinstance(found, BaselineFound) and found.sha == main[4]


def test_a_branch_without_results_folder(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    github_fake.commit_files(DATA_BRANCH, {"README.md": b"data"})
    found = find(gh, graph, tmp_path)
    assert isinstance(found, NoBaseline) and "no results/ folder" in found.reason


def test_find_outage_raises(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    github_fake.inject("get_ref", 503, 503)
    with pytest.raises(GitHubError):
        find(gh, graph, tmp_path)
