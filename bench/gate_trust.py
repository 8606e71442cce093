"""Gate-trust simulation: how often does the gate fail when it should, and when it should not?

    python bench/gate_trust.py                    # 50,000 trials per shape and scenario (~7 min)
    python bench/gate_trust.py --trials 3000      # the fewest the targets are stated for
    python bench/gate_trust.py --quick            # the same trials, a tenth of the engine checks (~5 min)
    python bench/gate_trust.py --shapes 2,4 --engine-checks 200   # two shapes, 200 engine checks a cell

Suite shapes (SHAPES), each named by its number of noisy cases, their share of the suite,
the range of their per-run pass probabilities and the runs per side. The other cases are
deterministic: every run does the same thing, and one in ten of them fails on both sides
(three in ten in scenario d), like a known bug. Each case has a trajectory metric (1 or 0
per run, threshold 1.0) and a response metric (ROUGE, threshold 0.8). A noisy case's run
passes with the case's probability, drawn uniformly from the shape's range; every run is
worded afresh, so its ROUGE moves inside a right answer (0.8 to 1.0, or 0.75 to 1.0 where
the shape lets wording alone fail a right answer) and inside a wrong one (0.3 to 0.75). A
bad run calls the wrong tool and answers wrongly, or, for the shape's share of bad runs,
calls the right tools and still answers wrongly.

The trials have no confirmation re-runs (as `--confirm-runs 0`): with 5 runs per side the
per-case tests decide alone, at the policy's `case_alone_alpha` (compare/statistics_policy.py,
read here as the engine reads it). The last shape, 6 noisy cases of 20, runs 3,000 trials
per scenario (its suite test draws shuffles in every trial), and (c) is only reported for
it: six cases cannot show a broad drop 95% of the time within a 1% false-alarm budget.

Scenarios, with the default policy (`regression`):
  (a) nothing changed                                     target: gate fails <= 1% (upper bound)
  (b) one deterministic case's trajectory slips            target: 100%
  (c) every noisy case loses 0.2 pass probability          target: >= 95% (lower bound)
  (d) only pre-existing failures (noisy cases fail every run on both sides, wording still
      varies; three in ten deterministic cases fail on both sides)  target: <= 1% (upper bound)

Every rate is printed with its 95% Wilson interval, and next to it how often the
suite-level test alone found a drop (the rest is the deterministic rules and, with 5 or
more runs per side, the per-case tests). A trial's outcome is computed two ways:
- fast: the whole suite's draws as numpy arrays, for thousands of trials at once; the
  verdict is the gate's rules applied to them, with the engine's own statistics code
  (stats.drop_moments and stats.max_t_p, or stats.stratified_shift_p when a trial has
  fewer informative cases than the normal limit needs; the per-case permutation tests and
  Benjamini-Hochberg as the engine runs them, for shapes with enough runs);
- engine: the first trials of every cell are built as Results and run through the real
  `compare()`; its verdict and suite p-values must equal the fast path's, trial for trial
  (the "engine check" column), and its regression labels give the label precision (the
  share of cases labelled regressed that really changed).

The full run takes about 7 minutes of one core: the fast path ~1.5 minutes for the 800,000
trials of the first four shapes and ~3.5 for the 12,000 of the 20-case suite (a drawn
shuffle test each), the 820 engine checks the rest.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from tabulate import tabulate

from agent_eval_action.compare import compare, stats
from agent_eval_action.compare.model import REGRESSIONS
from agent_eval_action.compare.statistics_policy import DEFAULT as POLICY
from agent_eval_action.core import Purpose
from agent_eval_action.results import (
    Actual,
    CaseResult,
    Content,
    Expected,
    FunctionCall,
    InvocationRecord,
    MetricResult,
    Part,
    Results,
    RunConfig,
    RunRecord,
    Source,
    Status,
    Timing,
    Usage,
    purpose_fields,
)

NOW = datetime(2026, 11, 30, tzinfo=UTC)
TRAJECTORY, RESPONSE = "tool_trajectory_avg_score", "response_match_score"
THRESHOLDS = np.array([1.0, 0.8])  # trajectory, response
MIN_DELTAS = np.array([POLICY.min_delta["trajectory"], POLICY.min_delta["response"]])
WRONG_ROUGE = (0.3, 0.75)
SHIFT = 0.2
TRIALS = 50_000  # per shape and scenario: enough that a rate 0.2 points inside its target
# keeps its 95% bound inside it too (with 20,000, a false-alarm rate of 0.8% can show an
# upper bound just over 1% by chance)
CHUNK = 1_000  # trials drawn at once
EPSILON = stats.EPSILON
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Shape:
    noisy: int
    share: float  # of the suite
    low: float  # pass probability range of a noisy case's run
    high: float
    runs: int  # per side
    answer_only: float  # share of bad runs that call the right tools but answer wrongly
    right_rouge: tuple[float, float]  # ROUGE of a right answer, worded afresh each run
    engine_checks: int  # trials per scenario also run through compare()
    # whether (c)'s target is stated for it: a handful of noisy cases cannot show a broad
    # 0.2 drop 95% of the time at a 1% false-alarm budget (6 cases at 5 runs a side: about
    # 30% by a normal approximation), so there it is only reported
    detects: bool = True
    # at most this many trials per scenario: with fewer than 30 informative cases every
    # trial's suite test draws its 10,000 shuffles (3,000 is what the bounds are stated for)
    most_trials: int | None = None

    @property
    def cases(self) -> int:
        return round(self.noisy / self.share)

    @property
    def name(self) -> str:
        return (
            f"{self.noisy} noisy ({self.share:.0%} of {self.cases:,}), "
            f"p {self.low:g}-{self.high:g}, {self.runs} runs/side"
        )

    @property
    def detail(self) -> str:
        bad = (
            "bad runs: wrong tool and answer"
            if self.answer_only == 0
            else "bad runs: right tools, wrong answer"
            if self.answer_only == 1
            else f"bad runs: {self.answer_only:.0%} right tools but wrong answer"
        )
        return f"{bad}; right answers' ROUGE {self.right_rouge[0]:g}-{self.right_rouge[1]:g}"


SHAPES = [
    # gate_trust's first suite: the one the alpha was chosen on
    Shape(60, 0.30, 0.60, 0.95, 3, 0.0, (0.8, 1.0), 50),
    # more noisy cases, a wide range, mixed failures, wording that can fail a right answer
    Shape(120, 0.40, 0.30, 0.99, 3, 0.5, (0.75, 1.0), 50),
    # a small, mostly noisy suite with 5 runs: the per-case tests run too
    Shape(80, 0.80, 0.50, 1.00, 5, 1.0, (0.8, 1.0), 50),
    # a large suite with 2 runs per side
    Shape(400, 0.20, 0.20, 0.95, 2, 0.5, (0.8, 1.0), 5),
    # a small suite with 5 runs per side and no confirmation re-runs (these trials have none):
    # the per-case tests decide alone
    Shape(6, 0.30, 0.60, 0.95, 5, 0.0, (0.8, 1.0), 50, detects=False, most_trials=3_000),
]

SCENARIOS = [
    ("a", "(a) unchanged noisy agent", "<= 1% (upper)"),
    ("b", "(b) one deterministic trajectory slip", "100%"),
    ("c", f"(c) noisy cases lose {SHIFT:g} pass probability", ">= 95% (lower)"),
    ("d", "(d) only pre-existing failures", "<= 1% (upper)"),
]


# --- drawing trials ---------------------------------------------------------------------------


@dataclass
class Side:
    tool: np.ndarray  # (trials, noisy, runs): the run called the right tools
    right: np.ndarray  # (trials, noisy, runs): the run answered right
    rouge: np.ndarray  # (trials, noisy, runs)
    deterministic: np.ndarray  # (trials, deterministic cases): passes (every run alike)

    def scores(self) -> np.ndarray:
        """(trials, noisy, metrics, runs): trajectory 1/0, response ROUGE."""
        return np.stack([self.tool.astype(float), self.rouge], axis=2)


@dataclass
class Draw:
    base: Side
    cur: Side
    changed: np.ndarray  # (trials, cases): the cases that truly changed


def draw(shape: Shape, scenario: str, trials: int, rng: np.random.Generator) -> Draw:
    k, d = shape.noisy, shape.cases - shape.noisy
    probability = rng.uniform(shape.low, shape.high, (trials, k))
    failing = rng.random((trials, d)) < (0.3 if scenario == "d" else 0.1)
    base_det, cur_det = ~failing, ~failing
    changed = np.zeros((trials, shape.cases), dtype=bool)
    if scenario == "b":  # a passing deterministic case, chosen at random, now fails every run
        victim = np.argmax(np.where(base_det, rng.random((trials, d)), -1.0), axis=1)
        cur_det = base_det.copy()
        cur_det[np.arange(trials), victim] = False
        changed[np.arange(trials), victim] = True
    base_p = np.zeros_like(probability) if scenario == "d" else probability
    cur_p = base_p
    if scenario == "c":
        cur_p = np.clip(probability - SHIFT, 0.0, 1.0)
        changed[:, d:] = True

    def side(p: np.ndarray, deterministic: np.ndarray) -> Side:
        shape3 = (trials, k, shape.runs)
        right = rng.random(shape3) < p[..., None]
        tool = right | (rng.random(shape3) < shape.answer_only)
        rouge = np.where(
            right, rng.uniform(*shape.right_rouge, shape3), rng.uniform(*WRONG_ROUGE, shape3)
        )
        return Side(tool, right, rouge, deterministic)

    return Draw(side(base_p, base_det), side(cur_p, cur_det), changed)


# --- the gate's verdict on many trials at once ------------------------------------------------


@dataclass
class Fast:
    fails: np.ndarray  # (trials,): the gate failed
    suite: np.ndarray  # (trials,): the suite-level test alone found a drop
    suite_p: np.ndarray  # (trials, axes)


def fast_verdicts(shape: Shape, sim: Draw) -> Fast:
    base, cur = sim.base.scores(), sim.cur.scores()  # (trials, noisy, metrics, runs)
    # Deterministic cases: every run alike on each side, so a pass -> fail is a new failure.
    fails = np.any(sim.base.deterministic & ~sim.cur.deterministic, axis=1)
    if shape.runs >= POLICY.case_min_runs:
        fails |= _per_case_regressions(base, cur)
    # Every noisy case is noisy on both metrics (its wording varies run to run).
    passes = np.concatenate([base, cur], axis=3) >= THRESHOLDS[None, None, :, None]
    pooled = np.swapaxes(passes.astype(float), 2, 3)  # (trials, noisy, runs, axes)
    drop, covariance, informative = stats.drop_moments(pooled, shape.runs)
    suite_p = stats.max_t_p(drop.sum(axis=1), covariance.sum(axis=1))
    for trial in np.flatnonzero(informative.sum(axis=1) < stats.NORMAL_LIMIT_CASES):
        strata = [
            (runs[: shape.runs].tolist(), runs[shape.runs :].tolist()) for runs in pooled[trial]
        ]
        p = stats.stratified_shift_p(strata, ("trajectory", "response"))
        suite_p[trial] = [p["trajectory"], p["response"]]
    # The report's mean change: the mean over cases of each metric's score change, summed
    # in the engine's order (one case after another).
    delta = cur.sum(axis=3) / shape.runs - base.sum(axis=3) / shape.runs  # (trials, noisy, axes)
    mean = np.cumsum(delta, axis=1)[:, -1] / shape.noisy
    suite = np.any((suite_p <= POLICY.suite_alpha) & (mean < 0), axis=1)
    return Fast(fails | suite, suite, suite_p)


_SPLITS: dict[tuple[int, int], np.ndarray] = {}


def _splits(n_first: int, n_second: int) -> np.ndarray:
    """(pooled runs, splits): column j picks the runs that play "second" in split j."""
    key = (n_first, n_second)
    if key not in _SPLITS:
        n = n_first + n_second
        picks = list(itertools.combinations(range(n), n_second))
        matrix = np.zeros((n, len(picks)))
        for j, pick in enumerate(picks):
            matrix[list(pick), j] = 1.0
        _SPLITS[key] = matrix
    return _SPLITS[key]


def _worse_p(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """stats.runs_worse_p(first, second) row by row (its exact branch)."""
    n_first, n_second = first.shape[1], second.shape[1]
    pooled = np.concatenate([first, second], axis=1)
    sums = pooled @ _splits(n_first, n_second)
    total = pooled.sum(axis=1, keepdims=True)
    diffs = sums / n_second - (total - sums) / n_first
    observed = second.mean(axis=1) - first.mean(axis=1)
    return np.mean(diffs <= observed[:, None] + EPSILON, axis=1)


def _per_case_regressions(base: np.ndarray, cur: np.ndarray) -> np.ndarray:
    """Per trial: does a noisy metric's own permutation test, after Benjamini-Hochberg over
    the trial's tested metrics at the level that blames alone (these trials have no re-runs:
    confirm-runs 0), find it worse (compare/decision.py's decide_metric, with the engine's
    p-values)?"""
    trials = base.shape[0]
    runs = base.shape[3]
    base_score, cur_score = base.sum(axis=3) / runs, cur.sum(axis=3) / runs
    delta = cur_score - base_score
    base_pass, cur_pass = base_score >= THRESHOLDS, cur_score >= THRESHOLDS
    flip, fix = base_pass & ~cur_pass, ~base_pass & cur_pass
    drop = (delta < -EPSILON) & (-delta >= MIN_DELTAS - EPSILON)
    rise = (delta > EPSILON) & (delta >= MIN_DELTAS - EPSILON)
    moved = flip | drop | fix | rise
    # every metric whose runs vary on a side is tested, moved or not (the engine's
    # _compare_metric); only those that moved can be blamed (compare/decision.py `_tested`)
    tested = (base.max(axis=3) - base.min(axis=3) > EPSILON) | (
        cur.max(axis=3) - cur.min(axis=3) > EPSILON
    )
    worse_first = flip | drop | (delta <= 0)
    p = np.full(delta.shape, np.inf)
    flat_base = base.reshape(-1, runs)
    flat_cur = cur.reshape(-1, runs)
    flat_p = p.reshape(-1)
    for mask, (first, second) in (
        (tested & worse_first, (flat_base, flat_cur)),
        (tested & ~worse_first, (flat_cur, flat_base)),
    ):
        rows = np.flatnonzero(mask.reshape(-1))
        for start in range(0, len(rows), 20_000):
            chunk = rows[start : start + 20_000]
            flat_p[chunk] = _worse_p(first[chunk], second[chunk])
    p = p.reshape(trials, -1)
    count = np.isfinite(p).sum(axis=1)
    ordered = np.sort(p, axis=1)
    rank = np.arange(1, p.shape[1] + 1)
    passing = ordered <= POLICY.case_alone_alpha * rank / np.maximum(count, 1)[:, None]
    cutoff = np.where(passing.any(axis=1), p.shape[1] - np.argmax(passing[:, ::-1], axis=1), 0)
    limit = np.where(cutoff > 0, ordered[np.arange(trials), np.maximum(cutoff - 1, 0)], -1.0)
    rejected = np.isfinite(p) & (p <= limit[:, None])
    blamed = rejected & moved.reshape(trials, -1) & (delta.reshape(trials, -1) < 0)
    return np.any(blamed, axis=1)


# --- the same trials through the real engine --------------------------------------------------


def _content(text: str, role: str) -> Content:
    return Content(role=role, parts=[Part(text=text)])


_EXPECTED = Expected(final_response=_content("done", "model"), tool_uses=[])
_RECORDS: dict[tuple[int, bool, str, Purpose | None], RunRecord] = {}


def _record(run: int, tool: bool, answer: str, why: Purpose | None = None) -> RunRecord:
    key = (run, tool, answer, why)
    if key not in _RECORDS:
        actual = Actual(
            final_response=_content(answer, "model"),
            tool_uses=[FunctionCall(name="tool" if tool else "other", args={})],
            tool_responses=[],
        )
        invocation = InvocationRecord(
            user_content=_content("q", "user"), expected=_EXPECTED, actual=actual, duration_s=None
        )
        _RECORDS[key] = RunRecord(
            run=run,
            invocations=[invocation],
            error=None,
            duration_s=0.0,
            **purpose_fields(why),
        )
    return _RECORDS[key]


def _metric(axis: str, runs: list[float], threshold: float) -> MetricResult:
    score = sum(runs) / len(runs)
    return MetricResult(
        axis=axis,
        score=score,
        threshold=threshold,
        status=Status.PASSED if score >= threshold else Status.FAILED,
        runs=tuple(runs),
        invocations=tuple((r,) for r in runs),
        judge=None,
        error=None,
    )


def _case(index: int, trajectory: list[float], response: list[float], runs) -> CaseResult:
    metrics = {
        TRAJECTORY: _metric("trajectory", trajectory, 1.0),
        RESPONSE: _metric("response", response, 0.8),
    }
    failed = any(m.status == Status.FAILED for m in metrics.values())
    return CaseResult(
        eval_set_id="sim",
        eval_id=f"case{index}",
        file="sim.evalset.json",
        line=index + 1,
        case_sha256="x",
        content_sha256=None,
        status=Status.FAILED if failed else Status.PASSED,
        note=None,
        metrics=metrics,
        runs=runs,
        usage=Usage(),
        duration_s=0.0,
    )


def results(shape: Shape, side: Side, trial: int) -> Results:
    cases = []
    for index, passes in enumerate(side.deterministic[trial].tolist()):
        runs = [_record(r, passes, "ok" if passes else "bad") for r in range(1, shape.runs + 1)]
        cases.append(
            _case(index, [float(passes)] * shape.runs, [0.95 if passes else 0.6] * shape.runs, runs)
        )
    first = len(cases)
    tools, rights, rouges = side.tool[trial], side.right[trial], side.rouge[trial]
    for offset in range(shape.noisy):
        tool, right, rouge = (
            tools[offset].tolist(),
            rights[offset].tolist(),
            rouges[offset].tolist(),
        )
        runs = [
            _record(r + 1, tool[r], f"{'ok' if right[r] else 'bad'} {rouge[r]!r}")
            for r in range(shape.runs)
        ]
        cases.append(_case(first + offset, [float(t) for t in tool], rouge, runs))
    return results_of(cases, shape.runs)


def results_of(cases: list[CaseResult], num_runs: int, confirm_runs: int | None = None) -> Results:
    """Results holding these cases, as the engine reads them."""
    return Results(
        schema_="agent-eval-results/1",
        created_at=NOW,
        tool_version="sim",
        adk_version=None,
        partial=False,
        source=Source(),
        run_config=RunConfig(runner="command", num_runs=num_runs, confirm_runs=confirm_runs),
        shard=None,
        eval_sets=[],
        cases=cases,
        usage=Usage(),
        timing=Timing(started_at=NOW, finished_at=NOW, duration_s=0.0),
        warnings=[],
    )


@dataclass
class Check:
    trials: int = 0
    agree: int = 0
    labelled: int = 0
    correct: int = 0


def engine_check(shape: Shape, sim: Draw, fast: Fast, trials: int, check: Check) -> None:
    """The first `trials` trials through compare(): same verdict, same suite p-values?"""
    _RECORDS.clear()
    for trial in range(min(trials, len(fast.fails))):
        diff = compare(results(shape, sim.cur, trial), results(shape, sim.base, trial))
        p = {t.axis: t.p_value for t in diff.suite_tests}
        same_p = all(  # equal up to float rounding (sums in another order)
            abs(p.get(axis, 1.0) - fast.suite_p[trial, i]) <= 1e-7
            for i, axis in enumerate(("trajectory", "response"))
        )
        check.trials += 1
        check.agree += int((not diff.verdict.passed) == bool(fast.fails[trial]) and same_p)
        for case in diff.cases:
            if case.change in REGRESSIONS:
                check.labelled += 1
                check.correct += int(sim.changed[trial, int(case.eval_id.removeprefix("case"))])


# --- the table --------------------------------------------------------------------------------


def wilson(k: int, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of k successes in n trials."""
    p = k / n
    denominator = 1 + Z95**2 / n
    centre = (p + Z95**2 / (2 * n)) / denominator
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def met(scenario: str, k: int, n: int, shape: Shape) -> bool | None:
    """Whether the cell meets its target; None where none is stated ((c) on a small suite)."""
    if scenario == "c" and not shape.detects:
        return None
    low, high = wilson(k, n)
    return {"a": high <= 0.01, "b": k == n, "c": low >= 0.95, "d": high <= 0.01}[scenario]


