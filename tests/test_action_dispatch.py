"""action/dispatch.py: which commit a workflow_dispatch evaluates, read from the workspace's
.git without running git, and when a dispatch with a pr-number is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_eval_action.action.dispatch import (
    DispatchedPull,
    check_dispatch,
    checked_out_commit,
    evaluated_commit,
)
from agent_eval_action.errors import InputError

HEAD = "a" * 40
OTHER = "b" * 40


def git(tmp_path: Path, head: str, files: dict[str, str] | None = None) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text(head, encoding="utf-8")
    for name, text in (files or {}).items():
        path = tmp_path / ".git" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_a_detached_head_is_the_commit(tmp_path: Path) -> None:
    assert checked_out_commit(git(tmp_path, f"{HEAD}\n")) == HEAD


def test_a_branch_is_resolved_through_its_loose_ref(tmp_path: Path) -> None:
    ws = git(tmp_path, "ref: refs/heads/feature\n", {"refs/heads/feature": f"{HEAD}\n"})
    assert checked_out_commit(ws) == HEAD


def test_a_branch_is_resolved_through_packed_refs(tmp_path: Path) -> None:
    packed = f"# pack-refs with: peeled fully-peeled sorted\n{OTHER} refs/heads/main\n"
    packed += f"{HEAD} refs/heads/feature\n"
    ws = git(tmp_path, "ref: refs/heads/feature\n", {"packed-refs": packed})
    assert checked_out_commit(ws) == HEAD


def test_a_gitdir_file_is_followed(tmp_path: Path) -> None:
    real = tmp_path / "real.git"
    real.mkdir()
    (real / "HEAD").write_text(f"{HEAD}\n", encoding="utf-8")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").write_text("gitdir: ../real.git\n", encoding="utf-8")
    assert checked_out_commit(ws) == HEAD


@pytest.mark.parametrize(
    "head",
    ["", "garbage\n", "ref: refs/heads/missing\n", "ref: ../../etc/passwd\n", "ref: refs/../x\n"],
)
def test_an_unreadable_head_is_none(tmp_path: Path, head: str) -> None:
    assert checked_out_commit(git(tmp_path, head)) is None


def test_no_checkout_falls_back_to_github_sha(tmp_path: Path) -> None:
    assert checked_out_commit(tmp_path) is None
    assert evaluated_commit(tmp_path, OTHER) == (
        OTHER,
        "GITHUB_SHA (no checkout found in the workspace)",
    )
    assert evaluated_commit(git(tmp_path, HEAD), OTHER)[0] == HEAD


def pull(head_repo: str | None = "o/r") -> DispatchedPull:
    return DispatchedPull(number=7, head_sha=HEAD, base_sha=OTHER, head_repo=head_repo)


def test_the_pr_head_checked_out_passes() -> None:
    check_dispatch(pull(), repo="o/r", evaluated=HEAD, how="x", allow_fork=False)


def test_another_commit_is_refused() -> None:
    with pytest.raises(InputError, match=r"^workflow_dispatch for PR #7: how is bbbbbbbbbbbb, not"):
        check_dispatch(pull(), repo="o/r", evaluated=OTHER, how="how", allow_fork=False)
    with pytest.raises(InputError, match=r"how is unknown, not the PR's head"):
        check_dispatch(pull(), repo="o/r", evaluated=None, how="how", allow_fork=False)


@pytest.mark.parametrize("head_repo", ["fork/r", None])
def test_a_fork_needs_the_opt_in(head_repo: str | None) -> None:
    with pytest.raises(InputError, match="allow-fork-dispatch"):
        check_dispatch(pull(head_repo), repo="o/r", evaluated=HEAD, how="x", allow_fork=False)
    check_dispatch(pull(head_repo), repo="o/r", evaluated=HEAD, how="x", allow_fork=True)
    with pytest.raises(InputError, match="not the PR's head"):  # the opt-in is not for other code
        check_dispatch(pull(head_repo), repo="o/r", evaluated=OTHER, how="x", allow_fork=True)
