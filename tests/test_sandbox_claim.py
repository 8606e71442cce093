"""The PR user's uid is the action's alone while it lives (action/sandbox.create): a lock on
the uid's file in a folder only root may write, so two actions starting at once on one
machine never share a uid (each kills every process of its PR user's uid at stage end).

create() switches users only as root and with an interpreter other users can read, so each
scenario runs in the image's interpreter with this tree's code (helpers.paths.need_isolation
skips, saying why, elsewhere)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.paths import IMAGE_PYTHON, ROOT, need_isolation

from agent_eval_action.action.sandbox import FIRST_UID, claims_folder

# Runs steps in one process: "+" creates a PR user (claims folder argv[1], or the default
# when empty; the files in argv[2] protected), "-N" removes the Nth created; prints the
# created uids, or the error's text.
SCENARIO = """
import json, sys, tempfile
from pathlib import Path
from agent_eval_action.action import sandbox
from agent_eval_action.errors import InfrastructureError

claims = Path(sys.argv[1]) if sys.argv[1] else None
protected = list(Path(sys.argv[2]).iterdir()) if sys.argv[2] else []
users = []
within = Path(tempfile.mkdtemp())  # the run's folder of root's the scratch folders go in
within.chmod(0o711)
try:
    for step in sys.argv[3:]:
        if step == "+":
            users.append(sandbox.create(protected, within, claims))
            assert users[-1].switched, users[-1].gap
        else:
            users[int(step[1:])].remove()
except InfrastructureError as err:
    print(json.dumps({"error": str(err)}))
    sys.exit(3)
finally:
    for user in users:
        user.remove()
print(json.dumps({"uids": [user.uid for user in users]}))
"""

# The uids below FIRST_UID + SKIPPED own a protected path in these tests, so that the actions
# other tests run meanwhile (whose PR users start at FIRST_UID) leave the uids here unused.
SKIPPED = 40

# Holds the lock on one uid's file, as another action would, until its stdin closes.
HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("held", flush=True)
sys.stdin.read()
"""


def scenario(claims: Path | None, *steps: str) -> dict:
    owned = claims.parent / "owned" if claims else ""
    done = subprocess.run(
        [str(IMAGE_PYTHON), "-c", SCENARIO, str(claims or ""), str(owned), *steps],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 3), done.stderr
    return json.loads(done.stdout)


def uids(claims: Path | None, *steps: str) -> list[int]:
    found = scenario(claims, *steps)
    assert "uids" in found, found
    if claims:
        assert min(found["uids"]) >= FIRST_UID + SKIPPED  # the protected paths' are taken
    return found["uids"]


def refusal(claims: Path) -> str:
    found = scenario(claims, "+")
    assert "error" in found, f"created a PR user with the claims in {claims}: {found}"
    return found["error"]


@pytest.fixture
def claims(tmp_path: Path) -> Path:
    need_isolation()
    assert os.stat(tmp_path).st_uid == 0  # pytest's folder: root's, 0700, as /run is
    (tmp_path / "owned").mkdir()
    for uid in range(FIRST_UID, FIRST_UID + SKIPPED):
        (tmp_path / "owned" / str(uid)).touch()
        os.chown(tmp_path / "owned" / str(uid), uid, uid)
    return tmp_path / "claims"


def test_two_pr_users_of_one_process_get_different_uids_and_removing_frees_one(claims):
    first, second, again = uids(claims, "+", "+", "-0", "+")
    assert first != second
    assert again == first  # remove() gave the uid up
    folder = os.stat(claims)
    assert folder.st_uid == 0 and folder.st_mode & 0o777 == 0o700


def test_a_uid_another_process_holds_is_skipped_until_that_process_dies(claims):
    (free,) = uids(claims, "+")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(claims / f"{free}.lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        (beside,) = uids(claims, "+")
        assert beside != free
    finally:
        holder.kill()  # a crash: the kernel drops its lock, nothing stale is left
        holder.wait()
    (after,) = uids(claims, "+")
    assert after == free


@pytest.mark.parametrize(
    ("plant", "reason"),
    [
        ("symlink", "a symbolic link"),
        ("file", "Not a directory"),
        ("nobody's", "owned by uid 65534, not root"),
        ("group-writable", "writable by group or others (mode 770)"),
        ("other-writable", "writable by group or others (mode 703)"),
        ("sticky like /tmp", "writable by group or others (mode 1777)"),
    ],
)
def test_a_claims_folder_another_user_could_have_made_or_write_is_refused(claims, plant, reason):
    target = claims.parent / "elsewhere"  # root's, 0700: what a planted link would lead to
    target.mkdir(mode=0o700)
    if plant == "symlink":
        claims.symlink_to(target)
    elif plant == "file":
        claims.write_text("")
    else:
        claims.mkdir()
        if plant == "nobody's":
            os.chown(claims, 65534, 65534)
        claims.chmod(
            {"nobody's": 0o700, "group-writable": 0o770, "other-writable": 0o703}.get(plant, 0o1777)
        )
    error = refusal(claims)
    assert error == (
        f"{claims}: refusing it as the folder of the PR users' uid claims: {reason}; "
        "remove it (docs/security.md)"
    )
    assert list(target.iterdir()) == []  # the link was not followed
    if claims.is_dir() and not claims.is_symlink():
        assert list(claims.iterdir()) == []  # nothing was claimed there either


def test_a_lock_file_that_is_a_link_is_not_followed_or_truncated(claims):
    (free,) = uids(claims, "+")
    precious = claims.parent / "precious"
    precious.write_text("kept")
    (claims / f"{free}.lock").unlink()
    (claims / f"{free}.lock").symlink_to(precious)
    error = refusal(claims)
    assert error.startswith(f"{claims / f'{free}.lock'}: cannot open the PR user's uid claim")
    assert "\n" not in error
    assert precious.read_text() == "kept"


def test_the_default_claims_folder_is_roots_alone():
    need_isolation()
    uids(None, "+")
    folder = claims_folder()
    assert not folder.is_symlink()
    info = os.stat(folder)
    assert info.st_uid == 0 and info.st_mode & 0o022 == 0
