"""Gate-trust simulation: how often does the gate fail when it should, and when it should not?

    python bench/gate_trust.py [--trials 500] [--seed 7]

A simulated suite of 200 cases: 70% deterministic (every run behaves the same;
one in ten of them fails on both sides, like a known bug) and 30% noisy (each
run passes with a probability drawn between 0.6 and 0.95, and its wording
varies run to run), 3 runs per side. Each case has a trajectory metric (1 or 0
per run) and a response metric (0.95 for a good run, 0.6 for a bad one). For
each scenario, many seeded trials build a baseline and a current Results and run
the real comparison engine with the default policy (`regression`). Printed: how
often the gate failed, against the target, and the precision of the per-case
regression labels (the share of cases labelled as regressed that really changed).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from tabulate import tabulate

from agent_eval_action.compare import compare
from agent_eval_action.compare.model import REGRESSIONS
from agent_eval_action.evalset.models import Content, FunctionCall, Part
from agent_eval_action.results import (
    Actual,
    CaseResult,
    Expected,
    InvocationRecord,
    MetricResult,
    Results,
    RunConfig,
    RunRecord,
    Source,
    Status,
    Timing,
)

CASES, DETERMINISTIC_SHARE, RUNS = 200, 0.7, 3
NOW = datetime(2026, 11, 30, tzinfo=UTC)


@dataclass
class Suite:
    """Per case: pass probability of a run (1.0 or 0.0 for deterministic cases), and noisiness."""

    probability: list[float]
    noisy: list[bool]
    changed: set[int] = field(default_factory=set)  # cases that truly changed in the scenario


def make_suite(rng: random.Random, failing_deterministic: float = 0.1) -> Suite:
    deterministic = int(CASES * DETERMINISTIC_SHARE)
    probability = [
        0.0 if rng.random() < failing_deterministic else 1.0 for _ in range(deterministic)
    ]
    probability += [rng.uniform(0.6, 0.95) for _ in range(CASES - deterministic)]
    return Suite(probability, [False] * deterministic + [True] * (CASES - deterministic))


def _content(text: str, role: str) -> Content:
    return Content.model_construct(role=role, parts=[Part.model_construct(text=text)])


def _metric(axis: str, runs: list[float], threshold: float) -> MetricResult:
    score = sum(runs) / len(runs)
    return MetricResult.model_construct(
        axis=axis,
        score=score,
        threshold=threshold,
        status=Status.PASSED if score >= threshold else Status.FAILED,
        runs=runs,
        invocations=[[r] for r in runs],
        judge=None,
        error=None,
    )


_EXPECTED = Expected.model_construct(final_response=_content("done", "model"), tool_uses=[])
_RUN_RECORDS: dict[tuple[int, bool, str], RunRecord] = {}


def _run_record(run: int, ok: bool, wording: str) -> RunRecord:
    """Run records are immutable here, so one object serves every equal run (fast trials)."""
    key = (run, ok, wording)
    if key not in _RUN_RECORDS:
        actual = Actual.model_construct(
            final_response=_content(f"{'ok' if ok else 'bad'} {wording}", "model"),
            tool_uses=[FunctionCall.model_construct(name="tool" if ok else "other", args={})],
            tool_responses=[],
        )
        invocation = InvocationRecord.model_construct(
            user_content=_content("q", "user"), expected=_EXPECTED, actual=actual, duration_s=None
        )
        _RUN_RECORDS[key] = RunRecord.model_construct(
            run=run, invocations=[invocation], error=None, duration_s=0.0
        )
    return _RUN_RECORDS[key]


def simulate(suite: Suite, rng: random.Random, shift: Callable[[int, float], float]) -> Results:
    """One side: each case's runs drawn with its (possibly shifted) pass probability."""
    cases = []
    for index, (p, noisy) in enumerate(zip(suite.probability, suite.noisy, strict=True)):
        p = shift(index, p)
        good = [rng.random() < p for _ in range(RUNS)]
        runs = [
            _run_record(run, ok, f"variant {rng.randrange(6)}" if noisy else "fixed")
            for run, ok in enumerate(good, start=1)
        ]
        metrics = {
            "tool_trajectory_avg_score": _metric(
                "trajectory", [1.0 if ok else 0.0 for ok in good], 1.0
            ),
            "response_match_score": _metric("response", [0.95 if ok else 0.6 for ok in good], 0.8),
        }
        failed = any(m.status == Status.FAILED for m in metrics.values())
        cases.append(
            CaseResult.model_construct(
                eval_set_id="sim",
                eval_id=f"case{index}",
                file="sim.evalset.json",
                line=index + 1,
                case_sha256="x",
                status=Status.FAILED if failed else Status.PASSED,
                note=None,
                metrics=metrics,
                runs=runs,
                usage=None,
                duration_s=0.0,
            )
        )
    return Results.model_construct(
        schema_="agent-eval-results/1",
        created_at=NOW,
        tool_version="sim",
        adk_version=None,
        partial=False,
        source=Source(),
        run_config=RunConfig(runner="command", num_runs=RUNS),
        shard=None,
        eval_sets=[],
        cases=cases,
        usage=None,
        timing=Timing(started_at=NOW, finished_at=NOW, duration_s=0.0),
        warnings=[],
    )


