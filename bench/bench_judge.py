"""Judge calls and reused verdicts: a suite, then an unchanged re-run against its baseline.

Runs the example suite (examples/evals) with a judged config (final_response_match_v2
by default) against the fake Gemini of tests/fakes/gemini.py, in this process, and
prints per scenario the judge requests the fake received next to the requests ADK would
make for the same work (cases x turns x num_samples x runs: ADK reuses nothing).

    python bench/bench_judge.py                       # num_samples 5, 1 and 3 runs
    python bench/bench_judge.py --num-samples 3 --runs 1 5
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fakes.gemini import FakeGemini  # noqa: E402

from agent_eval_action.cli import main  # noqa: E402
from agent_eval_action.results import Results  # noqa: E402

AGENT = ROOT / "examples" / "agent" / "support_agent.py"
EVALS = ROOT / "examples" / "evals"


def _config(directory: Path, metric: str, num_samples: int) -> Path:
    path = directory / "test_config.json"
    criterion = {"threshold": 0.8, "judge_model_options": {"num_samples": num_samples}}
    if metric.startswith("rubric_based"):
        criterion["rubrics"] = [
            {"rubric_id": "direct", "rubric_content": {"text_property": "The answer is direct."}}
        ]
    path.write_text(json.dumps({"criteria": {metric: criterion}}))
    return path


def _run(fake: FakeGemini, config: Path, runs: int, out: Path, baseline: Path | None) -> dict:
    fake.reset()
    argv = [
        "run",
        str(EVALS),
        "--config",
        str(config),
        "--command",
        shlex.join([sys.executable, str(AGENT)]),
        "--num-runs",
        str(runs),
        "--out",
        str(out),
    ]
    if baseline is not None:
        argv += ["--baseline", str(baseline)]
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(argv)
    seconds = time.perf_counter() - started
    results = Results.from_json(out.read_bytes())
    turns = sum(len(run.turns()) for case in results.cases for run in case.runs)
    return {
        "requests": fake.calls(),
        "calls": results.usage.judge_calls,
        "reused": results.usage.judge_reused,
        "turns": turns,
        "seconds": seconds,
    }


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--metric",
        default="final_response_match_v2",
        choices=[  # those where ADK makes num_samples calls per turn
            "final_response_match_v2",
            "rubric_based_final_response_quality_v1",
            "rubric_based_tool_use_quality_v1",
        ],
    )
    parser.add_argument("--num-samples", type=int, default=5)
    parser.add_argument("--runs", type=int, nargs="+", default=[1, 3], help="runs per case")
    args = parser.parse_args()
    os.environ["GOOGLE_API_KEY"] = "fake-key"
    rows = []
    with FakeGemini() as fake, tempfile.TemporaryDirectory() as tmp:
        os.environ["GOOGLE_GEMINI_BASE_URL"] = fake.url
        directory = Path(tmp)
        config = _config(directory, args.metric, args.num_samples)
        for runs in args.runs:
            base = directory / f"base-{runs}.json"
            first = _run(fake, config, runs, base, None)
            again = _run(fake, config, runs, directory / f"again-{runs}.json", base)
            for name, row in (
                (f"first run, {runs} run(s)/case", first),
                (f"unchanged re-run, {runs} run(s)/case", again),
            ):
                adk = row["turns"] * args.num_samples
                rows.append((name, row, adk))
    header = f"{'scenario':34} {'ADK calls':>9} {'our calls':>9} {'HTTP reqs':>9} {'reused':>7} {'time':>6}"
    print(
        f"{args.metric}, num_samples {args.num_samples}, example suite ({EVALS.relative_to(ROOT)})"
    )
    print(header)
    print("-" * len(header))
    for name, row, adk in rows:
        print(
            f"{name:34} {adk:9d} {row['calls']:9d} {row['requests']:9d} {row['reused']:7d} "
            f"{row['seconds']:5.1f}s"
        )
    reruns = [row for name, row, _ in rows if name.startswith("unchanged")]
    verdict = "OK" if all(row["calls"] == row["requests"] == 0 for row in reruns) else "FAILED"
    print(f"\nunchanged re-runs make 0 judge calls: {verdict}")
    if verdict != "OK":
        sys.exit(1)


if __name__ == "__main__":
    main_bench()
