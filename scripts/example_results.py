"""Two Results of the example support agent: a baseline without its deliberate slip, and now.

    python scripts/example_results.py OUT_DIR

writes OUT_DIR/base.json (the agent with the gold "express" shortcut removed: every case
passes, as on main) and OUT_DIR/results.json (the agent as shipped: gold_express_refund
skips lookup_order, a trajectory regression), then compare them:

    agent-eval-action compare --baseline OUT_DIR/base.json --current OUT_DIR/results.json --format markdown

The Results carry made-up GitHub provenance (repository, commits, run ids), so the report
shows its links as it would in a pull request.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AGENT = ROOT / "examples" / "agent" / "support_agent.py"
SLIP = ' and session.tier != "gold"'


def _run(agent: Path, out: Path, sha: str, ref: str, run_id: str) -> None:
    env = {
        **os.environ,
        "GITHUB_REPOSITORY": "example/support-agent",
        "GITHUB_SHA": sha,
        "GITHUB_REF": ref,
        "GITHUB_RUN_ID": run_id,
        "GITHUB_EVENT_NAME": "push" if ref == "refs/heads/main" else "pull_request",
    }
    command = shlex.join([sys.executable, str(agent)])
    argv = [sys.executable, "-m", "agent_eval_action", "run", "examples/evals"]
    subprocess.run(
        [*argv, "--command", command, "--out", str(out)],
        cwd=ROOT,
        env=env,
        check=False,  # the current run fails its gate on purpose
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if not out.is_file():
        raise SystemExit(f"the run wrote no {out}")


def make(out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    source = AGENT.read_text(encoding="utf-8")
    if SLIP not in source:
        raise SystemExit(f"{AGENT} no longer has the gold shortcut this script removes")
    # both runs run the same command (one file, its content swapped between them): the
    # baseline is of the same agent, as on main, not "another agent" (compare/notes.py)
    with tempfile.TemporaryDirectory() as tmp:
        agent = Path(tmp) / "support_agent.py"
        agent.write_text(source.replace(SLIP, ""), encoding="utf-8")
        base = out_dir / "base.json"
        _run(
            agent, base, "4e1f0c2a9b7d3e5f6a8b0c1d2e3f4a5b6c7d8e9f", "refs/heads/main", "9100200300"
        )
        agent.write_text(source, encoding="utf-8")
        current = out_dir / "results.json"
        _run(
            agent,
            current,
            "b7c3d9e1f2a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2",
            "refs/pull/42/merge",
            "9100200417",
        )
    return base, current


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    for path in make(Path(sys.argv[1])):
        print(path)