def unchanged(suite: Suite, rng: random.Random) -> Callable[[int, float], float]:
    return lambda index, p: p


def one_trajectory_slip(suite: Suite, rng: random.Random) -> Callable[[int, float], float]:
    passing = [
        i
        for i, (p, noisy) in enumerate(zip(suite.probability, suite.noisy, strict=True))
        if not noisy and p == 1.0
    ]
    victim = rng.choice(passing)
    suite.changed = {victim}
    return lambda index, p: 0.0 if index == victim else p


def broad_noisy_degradation(suite: Suite, rng: random.Random) -> Callable[[int, float], float]:
    suite.changed = {i for i, noisy in enumerate(suite.noisy) if noisy}
    return lambda index, p: p - 0.2 if suite.noisy[index] else p


def pre_existing_failures(suite: Suite, rng: random.Random) -> Callable[[int, float], float]:
    """Every failure is old: the noisy cases fail every run on both sides (their wording still
    varies), and three in ten deterministic cases fail on both sides."""
    return lambda index, p: 0.0 if suite.noisy[index] else p


SCENARIOS = [
    ("(a) unchanged agent", unchanged, 0.1, "<= 1%", lambda rate: rate <= 0.01),
    (
        "(b) one deterministic trajectory slip",
        one_trajectory_slip,
        0.1,
        "100%",
        lambda rate: rate == 1.0,
    ),
    (
        "(c) noisy cases lose 0.2 pass probability",
        broad_noisy_degradation,
        0.1,
        ">= 95%",
        lambda rate: rate >= 0.95,
    ),
    ("(d) pre-existing failures only", pre_existing_failures, 0.3, "0%", lambda rate: rate == 0.0),
]


def run_scenario(make_shift, failing: float, trials: int, seed: int) -> tuple[float, int, int]:
    fails = labelled = correct = 0
    for trial in range(trials):
        rng = random.Random(seed * 1_000_003 + trial)
        suite = make_suite(rng, failing)
        shift = make_shift(suite, rng)
        before = shift if make_shift is pre_existing_failures else unchanged(suite, rng)
        diff = compare(simulate(suite, rng, shift), simulate(suite, rng, before))
        fails += not diff.verdict.passed
        for case in diff.cases:
            if case.change in REGRESSIONS:
                labelled += 1
                correct += int(case.eval_id.removeprefix("case")) in suite.changed
    return fails / trials, labelled, correct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=500, help="trials per scenario (default 500)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rows, all_met = [], True
    started = time.perf_counter()
    for name, make_shift, failing, target, met in SCENARIOS:
        rate, labelled, correct = run_scenario(make_shift, failing, args.trials, args.seed)
        precision = f"{correct / labelled:.1%} of {labelled}" if labelled else "n/a (none labelled)"
        ok = met(rate)
        all_met &= ok
        rows.append([name, f"{rate:.1%}", target, "yes" if ok else "NO", precision])
    print(
        f"{CASES} cases ({DETERMINISTIC_SHARE:.0%} deterministic), {RUNS} runs per side, "
        f"{args.trials} trials per scenario, seed {args.seed}, policy `regression`"
    )
    print(
        tabulate(
            rows, headers=["scenario", "gate failed", "target", "met", "regression-label precision"]
        )
    )
    print(f"\n{time.perf_counter() - started:.0f} s; all targets met: {'yes' if all_met else 'NO'}")


if __name__ == "__main__":
    main()
