"""What confirming a regression adds to a PR's run, in agent latencies (issue 33).

    python bench/bench_confirm.py                   # 20 cases, 2 s a case-run, concurrency 4
    python bench/bench_confirm.py --latency 2 --cases 40 --concurrency 8
    python bench/bench_confirm.py --route action    # the action alone

A `--command` agent (tests/workers/table_agent.py) that sleeps `--latency` seconds a
case-run answers every case as the baseline expects but one, which skips its tool in every
run: a deterministic tool-call regression that each confirmation re-run shows again
(`--confirm-runs 3`: confirmed in 3/3). Timed, best of `--repeat`, with confirmation off
(`confirm-runs` 0) and with the default 3; printed: both, and the difference in latencies.

- `--route cli`: `run --baseline`. Target: at most 1.5 latencies (the re-runs run ahead on
  idle slots: pipeline/ahead.py); one re-run a round took 3 latencies and more.
- `--route action`: the action's entry point on a pull request, against the fake GitHub of
  the end-to-end tests (tests/helpers/action_harness.py: no user switching, as in
  tests/test_action_confirm.py). Each stage is a child process; its wall time is read from
  the log, where each child's output is relayed between `::stop-commands::` lines. The
  rounds' stage overhead is broken down: each round agent stage's time beyond one latency
  (a process started, the agent imported, traces written and taken: start/stop) and each
  round's score stage (every traces file scored again). Target: at most 2 latencies plus
  that overhead.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from helpers.table_suite import RIGHT, SKIPS_THE_TOOL, TABLE_AGENT, write_order_suite  # noqa: E402

TARGET = 1.5  # latencies, the CLI route
ACTION_TARGET = 2.0  # latencies beyond the action's stage overhead


def _run(where: Path, table: dict, out: str, *flags: str) -> float:
    (where / "table.json").write_text(json.dumps(table))
    command = f"{sys.executable} {TABLE_AGENT} table.json"
    argv = [sys.executable, "-m", "agent_eval_action", "run", "evals", "--command", command]
    started = time.perf_counter()
    subprocess.run([*argv, "--out", out, *flags], cwd=where, capture_output=True, check=False)
    return time.perf_counter() - started


@dataclass
class Timed:
    """One action run: its wall time and each child stage's, in the order they ran."""

    total: float
    agent: list[float] = field(default_factory=list)  # agent stages (the suite's first)
    score: list[float] = field(default_factory=list)  # score stages (the suite's first)

    @property
    def root(self) -> float:
        """The action's own time: starting, the GitHub API, comparing, the report."""
        return self.total - sum(self.agent) - sum(self.score)


def _action(env: dict[str, str]) -> Timed:
    """Run the action, reading its log as it comes: each child's block's start and end."""
    argv = [sys.executable, "-m", "agent_eval_action", "action"]
    started = time.perf_counter()
    child = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert child.stdout is not None
    timed = Timed(0.0)
    block: tuple[str, float, bool] | None = None  # (its closing line, opened at, scored)
    for line in child.stdout:
        now = time.perf_counter()
        line = line.rstrip("\n")
        if block is None and line.startswith("::stop-commands::"):
            block = (f"::{line.split('::')[2]}::", now, False)
        elif block is not None and line == block[0]:
            (timed.score if block[2] else timed.agent).append(now - block[1])
            block = None
        elif block is not None and line.startswith("results: "):
            block = (block[0], block[1], True)
    child.wait()
    timed.total = time.perf_counter() - started
    return timed


