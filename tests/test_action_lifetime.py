"""Nothing of the PR's user outlives its stage, and root's reads stay bounded
(docs/security.md, "Lifetime"), each tried by the PR's code through the image's entry point
in GitHub's container layout (helpers/layout.py), the action as PID 1 of a PID namespace of
its own where this machine allows it (as in its container), else as a child of the test.

- a process that forks and exits in a loop, a `setsid` double fork, a process that ignores
  SIGTERM: none of the PR's uid is alive, and no zombie waits under the action, while the
  score stage judges (seen from the fake Gemini, as the judge's request is held open);
- a fork bomb: stopped by the PR user's process limit (RLIMIT_NPROC), which it cannot
  raise; its case-run fails and the score stage still scores;
- a traces file the PR's code made larger than the cap (sparse: it costs nothing to make):
  refused in one line naming it, before root copies a byte, in little memory; one at the
  cap: taken without a copy, and refused at its first line past the line cap.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest
from fakes.gemini import FakeGemini, default_answer, kind_of
from helpers.action_harness import Runner
from helpers.layout import Layout, answering, github_layout, peak_kb, written_kb
from helpers.paths import ISOLATED

from agent_eval_action.action.sandbox import MAX_PROCESSES
from agent_eval_action.pipeline.run_cases import MAX_TRACE_LINE_BYTES, MAX_TRACES_BYTES

pytestmark = [pytest.mark.e2e, ISOLATED]

FORK_LOOP = r"""
if os.fork() == 0:  # forks and exits in a loop: never at one pid for long
    while True:
        if os.fork():
            os._exit(0)
"""

SETSID_DOUBLE_FORK = r"""
if os.fork() == 0:  # a daemon: a session of its own, its parent gone
    os.setsid()
    if os.fork() == 0:
        while True:
            time.sleep(1)
    os._exit(0)
"""

IGNORES_TERM = r"""
if os.fork() == 0:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    while True:
        time.sleep(1)
"""

LEAVES = r"""
import os, signal, sys, time
open(os.path.join(DROP, "uid"), "w").write(str(os.getuid()))
""".lstrip()


def _drop(layout: Layout) -> Path:
    drop = layout.base / "drop"
    drop.mkdir(exist_ok=True)
    drop.chmod(0o1777)
    return drop


def _processes() -> dict[int, tuple[int, str, int]]:
    """Every process this test can see: pid -> (parent pid, state, real uid)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        found[int(entry.name)] = (
            int(fields["PPid"]),
            fields["State"].split()[0],
            int(fields["Uid"].split()[0]),
        )
    return found


def _below_me(table: dict[int, tuple[int, str, int]]) -> set[int]:
    """The processes descended from this test's process (the action and all it started,
    its orphans too once its init collects them: init is one of them)."""
    mine = {os.getpid()}
    grew = True
    while grew:
        more = {pid for pid, (parent, _, _) in table.items() if parent in mine} - mine
        mine |= more
        grew = bool(more)
    return mine - {os.getpid()}


class Watch:
    """What the fake Gemini saw of the PR's uid while each judge request was held open."""

    def __init__(self, drop: Path) -> None:
        self.drop = drop
        self.seen: list[tuple[list[int], list[int]]] = []
        self.lock = threading.Lock()

    def __call__(self, prompt: str) -> str:
        uid = int((self.drop / "uid").read_text())
        time.sleep(0.5)  # the request held open: what is left has time to show
        table = _processes()
        alive = [pid for pid, (_, state, owner) in table.items() if owner == uid and state != "Z"]
        zombies = [pid for pid in _below_me(table) if table[pid][1] == "Z"]
        with self.lock:
            self.seen.append((alive, zombies))
        return default_answer(kind_of(prompt), prompt)


@pytest.mark.parametrize(
    "leaves",
    [FORK_LOOP, SETSID_DOUBLE_FORK, IGNORES_TERM],
    ids=["fork-and-exit-loop", "setsid-double-fork", "ignores-sigterm"],
)
def test_nothing_of_the_prs_user_is_alive_while_the_score_stage_judges(runner: Runner, leaves: str):
    with github_layout("") as layout, FakeGemini() as gemini:
        drop = _drop(layout)
        before = (LEAVES + leaves).replace("DROP", repr(str(drop)))
        (layout.workspace / "probe.py").write_text(answering("hi", before))
        config = layout.workspace / "judged.json"
        config.write_text(json.dumps({"criteria": {"final_response_match_v2": 0.5}}))
        watch = Watch(drop)
        gemini.respond("verdict", watch)
        done = layout.run(
            runner,
            pid1=True,
            env={"GOOGLE_GEMINI_BASE_URL": gemini.url},
            config="judged.json",
            **{"judge-api-key": "judge-key"},
        )
        said = done.stdout + done.stderr
        assert done.returncode == 0, said
        assert watch.seen, said  # the score stage judged, so the checks ran while it did
        for alive, zombies in watch.seen:
            assert alive == [], f"the PR's processes {alive} outlived the agent stage"
            assert zombies == [], f"zombies {zombies} wait under the action"


