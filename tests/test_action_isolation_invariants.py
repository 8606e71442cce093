"""What root's processes do, watched (docs/security.md, "What root may read and write").

The action runs as the image runs it (helpers/layout.py), on a PR whose checkout holds a
package named like the tool's, with `PYTHONPATH: .` in the step's environment, an agent
that regresses (so confirmation rounds run) and requirements to install. Every process
root runs carries an audit hook (workers/audit_hook.py, put in the image's virtualenv for
the test's time) that records each import, open, chmod, chown, rename, mkdir, removal and
process start. Then, for every root process:

- no module was imported from a PR-controlled root (the checkout, HOME, the PR user's
  scratch folder);
- nothing under a PR-controlled root was written, made, moved, removed, or had its mode or
  owner changed by path: what root does there goes by descriptor, through files/safe.py
  (the uid claims and the scratch folder's making: action/sandbox.py);
- nothing under the checkout was read by path except its `.git` (the checkout's own
  metadata): eval files and configs are read through files/safe.py, no link followed;
- every process start went through launch.py, announced with its kind: the tool's own
  children and the interpreter's modules isolated (`-I -u`), the PR's programs only as
  the PR's user, git, and the forks that kill the PR user's processes; nothing else.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.action_harness import Runner
from helpers.layout import Layout, answering, github_layout
from helpers.paths import IMAGE_PACKAGE, IMAGE_PYTHON, ISOLATED, WORKERS, image_entrypoint
from workers.audit_hook import WATCHED

pytestmark = [pytest.mark.e2e, ISOLATED]

SITE = IMAGE_PACKAGE.parent
HOOK_PTH = "zz_agent_eval_audit.pth"
SAFE_CALLERS = {"files/safe.py", "action/sandbox.py"}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
STARTS_ELSEWHERE = {"os.exec", "os.posix_spawn", "os.spawn", "os.system", "os.fork", "pty.spawn"}
# what the hook watches, but for opens, process starts and its own events: changes
CHANGES = WATCHED - STARTS_ELSEWHERE - {"open", "subprocess.Popen", "agent_eval_action.launch"}


@pytest.fixture
def audited() -> Iterator[None]:
    """The hook, importable by every interpreter of the image's virtualenv for the test."""
    shutil.copy(WORKERS / "audit_hook.py", SITE / "agent_eval_audit_hook.py")
    (SITE / HOOK_PTH).write_text("import agent_eval_audit_hook\n")
    try:
        yield
    finally:
        (SITE / HOOK_PTH).unlink(missing_ok=True)
        (SITE / "agent_eval_audit_hook.py").unlink(missing_ok=True)


def _under(path: str, roots: list[Path]) -> bool:
    real = Path(os.path.realpath(path))
    return any(real == root or root in real.parents for root in roots)


def _written(event: dict) -> bool:
    _, mode, flags = (event["args"] + [None, None])[:3]
    if isinstance(mode, str):
        return any(c in mode for c in "wax+")
    return isinstance(flags, int) and bool(flags & WRITE_FLAGS)


def _paths(event: dict) -> list[str]:
    """The path arguments of an event (a descriptor is no path)."""
    args = event["args"]
    match event["event"]:
        case "os.rename" | "os.symlink" | "os.link" | "shutil.copyfile" | "shutil.move":
            found = args[:2]
        case _:
            found = args[:1]
    return [p for p in found if isinstance(p, str)]


