"""Where the repository's files are, and how a test runs a script with this interpreter."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent
WORKERS = TESTS / "workers"  # agents and protocol workers run in child processes
# ADK's own integration eval files (a copy of google/adk-python's tests), beside the repo.
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures" / "adk-integration"
# The image's interpreter and packages (scripts/image_venv.py), for tests that run the action
# as the image does: as root, the PR's code under a user of its own.
IMAGE_PYTHON = ROOT / ".ci" / "image-venv" / "bin" / "python"
# The package as the image installs it (not this tree's src/: the isolation tests run what
# the image runs, with no PYTHONPATH)
IMAGE_PACKAGE = next(
    iter((ROOT / ".ci" / "image-venv" / "lib").glob("python3*/site-packages/agent_eval_action")),
    ROOT / ".ci" / "image-venv" / "lib" / "python3.11" / "site-packages" / "agent_eval_action",
)
# Such tests share one xdist worker: two actions starting at once can pick the same unused uid
# for their PR users (action/sandbox.create), and one's stage-end kill by uid would then end
# the other's agent.
ISOLATED = pytest.mark.xdist_group("pr_user")


def image_entrypoint() -> list[str]:
    """The Dockerfile's ENTRYPOINT with the image venv's interpreter: what the image runs."""
    for line in (ROOT / "Dockerfile").read_text(encoding="utf-8").splitlines():
        if line.startswith("ENTRYPOINT "):
            argv = json.loads(line.removeprefix("ENTRYPOINT "))
            return [str(IMAGE_PYTHON) if argv[0].endswith("/python") else argv[0], *argv[1:]]
    raise AssertionError("the Dockerfile has no ENTRYPOINT")


def _stale_image_files() -> list[str]:
    """This tree's package files that the image venv holds otherwise (or not at all)."""
    source = ROOT / "src" / "agent_eval_action"
    stale = []
    for path in source.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            installed = IMAGE_PACKAGE / path.relative_to(source)
            if not installed.is_file() or installed.read_bytes() != path.read_bytes():
                stale.append(str(path.relative_to(source)))
    return stale


def need_isolation() -> None:
    """Skip unless the action can switch the PR's code to a user of its own here: root, and
    the image's virtualenv holding this tree's package (on CI, which builds it, its absence
    fails the test)."""
    if os.geteuid() != 0:
        pytest.skip("needs root: the action switches the PR's code to a user of its own")
    reason = None
    if not IMAGE_PYTHON.exists():
        reason = f"the image's virtualenv is absent ({IMAGE_PYTHON}; python scripts/image_venv.py)"
    elif stale := _stale_image_files():
        reason = (
            f"the image's virtualenv holds another version of {stale[0]} "
            f"({len(stale)} files differ): python scripts/image_venv.py"
        )
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    from agent_eval_action.action.sandbox import open_to_others

    if not open_to_others(ROOT / "src"):
        # the action would then refuse to switch (sandbox._cannot_switch) and run the
        # hostile probes as root, in this checkout: say so instead (`mktemp -d` makes 0700)
        pytest.skip(f"the checkout {ROOT} is not readable by other users: no user switching")


def python_command(script: Path, *args: str) -> str:
    """A --command string running a script with this interpreter."""
    return shlex.join([sys.executable, str(script), *args])
