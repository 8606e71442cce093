"""Gate trust when a noisy *tool*, not the model, drives the noise: live tools vs replayed.

    python bench/gate_trust_tools.py                  # 2,000 trials per cell (~5 min on 2 shared CPUs)
    python bench/gate_trust_tools.py --trials 500     # quicker, wider intervals

The suite (gate_trust.py's Results, judged by the real `compare()`): 100 cases, 3 runs per
side. 70 cases use steady tools and behave the same in every run. 30 cases call a tool
that now and then answers badly (a search that times out, a service under load): each
live call answers badly with the case's probability, drawn uniformly from 1% to 10% (a
rare fault: most cases look deterministic on main). The model is steady: given the same
tool answers it does the same thing (the right tool call, then a right answer on a good
tool answer, ROUGE 0.95; a wrong one on a bad answer, ROUGE 0.5). So every run-to-run
difference comes from the tool.

Modes:
  live      the PR's runs call the tool, as main's did: their faults are drawn afresh;
  replayed  `--replay-tools`: the PR's run N answers every call from main's run N
            (docs/hermetic-tools.md), so with a steady model it does what main's run N did.

Scenarios, with the default policy (`regression`), no history and no confirmation re-runs
(`compare()` alone, as `compare` and a sharded run's comparison judge):
  (a) nothing changed                                  false alarms: how often the gate fails
  (b) one steady case's trajectory slips (the model)   detection: 100% in both modes

Every rate is printed with its 95% Wilson interval.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gate_trust import Shape, Side, results, wilson
from tabulate import tabulate

from agent_eval_action.compare import compare

SHAPE = Shape(
    noisy=30,
    share=0.30,
    low=0.90,  # pass probability of a run: 1 minus the tool's fault rate
    high=0.99,
    runs=3,
    answer_only=1.0,  # a fault still calls the right tool; the answer goes wrong
    right_rouge=(0.95, 0.95),
    engine_checks=0,
)
RIGHT, WRONG = 0.95, 0.5  # the steady model's ROUGE on a good and on a bad tool answer
TRIALS = 2_000


def side(passes: np.ndarray, deterministic: np.ndarray) -> Side:
    """One side's runs: `passes` (trials, noisy, runs), the tool answered well."""
    return Side(
        tool=np.ones_like(passes, dtype=bool),
        right=passes,
        rouge=np.where(passes, RIGHT, WRONG),
        deterministic=deterministic,
    )


def trial_sides(
    scenario: str, mode: str, trials: int, rng: np.random.Generator
) -> tuple[Side, Side]:
    """(main's side, the PR's side) of `trials` trials."""
    k, d, runs = SHAPE.noisy, SHAPE.cases - SHAPE.noisy, SHAPE.runs
    p = rng.uniform(SHAPE.low, SHAPE.high, (trials, k))
    steady = rng.random((trials, d)) >= 0.1  # one steady case in ten fails on both sides
    main_passes = rng.random((trials, k, runs)) < p[..., None]
    pr_steady = steady.copy()
    if scenario == "b":  # a passing steady case, chosen at random, now fails every run
        victim = np.argmax(np.where(steady, rng.random((trials, d)), -1.0), axis=1)
        pr_steady[np.arange(trials), victim] = False
    if mode == "replayed":
        pr_passes = main_passes.copy()  # run N answered from main's run N: the same answers
    else:
        pr_passes = rng.random((trials, k, runs)) < p[..., None]
    return side(main_passes, steady), side(pr_passes, pr_steady)


def measure(trials: int, seed: int) -> list[dict]:
    rows = []
    for s, scenario in enumerate(("a", "b")):
        for m, mode in enumerate(("live", "replayed")):
            started = time.perf_counter()
            rng = np.random.default_rng([seed, s, m])
            base, cur = trial_sides(scenario, mode, trials, rng)
            failed = sum(
                not compare(results(SHAPE, cur, t), results(SHAPE, base, t)).verdict.passed
                for t in range(trials)
            )
            low, high = wilson(failed, trials)
            rows.append(
                {
                    "scenario": scenario,
                    "mode": mode,
                    "failed": failed,
                    "trials": trials,
                    "rate": failed / trials,
                    "low": low,
                    "high": high,
                    "seconds": time.perf_counter() - started,
                }
            )
    return rows


LABELS = {
    "a": "(a) unchanged agent: false alarms",
    "b": "(b) one steady trajectory slip: detection",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=TRIALS, help="per scenario and mode")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    started = time.perf_counter()
    rows = measure(args.trials, args.seed)
    print(f"{args.trials:,} trials per cell, seed {args.seed}, policy `regression`")
    print(f"  {SHAPE.name}; tool fault rate 1-10% per run, steady model")
    body = [
        [
            LABELS[r["scenario"]],
            r["mode"],
            f"{100 * r['rate']:.2f}% [{100 * r['low']:.2f}, {100 * r['high']:.2f}]",
            f"{r['failed']}/{r['trials']}",
        ]
        for r in rows
    ]
    print(tabulate(body, headers=["scenario", "tools", "gate failed [95% CI]", "trials"]))
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
