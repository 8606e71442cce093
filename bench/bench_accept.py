"""The action's accept offer (accept/offer.py) on a PR with many regressed cases.

    python bench/bench_accept.py                  # 2,000 regressed cases in one eval file
    python bench/bench_accept.py --cases 5000

The offer runs as root in the PR job, on the PR's eval files: its time must grow with the
file, not with the file times its cases. Set up: one EvalSet of N one-turn cases that each
expect `track` and an answer, run by the table agent (tests/workers/table_agent.py) that
calls two other tools and answers otherwise, so every case regressed on both axes against
a baseline run in which each passed. Timed: `offer` (three patches: both axes, trajectory,
response), and `accept --dry-run` in a process of its own. Printed: the eval file's size,
the seconds of each, and the patches' sizes.
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

from helpers.table_suite import RIGHT, TABLE_AGENT, write_order_suite  # noqa: E402

NEW = {"text": "Shipped: it arrives Friday.", "tools": [["track", {"id": "A-1"}], ["notify", {}]]}


def _run(where: Path, table: dict, out: str) -> None:
    (where / "table.json").write_text(json.dumps(table))
    command = f"{sys.executable} {TABLE_AGENT} table.json"
    argv = [sys.executable, "-m", "agent_eval_action", "run", "evals", "--command", command]
    argv += ["--concurrency", "8", "--confirm-runs", "0", "--out", out]
    subprocess.run(argv, cwd=where, check=False, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    args = parser.parse_args()
    from agent_eval_action.accept.offer import offer
    from agent_eval_action.compare import compare, load_results

    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        ids = [f"c{i}" for i in range(args.cases)]
        evalset = write_order_suite(where, ids, indent=2)
        config = {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}
        (where / "evals" / "test_config.json").write_text(json.dumps(config))
        _run(where, dict.fromkeys(ids, RIGHT), "base.json")
        _run(where, dict.fromkeys(ids, NEW), "pr.json")
        results = load_results(str(where / "pr.json"))
        diff = compare(results, load_results(str(where / "base.json")))
        out = where / "out"
        out.mkdir()
        started = time.perf_counter()
        made = offer(results, diff, where, out)
        offered = time.perf_counter() - started
        argv = [sys.executable, "-m", "agent_eval_action", "accept", "pr.json"]
        argv += ["--baseline", "base.json", "--dry-run"]
        started = time.perf_counter()
        cli = subprocess.run(argv, cwd=where, capture_output=True, check=False)
        dry = time.perf_counter() - started
        print(f"eval file: {args.cases:,} cases, {evalset.stat().st_size / 1e6:.1f} MB")
        print(f"cases offered: {len(made.cases) if made else 0:,}")
        print(f"offer (3 patches): {offered:.2f} s")
        print(f"accept --dry-run (a process, loading and comparing included): {dry:.2f} s")
        for patch in sorted(out.glob("*.patch")):
            print(f"  {patch.name}: {patch.stat().st_size / 1e6:.1f} MB")
        if cli.returncode != 0:
            sys.exit(f"accept --dry-run exited {cli.returncode}: {cli.stderr.decode()[-500:]}")


if __name__ == "__main__":
    main()
