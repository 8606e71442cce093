"""The action's accept offer (accept/offer.py): on a PR whose gate fails on regressions, the
patches that `accept` would make are written into output-dir from this run's Results and
the checkout's eval files, the comment says how to accept (the command, on the run's own
files), and applying the patch makes the PR's agent pass."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from helpers.action_harness import AGENT, Runner, clean_env, main_with_baseline, pr_payload
from helpers.paths import ROOT, python_command

pytestmark = pytest.mark.e2e


REWORDED = "Send it back within a month of delivery and we refund you in full."


def test_a_regressed_pr_gets_the_accept_patch_and_the_way_to_accept(
    runner: Runner, baseline_results: bytes, tmp_path
):
    """The PR's agent skips a check (a trajectory regression) and rewords an answer (a
    response regression): each is offered on its axis, and either way of accepting passes."""
    main, head = main_with_baseline(runner.fake, baseline_results)
    runner.fake.add_pull(7, head, main[3])
    agent = runner.tmp / "reworded_agent.py"
    source = AGENT.read_text()
    old = "You can return any item within 30 days of delivery for a full refund."
    assert old in source
    agent.write_text(source.replace(old, REWORDED))
    before = (ROOT / "examples" / "evals" / "support.evalset.json").read_bytes()
    env = runner.env("pull_request", pr_payload(7, head, main[3]), command=python_command(agent))
    done = runner.run(env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert (ROOT / "examples" / "evals" / "support.evalset.json").read_bytes() == before
    patch = (runner.out_dir / "accept.patch").read_text(encoding="utf-8")
    assert "--- a/examples/evals/support.evalset.json\n" in patch
    assert "--- a/examples/evals/legacy/faq.test.json\n" in patch  # it answers the same there
    trajectory = (runner.out_dir / "accept-trajectory.patch").read_text(encoding="utf-8")
    response = (runner.out_dir / "accept-response.patch").read_text(encoding="utf-8")
    assert '"text": "' + REWORDED + '"' in response
    assert REWORDED not in trajectory and '"name": "lookup_order"' in trajectory
    assert REWORDED in patch and '"name": "lookup_order"' in patch
    body = runner.fake.comments_on(7)[0]["body"]
    assert "**Intended?**" in body
    assert "support / gold\\_express\\_refund (trajectory)" in body  # the axis it regressed on
    assert "support / return\\_policy (response)" in body
    assert "(the artifacts of [this run](https://github.com/" in body
    assert "`agent-eval-action accept results.json --diff diff.json`" in body
    assert "`accept.patch`" in body
    # in a checkout: the patch applied, or `accept` on the run's files: the same, and a pass
    for how in ("patch", "command"):
        checkout = tmp_path / how
        shutil.copytree(ROOT / "examples" / "evals", checkout / "examples" / "evals")
        if how == "patch":
            applied = subprocess.run(
                ["git", "apply", str(runner.out_dir / "accept.patch")],
                cwd=checkout,
                capture_output=True,
                text=True,
            )
            assert applied.returncode == 0, applied.stderr
        else:
            argv = [sys.executable, "-m", "agent_eval_action", "accept"]
            argv += [
                str(runner.out_dir / "results.json"),
                "--diff",
                str(runner.out_dir / "diff.json"),
            ]
            accepted = subprocess.run(
                argv, cwd=checkout, capture_output=True, text=True, env=clean_env()
            )
            assert accepted.returncode == 0, accepted.stderr
        argv = [sys.executable, "-m", "agent_eval_action", "run", "examples/evals"]
        argv += ["--command", python_command(agent), "--out", str(checkout / "r.json")]
        again = subprocess.run(argv, cwd=checkout, capture_output=True, text=True, env=clean_env())
        assert again.returncode == 0, again.stdout + again.stderr
    one, other = (
        (tmp_path / how / "examples" / "evals" / "support.evalset.json").read_bytes()
        for how in ("patch", "command")
    )
    assert one == other


def test_a_passing_pr_gets_no_accept_patch_and_no_offer(runner: Runner, baseline_results: bytes):
    from helpers.action_harness import main_with_baseline as with_baseline

    main, head = with_baseline(runner.fake, baseline_results)
    runner.fake.add_pull(7, head, main[3])
    fixed = runner.tmp / "fixed_agent.py"
    fixed.write_text(AGENT.read_text().replace(' and session.tier != "gold"', ""))
    env = runner.env("pull_request", pr_payload(7, head, main[3]), command=python_command(fixed))
    done = runner.run(env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not list(runner.out_dir.glob("accept*.patch"))
    assert "Intended?" not in runner.fake.comments_on(7)[0]["body"]


@pytest.mark.parametrize("fault", [RecursionError(), OSError("gone"), ValueError("bad")])
def test_an_offer_that_cannot_be_made_is_a_warning_and_the_report_goes_on(
    monkeypatch, tmp_path, fault
):
    """An eval file nested deeper than the edit can follow (the loader's limit is looser),
    or one unreadable now: no accept.patch, said, and never the job's traceback."""
    from types import SimpleNamespace

    from agent_eval_action.accept import offer
    from agent_eval_action.action import stages

    def broken(*_args, **_kwargs):
        raise fault

    said: list[tuple[str, str]] = []
    monkeypatch.setattr(offer, "offer", broken)
    monkeypatch.setattr(stages.outputs, "command", lambda *args: said.append(args))
    ctx = SimpleNamespace(out_dir=tmp_path)
    assert stages._accept_offer(None, None, ctx) is None  # type: ignore[arg-type]
    ((kind, message),) = said
    assert kind == "warning" and message.startswith("no accept.patch: ")