def action_route(where: Path, ids: list[str], table: dict, args: argparse.Namespace) -> None:
    from fakes import openapi
    from fakes.github import FakeGitHub
    from helpers.action_harness import Runner, main_with_baseline, pr_payload
    from helpers.paths import python_command

    fake = FakeGitHub(openapi.load())
    fake.start()
    try:
        main, head = main_with_baseline(fake, (where / "base.json").read_bytes())
        fake.add_pull(7, head, main[3])
        runner = Runner(fake, where / "action")
        (where / "action").mkdir()
        (where / "pr-table.json").write_text(json.dumps(table))
        inputs = {
            "evals": str(where / "evals"),
            "command": python_command(TABLE_AGENT, str(where / "pr-table.json")),
            "concurrency": str(args.concurrency),
        }
        payload = pr_payload(7, head, main[3])
        env = runner.env("pull_request", payload, **inputs)
        off = runner.env("pull_request", payload, **inputs, **{"confirm-runs": "0"})
        plain = min((_action(off) for _ in range(args.repeat)), key=lambda t: t.total)
        confirmed = min((_action(env) for _ in range(args.repeat)), key=lambda t: t.total)
        results = json.loads((runner.out_dir / "results.json").read_text())
    finally:
        fake.stop()
    case = next(c for c in results["cases"] if c["eval_id"] == ids[0])
    latency = args.latency
    rounds_agent, rounds_score = confirmed.agent[1:], confirmed.score[1:]
    start_stop = sum(t - latency for t in rounds_agent)
    scoring = sum(rounds_score)
    added = confirmed.total - plain.total
    beyond = (added - start_stop - scoring) / latency

    def stages(timed: Timed) -> str:
        agent = " + ".join(f"{t:.2f}" for t in timed.agent)
        score = " + ".join(f"{t:.2f}" for t in timed.score)
        return (
            f"agent stages {agent} s, score stages {score} s, the action's own {timed.root:.2f} s"
        )

    print(f"action, confirm-runs 0: {plain.total:.2f} s ({stages(plain)})")
    print(
        f"action (3 confirmation re-runs, {len(case['runs']) - 1} recorded): "
        f"{confirmed.total:.2f} s ({stages(confirmed)})"
    )
    print(
        f"confirmation added {added / latency:.2f} agent latencies: {len(rounds_agent)} round "
        f"agent stage(s), start/stop {start_stop:.2f} s ({start_stop / latency:.2f} latencies); "
        f"{len(rounds_score)} round score stage(s), {scoring:.2f} s ({scoring / latency:.2f} "
        f"latencies); the rest {beyond:.2f} latencies"
    )
    verdict = "met" if beyond <= ACTION_TARGET else "NOT met"
    print(
        f"beyond the stage overhead: {beyond:.2f} latencies (target <= {ACTION_TARGET}: {verdict})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20)
    parser.add_argument("--latency", type=float, default=2.0)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--route", choices=("cli", "action", "both"), default="both")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        ids = [f"c{i}" for i in range(args.cases)]
        write_order_suite(where, ids)
        slow = {"sleep": args.latency}
        table = {i: {**RIGHT, **slow} for i in ids}
        concurrency = ("--concurrency", str(args.concurrency))
        _run(where, table, "base.json", *concurrency)
        table[ids[0]] = {**SKIPS_THE_TOOL, **slow}
        print(f"{args.cases} cases, {args.latency:g} s a case-run, concurrency {args.concurrency}")
        if args.route in ("action", "both"):
            action_route(where, ids, table, args)
        if args.route == "action":
            return
        pr = ("--baseline", "base.json", *concurrency)
        plain = min(
            _run(where, table, "plain.json", *pr, "--confirm-runs", "0") for _ in range(args.repeat)
        )
        confirmed = min(_run(where, table, "confirmed.json", *pr) for _ in range(args.repeat))
        results = json.loads((where / "confirmed.json").read_text())
        case = next(c for c in results["cases"] if c["eval_id"] == ids[0])
        added = (confirmed - plain) / args.latency
        print(f"run --confirm-runs 0: {plain:.2f} s")
        print(f"run (3 confirmation re-runs, {len(case['runs']) - 1} recorded): {confirmed:.2f} s")
        verdict = "met" if added <= TARGET else "NOT met"
        print(f"confirmation added {added:.2f} agent latencies (target <= {TARGET}: {verdict})")


if __name__ == "__main__":
    main()
