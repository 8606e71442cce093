"""Faults in the action's confirmation rounds never turn into a pass (a hostile review of the
rounds started ahead, docs/security.md), in GitHub's container layout (helpers/layout.py),
the PR's agent a user of its own:

- a re-run that errors (the PR's agent answers its re-runs with an error, as a 429 would):
  no evidence either way, so the regression stands;
- a round's agent stage that the PR's code kills: no verdict (exit 3), where the rounds
  once stopped in silence and a flip still pending on its re-runs passed as noise;
- a round's traces that say the stage was cancelled, or end short: no verdict, said as the
  stage's doing, not as a cancellation of the run.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from helpers.action_harness import Runner
from helpers.layout import HI_CASE, Layout, answering, github_layout
from helpers.paths import IMAGE_PYTHON, ISOLATED, image_entrypoint

pytestmark = [pytest.mark.e2e, ISOLATED]

CASES = [HI_CASE, {**HI_CASE, "eval_id": "steady"}]
# the PR's agent: "probe" answers "nope" where main said "hi"; "steady" still says "hi"
REGRESSED = answering("nope").replace(
    '"text": "nope"', '"text": "nope" if message["eval_id"] == "probe" else "hi"'
)


def _baseline(layout: Layout, agent: str, *flags: str) -> str:
    """main's baseline, run by the image's entry point outside the action."""
    path = layout.base / "main_agent.py"
    path.write_text(agent)
    out = layout.base / "baseline.json"
    argv = [*image_entrypoint(), "run", str(layout.workspace / "evals"), "--out", str(out)]
    argv += ["--command", f"{IMAGE_PYTHON} {path}", *flags]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return str(out)


def _probe_diff(layout: Layout) -> dict:
    diff = json.loads((layout.out / "diff.json").read_text())
    return next(c for c in diff["cases"] if c["eval_id"] == "probe")


ERRORS_ON_RE_RUNS = r"""
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("type") == "end":
        continue
    if m["eval_id"] == "probe" and m["run"] > 1:
        print(json.dumps({"id": m["id"], "error": "429 RESOURCE_EXHAUSTED"}), flush=True)
        continue
    text = "nope" if m["eval_id"] == "probe" else "hi"
    answer = {"role": "model", "parts": [{"text": text}]}
    print(json.dumps({"id": m["id"], "final_response": answer}), flush=True)
"""


def test_re_runs_that_error_leave_the_regression_standing(runner: Runner):
    with github_layout(ERRORS_ON_RE_RUNS, CASES) as layout:
        done = layout.run(runner, baseline=_baseline(layout, answering("hi")))
        said = done.stdout + done.stderr
        assert done.returncode == 1, said
        probe = _probe_diff(layout)
        assert probe["change"] == "new_failure" and not probe["flaky"], probe
        assert probe["confirmation"]["inconclusive"] == probe["confirmation"]["runs"] == 3
        assert {m["rule"] for m in probe["metrics"] if m["change"] == "new_failure"} == {
            "unconfirmed"
        }


# What a probe knows of its agent stage: its parent's argv, the traces file it writes, and
# whether it runs a confirmation round (`--confirm`).
STAGE = r"""
import json, os, signal
argv = open(f"/proc/{os.getppid()}/cmdline", "rb").read().split(b"\0")
traces = argv[argv.index(b"--traces") + 1].decode()
"""

# Kills its parent, the agent stage, when that stage runs a confirmation round.
KILLS_ROUND_STAGE = (
    STAGE
    + r"""
if b"--confirm" in argv:
    os.kill(os.getppid(), signal.SIGKILL)
"""
)


def test_a_killed_round_stage_gives_no_verdict(runner: Runner):
    with github_layout(KILLS_ROUND_STAGE + REGRESSED, CASES) as layout:
        done = layout.run(runner, baseline=_baseline(layout, answering("hi")))
        said = done.stdout + done.stderr
        assert done.returncode == 3, said
        assert "no verdict: round 1: the agent stage was killed by SIGKILL" in said
        assert not any(c.get("conclusion") == "success" for c in runner.fake.check_runs.values())


# main's agent varies: run 2 of its sampling answers "nope", so main's record shows the
# case failing now and then, and a flip here is pending until re-runs tell
VARIES_ON_MAIN = r"""
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("type") == "end":
        continue
    text = "nope" if (m["eval_id"] == "probe" and m["run"] == 2) else "hi"
    answer = {"role": "model", "parts": [{"text": text}]}
    print(json.dumps({"id": m["id"], "final_response": answer}), flush=True)
