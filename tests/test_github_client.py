"""The GitHub REST client against the fake GitHub on 127.0.0.1 (tests/fakes/github.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import requests
from fakes.github import REPO, Fault, primary_rate_limit, secondary_rate_limit

from agent_eval_action.github.client import ArtifactExpired, GitHub, GitHubError

TOKEN = "ghs_secret-token-value"
COMMENTS = f"/repos/{REPO}/issues/7/comments"


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def gh(github_fake, sleeps) -> GitHub:
    return GitHub(
        TOKEN, github_fake.url, backoff=0, max_rate_limit_wait=10, sleep=sleeps.append,
        clock=lambda: 1_000_000.0,
    )  # fmt: skip


def test_sends_github_headers(gh: GitHub, github_fake) -> None:
    gh.get(f"/repos/{REPO}/actions/artifacts")
    headers = {k.lower(): v for k, v in github_fake.log[0].headers.items()}
    assert headers["authorization"] == f"Bearer {TOKEN}"
    assert headers["accept"] == "application/vnd.github+json"
    assert headers["x-github-api-version"] == "2022-11-28"
    assert headers["user-agent"].startswith("agent-eval-action")
    assert TOKEN not in repr(gh)


def test_get_retries_502_then_succeeds(gh: GitHub, github_fake) -> None:
    github_fake.inject("list_artifacts", 502, 502)
    assert gh.get(f"/repos/{REPO}/actions/artifacts")["total_count"] == 0
    assert [r.status for r in github_fake.calls("list_artifacts")] == [502, 502, 200]


def test_get_gives_up_after_the_retries(gh: GitHub, github_fake) -> None:
    github_fake.inject("list_artifacts", *[503] * 4)
    with pytest.raises(GitHubError) as caught:
        gh.get(f"/repos/{REPO}/actions/artifacts")
    assert caught.value.status == 503
    assert caught.value.url.endswith("/actions/artifacts")
    assert len(github_fake.calls("list_artifacts")) == 4  # the first try and 3 retries


def test_patch_retries_502(gh: GitHub, github_fake) -> None:
    comment = github_fake.add_comment(7, "old")
    github_fake.inject("update_comment", 502)
    gh.patch(f"/repos/{REPO}/issues/comments/{comment['id']}", {"body": "new"})
    assert github_fake.comments[comment["id"]]["body"] == "new"
    assert len(github_fake.calls("update_comment")) == 2


def test_post_is_never_retried_on_502(gh: GitHub, github_fake) -> None:
    github_fake.inject("create_comment", 502)
    with pytest.raises(GitHubError) as caught:
        gh.post(COMMENTS, {"body": "hello"})
    assert caught.value.status == 502
    assert len(github_fake.calls("create_comment")) == 1
    assert github_fake.comments == {}


def test_connection_error_is_a_github_error() -> None:
    with socket_closed_port() as url:
        gh = GitHub(TOKEN, url, retries=1, backoff=0)
        with pytest.raises(GitHubError) as caught:
            gh.get("/repos/o/r/actions/artifacts")
    assert caught.value.status is None
    assert TOKEN not in str(caught.value)


def socket_closed_port():
    import contextlib
    import socket

    @contextlib.contextmanager
    def closed():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        yield f"http://127.0.0.1:{port}"

    return closed()


def test_secondary_rate_limit_waits_retry_after(gh: GitHub, github_fake, sleeps) -> None:
    github_fake.inject("create_comment", secondary_rate_limit(2), secondary_rate_limit(3, 429))
    gh.post(COMMENTS, {"body": "hello"})
    assert sleeps == [2.0, 3.0]
    assert [r.status for r in github_fake.calls("create_comment")] == [403, 429, 201]
    assert len(github_fake.comments) == 1


def test_rate_limit_wait_is_capped(gh: GitHub, github_fake, sleeps) -> None:
    github_fake.inject("list_artifacts", secondary_rate_limit(6), secondary_rate_limit(6))
    with pytest.raises(GitHubError, match="cap") as caught:
        gh.get(f"/repos/{REPO}/actions/artifacts")
    assert caught.value.status == 403
    assert sleeps == [6.0]  # a second 6 s would pass the 10 s cap: it gives up instead
    assert len(github_fake.calls("list_artifacts")) >= 2  # the slow one, then the retry


def test_secondary_rate_limit_without_retry_after_waits_a_minute(github_fake, sleeps) -> None:
    gh = GitHub(TOKEN, github_fake.url, backoff=0, max_rate_limit_wait=60, sleep=sleeps.append)
    github_fake.inject("list_artifacts", secondary_rate_limit(None))
    gh.get(f"/repos/{REPO}/actions/artifacts")
    assert sleeps == [60.0]


def test_primary_rate_limit_waits_until_reset(gh: GitHub, github_fake, sleeps) -> None:
    github_fake.inject("list_artifacts", primary_rate_limit(1_000_004))  # clock: 1_000_000
    gh.get(f"/repos/{REPO}/actions/artifacts")
    assert sleeps == [5.0]


def test_plain_403_is_not_waited_on(gh: GitHub, github_fake, sleeps) -> None:
    forbidden = Fault(403, body={"message": "Resource not accessible by integration"})
    github_fake.inject("create_check_run", forbidden)
    with pytest.raises(GitHubError, match="Resource not accessible") as caught:
        gh.post(f"/repos/{REPO}/check-runs", {"name": "agent-eval", "head_sha": "a" * 40})
    assert caught.value.status == 403
    assert sleeps == []


def test_paginates_over_three_pages_following_links(gh: GitHub, github_fake) -> None:
    for i in range(250):
        github_fake.add_comment(7, f"comment {i}")
    bodies = [c["body"] for c in gh.paginate(COMMENTS)]
    assert bodies == [f"comment {i}" for i in range(250)]
    pages = github_fake.calls("list_comments")
    assert len(pages) == 3
    # The next pages are the Link URLs as given: GitHub's /repositories/{id}/… form.
    assert [p.path.startswith("/repositories/") for p in pages] == [False, True, True]
    assert [p.query.get("page", ["1"])[0] for p in pages] == ["1", "2", "3"]


def test_paginates_object_lists(gh: GitHub, github_fake) -> None:
    for i in range(3):
        github_fake.add_artifact(f"a{i}", b"x")
    github_fake.add_artifact("other", b"x")
    names = [
        a["name"]
        for a in gh.paginate(
            f"/repos/{REPO}/actions/artifacts", {"per_page": 2, "name": "a1"}, key="artifacts"
        )
    ]
    assert names == ["a1"]
    pages = gh.paginate(f"/repos/{REPO}/actions/artifacts", {"per_page": 2}, key="artifacts")
    assert len(list(pages)) == 4
    assert len(github_fake.calls("list_artifacts")) == 3  # 1 + 2 pages


def test_refuses_to_send_the_token_to_another_host(gh: GitHub) -> None:
    with pytest.raises(GitHubError, match="off the API host"):
        gh.get("https://evil.example/steal")


def test_artifact_download_follows_redirect_without_authorization(
    gh: GitHub, github_fake, tmp_path: Path
) -> None:
    data = b"PK\x03\x04 zip bytes" * 100_000  # more than one chunk of the stream
    artifact = github_fake.add_artifact("agent-eval-results", data)
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    dest = tmp_path / "downloads" / "artifact.zip"
    assert gh.download_artifact(artifact["archive_download_url"], dest, digest=digest) == digest
    assert dest.read_bytes() == data
    assert sorted(p.name for p in dest.parent.iterdir()) == ["artifact.zip"]
    (blob_request,) = github_fake.blob_log
    assert blob_request.status == 200
    assert "authorization" not in {k.lower() for k in blob_request.headers}


def test_blob_storage_rejects_the_authorization_header(github_fake) -> None:
    artifact = github_fake.add_artifact("agent-eval-results", b"data")
    redirect = requests.get(
        artifact["archive_download_url"],
        headers={"Authorization": f"Bearer {TOKEN}"},
        allow_redirects=False,
        timeout=10,
    )
    assert redirect.status_code == 302
    blob = requests.get(
        redirect.headers["Location"], headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10
    )
    assert blob.status_code == 400
    assert b"InvalidAuthenticationInfo" in blob.content


def test_artifact_without_a_listed_digest_reports_its_own(
    gh: GitHub, github_fake, tmp_path: Path
) -> None:
    artifact = github_fake.add_artifact("agent-eval-results", b"data")
    got = gh.download_artifact(artifact["archive_download_url"], tmp_path / "a.zip")
    assert got == "sha256:" + hashlib.sha256(b"data").hexdigest()


def test_artifact_digest_mismatch_is_an_error_and_leaves_no_file(
    gh: GitHub, github_fake, tmp_path: Path
) -> None:
    artifact = github_fake.add_artifact("agent-eval-results", b"data")
    dest = tmp_path / "a.zip"
    with pytest.raises(GitHubError, match="digest"):
        gh.download_artifact(artifact["archive_download_url"], dest, digest="sha256:" + "0" * 64)
    assert list(tmp_path.iterdir()) == []


def test_artifact_size_cap_leaves_no_file(gh: GitHub, github_fake, tmp_path: Path) -> None:
    artifact = github_fake.add_artifact("agent-eval-results", b"x" * 3_000_000)
    dest = tmp_path / "a.zip"
    url = artifact["archive_download_url"]
    with pytest.raises(GitHubError, match="cap"):
        gh.download_artifact(url, dest, max_bytes=2_999_999)
    assert list(tmp_path.iterdir()) == []
    gh.download_artifact(url, dest, max_bytes=3_000_000)
    assert dest.read_bytes() == b"x" * 3_000_000


def test_expired_artifact_is_artifact_expired(gh: GitHub, github_fake, tmp_path: Path) -> None:
    artifact = github_fake.add_artifact("agent-eval-results", b"data", expired=True)
    with pytest.raises(ArtifactExpired) as caught:
        gh.download_artifact(artifact["archive_download_url"], tmp_path / "a.zip")
    assert caught.value.status == 410
    assert github_fake.blob_log == []
    assert list(tmp_path.iterdir()) == []


def test_410_elsewhere_is_a_plain_github_error(gh: GitHub, github_fake) -> None:
    github_fake.inject("list_comments", 410)
    with pytest.raises(GitHubError) as caught:
        list(gh.paginate(COMMENTS))
    assert caught.value.status == 410 and not isinstance(caught.value, ArtifactExpired)


def test_comment_body_over_65536_characters_is_rejected(gh: GitHub, github_fake) -> None:
    gh.post(COMMENTS, {"body": "x" * 65536})
    with pytest.raises(GitHubError, match="Body is too long") as caught:
        gh.post(COMMENTS, {"body": "x" * 65537})
    assert caught.value.status == 422
    assert len(github_fake.comments) == 1


def test_check_run_limits(gh: GitHub, github_fake) -> None:
    note = {
        "path": "evals/a.evalset.json", "start_line": 1, "end_line": 1,
        "annotation_level": "failure", "message": "regressed",
    }  # fmt: skip
    start = {"name": "agent-eval", "head_sha": "a" * 40, "status": "in_progress"}
    run = gh.post(f"/repos/{REPO}/check-runs", start)
    path = f"/repos/{REPO}/check-runs/{run['id']}"
    output = {"title": "t", "summary": "s", "annotations": [note] * 51}
    with pytest.raises(GitHubError, match="50 annotations") as caught:
        gh.patch(path, {"output": output})
    assert caught.value.status == 422
    with pytest.raises(GitHubError, match="bytesize of 65535"):
        gh.patch(path, {"output": {"title": "t", "summary": "é" * 32768}})
    for _ in range(2):
        gh.patch(path, {"output": {**output, "annotations": [note] * 50}})
    done = gh.patch(path, {"conclusion": "failure"})
    assert done["status"] == "completed"
    assert done["output"]["annotations_count"] == 100  # appended per update


def test_workflow_runs_filtered(gh: GitHub, github_fake) -> None:
    github_fake.add_workflow_run(event="push")
    wanted = github_fake.add_workflow_run(event="push", head_branch="main")
    github_fake.add_workflow_run(event="pull_request", head_branch="feature")
    runs = list(
        gh.paginate(
            f"/repos/{REPO}/actions/runs",
            {"branch": "main", "event": "push", "status": "success"},
            key="workflow_runs",
        )
    )
    assert len(runs) == 2 and runs[-1]["id"] == wanted["id"]


def test_what_the_client_sends_matches_openapi(openapi, gh: GitHub, github_fake) -> None:
    """Every JSON body of these calls, and every fake answer, is checked against the spec."""
    comment = gh.post(COMMENTS, {"body": "hi"})
    gh.patch(f"/repos/{REPO}/issues/comments/{comment['id']}", {"body": "hi again"})
    gh.post(
        f"/repos/{REPO}/check-runs", {"name": "n", "head_sha": "a" * 40, "conclusion": "success"}
    )
    github_fake.add_workflow_run()
    github_fake.add_artifact("a", b"x", run_id=1)
    gh.get(f"/repos/{REPO}/actions/runs")
    gh.get(f"/repos/{REPO}/actions/artifacts")
    assert len(github_fake.log) == 5
    assert github_fake.schema_errors == []


def test_the_schema_check_catches_a_bad_body(openapi, gh: GitHub, github_fake) -> None:
    with pytest.raises(GitHubError) as caught:
        gh.post(f"/repos/{REPO}/check-runs", {"name": "n", "head_sha": "a" * 40, "status": "done"})
    assert caught.value.status == 422
    assert any("status" in e for e in github_fake.schema_errors)
    assert openapi.response_errors(
        "GET",
        "/repos/{owner}/{repo}/actions/artifacts",
        200,
        {"total_count": 1, "artifacts": [{"id": "x"}]},
    )
    github_fake.schema_errors.clear()


def test_a_read_timeout_is_retried_for_a_get(github_fake) -> None:
    import time

    gh = GitHub(TOKEN, github_fake.url, backoff=0, timeout=0.5)
    github_fake.before["list_artifacts"].append(lambda: time.sleep(1.5))
    assert gh.get(f"/repos/{REPO}/actions/artifacts")["total_count"] == 0
    assert len(github_fake.calls("list_artifacts")) >= 2  # the slow one, then the retry


def test_a_timeout_on_every_try_is_an_unreachable_error(github_fake) -> None:
    import time

    gh = GitHub(TOKEN, github_fake.url, backoff=0, timeout=0.3, retries=1)

    def slow() -> None:
        github_fake.before["list_artifacts"].append(slow)  # every request is slow
        time.sleep(1.0)

    github_fake.before["list_artifacts"].append(slow)
    with pytest.raises(GitHubError) as caught:
        gh.get(f"/repos/{REPO}/actions/artifacts")
    assert caught.value.status is None and "Timeout" in caught.value.message
