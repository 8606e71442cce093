"""How fast `--agent` runs a suite: against the concurrency limit, and against `adk eval`.

Run from the repository root (needs the dev extra, which brings google-adk[eval]):

    python bench/bench_inference.py                       # 96 cases, 1 s per turn
    python bench/bench_inference.py --cases 32 --latency 0.5 --concurrency 8 16

The agent is a real ADK LlmAgent whose model is a scripted BaseLlm that sleeps
`--latency` seconds and answers; each case is one turn. With N cases, latency L and
concurrency C no runner can finish the inference faster than ceil(N/C)*L.

Rows:
- "inference": our in-process runner (run_adk_suite) on the whole suite, after a
  warm-up case so that imports are not counted; compared with ceil(N/C)*L
  (target: at most 1.2x).
- "end to end": `agent-eval-action run EVALSET --agent DIR --concurrency C` as a
  process (imports, loading, inference, scoring, results.json), compared with
  `adk eval DIR EVALSET` as a process on the same suite (ADK runs 4 cases at once
  and has no flag to change it). Target at C=16: at least 3x faster than adk eval.
See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from tabulate import tabulate

from agent_eval_action.evalset.models import Content
from agent_eval_action.runners.adk import run_adk_suite
from agent_eval_action.traces import CaseRunRequest

LIMIT_TARGET = 1.2
ADK_TARGET = 3.0  # at concurrency 16

AGENT = """
import asyncio

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.genai import types

LATENCY_S = {latency!r}


class SleepyLlm(BaseLlm):
    model: str = "sleepy"

    async def generate_content_async(self, llm_request, stream=False):
        await asyncio.sleep(LATENCY_S)
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="pong")]))


root_agent = LlmAgent(name="bench", model=SleepyLlm(), instruction="Answer pong.")
"""


def write_suite(root: Path, cases: int, latency: float) -> tuple[Path, Path]:
    agent = root / "bench_agent"
    agent.mkdir()
    (agent / "__init__.py").write_text("from . import agent\n")
    (agent / "agent.py").write_text(textwrap.dedent(AGENT.format(latency=latency)))
    evalset = {
        "eval_set_id": "bench",
        "eval_cases": [
            {
                "eval_id": f"case_{i:03d}",
                "conversation": [
                    {
                        "user_content": {"role": "user", "parts": [{"text": f"ping {i}"}]},
                        "final_response": {"role": "model", "parts": [{"text": "pong"}]},
                        "intermediate_data": {"tool_uses": []},
                    }
                ],
                "session_input": {"app_name": "bench_agent", "user_id": "u", "state": {}},
            }
            for i in range(cases)
        ],
    }
    path = agent / "bench.evalset.json"
    path.write_text(json.dumps(evalset))
    return agent, path


def requests(cases: int) -> list[CaseRunRequest]:
    return [
        CaseRunRequest(
            eval_set_id="bench",
            eval_id=f"case_{i:03d}",
            run=1,
            user_contents=[Content.from_text(f"ping {i}", role="user")],
        )
        for i in range(cases)
    ]


def inference_wall(agent: Path, cases: int, concurrency: int) -> float:
    asyncio.run(run_adk_suite(requests(1), agent, concurrency=1))  # warm-up: imports
    started = time.perf_counter()
    traces = asyncio.run(run_adk_suite(requests(cases), agent, concurrency=concurrency))
    wall = time.perf_counter() - started
    errors = [t.error for t in traces if t.error]
    assert not errors, errors[:3]
    return wall


def ours_argv(root: Path, agent: Path, evalset: Path, concurrency: int) -> list[str]:
    """`agent-eval-action run` on the benchmark suite, as the end-to-end timings run it."""
    return [
        sys.executable,
        "-m",
        "agent_eval_action",
        "run",
        str(evalset),
        "--agent",
        str(agent),
        "--concurrency",
        str(concurrency),
        "--out",
        str(root / "results.json"),
    ]


def process_wall(argv: list[str], cwd: Path, expect: int = 0) -> float:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    if done.returncode != expect:
        sys.exit(
            f"{argv[:4]} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=96, help="N: cases, one turn each")
    parser.add_argument("--latency", type=float, default=1.0, help="L: seconds per model call")
    parser.add_argument(
        "--concurrency", type=int, nargs="+", default=[8, 16], help="C values to measure"
    )
    parser.add_argument("--skip-adk", action="store_true", help="do not run adk eval")
    args = parser.parse_args()

    rows, verdicts = [], []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        agent, evalset = write_suite(root, args.cases, args.latency)
        adk_wall = None
        if not args.skip_adk:
            adk_wall = process_wall(
                [sys.executable, "-m", "google.adk.cli", "eval", str(agent), str(evalset)], root
            )
            rows.append(
                [
                    "adk eval, end to end",
                    4,
                    f"{adk_wall:.2f}",
                    f"{math.ceil(args.cases / 4) * args.latency:.2f} (its limit)",
                    "",
                ]
            )
        for concurrency in args.concurrency:
            limit = math.ceil(args.cases / concurrency) * args.latency
            wall = inference_wall(agent, args.cases, concurrency)
            ratio = wall / limit
            rows.append(
                [
                    "ours, inference",
                    concurrency,
                    f"{wall:.2f}",
                    f"{limit:.2f} (limit)",
                    f"{ratio:.2f}x the limit",
                ]
            )
            verdicts.append(
                (
                    f"inference at C={concurrency} <= {LIMIT_TARGET}x the limit",
                    ratio <= LIMIT_TARGET,
                )
            )
            end_to_end = process_wall(
                ours_argv(root, agent, evalset, concurrency),
                root,
            )
            speedup = (
                "" if adk_wall is None else f"{adk_wall / end_to_end:.2f}x faster than adk eval"
            )
            rows.append(["ours, end to end", concurrency, f"{end_to_end:.2f}", "", speedup])
            if adk_wall is not None and concurrency == 16:
                verdicts.append(
                    (
                        f"end to end at C=16 >= {ADK_TARGET}x faster than adk eval",
                        adk_wall / end_to_end >= ADK_TARGET,
                    )
                )

    print(
        f"N = {args.cases} cases x 1 turn, L = {args.latency:g} s per model call, {os.cpu_count()} CPUs\n"
    )
    print(tabulate(rows, headers=["what", "C", "wall s", "reference s", "ratio"]))
    print()
    for text, ok in verdicts:
        print(f"{'PASS' if ok else 'FAIL'}  {text}")


if __name__ == "__main__":
    main()