def chunks(trials: int) -> Iterator[int]:
    for start in range(0, trials, CHUNK):
        yield min(CHUNK, trials - start)


def measure(
    trials: int,
    checks: float = 1.0,
    seed: int = 7,
    engine_checks: int | None = None,
    shapes: list[int] | None = None,
) -> list[dict]:
    """One row per shape and scenario: gate failures out of `trials`, its interval, whether
    the target is met, and the engine check on `checks` x each shape's engine_checks trials
    (or `engine_checks` trials per cell, when given); `shapes`: the indexes of SHAPES to
    measure (a shape's trials do not depend on the others')."""
    rows = []
    for s, shape in enumerate(SHAPES):
        if shapes is not None and s not in shapes:
            continue
        cell_trials = min(trials, shape.most_trials or trials)
        for c, (scenario, label, target) in enumerate(SCENARIOS):
            if scenario == "c" and not shape.detects:
                target = "reported (too few cases)"
            started = time.perf_counter()
            rng = np.random.default_rng([seed, s, c])
            failed, suite, check, first = 0, 0, Check(), True
            for size in chunks(cell_trials):
                sim = draw(shape, scenario, size, rng)
                fast = fast_verdicts(shape, sim)
                failed += int(fast.fails.sum())
                suite += int(fast.suite.sum())
                if first:
                    wanted = engine_checks or max(1, round(shape.engine_checks * checks))
                    engine_check(shape, sim, fast, wanted, check)
                    first = False
            low, high = wilson(failed, cell_trials)
            rows.append(
                {
                    "shape": shape.name,
                    "scenario": label,
                    "failed": failed,
                    "trials": cell_trials,
                    "rate": failed / cell_trials,
                    "suite_rate": suite / cell_trials,
                    "low": low,
                    "high": high,
                    "target": target,
                    "met": met(scenario, failed, cell_trials, shape)
                    if check.agree == check.trials
                    else False,
                    "engine_trials": check.trials,
                    "engine_agree": check.agree,
                    "labelled": check.labelled,
                    "correct": check.correct,
                    "seconds": time.perf_counter() - started,
                }
            )
    return rows