def violations(events: list[dict], pr_roots: list[Path], workspace: Path) -> list[str]:
    """What root's processes did that the isolation forbids (the module docstring)."""
    found = []
    announced: dict[int, list] = {}
    for event in events:
        kind, pid, caller = event["event"], event["pid"], event.get("caller")
        if kind == "modules":
            found += [f"{pid} imported {f}" for f in event["args"] if _under(f, pr_roots)]
            continue
        if kind == "agent_eval_action.launch":
            announced[pid] = event["args"]
            continue
        if kind == "subprocess.Popen":
            launch = announced.pop(pid, None)
            argv = event["args"][1]
            if launch is None or launch[1] != argv:
                found.append(f"{pid} started {argv} not through launch.py ({caller})")
            elif launch[0] in ("tool", "python") and argv[1:3] != ["-I", "-u"]:
                found.append(f"{pid} started an interpreter that is not isolated: {argv}")
            elif launch[0] == "pr" and launch[2] is None:
                found.append(f"{pid} started the PR's program {argv} as root")
            elif launch[0] == "external" and Path(argv[0]).name != "git":
                found.append(f"{pid} started {argv}, which is not git")
            continue
        if kind == "os.fork" and (announced.pop(pid, None) or ["?"])[0] == "kill":
            continue  # launch.kill_all_of: a fork that kills the PR user's processes
        if kind in STARTS_ELSEWHERE:
            found.append(f"{pid} started a process by {kind} ({caller})")
            continue
        for path in _paths(event):
            full = os.path.join(event["cwd"], path)  # as it stands when absolute
            relative = not os.path.isabs(path)  # a name in a folder held by descriptor
            if caller in SAFE_CALLERS:
                continue
            if kind in CHANGES or (kind == "open" and _written(event)):
                if relative or _under(full, pr_roots):
                    found.append(f"{pid} {kind} {path} by path ({caller})")
            elif _under(full, [workspace]) and not _under(full, [workspace / ".git"]):
                found.append(f"{pid} read {path} by path, not through files/safe.py ({caller})")
    return found


def _audit_log(folder: Path) -> list[dict]:
    return [json.loads(line) for log in folder.glob("*.jsonl") for line in log.open()]


SCRATCH = re.compile(r"^(/.+/agent-eval-[^/]+/pr-[^/]+)(/|$)")


def _pr_roots(layout: Layout, events: list[dict]) -> list[Path]:
    """The checkout, HOME, and each PR user's scratch folder (pr-*, in the run's folder),
    as the events name them."""
    scratch = {Path(m[1]) for e in events for p in _paths(e) if (m := SCRATCH.match(p))}
    home = Path(os.path.realpath(layout.home))
    return [Path(os.path.realpath(layout.workspace)), home, *sorted(scratch)]


SHADOW = "raise SystemExit('the PR package named like the tool was imported')\n"


def test_root_reads_writes_and_starts_nothing_of_the_prs_but_by_construction(
    runner: Runner, audited
):
    with github_layout(answering("nope")) as layout:
        shadow = layout.workspace / "agent_eval_action"
        shadow.mkdir()
        for name in ("__init__.py", "__main__.py"):
            (shadow / name).write_text(SHADOW)
        (layout.workspace / "pyproject.toml").write_text(
            '[project]\nname = "probe"\nversion = "0"\ndependencies = []\n'
        )
        main_agent = layout.base / "main_agent.py"
        main_agent.write_text(answering("hi"))
        baseline = layout.base / "baseline.json"
        argv = [*image_entrypoint(), "run", str(layout.workspace / "evals")]
        argv += ["--out", str(baseline), "--command", f"{IMAGE_PYTHON} {main_agent}"]
        made = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert made.returncode == 0, made.stdout + made.stderr
        audit = layout.base / "audit"
        audit.mkdir()
        done = layout.run(
            runner,
            env={"PYTHONPATH": ".", "AGENT_EVAL_AUDIT_DIR": str(audit)},
            baseline=str(baseline),
            requirements="pyproject.toml",
            **{"output-dir": "agent-eval-results"},
        )
        said = done.stdout + done.stderr
        assert done.returncode == 1, said  # the regression, confirmed by its re-runs
        assert "confirming 1 regressed case(s)" in said
        events = _audit_log(audit)
        processes = {e["pid"] for e in events if e["event"] == "modules"}
        assert len(processes) >= 4, processes  # the action, score stages, ...
        starts = [e for e in events if e["event"] == "agent_eval_action.launch"]
        assert {e["args"][0] for e in starts} >= {"tool", "python", "pr"}, starts
        roots = _pr_roots(layout, events)
        assert len(roots) == 3, roots  # the checkout, HOME, the one PR user's scratch
        found = violations(events, roots, Path(os.path.realpath(layout.workspace)))
        assert found == [], "\n".join(found)
        assert (layout.workspace / "agent-eval-results" / "results.json").is_file()
