"""One proof of concept per way a review broke the action's isolation as hostile PR code
(docs/security.md), each run in GitHub's container layout (helpers/layout.py) through the
image's entry point. Each failed on the code before the fix and passes after.

- a folder named like the tool's package in the checkout, and PYTHONPATH/PYTHONWARNINGS/
  user site-packages pointing at the PR's files: never imported by a root process;
- links the PR's user plants in its scratch folder (where root once wrote each round's plan)
  and links committed under output-dir: never written through; output-dir through a link
  refused;
- a committed results.json while the agent stage is killed: no verdict, exit 3;
- traces of confirmation runs nobody planned: refused;
- an eval file committed as a link to a file only root may read: refused, nothing leaked;
- a worker taking its parent's (the agent stage's) file descriptors: refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.action_harness import Runner
from helpers.layout import Layout, answering, github_layout
from helpers.paths import IMAGE_PACKAGE, IMAGE_PYTHON, ISOLATED, image_entrypoint

from agent_eval_action.action.sandbox import FIRST_UID

pytestmark = [pytest.mark.e2e, ISOLATED]

SECRET = "ROOT-ONLY-SECRET-7f3a"
SITE = IMAGE_PACKAGE.parent


def _drop(layout: Layout) -> Path:
    """A folder anyone may write: where the PR's processes say what they tried."""
    drop = layout.base / "drop"
    drop.mkdir(exist_ok=True)
    drop.chmod(0o1777)
    return drop