def percent(x: float) -> str:
    return f"{100 * x:.2f}%"


def table(rows: list[dict]) -> str:
    body = []
    for row in rows:
        precision = (
            f"{row['correct'] / row['labelled']:.0%} of {row['labelled']}"
            if row["labelled"]
            else "none labelled"
        )
        body.append(
            [
                row["shape"],
                row["scenario"],
                f"{percent(row['rate'])} [{percent(row['low'])}, {percent(row['high'])}]",
                percent(row["suite_rate"]),
                row["target"],
                {True: "yes", False: "NO", None: "n/a"}[row["met"]],
                f"{row['engine_agree']}/{row['engine_trials']} agree; labels {precision}",
            ]
        )
    return tabulate(
        body,
        headers=[
            "shape",
            "scenario",
            "gate failed [95% CI]",
            "by the suite test",
            "target",
            "met",
            "engine check",
        ],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=TRIALS, help="per shape and scenario")
    parser.add_argument("--quick", action="store_true", help="a tenth of the engine checks")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--engine-checks", type=int, help="trials per cell also run through compare()"
    )
    parser.add_argument("--shapes", help="comma-separated indexes of the shapes to measure")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    trials, checks = args.trials, (0.1 if args.quick else 1.0)
    started = time.perf_counter()
    shapes = None if args.shapes is None else [int(s) for s in args.shapes.split(",")]
    rows = measure(trials, checks, args.seed, args.engine_checks, shapes)
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(
        f"{trials:,} trials per shape and scenario, seed {args.seed}, policy `regression`, "
        f"suite alpha {POLICY.suite_alpha}, per-case test alone {POLICY.case_alone_alpha}"
    )
    for s, shape in enumerate(SHAPES):
        if shapes is None or s in shapes:
            print(f"  {shape.name}: {shape.detail}")
    print()
    print(table(rows))
    all_met = all(row["met"] is not False for row in rows)
    print(f"\n{time.perf_counter() - started:.0f} s; all targets met: {'yes' if all_met else 'NO'}")


if __name__ == "__main__":
    main()
