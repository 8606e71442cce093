"""Main's paired stage runs and reads nothing of the PR's checkout by a name the workflow
gave, and the run's folders sit where no other user can leave anything above them
(action/agent_run.moved_environment, launch.moved_paths, action/workdirs.private_parent,
action/sandbox.remove_left_in)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from agent_eval_action import launch
from agent_eval_action.action.agent_run import moved_environment
from agent_eval_action.action.sandbox import remove_left_in
from agent_eval_action.action.workdirs import private_parent


def test_every_variable_naming_the_checkout_is_taken_in_the_worktree(tmp_path: Path, monkeypatch):
    workspace, tree = tmp_path / "workspace", tmp_path / "tree"
    workspace.mkdir()
    (tmp_path / "alias").symlink_to(workspace)  # GITHUB_WORKSPACE by another name
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path / "alias"))
    monkeypatch.chdir(workspace)  # the action's current folder
    env = {
        "PATH": f"{workspace}/bin:/usr/bin",  # with the requirements' venv's, as it adds it
        "PYTHONPATH": f"src:{tmp_path}/alias/lib",
        "GITHUB_WORKSPACE": str(workspace),
        "GOOGLE_APPLICATION_CREDENTIALS": f"{workspace}/creds.json",
        "PROMPTS": f"file://{tmp_path}/alias/prompts",
        "NEIGHBOUR": f"{workspace}2/x",  # another folder whose name begins alike: kept
        "GREETING": "hello",
    }
    moved = moved_environment(env, (workspace, tree))
    assert moved == {
        "PATH": f"{tree}/bin:/usr/bin",
        "PYTHONPATH": f"{tree}/src:{tree}/lib",  # relative: from the workspace, then moved
        "GITHUB_WORKSPACE": str(tree),
        "GOOGLE_APPLICATION_CREDENTIALS": f"{tree}/creds.json",
        "PROMPTS": f"file://{tree}/prompts",
        "NEIGHBOUR": f"{workspace}2/x",
        "GREETING": "hello",
    }


def test_a_path_is_moved_only_at_its_own_boundaries():
    names = ["/github/workspace"]
    assert launch.moved_paths("a:/github/workspace:b", names, "/t") == "a:/t:b"
    assert launch.moved_paths("//github/workspace/bin", names, "/t") == "//t/bin"
    assert launch.moved_paths("file:///github/workspace/x", names, "/t") == "file:///t/x"
    kept = ["/github/workspace2", "/x/github/workspace", "a//github/workspace", "hello"]
    for value in [*kept, "~/github/workspace"]:
        assert launch.moved_paths(value, names, "/t") == value


def test_a_folder_list_entry_is_moved_by_any_name_or_by_its_physical_path(
    tmp_path: Path, monkeypatch
):
    """A PATH or PYTHONPATH entry that names the checkout through a link, or with a leading
    `//` (POSIX's same folder), is main's folder in the worktree all the same."""
    workspace, tree = tmp_path / "real" / "workspace", tmp_path / "tree"
    (workspace / "lib").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(tmp_path / "real")  # a link above the workspace
    monkeypatch.chdir(workspace)
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    value = f"{tmp_path}/alias/workspace/lib:/{workspace}/bin:{workspace}2"
    moved = launch.moved_folders(value, (str(workspace), str(tree)))
    assert moved.split(":") == [f"{tree}/lib", f"{tree}/bin", f"{workspace}2"]
    monkeypatch.setenv("PYTHONPATH", value)  # the agent stage's folders, as it is given them
    assert launch.agent_path(moved=(str(workspace), str(tree))).split(":")[:2] == [
        f"{tree}/lib",
        f"{tree}/bin",
    ]


def test_what_a_user_left_in_a_shared_folder_is_removed_and_nothing_else(tmp_path: Path):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / ".env").write_text("HTTP_PROXY=http://127.0.0.1:9\n")
    (shared / "tree" / "deep").mkdir(parents=True)
    (shared / "tree" / "deep" / "f").write_text("x")
    outside = tmp_path / "outside"
    outside.write_text("kept")
    (shared / "link").symlink_to(outside)
    mine = os.getuid()
    assert remove_left_in(mine, [str(shared), str(tmp_path / "absent")]) == 3
    assert list(shared.iterdir()) == [] and outside.read_text() == "kept"  # never followed
    (shared / "theirs").write_text("x")
    assert remove_left_in(mine + 1, [str(shared)]) == 0  # another user's entries stay
    assert (shared / "theirs").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="the run's folders are root's: run as root")
def test_the_run_folders_parent_is_one_no_other_user_can_write_above():
    assert private_parent() == "/run" or not Path("/run").is_dir()
    with tempfile.TemporaryDirectory(dir="/run") as made:
        folder = Path(made)
        folder.chmod(0o755)
        assert private_parent(folder) == str(folder)
        folder.chmod(0o775)  # its group may write: someone could leave a .env in it
        assert private_parent(folder) is None
        folder.chmod(0o755)
        inner = folder / "inner"
        inner.mkdir(mode=0o755)
        folder.chmod(0o757)  # writable above
        assert private_parent(inner) is None
    below_tmp = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        below_tmp.chmod(0o755)
        assert private_parent(below_tmp) is None  # /tmp above: anyone may write there
    finally:
        below_tmp.rmdir()


def test_a_user_not_root_makes_its_folders_in_the_temporary_folder(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1234)
    assert private_parent() is None