FORK_BOMB = r"""
import json, os, signal, sys
if os.path.exists(os.path.join(DROP, "bomb.json")) or not sys.stdin.readline():
    sys.exit(0)  # a worker started again after the bomb, or the stage's end
children = 0
try:
    while True:
        if os.fork() == 0:
            signal.pause()  # each child waits: the bomb holds every process it made
            os._exit(0)
        children += 1
except OSError as err:
    failed = err.errno
try:  # the limit is root's to raise, not the PR's
    import resource
    resource.setrlimit(resource.RLIMIT_NPROC, (resource.RLIM_INFINITY,) * 2)
    raised = "raised"
except (ValueError, OSError) as err:
    raised = type(err).__name__
open(os.path.join(DROP, "bomb.json"), "w").write(
    json.dumps({"children": children, "errno": failed, "raised": raised})
)
sys.exit(1)  # the worker dies with its case-run
"""


def test_a_fork_bomb_stops_at_the_process_limit_and_the_score_stage_still_runs(runner: Runner):
    with github_layout("") as layout:
        drop = _drop(layout)
        probe = FORK_BOMB.replace("DROP", repr(str(drop)))
        (layout.workspace / "probe.py").write_text(probe)
        # the bomb's children hold the worker's pipes: its case-run ends at its timeout
        done = layout.run(runner, pid1=True, timeout=120, env={"INPUT_TIMEOUT": "20"})
        said = done.stdout + done.stderr
        bomb = json.loads((drop / "bomb.json").read_text())
        assert bomb["errno"] == 11, bomb  # EAGAIN: the limit, not memory
        # the PR's user's processes and threads (the agent stage's too) count against it
        assert MAX_PROCESSES // 2 < bomb["children"] < MAX_PROCESSES, bomb
        assert bomb["raised"] != "raised", bomb
        # its case-run errored, and the score stage scored it: a verdict, a failing one
        assert done.returncode == 1, said
        results = json.loads((layout.out / "results.json").read_text())
        assert results["cases"][0]["status"] == "errored", results["cases"][0]


GROWS_TRACES = r"""
import json, os, sys
argv = open(f"/proc/{os.getppid()}/cmdline", "rb").read().split(b"\0")
traces = argv[argv.index(b"--traces") + 1].decode()
for line in sys.stdin:
    message = json.loads(line)
    if message.get("type") == "end":
        continue
    answer = {"role": "model", "parts": [{"text": "hi"}]}
    print(json.dumps({"id": message["id"], "final_response": answer}), flush=True)
    # sparse: nothing of the PR's disk, and 4 GiB of root's to copy
    os.truncate(traces, LIMIT + 1)
"""


def test_traces_past_the_cap_are_refused_in_one_line_before_a_byte_is_copied(runner: Runner):
    grows = GROWS_TRACES.replace("LIMIT", str(MAX_TRACES_BYTES))
    with github_layout(grows) as layout:
        started = time.monotonic()
        done = layout.run(runner, pid1=True)
        took = time.monotonic() - started
        said = done.stdout + done.stderr
        assert done.returncode == 3, said  # no verdict, never a pass
        errors = [line for line in done.stdout.splitlines() if line.startswith("::error::")]
        assert len(errors) == 1, said
        assert "traces.jsonl" in errors[0] and f"more than {MAX_TRACES_BYTES}" in errors[0]
        assert "Traceback" not in said
        assert not (layout.out / "results.json").exists()
        # nothing was copied (4 GiB) and no process grew large
        assert written_kb(done) < 256 * 1024, f"{written_kb(done)} kB written"
        assert peak_kb(done) < 1024 * 1024, f"{peak_kb(done)} kB"
        assert took < 120, f"{took:.0f} s"


def test_traces_at_the_cap_cost_root_no_copy_and_one_line_at_most(runner: Runner):
    """4 GiB of NULs after the stage's lines, at the cap: taken by a rename (nothing
    written), then read until the line past MAX_TRACE_LINE_BYTES: bad input naming it."""
    grows = GROWS_TRACES.replace("LIMIT + 1", str(MAX_TRACES_BYTES))
    with github_layout(grows) as layout:
        done = layout.run(runner, pid1=True)
        said = done.stdout + done.stderr
        assert done.returncode == 2, said
        assert "Traceback" not in said
        (line,) = [x for x in said.splitlines() if "a line of more than" in x]
        assert "traces.jsonl:" in line and f"the limit is {MAX_TRACE_LINE_BYTES}" in line
        assert not (layout.out / "results.json").exists()
        assert written_kb(done) < 256 * 1024, f"{written_kb(done)} kB written"
        # the score stage held one line of at most MAX_TRACE_LINE_BYTES (read in pieces,
        # joined: about twice that at the peak), never the file's 4 GiB
        assert peak_kb(done) < 3 * MAX_TRACE_LINE_BYTES // 1024, f"{peak_kb(done)} kB"
