"""What confirming a regression adds to a PR's run, in agent latencies (issue 33).

    python bench/bench_confirm.py                   # 20 cases, 2 s a case-run, concurrency 4
    python bench/bench_confirm.py --latency 2 --cases 40 --concurrency 8

A `--command` agent (tests/workers/table_agent.py) that sleeps `--latency` seconds a
case-run answers every case as the baseline expects but one, which skips its tool in every
run: a deterministic tool-call regression that each confirmation re-run shows again
(`--confirm-runs 3`: confirmed in 3/3). Timed: `run --baseline` with `--confirm-runs 0`
(no re-runs) and with the default 3, best of `--repeat`; printed: both, and the difference
in latencies. Target: at most 1.5 latencies (the re-runs run ahead on idle slots:
pipeline/session.py); one re-run a round took 3 latencies and more.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from helpers.table_suite import RIGHT, SKIPS_THE_TOOL, TABLE_AGENT, write_order_suite  # noqa: E402

TARGET = 1.5


def _run(where: Path, table: dict, out: str, *flags: str) -> float:
    (where / "table.json").write_text(json.dumps(table))
    command = f"{sys.executable} {TABLE_AGENT} table.json"
    argv = [sys.executable, "-m", "agent_eval_action", "run", "evals", "--command", command]
    started = time.perf_counter()
    subprocess.run([*argv, "--out", out, *flags], cwd=where, capture_output=True, check=False)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20)
    parser.add_argument("--latency", type=float, default=2.0)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=2)
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
        pr = ("--baseline", "base.json", *concurrency)
        plain = min(
            _run(where, table, "plain.json", *pr, "--confirm-runs", "0") for _ in range(args.repeat)
        )
        confirmed = min(_run(where, table, "confirmed.json", *pr) for _ in range(args.repeat))
        results = json.loads((where / "confirmed.json").read_text())
        case = next(c for c in results["cases"] if c["eval_id"] == ids[0])
        added = (confirmed - plain) / args.latency
        print(f"{args.cases} cases, {args.latency:g} s a case-run, concurrency {args.concurrency}")
        print(f"run --confirm-runs 0: {plain:.2f} s")
        print(f"run (3 confirmation re-runs, {len(case['runs']) - 1} recorded): {confirmed:.2f} s")
        verdict = "met" if added <= TARGET else "NOT met"
        print(f"confirmation added {added:.2f} agent latencies (target <= {TARGET}: {verdict})")


if __name__ == "__main__":
    main()