"""


@pytest.mark.parametrize("kill", [False, True], ids=["re-runs", "stage-killed"])
def test_a_pending_flip_is_never_passed_by_killing_its_round(runner: Runner, kill: bool):
    """The flip is confirmed by its re-runs; with the round's stage killed it was once
    "within noise" and the gate passed."""
    with github_layout((KILLS_ROUND_STAGE if kill else "") + REGRESSED, CASES) as layout:
        flags = ("--record-baseline", "--baseline-runs", "10")
        baseline = _baseline(layout, VARIES_ON_MAIN, *flags)
        done = layout.run(runner, baseline=baseline, **{"confirm-runs": "8"})
        said = done.stdout + done.stderr
        assert done.returncode == (3 if kill else 1), said
        if not kill:
            assert _probe_diff(layout)["change"] == "new_failure"


# Rewrites its round's traces file, before its stage writes a line, into one that ends
# saying the stage was cancelled (`cancelled`), or with no end line at all (`short`).
ENDS_ROUND = (
    STAGE
    + r"""
if b"--confirm" in argv:
    with open(traces) as own:
        header = own.readline().strip()
    os.rename(traces, traces + ".real")
    answer = {"role": "model", "parts": [{"text": "nope"}]}
    lines = [header] + [
        json.dumps({"trace": {"eval_set_id": "probe", "eval_id": "probe", "run": run,
                              "turns": [{"final_response": answer}]}})
        for run in (2, 3, 4)
    ] + END
    with open(traces, "w") as out:
        out.write("\n".join(lines) + "\n")
"""
)


@pytest.mark.parametrize("end", ["cancelled", "short"])
def test_round_traces_that_end_short_give_no_verdict_said_as_the_stages(runner: Runner, end: str):
    last = '[json.dumps({"end": {"cancelled": True}})]' if end == "cancelled" else "[]"
    with github_layout(ENDS_ROUND.replace("END", last) + REGRESSED, CASES) as layout:
        done = layout.run(runner, baseline=_baseline(layout, answering("hi")))
        said = done.stdout + done.stderr
        assert done.returncode == 3, said
        assert "though the run was not" in said and "SIGTERM" not in said


# Rewrites its round's traces file, before its stage writes a line, into one that holds no
# trace but ends well: the stage exits 0 with its planned re-runs left out.
LEAVES_OUT_ITS_RUNS = (
    STAGE
    + r"""
if b"--confirm" in argv:
    try:  # once: the stage's first worker does it, the others find it done
        os.close(os.open(traces + ".taken", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        pass
    else:
        with open(traces) as own:
            header = own.readline().strip()
        os.rename(traces, traces + ".real")
        with open(traces, "w") as out:
            out.write(header + "\n" + json.dumps({"end": {"cancelled": False}}) + "\n")
"""
)


def test_a_round_that_leaves_out_its_re_runs_never_passes_a_pending_flip(runner: Runner):
    """Each left-out re-run is errored ("returned no trace"): no evidence either way, so
    the flip, pending on its re-runs, stands unconfirmed instead of passing as noise."""
    with github_layout(LEAVES_OUT_ITS_RUNS + REGRESSED, CASES) as layout:
        flags = ("--record-baseline", "--baseline-runs", "10")
        baseline = _baseline(layout, VARIES_ON_MAIN, *flags)
        done = layout.run(runner, baseline=baseline, **{"confirm-runs": "8"})
        said = done.stdout + done.stderr
        assert done.returncode == 1, said
        probe = _probe_diff(layout)
        assert probe["change"] == "new_failure" and probe["confirmation"]["inconclusive"] > 0
