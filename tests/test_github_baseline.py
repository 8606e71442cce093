"""Artifact-mode baseline lookup (github/baseline.py, github/commits.py) against the fake GitHub."""

from __future__ import annotations

import io
import json
import os
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fakes.github import REPO, Fault
from helpers.factory import case, results

from agent_eval_action.compare.loading import load_baseline
from agent_eval_action.compare.record import MainRecord
from agent_eval_action.compare.record_file import RECORD_NAME, encoded
from agent_eval_action.core import CaseKey
from agent_eval_action.github import commits
from agent_eval_action.github.baseline import (
    HISTORY,
    SKIPPED,
    BaselineFound,
    NoBaseline,
    find_artifact_baseline,
)
from agent_eval_action.github.client import GitHub, GitHubError

NAME = "agent-eval-results"
WORKFLOW = "eval.yml"
CLOCK = datetime(2026, 12, 1, tzinfo=UTC)


def results_json(sha: str, **changes: object) -> bytes:
    res = results(case("c1", {"tool_trajectory_avg_score": [1.0]}), sha=sha)
    res = res.replace(**changes)
    return res.dump_json().encode()


def zipped(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buf.getvalue()


@pytest.fixture
def gh(github_fake) -> GitHub:
    return GitHub("t", github_fake.url, retries=1, backoff=0, sleep=lambda s: None)


@pytest.fixture
def graph(github_fake) -> dict[str, list[str]]:
    """main: m0..m9; a PR branch of two commits off m5 (the merge-base)."""
    main = github_fake.linear_history(10)
    pr = github_fake.linear_history(2, parent=main[5], prefix="pr", branch="feature")
    return {"main": main, "pr": pr}


def push_run(fake, sha: str, data: bytes | None = None, *, digest: object = True, **fields):
    """A successful push run of eval.yml on main at `sha`, with its results artifact."""
    run = fake.add_workflow_run(
        **{"head_sha": sha, "path": f".github/workflows/{WORKFLOW}", **fields}
    )
    if data is None:
        data = zipped({"results.json": results_json(sha)})
    artifact = fake.add_artifact(NAME, data, run_id=run["id"], digest=digest)
    return run, artifact


def find(gh: GitHub, graph, tmp_path: Path, **kwargs) -> BaselineFound | NoBaseline:
    options = dict(
        start_sha=graph["main"][-1], head_sha=graph["pr"][-1], branch="main",
        workflow=WORKFLOW, artifact_name=NAME, dest=tmp_path / "baseline", repository_id=1,
        clock=lambda: CLOCK,
    )  # fmt: skip
    options.update(kwargs)
    return find_artifact_baseline(gh, REPO, **options)


def left_in(dest: Path) -> list[str]:
    """What the lookup left in its folder: the baselines it chose, no download or scratch."""
    return sorted(p.name for p in dest.iterdir()) if dest.exists() else []


def loaded_sha(path: Path) -> str:
    baseline, why = load_baseline(str(path))
    assert baseline is not None, why
    return baseline.source.sha


# ---- commits.py -------------------------------------------------------------------------
def test_merge_base_and_ancestors(gh: GitHub, github_fake, graph) -> None:
    main, pr = graph["main"], graph["pr"]
    assert commits.merge_base(gh, REPO, main[-1], pr[-1]) == main[5]
    assert commits.ancestors(gh, REPO, main[5], 3) == [main[5], main[4], main[3]]
    assert commits.ancestors(gh, REPO, main[2], 50) == [main[2], main[1], main[0]]
    assert commits.ancestors(gh, REPO, main[2], 1) == [main[2]]


def test_ancestors_follow_first_parents_and_page(gh: GitHub, github_fake) -> None:
    main = github_fake.linear_history(3)
    side = github_fake.linear_history(4, parent=main[1], prefix="side", branch=None)
    merge = github_fake.add_commit("f" * 40, [main[2], side[-1]], message="merge")
    assert commits.ancestors(gh, REPO, merge, 10) == [merge, main[2], main[1], main[0]]
    long = github_fake.linear_history(250, parent=merge, prefix="long")
    walked = commits.ancestors(gh, REPO, long[-1], 120)
    assert walked == list(reversed(long))[:120]
    assert len(github_fake.calls("list_commits")) == 3  # 100 + 100 + … pages, then stop


# ---- artifact mode ------------------------------------------------------------------------
def test_the_merge_base_run_is_used(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    main = graph["main"]
    run, artifact = push_run(github_fake, main[5])
    found = find(gh, graph, tmp_path)
    assert isinstance(found, BaselineFound), found
    assert found.sha == main[5] and found.distance == 0
    assert found.relation == f"the merge-base {main[5][:7]}"
    assert (found.run_id, found.artifact_id) == (run["id"], artifact["id"])
    assert found.run_url == run["html_url"]
    assert found.path == tmp_path / "baseline" / "results.json"
    assert loaded_sha(found.path) == main[5]
    assert left_in(tmp_path / "baseline") == ["results.json"]


def test_nearest_older_ancestor_when_the_merge_base_has_no_run(
    gh: GitHub, github_fake, graph, tmp_path: Path
) -> None:
    main = graph["main"]
    push_run(github_fake, main[1])
    push_run(github_fake, main[3])
    found = find(gh, graph, tmp_path, history=0)
    assert isinstance(found, BaselineFound), found
    assert found.sha == main[3] and found.distance == 2
    assert found.relation == (
        f"{main[3][:7]}, 2 commits before the merge-base {main[5][:7]} "
        "(the nearest with an artifact)"
    )


def test_newer_runs_of_main_are_never_used(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    main = graph["main"]
    for sha in (main[9], main[7], main[6], main[4]):
        push_run(github_fake, sha)
    found = find(gh, graph, tmp_path)
    assert isinstance(found, BaselineFound) and found.sha == main[4]


def test_a_push_build_walks_from_its_own_commit(
    gh: GitHub, github_fake, graph, tmp_path: Path
) -> None:
    main = graph["main"]
    push_run(github_fake, main[8])
    found = find(gh, graph, tmp_path, start_sha=main[9], head_sha=None)
    assert isinstance(found, BaselineFound) and found.sha == main[8]
    assert found.relation.endswith(f"1 commit before {main[9][:7]} (the nearest with an artifact)")
    assert github_fake.calls("compare") == []


def test_expired_artifacts_are_skipped(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    main = graph["main"]
    _, artifact = push_run(github_fake, main[5])
    artifact["expired"] = True
    push_run(github_fake, main[4])
    found = find(gh, graph, tmp_path)
    assert isinstance(found, BaselineFound) and found.sha == main[4]
    assert github_fake.blob_log and len(github_fake.calls("download_artifact")) == 1


def test_only_expired_artifacts_say_so(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    run, artifact = push_run(github_fake, graph["main"][5])
    artifact["expired"] = True
    found = find(gh, graph, tmp_path)
    assert isinstance(found, NoBaseline)
    assert "expired" in found.reason and str(run["id"]) in found.reason


def test_410_at_download_is_expired(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    main = graph["main"]
    _, artifact = push_run(github_fake, main[5])
    push_run(github_fake, main[4])
    # Listed as live, expired by the time it is downloaded.
    github_fake.before["download_artifact"].append(lambda: artifact.update(expired=True))
    found = find(gh, graph, tmp_path, history=0)
    assert isinstance(found, BaselineFound) and found.sha == main[4]
    assert [c.status for c in github_fake.calls("download_artifact")] == [410, 302]


def test_digest_mismatch_is_skipped(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    push_run(github_fake, graph["main"][5], digest="sha256:" + "0" * 64)
    found = find(gh, graph, tmp_path)
    assert isinstance(found, NoBaseline)
    assert "does not match its digest" in found.reason
    assert left_in(tmp_path / "baseline") == []


def test_fork_branch_named_main_is_ignored(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    main = graph["main"]
    push_run(github_fake, main[5], head_repository=github_fake.fork_repo())
    push_run(github_fake, main[3])
    for repository_id in (1, None):  # by id when known, else by the repository's name
        found = find(gh, graph, tmp_path, repository_id=repository_id, history=0)
        assert isinstance(found, BaselineFound) and found.sha == main[3]


def test_no_runs_at_all(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    found = find(gh, graph, tmp_path)
    assert found == NoBaseline(
        "no successful push run of workflow eval.yml on main within the last 90 days"
    )


def test_runs_older_than_the_window_are_not_listed(
    gh: GitHub, github_fake, graph, tmp_path: Path
) -> None:
    push_run(github_fake, graph["main"][5], created_at="2026-08-01T00:00:00Z")
    found = find(gh, graph, tmp_path)
    assert isinstance(found, NoBaseline) and "90 days" in found.reason
    assert github_fake.calls("list_workflow_runs_for")[0].query["created"] == [">=2026-09-02"]


def test_failed_and_pull_request_runs_do_not_count(
    gh: GitHub, github_fake, graph, tmp_path: Path
) -> None:
    main = graph["main"]
    push_run(github_fake, main[5], conclusion="failure")
    push_run(github_fake, main[5], event="pull_request")
    push_run(github_fake, main[5], path=".github/workflows/other.yml")
    assert isinstance(find(gh, graph, tmp_path), NoBaseline)


def test_the_walk_is_bounded(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    main = graph["main"]
    push_run(github_fake, main[0])
    found = find(gh, graph, tmp_path, max_commits=3)
    assert isinstance(found, NoBaseline)
    assert found.reason == (
        f"no successful push run of workflow eval.yml on main for the merge-base "
        f"{main[5][:7]} or its 2 nearest ancestors within the last 90 days"
    )
    assert len(github_fake.calls("compare")) == 1
    assert len(github_fake.calls("list_commits")) == 1
    assert len(github_fake.calls("list_workflow_runs_for")) == 1
    assert github_fake.calls("list_run_artifacts") == []


def test_history_baselines_are_collected(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    main = graph["main"]
    for sha in (main[5], main[4], main[2], main[1]):
        push_run(github_fake, sha)
    found = find(gh, graph, tmp_path, history=2)
    assert isinstance(found, BaselineFound) and found.sha == main[5]
    assert found.history == [tmp_path / "baseline" / f"history-{n}.json" for n in (1, 2)]
    assert [loaded_sha(p) for p in found.history] == [main[4], main[2]]
    assert [p.source.sha for p in found.older.past] == [main[4], main[2]]  # read once, folded
    assert left_in(tmp_path / "baseline") == ["history-1.json", "history-2.json", "results.json"]
    assert len(github_fake.calls("list_run_artifacts")) == 3  # stopped once it had enough


def test_an_older_baseline_out_of_its_metrics_range_is_skipped_and_the_walk_goes_on(
    gh: GitHub, github_fake, graph, tmp_path: Path
) -> None:
    main = graph["main"]
    for sha in (main[5], main[2], main[1]):
        push_run(github_fake, sha)
    over = results(case("c1", {"tool_trajectory_avg_score": [1.5]}), sha=main[4])
    push_run(github_fake, main[4], zipped({"results.json": over.dump_json().encode()}))

    found = find(gh, graph, tmp_path, history=2, bounded=lambda name: True)
    assert isinstance(found, BaselineFound) and found.sha == main[5]  # the baseline: not here
    assert [loaded_sha(p) for p in found.history] == [main[2], main[1]]
    assert [p.source.sha for p in found.older.past] == [main[2], main[1]]
    assert left_in(tmp_path / "baseline") == ["history-1.json", "history-2.json", "results.json"]


def _with_record(sha: str, older: list[str]) -> bytes:
    """A push run's artifact as mode baseline leaves it: its Results and main's record of
    the older baselines (`older`, nearest first) beside them."""
    record = MainRecord.of(
        results(case("c1", {"tool_trajectory_avg_score": [1.0]}), sha=s) for s in older
    )
    return zipped({"results.json": results_json(sha), RECORD_NAME: encoded(record)})


def test_the_main_record_carried_with_the_baseline_replaces_walking_for_older_ones(
    gh: GitHub, github_fake, graph, tmp_path: Path
) -> None:
    main = graph["main"]
    for sha in (main[4], main[3], main[2]):
        push_run(github_fake, sha)
    push_run(github_fake, main[5], _with_record(main[5], [main[4], main[3], main[2]]))
    found = find(gh, graph, tmp_path, history=2)
    assert isinstance(found, BaselineFound) and found.sha == main[5]
    # main's record came in the baseline's artifact: its two nearest, nothing else fetched
    assert [p.source.sha for p in found.older.past] == [main[4], main[3]]
    assert found.older.runs(CaseKey("s", "c1")).runs == 2
    assert found.history == [tmp_path / "baseline" / RECORD_NAME]
    assert left_in(tmp_path / "baseline") == [RECORD_NAME, "results.json"]
    assert len(github_fake.calls("download_artifact")) == 1
    assert found.refused == []


def test_the_record_of_a_candidate_whose_results_are_unusable_is_never_used(
    gh: GitHub, github_fake, graph, tmp_path: Path
) -> None:
    main = graph["main"]
    for sha in (main[4], main[3], main[1]):
        push_run(github_fake, sha)
    record = encoded(MainRecord.of([results(case("c1", {"tool_trajectory_avg_score": [1.0]}))]))
    broken = {"results.json": b"{not json", RECORD_NAME: record}
    push_run(github_fake, main[5], zipped(broken))
    found = find(gh, graph, tmp_path, history=2)
    assert isinstance(found, BaselineFound) and found.sha == main[4]
    # main[4]'s artifact has no record: its older baselines are walked to, not main[5]'s
    assert [p.source.sha for p in found.older.past] == [main[3], main[1]]
    assert left_in(tmp_path / "baseline") == ["history-1.json", "history-2.json", "results.json"]


def test_a_carried_record_that_is_refused_is_said_and_the_older_baselines_are_read(
    gh: GitHub, github_fake, graph, tmp_path: Path
) -> None:
    main = graph["main"]
    for sha in (main[4], main[3]):
        push_run(github_fake, sha)
    forged = {"results.json": results_json(main[5]), RECORD_NAME: b"\x81\xa4kind\xa3bad"}
    push_run(github_fake, main[5], zipped(forged))
    found = find(gh, graph, tmp_path, history=2)
    assert isinstance(found, BaselineFound) and found.sha == main[5]
    assert [p.source.sha for p in found.older.past] == [main[4], main[3]]  # walked for them
    assert len(found.refused) == 1 and RECORD_NAME in found.refused[0]
    assert "the older baselines are read" in found.refused[0]
    assert left_in(tmp_path / "baseline") == ["history-1.json", "history-2.json", "results.json"]


def test_unusable_results_are_skipped_with_reasons(
    gh: GitHub, github_fake, graph, tmp_path: Path
) -> None:
    main = graph["main"]
    push_run(github_fake, main[5], zipped({"results.json": b"{not json"}))
    newer = json.loads(results_json(main[4]))
    newer["schema"] = "agent-eval-results/99"
    push_run(github_fake, main[4], zipped({"results.json": json.dumps(newer).encode()}))
    push_run(github_fake, main[3], zipped({"results.json": results_json(main[3], partial=True)}))
    push_run(github_fake, main[2], zipped({"report.md": b"# r"}))
    push_run(github_fake, main[1], zipped({"results.json": b"{}", "../x": b"evil"}))
    found = find(gh, graph, tmp_path)
    assert isinstance(found, NoBaseline)
    reason = found.reason
    assert reason.startswith(f"no usable baseline for the merge-base {main[5][:7]}")
    assert "unreadable" in reason and "newer agent-eval-action" in reason
    assert "partial" in reason and "(and 2 more)" in reason
    assert left_in(tmp_path / "baseline") == []
    push_run(github_fake, main[0])
    found = find(gh, graph, tmp_path, history=0)
    assert isinstance(found, BaselineFound) and found.sha == main[0]


def test_missing_results_and_zip_slip_reasons(
    gh: GitHub, github_fake, graph, tmp_path: Path
) -> None:
    main = graph["main"]
    push_run(github_fake, main[5], zipped({"report.md": b"# r"}))
    push_run(github_fake, main[4], zipped({"results.json": b"{}", "../x": b"evil"}))
    found = find(gh, graph, tmp_path)
    assert isinstance(found, NoBaseline)
    assert "has no results.json at its root (it holds report.md)" in found.reason
    assert "artifact unreadable:" in found.reason and "'../x'" in found.reason
    assert not (tmp_path / "x").exists()
    assert left_in(tmp_path / "baseline") == []


def test_raw_unzipped_artifact(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    main = graph["main"]
    push_run(github_fake, main[5], results_json(main[5]))
    found = find(gh, graph, tmp_path)
    assert isinstance(found, BaselineFound) and loaded_sha(found.path) == main[5]
    assert left_in(tmp_path / "baseline") == ["results.json"]


def test_an_artifact_over_the_download_cap_is_skipped(github_fake, graph, tmp_path: Path) -> None:
    class SmallCap(GitHub):
        """The client with a download cap of 100 kB instead of 512 MB."""

        def download_artifact(self, url: str, dest: Path, **kwargs: Any) -> str:
            return super().download_artifact(url, dest, max_bytes=100_000, **kwargs)

    main = graph["main"]
    big = zipped({"results.json": results_json(main[5]), "padding.bin": os.urandom(200_000)})
    push_run(github_fake, main[5], big)
    push_run(github_fake, main[4])
    gh = SmallCap("t", github_fake.url, retries=1, backoff=0, sleep=lambda s: None)
    found = find(gh, graph, tmp_path, history=0)
    assert isinstance(found, BaselineFound) and found.sha == main[4]
    assert left_in(tmp_path / "baseline") == ["results.json"]
    found = find(gh, graph, tmp_path, max_commits=1, dest=tmp_path / "alone")
    assert isinstance(found, NoBaseline) and "100000 cap" in found.reason
    assert left_in(tmp_path / "alone") == []


def test_403_on_the_runs_list_names_the_permission(
    gh: GitHub, github_fake, graph, tmp_path: Path
) -> None:
    push_run(github_fake, graph["main"][5])
    github_fake.inject(
        "list_workflow_runs_for",
        Fault(403, body={"message": "Resource not accessible by integration",
                         "documentation_url": "https://docs.github.com/rest"}),
    )  # fmt: skip
    found = find(gh, graph, tmp_path)
    assert isinstance(found, NoBaseline)
    assert "Resource not accessible by integration" in found.reason
    assert "actions: read" in found.reason


def test_unknown_workflow_is_no_baseline(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    github_fake.inject("list_workflow_runs_for", 404)
    found = find(gh, graph, tmp_path)
    assert isinstance(found, NoBaseline) and "404" in found.reason


def test_unknown_commits_are_no_baseline(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    found = find(gh, graph, tmp_path, head_sha="e" * 40)
    assert isinstance(found, NoBaseline) and "merge-base" in found.reason


def test_any_workflow_when_none_is_named(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    push_run(github_fake, graph["main"][5])
    found = find(gh, graph, tmp_path, workflow=None)
    assert isinstance(found, BaselineFound)
    assert github_fake.calls("list_workflow_runs")


def test_github_outage_raises(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    github_fake.inject("list_workflow_runs_for", 503, 503)
    with pytest.raises(GitHubError) as caught:
        find(gh, graph, tmp_path)
    assert caught.value.status == 503


def test_outage_at_download_raises(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    push_run(github_fake, graph["main"][5])
    github_fake.inject("download_artifact", 502, 502)
    with pytest.raises(GitHubError):
        find(gh, graph, tmp_path)


def test_downloads_are_bounded(gh: GitHub, github_fake, graph, tmp_path: Path) -> None:
    main = github_fake.linear_history(30, prefix="long")
    for sha in main:
        push_run(github_fake, sha, zipped({"results.json": b"broken"}))
    found = find(gh, {"main": main, "pr": [main[-1]]}, tmp_path)
    bound = HISTORY + 1 + SKIPPED  # the baseline, its history, and the checks that failed
    assert isinstance(found, NoBaseline) and f"(and {bound - 3} more)" in found.reason
    assert len(github_fake.calls("download_artifact")) == bound
