"""Branch mode (github/databranch.py): storing Results on a data branch and reading them back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.github import REPO, REPO_ID
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

WORKFLOW = "agent-eval.yml"


def results_json(sha: str, run_id: int | str | None = None) -> bytes:
    made = results(case("c1", {"tool_trajectory_avg_score": [1.0]}), sha=sha)
    made.source.run_id = None if run_id is None else str(run_id)
    return made.dump_json().encode()


def push_run(fake, sha: str, **fields) -> dict:
    """A run of the baseline workflow: by default a successful push run on main for `sha`."""
    fields = {"head_sha": sha, "path": f".github/workflows/{WORKFLOW}", **fields}
    return fake.add_workflow_run(**fields)


def genuine(fake, sha: str) -> bytes:
    """Results for `sha` as its successful push run on main wrote them."""
    return results_json(sha, push_run(fake, sha)["id"])


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
        start_sha=graph["main"][-1],
        head_sha=graph["pr"][-1],
        branch="main",
        workflow=WORKFLOW,
        repository_id=REPO_ID,
        dest=tmp_path / "baseline",
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
        store_results(gh, REPO, sha=sha, data=genuine(github_fake, sha))
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
    assert [p.source.sha for p in found.older.past] == [main[2], main[0]]  # read once, folded


def test_find_at_the_merge_base(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    main = graph["main"]
    store_results(gh, REPO, sha=main[5], data=genuine(github_fake, main[5]))
    found = find(gh, graph, tmp_path)
    assert isinstance(found, BaselineFound) and found.refused == []
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
    store_results(gh, REPO, sha=main[4], data=genuine(github_fake, main[4]))
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


# ---- who wrote it (security issue, finding 3) -------------------------------------------------
# Anyone whose workflow run may write contents can commit to the data branch. A file counts
# only when the run it records is a successful push run of the baseline workflow on main, of
# this repository, for the commit it is stored under.
FORGERIES = {
    "no run recorded": lambda fake, sha: results_json(sha),
    "a run id that is a path": lambda fake, sha: results_json(sha, "1/../../../pulls/1"),
    "a run that does not exist": lambda fake, sha: results_json(sha, 987654),
    "a pull_request run": lambda fake, sha: results_json(
        sha, push_run(fake, sha, event="pull_request", head_branch="feature")["id"]
    ),
    "a push run of another branch": lambda fake, sha: results_json(
        sha, push_run(fake, sha, head_branch="feature")["id"]
    ),
    "a push run for another commit": lambda fake, sha: results_json(
        sha, push_run(fake, "0" * 40)["id"]
    ),
    "a failed push run": lambda fake, sha: results_json(
        sha, push_run(fake, sha, conclusion="failure")["id"]
    ),
    "a push run still in progress": lambda fake, sha: results_json(
        sha, push_run(fake, sha, status="in_progress", conclusion=None)["id"]
    ),
    "a push run of another workflow": lambda fake, sha: results_json(
        sha, push_run(fake, sha, path=".github/workflows/other.yml")["id"]
    ),
    "a fork's push run to its main": lambda fake, sha: results_json(
        sha, push_run(fake, sha, head_repository=fake.fork_repo())["id"]
    ),
    "another commit's genuine results": lambda fake, sha: genuine(fake, "1" * 40),
}
REFUSALS = {
    "no run recorded": "names no run",
    "a run id that is a path": "names no run",
    "a run that does not exist": "run 987654, which octo/demo does not have",
    "a pull_request run": "was a pull_request run, not a push",
    "a push run of another branch": "ran on the branch 'feature', not 'main'",
    "a push run for another commit": "was for the commit 0000000",
    "a failed push run": "did not succeed (failure)",
    "a push run still in progress": "did not succeed (in_progress)",
    "a push run of another workflow": "is of the workflow .github/workflows/other.yml",
    "a fork's push run to its main": "another repository (forker/demo)",
    "another commit's genuine results": "holds the results of 1111111",
}


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_stored_results_no_push_run_vouches_for_are_refused(
    gh: GitHub, github_fake, graph, tmp_path: Path, forgery: str
) -> None:
    main = graph["main"]
    store_results(gh, REPO, sha=main[5], data=FORGERIES[forgery](github_fake, main[5]))
    found = find(gh, graph, tmp_path)
    assert isinstance(found, NoBaseline), found
    assert "was refused" in found.reason and REFUSALS[forgery] in found.reason
    (refused,) = found.refused
    assert REFUSALS[forgery] in refused
    assert not (tmp_path / "baseline" / "results.json").exists()
    assert all("pulls" not in call.path for call in github_fake.log)


def test_a_refused_file_gives_way_to_a_genuine_older_one(
    gh: GitHub, github_fake, graph, tmp_path: Path
) -> None:
    main = graph["main"]
    store_results(gh, REPO, sha=main[4], data=genuine(github_fake, main[4]))
    pr_run = push_run(github_fake, main[5], event="pull_request", head_branch="feature")
    store_results(gh, REPO, sha=main[5], data=results_json(main[5], pr_run["id"]))
    found = find(gh, graph, tmp_path, history=0)
    assert isinstance(found, BaselineFound) and found.sha == main[4]
    (refused,) = found.refused
    assert f"{main[5][:7]}" in refused and "pull_request run" in refused


def test_a_token_that_cannot_read_runs_vouches_for_nothing(
    gh: GitHub, github_fake, graph, tmp_path: Path
) -> None:
    main = graph["main"]
    store_results(gh, REPO, sha=main[5], data=genuine(github_fake, main[5]))
    github_fake.inject("get_workflow_run", 403)
    found = find(gh, graph, tmp_path)
    assert isinstance(found, NoBaseline) and "actions: read" in found.reason


def test_an_outage_while_checking_the_run_raises(
    gh: GitHub, github_fake, graph, tmp_path: Path
) -> None:
    main = graph["main"]
    store_results(gh, REPO, sha=main[5], data=genuine(github_fake, main[5]))
    github_fake.inject("get_workflow_run", *[503] * 4)
    with pytest.raises(GitHubError):
        find(gh, graph, tmp_path)


def test_the_workflow_may_be_given_by_id_or_not_at_all(
    gh: GitHub, github_fake, graph, tmp_path: Path
) -> None:
    main = graph["main"]
    store_results(gh, REPO, sha=main[5], data=genuine(github_fake, main[5]))
    assert isinstance(find(gh, graph, tmp_path, workflow="7"), BaselineFound)
    assert isinstance(find(gh, graph, tmp_path, workflow=None), BaselineFound)
    found = find(gh, graph, tmp_path, workflow="8")
    assert isinstance(found, NoBaseline) and "not 8" in found.reason