def _baseline(layout: Layout, answer: str = "hi") -> Path:
    """main's Results: the layout's eval set run with an agent answering `answer` (passes)."""
    agent = layout.base / "main_agent.py"
    agent.write_text(answering(answer))
    out = layout.base / "baseline.json"
    argv = [*image_entrypoint(), "run", str(layout.workspace / "evals"), "--out", str(out)]
    argv += ["--command", f"{IMAGE_PYTHON} {agent}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def _pth_files() -> set[str]:
    return {p.name for p in SITE.iterdir() if p.suffix == ".pth"}


SHADOW_INIT = r"""
import os
with open(os.path.join(DROP, f"imported-by-{os.getuid()}-{os.getpid()}"), "w") as f:
    f.write(__file__)
"""


def test_a_package_named_like_the_tool_in_the_checkout_is_never_imported_by_root(
    runner: Runner,
):
    with github_layout(answering("hi")) as layout:
        drop = _drop(layout)
        code = SHADOW_INIT.replace("DROP", repr(str(drop)))
        shadow = layout.workspace / "agent_eval_action"
        shadow.mkdir()
        for name in ("__init__.py", "__main__.py"):
            (shadow / name).write_text(code)
        (layout.workspace / "shadowwarn.py").write_text(code + "\nclass Warn(Warning): pass\n")
        user_site = layout.home / ".local" / "lib" / "python3.11" / "site-packages"
        user_site.mkdir(parents=True)
        (user_site / "usercustomize.py").write_text(code)
        done = layout.run(
            runner,
            env={
                "PYTHONPATH": f"{layout.workspace}:.",  # a workflow's `PYTHONPATH: .`
                "PYTHONWARNINGS": "ignore::shadowwarn.Warn",
                "PYTHONBREAKPOINT": "shadowwarn.Warn",
            },
        )
        assert done.returncode == 0, done.stdout + done.stderr
        by_root = [p.name for p in drop.iterdir() if p.name.startswith("imported-by-0-")]
        assert by_root == [], done.stdout


SCRATCH_LINKS = r"""
import json, os, sys

drop, root_only, site = DROP, ROOT_ONLY, SITE
scratch = os.path.dirname(os.environ["HOME"])
tried = {}
names = [f"confirm-{n}.json" for n in range(1, 5)] + [f"merge-base-{n}.json" for n in range(1, 6)]
names += ["requirements.txt", "constraints.txt"]
for n, name in enumerate(names):
    target = os.path.join(site, f"poc-{n}.pth") if n % 2 else os.path.join(root_only, name)
    try:
        os.symlink(target, os.path.join(scratch, name))
    except FileExistsError:
        pass
# the scratch folder itself: renamed away and a link to root's folder put in its place
try:
    os.rename(scratch, scratch + "-moved")
    tried["rename_scratch"] = "DONE"
except OSError as err:
    tried["rename_scratch"] = f"blocked: {type(err).__name__}"
# in a round, the traces file becomes a link to a file only root may read
argv = open(f"/proc/{os.getppid()}/cmdline", "rb").read().split(b"\0")
traces = argv[argv.index(b"--traces") + 1].decode()
if b"--confirm" in argv:
    os.unlink(traces)
    os.symlink(os.path.join(root_only, "secret"), traces)
with open(os.path.join(drop, f"tried-{os.getpid()}.json"), "w") as out:
    json.dump(tried, out)
"""


def test_links_the_prs_user_plants_in_its_scratch_folder_are_never_followed(runner: Runner):
    with github_layout("") as layout:
        drop = _drop(layout)
        probe = SCRATCH_LINKS.replace("DROP", repr(str(drop)))
        probe = probe.replace("ROOT_ONLY", repr(str(layout.root_only)))
        probe = probe.replace("SITE", repr(str(SITE)))
        (layout.workspace / "probe.py").write_text(answering("nope", probe))
        (layout.root_only / "secret").write_text(SECRET)
        (layout.root_only / "secret").chmod(0o600)
        before = _pth_files()
        baseline = _baseline(layout)
        done = layout.run(runner, baseline=str(baseline))
        said = done.stdout + done.stderr
        # the round whose traces are a link gives no verdict (a regression waiting on its
        # re-runs must not pass as noise), nothing was written through a link, and the
        # root-only file was never read
        assert done.returncode == 3, said
        assert "no verdict: round 1: the agent stage's traces" in said and "were refused" in said
        assert sorted(p.name for p in layout.root_only.iterdir()) == ["secret"]
        assert _pth_files() == before
        tried = [json.loads(p.read_text()) for p in drop.glob("tried-*.json")]
        assert tried and all(t["rename_scratch"].startswith("blocked") for t in tried)
        assert SECRET not in said
        assert SECRET not in (layout.out / "results.json").read_text()


def test_links_committed_under_output_dir_are_replaced_never_written_through(runner: Runner):
    with github_layout(answering("hi")) as layout:
        out = layout.workspace / "agent-eval-results"
        out.mkdir()
        commands = layout.commands()
        targets = {
            "report.md": commands["GITHUB_ENV"],
            "summary.md": commands["GITHUB_PATH"],
            "pr.json": layout.root_only / "pr.json",
            "diff.json": layout.root_only / "diff.json",
            "results.json": layout.root_only / "results.json",
        }
        for name, target in targets.items():
            (out / name).symlink_to(target)
        done = layout.run(runner, **{"output-dir": "agent-eval-results"})
        assert done.returncode == 0, done.stdout + done.stderr
        assert commands["GITHUB_ENV"].read_text() == ""
        assert commands["GITHUB_PATH"].read_text() == ""
        assert list(layout.root_only.iterdir()) == []
        for name in targets:  # the action's own files now, no links
            assert (out / name).is_file() and not (out / name).is_symlink(), name
        assert json.loads((out / "pr.json").read_text())["number"] == 7


@pytest.mark.parametrize("where", ["itself", "its parent"])
def test_output_dir_through_a_link_is_refused(runner: Runner, where: str):
    with github_layout(answering("hi")) as layout:
        if where == "itself":
            (layout.workspace / "agent-eval-results").symlink_to(layout.root_only)
            value = "agent-eval-results"
        else:
            (layout.workspace / "build").symlink_to(layout.root_only)
            value = "build/agent-eval-results"
        done = layout.run(runner, **{"output-dir": value})
        assert done.returncode == 2, done.stdout + done.stderr
        assert "symbolic link" in done.stdout
        assert list(layout.root_only.iterdir()) == []


KILLS_ITS_STAGE = r"""
import os, signal, sys

for line in sys.stdin:
    os.kill(os.getppid(), signal.SIGKILL)  # the agent stage, before any trace is written
"""


def test_a_committed_results_json_is_never_the_verdict_of_a_killed_stage(runner: Runner):
    with github_layout(KILLS_ITS_STAGE) as layout:
        passing = _baseline(layout).read_text()
        out = layout.workspace / "agent-eval-results"
        out.mkdir()
        (out / "results.json").write_text(passing)
        done = layout.run(runner, **{"output-dir": "agent-eval-results"})
        said = done.stdout + done.stderr
        assert done.returncode == 3, said
        assert "the agent stage was killed by SIGKILL" in said
        assert not any(c.get("conclusion") == "success" for c in runner.fake.check_runs.values()), (
            said
        )
        assert runner.fake.comments_on(7) == []
        assert not (out / "results.json").exists()  # not this run's: removed


FORGES_RE_RUNS = r"""
import json, os, sys

argv = open(f"/proc/{os.getppid()}/cmdline", "rb").read().split(b"\0")
traces = argv[argv.index(b"--traces") + 1].decode()
if b"--confirm" in argv:
    # the round's traces file: the agent stage goes on writing the old one under another
    # name, root finds passing "re-runs" nobody planned under the round's header (root took
    # the suite's traces out of the scratch folder: they are made up)
    with open(traces) as own:
        header = own.readline().strip()
    os.rename(traces, traces + ".real")
    answer = {"role": "model", "parts": [{"text": "hi"}]}
    lines = [header]
    for run in (50, 51, 52):
        trace = {"eval_set_id": "probe", "eval_id": "probe", "run": run}
        lines.append(json.dumps({"trace": {**trace, "turns": [{"final_response": answer}]}}))
    lines.append(json.dumps({"end": {"cancelled": False}}))
    with open(traces, "w") as out:
        out.write("\n".join(lines) + "\n")
"""


def test_traces_of_re_runs_nobody_planned_are_refused(runner: Runner):
    with github_layout(answering("nope", FORGES_RE_RUNS)) as layout:
        baseline = _baseline(layout)
        done = layout.run(runner, baseline=str(baseline))
        said = done.stdout + done.stderr
        assert done.returncode == 2, said
        assert "a trace nobody asked for: probe / probe run 50" in said
        assert not any(c.get("conclusion") == "success" for c in runner.fake.check_runs.values()), (
            said
        )


def test_an_eval_file_linked_to_a_root_only_file_is_refused_unread(runner: Runner):
    with github_layout(answering("hi")) as layout:
        secret = layout.root_only / "secret.evalset.json"
        secret.write_text('{"eval_set_id": "' + SECRET + '", "eval_cases": []}')
        secret.chmod(0o600)
        (layout.workspace / "evals" / "stolen.evalset.json").symlink_to(secret)
        done = layout.run(runner)
        said = done.stdout + done.stderr
        assert done.returncode == 2, said
        assert "stolen.evalset.json" in said and "symbolic link" in said
        assert SECRET not in said


@pytest.fixture(autouse=True)
def _no_leftover_pth() -> Iterator[None]:
    before = _pth_files()
    yield
    for name in _pth_files() - before:  # a failed run must not poison the image venv
        (SITE / name).unlink()


HOPS_PIDS = r"""
import json, os, sys, time

drop = DROP
if os.fork() == 0:  # a process that forks and exits in a loop: never one pid for long
    os.setsid()
    marker, hops = os.path.join(drop, "alive"), 0
    while True:
        if os.fork():
            os._exit(0)
        hops += 1
        if hops % 64 == 1:  # at once, then now and then: say it still runs
            with open(marker, "w") as out:
                out.write(str(time.time()))

while not os.path.exists(os.path.join(drop, "alive")):  # answer only once it hops
    time.sleep(0.01)

for line in sys.stdin:
    message = json.loads(line)
    if message.get("type") == "end":
        continue
    answer = {"role": "model", "parts": [{"text": "hi"}]}
    print(json.dumps({"id": message["id"], "final_response": answer}), flush=True)
"""


def test_a_process_that_hops_pids_does_not_outlive_its_stage(runner: Runner):
    with github_layout("") as layout:
        drop = _drop(layout)
        hops = HOPS_PIDS.replace("DROP", repr(str(drop)))
        (layout.workspace / "probe.py").write_text(answering("hi", hops))
        done = layout.run(runner)
        assert done.returncode == 0, done.stdout + done.stderr
        marker = drop / "alive"
        assert marker.exists()  # it ran
        seen = marker.read_text()
        time.sleep(1.0)
        assert marker.read_text() == seen  # and stopped with its stage
        assert not any(
            uid >= FIRST_UID for uid in (_uid(p) for p in Path("/proc").iterdir()) if uid
        )


def _uid(proc: Path) -> int | None:
    try:
        status = (proc / "status").read_text()
    except OSError:
        return None
    if "\nState:\tZ" in status:
        return None
    line = next(x for x in status.splitlines() if x.startswith("Uid:"))
    return int(line.split()[1])


STOPS_THE_KILLER = r"""
import os, signal, time

stage = os.getppid()
if os.fork() == 0:  # detached: kills its stage, then stops whatever of its uid comes along
    os.setsid()
    os.kill(stage, signal.SIGKILL)
    ends = time.monotonic() + 20
    while time.monotonic() < ends:
        os.kill(-1, signal.SIGSTOP)  # the kill helper too, were it of this uid
    os.kill(-1, signal.SIGCONT)
    os._exit(0)
"""


def test_a_process_that_stops_its_users_processes_cannot_stop_the_killer(runner: Runner):
    with github_layout(answering("hi", STOPS_THE_KILLER)) as layout:
        started = time.monotonic()
        done = layout.run(runner)
        took = time.monotonic() - started
        assert done.returncode == 3, done.stdout + done.stderr  # its stage was killed
        assert took < 15, f"the action waited {took:.0f} s on a stopped killer"
        assert not any(
            uid >= FIRST_UID for uid in (_uid(p) for p in Path("/proc").iterdir()) if uid
        )


TAKE_PARENTS_FDS = r"""
import ctypes, errno, json, os

libc = ctypes.CDLL(None, use_errno=True)
SYS_PIDFD_GETFD = 438  # x86_64 and arm64
got = {}
pidfd = os.pidfd_open(os.getppid())  # the agent stage: the relay's pipes are its fds
for fd in range(3, 32):
    taken = libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0)
    got[fd] = "TAKEN" if taken >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
with open(os.path.join(DROP, f"fds-{os.getpid()}.json"), "w") as out:
    json.dump(got, out)
"""


def test_a_worker_cannot_take_the_agent_stages_file_descriptors(runner: Runner):
    """A `--command` worker reaching into its parent, the agent stage, for the user-turn
    relay's pipes (pidfd_getfd, as the same uid): refused, the stage is not dumpable."""
    with github_layout("") as layout:
        drop = _drop(layout)
        probe = TAKE_PARENTS_FDS.replace("DROP", repr(str(drop))) + answering("hi")
        (layout.workspace / "probe.py").write_text(probe)
        layout.give_to_runner()
        done = layout.run(runner)
        assert done.returncode == 0, done.stdout + done.stderr
        [said] = [json.loads(p.read_text()) for p in drop.glob("fds-*.json")]
        assert "TAKEN" not in said.values(), said
        assert set(said.values()) <= {"EPERM", "EBADF"} and "EPERM" in said.values(), said
