"""Gate trust at the default settings: one run per case on the PR, confirmation re-runs,
and main's history as the action fetches it, or none (the first PRs after adoption: main's
first baseline, recorded with main's sampling).

    python bench/gate_trust_single.py --no-history-trials 600   # docs/statistics.md's table
    python bench/gate_trust_single.py                 # 3,000 trials per cell (about 1.5 hours)
    python bench/gate_trust_single.py --trials 500    # a quick look
    python bench/gate_trust_single.py --paired --scenarios ac --cases 100 --trials 1000
                                    # each cell with and without paired runs, the same PRs

Every trial goes through the real engine: `compare()` against the baseline (one run per
case) with main's older baselines as history, or against a first baseline whose cases ran
again until each had `baseline-runs` runs or did the same thing three times
(`pipeline/confirm.sampling_rounds`, `compare/confirm.to_sample` deciding), then the confirmation rounds as
`pipeline/confirm.py` runs them (`compare/confirm.py`'s `to_confirm` picks the cases; each
round adds one re-run per case, recorded with `confirms`), until nothing is left to
confirm. The re-runs start as `run` and the pytest route start them: a round that re-runs
fewer cases than the concurrency (`--concurrency`, `run`'s default) also starts the later
re-runs they may need (`pipeline/confirm.runs_ahead`), and those no round takes are
discarded, so each trial counts the extra case-runs *used* (recorded, deciding) and *made*
(started, discarded ones too); the action runs one a round (made = used). A re-run's
outcome depends on the trial's seed, the case and the run number only, not on when it
started, so `--check-ahead` can show the verdicts and the runs used are the same with and
without run-ahead. A noisy case's run passes with its probability (drawn per case from
the shape's range); a failing run calls the wrong tool half of the time, and always
answers wrongly; every run is worded afresh. One deterministic case in ten fails on both
sides.

Scenarios (policy `regression`, confirm-runs 3):
  (a) nothing changed                          target: gate fails <= 1% (upper bound)
  (b) one deterministic case's trajectory slips target: 100%
  (c) every noisy case loses 0.2 pass probability, shapes with >= 60 noisy cases: >= 90%
  (d) only pre-existing failures (noisy cases fail every run on both sides): <= 1%
and the cost: extra case-runs per PR, used and made, as a share of the suite.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gate_trust as base_sim

from agent_eval_action.compare import MainRecord, compare
from agent_eval_action.core import Purpose
from agent_eval_action.github.baseline import HISTORY as DEFAULT_HISTORY
from agent_eval_action.pipeline.confirm import rounds, runs_ahead, sampling_rounds
from agent_eval_action.pipeline.options import DEFAULTS
from agent_eval_action.results import PAIRED_RUN

CONFIRM_RUNS = 3
CONFIRM_LIMIT = DEFAULTS.run.confirm_limit  # the action's default
HISTORY = DEFAULT_HISTORY  # older baselines, as the action fetches them by default
BASELINE_RUNS = DEFAULTS.run.baseline_runs  # main's sampling of a first baseline
CONCURRENCY = DEFAULTS.run.concurrency  # `run`'s slots, on which re-runs start ahead


@dataclass(frozen=True)
class Shape:
    cases: int
    noisy: int
    low: float
    high: float

    @property
    def name(self) -> str:
        return f"{self.noisy} noisy of {self.cases}, p {self.low}-{self.high}, 1 run"


SHAPES = [Shape(20, 6, 0.6, 0.95), Shape(100, 60, 0.6, 0.95), Shape(200, 60, 0.5, 0.95)]
SCENARIOS = ["a", "b", "c", "d"]
TARGETS = {"a": "<= 1% (upper)", "b": "100%", "c": ">= 90% (lower)", "d": "<= 1% (upper)"}


def _run(rng: np.random.Generator, number: int, passes: bool, why: Purpose | None = None):
    """One run of a noisy case: (trajectory score, ROUGE, its record)."""
    if passes:
        tool, rouge = True, float(rng.uniform(0.8, 1.0))
    else:
        tool, rouge = bool(rng.random() < 0.5), float(rng.uniform(0.3, 0.75))
    record = base_sim._record(number, tool, f"{'ok' if passes else 'bad'} {rouge!r}", why)
    return float(tool), rouge, record


def _side(shape: Shape, probs: np.ndarray, rng, scenario: str, pr: bool) -> list[list]:
    """One side's cases, each a list of runs (trajectory, ROUGE, record)."""
    runs: list[list] = []
    for index in range(shape.cases - shape.noisy):
        fails = index % 10 == 0 or (scenario == "b" and pr and index == 1)
        record = base_sim._record(1, not fails, "bad" if fails else "ok")
        runs.append([(0.0 if fails else 1.0, 0.6 if fails else 0.95, record)])
    for p in probs:
        runs.append([_run(rng, 1, scenario != "d" and rng.random() < p)])
    return runs


def _results(runs: list[list], confirm_runs: int | None = None):
    return _results_of(dict(enumerate(runs)), confirm_runs)


def _results_of(runs: dict[int, list], confirm_runs: int | None = None):
    """Results of these cases, by their index (the merge-base's: only the cases it ran)."""
    cases = [
        base_sim._case(i, [r[0] for r in rs], [r[1] for r in rs], [r[2] for r in rs])
        for i, rs in sorted(runs.items())
    ]
    return base_sim.results_of(cases, 1, confirm_runs)


def sampled_baseline(shape: Shape, probs: np.ndarray, rng, scenario: str):
    """main's baseline as a push run records it with no history: each case runs again until
    it has `BASELINE_RUNS` runs or is seen to be deterministic (pipeline/confirm.py's
    sampling rounds, compare/confirm.to_sample deciding)."""
    runs = _side(shape, probs, rng, scenario, pr=False)
    first_noisy = shape.cases - shape.noisy

    def sample(wanted: list, round_number: int):
        for key, what in wanted:
            index = int(key.eval_id.removeprefix("case"))
            if index < first_noisy:
                tool, rouge, _record = runs[index][0]
                record = base_sim._record(
                    1 + round_number, tool == 1.0, "bad" if tool == 0.0 else "ok", what
                )
                runs[index].append((tool, rouge, record))
            else:
                passes = scenario != "d" and rng.random() < probs[index - first_noisy]
                runs[index].append(_run(rng, 1 + round_number, passes, what))
        return _results(runs)

    sampling_rounds(_results(runs), known=MainRecord(), runs=BASELINE_RUNS, sample=sample)
    return _results(runs)


@dataclass(frozen=True)
class Outcome:
    failed: bool  # did the gate fail
    used: int  # extra case-runs recorded: the rounds' re-runs
    made: int  # extra case-runs started, those started ahead and discarded too
    on_main: int = 0  # paired runs on main's code


def trial(
    shape: Shape,
    scenario: str,
    history: bool,
    seed: int,
    concurrency: int = CONCURRENCY,
    paired: bool = False,
) -> Outcome:
    """One simulated pull request, its re-runs started ahead on `concurrency` slots as
    `run` and the action start them (1: one re-run a round). `paired`: each round's cases
    also run once on main's code (pipeline/paired.py), kept as main's newest history entry
    as pipeline/session.py keeps merge-base.json; a run there depends on (seed, case, run)
    alone too, so the PR is the same PR with and without them."""
    rng = np.random.default_rng(seed)
    probs = rng.uniform(shape.low, shape.high, shape.noisy)
    pr_probs = probs - 0.2 if scenario == "c" else probs
    if history:
        baseline = _results(_side(shape, probs, rng, scenario, pr=False))
        older = MainRecord.of(
            _results(_side(shape, probs, rng, scenario, pr=False)) for _ in range(HISTORY)
        )
    else:  # main's first baseline: recorded with sampling runs, nothing older
        baseline, older = sampled_baseline(shape, probs, rng, scenario), MainRecord()
    pr_runs = _side(shape, pr_probs, rng, scenario, pr=True)
    first_noisy = shape.cases - shape.noisy
    ahead: set[tuple[int, int]] = set()  # (case, run) started ahead, not yet taken
    made = used = 0
    main_runs: dict[int, list] = {}  # case index -> its paired runs on main's code
    record, known = older, older.plus(baseline)  # main's, with the paired runs so far

    def rerun(index: int, run: int, what: Purpose):
        """Run `run` of a case: what it does depends on (seed, case, run) alone."""
        if index < first_noisy:  # a deterministic case: it does the same again
            tool, rouge, _record = pr_runs[index][0]
            answer = "bad" if tool == 0.0 else "ok"
            return tool, rouge, base_sim._record(run, tool == 1.0, answer, what)
        draw = np.random.default_rng((seed, index, run))
        passes = scenario != "d" and draw.random() < pr_probs[index - first_noisy]
        return _run(draw, run, passes, what)

    def on_main(index: int, run: int, what: Purpose):
        """Run `run` of a case on main's code, paired with the PR's."""
        why = Purpose("paired", f"{PAIRED_RUN} sim: {what.text}", what.kind)
        if index < first_noisy:  # main's deterministic case does what its baseline did
            fails = index % 10 == 0
            return (0.0 if fails else 1.0, 0.6 if fails else 0.95,
                    base_sim._record(run, not fails, "bad" if fails else "ok", why))  # fmt: skip
        draw = np.random.default_rng((seed, index, run, 1))
        passes = scenario != "d" and draw.random() < probs[index - first_noisy]
        return _run(draw, run, passes, why)

    def confirm(wanted: list, round_number: int):
        """The agent stage for one round: run 1 + round of each wanted case, taken from the
        runs started ahead or started now with the later ones the idle slots allow."""
        nonlocal made, used, record, known
        run = 1 + round_number
        indexes = [int(key.eval_id.removeprefix("case")) for key, _ in wanted]
        if any(what.kind != "confirmation" for _, what in wanted):
            ahead.clear()  # the confirmation rounds are over: what no round took goes
        need = [w for w, index in zip(wanted, indexes, strict=True) if (index, run) not in ahead]
        ahead.difference_update((index, run) for index in indexes)
        if need:
            later = runs_ahead(
                need,
                round_number,
                confirm_runs=CONFIRM_RUNS,
                concurrency=concurrency,
                limit_left=CONFIRM_LIMIT - made,
            )
            made += len(need) * (1 + later)
            for key, _ in need:
                index = int(key.eval_id.removeprefix("case"))
                ahead.update((index, run + k) for k in range(1, later + 1))
        for (_, what), index in zip(wanted, indexes, strict=True):
            pr_runs[index].append(rerun(index, run, what))
            if paired:
                main_runs.setdefault(index, []).append(on_main(index, run, what))
        used += len(wanted)
        if paired:  # the merge-base's Results so far: main's newest history entry
            merge_base = _results_of(main_runs)
            record, known = older.plus(merge_base), older.plus(baseline).plus(merge_base)
        current = _results(pr_runs, CONFIRM_RUNS)
        return compare(current, baseline, history=record), current

    current = _results(pr_runs, CONFIRM_RUNS)
    diff = compare(current, baseline, history=older)
    diff, _ = rounds(
        diff,
        current,
        known=lambda: known,
        runs=CONFIRM_RUNS,
        limit=CONFIRM_LIMIT,
        confirm=confirm,
    )
    return Outcome(not diff.verdict.passed, used, made, sum(map(len, main_runs.values())))


def _cell(args: tuple[Shape, str, bool, int, bool, bool, int, int]) -> tuple[int, ...]:
    """(gate failures, runs used, runs made, trials that differ without run-ahead: in the
    verdict or the runs used; counted with `check` only, which runs each trial twice;
    paired runs on main's code)."""
    shape, scenario, history, concurrency, check, paired, start, count = args
    failed = used = made = differ = on_main = 0
    for seed in range(start, start + count):
        outcome = trial(shape, scenario, history, seed, concurrency, paired)
        failed, used, made = failed + outcome.failed, used + outcome.used, made + outcome.made
        on_main += outcome.on_main
        if check:
            one = trial(shape, scenario, history, seed, concurrency=1, paired=paired)
            differ += (one.failed, one.used) != (outcome.failed, outcome.used)
    return failed, used, made, differ, on_main


def _jobs(scenario: str, trials: int, *head: object) -> list[tuple]:
    """A cell's trials in eight chunks for the pool: (*head, first seed, count). The seeds
    depend on the scenario only, so every variant of a cell simulates the same PRs."""
    step = max(1, trials // 8)
    first = 10_000 * SCENARIOS.index(scenario)
    return [(*head, first + s, min(step, trials - s)) for s in range(0, trials, step)]


def _row(shape: Shape, scenario: str, history: str, failed: int, trials: int) -> dict:
    """A cell's rate with its 95% interval, against the scenario's target."""
    low, high = base_sim.wilson(failed, trials)
    met = {"a": high <= 0.01, "b": failed == trials, "c": low >= 0.90, "d": high <= 0.01}
    return {
        "shape": shape.name,
        "scenario": scenario,
        "history": history,
        "failed": failed / trials,
        "low": low,
        "high": high,
        "met": met[scenario],
        "trials": trials,
    }


def measure(
    trials: int,
    no_history_trials: int | None = None,
    histories: tuple[bool, ...] = (True, False),
    scenarios: tuple[str, ...] = tuple(SCENARIOS),
    each: Callable[[dict], None] | None = None,
    shapes: tuple[Shape, ...] = tuple(SHAPES),
    concurrency: int = CONCURRENCY,
    check: bool = False,
    pairings: tuple[bool, ...] = (False,),
) -> list[dict]:
    """Every shape and scenario with and without history; `trials` per cell, or
    `no_history_trials` for the cells without (slower: main's sampling, and most flips
    re-run). `histories` and `scenarios` pick the cells; `each` is told every row as its
    cell is done (a full run takes hours: a stopped one keeps what it printed); `shapes`
    picks the suite shapes; re-runs start ahead on `concurrency` slots. With `check`, every
    trial runs again with one re-run a round, and a row's "differ" counts the trials whose
    verdict or runs used changed (0 expected). `pairings` (False, True): each cell also with
    paired runs on main's code, the same PRs."""
    rows = []
    with ProcessPoolExecutor() as pool:
        for shape in shapes:
            for scenario in scenarios:
                if scenario == "c" and shape.noisy < 60:
                    continue
                for history, paired in itertools.product(histories, pairings):
                    count = trials if history else (no_history_trials or trials)
                    head = (shape, scenario, history, concurrency, check, paired)
                    failed = used = made = differ = on_main = 0
                    for f, u, m, d, o in pool.map(_cell, _jobs(scenario, count, *head)):
                        failed, used, made, differ = failed + f, used + u, made + m, differ + d
                        on_main += o
                    label = f"{HISTORY} older" if history else f"sampled {BASELINE_RUNS}"
                    label += ", paired" if paired else ""
                    row = _row(shape, scenario, label, failed, count)
                    share = count * shape.cases
                    rows.append({**row, "used": used / share, "made": made / share})
                    if paired:
                        rows[-1]["paired"] = on_main / share
                    if check:
                        rows[-1]["differ"] = differ
                    if each is not None:
                        each(rows[-1])
    return rows


HEADER = (
    f"{'shape':<36} {'scen.':<5} {'history':<17} {'gate failed [95% CI]':<24} {'met':<4} "
    f"{'re-runs used':<13} made (share of the suite) + paired runs on main"
)


def line(r: dict) -> str:
    """One cell's row of the table."""
    rate = f"{r['failed']:.2%} [{r['low']:.2%}, {r['high']:.2%}]"
    made = f"{r['made']:.1%}" if "made" in r else "-"
    differ = f"; {r['differ']} differ without run-ahead" if "differ" in r else ""
    paired = f" + {r['paired']:.1%}" if "paired" in r else ""
    return (
        f"{r['shape']:<36} ({r['scenario']})   {r['history']:<17} {rate:<24} "
        f"{'yes' if r['met'] else 'NO':<4} {r['used']:<13.1%} {made}{paired}{differ}"
    )


def table(rows: list[dict]) -> str:
    return "\n".join([HEADER, *map(line, rows)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3000)
    parser.add_argument(
        "--no-history-trials", type=int, help="trials per cell without history (default: --trials)"
    )
    parser.add_argument(
        "--paired",
        action="store_true",
        help="every cell also with paired runs on main's code (the same PRs)",
    )
    parser.add_argument(
        "--history",
        choices=("both", "yes", "no"),
        default="both",
        help="the cells with main's history, without it (a sampled first baseline), or both",
    )
    parser.add_argument(
        "--scenarios", default="".join(SCENARIOS), help="which scenarios, e.g. ad (default abcd)"
    )
    parser.add_argument(
        "--cases",
        type=int,
        nargs="+",
        help="only the shapes of these suite sizes, e.g. 200 (default: every shape)",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=CONCURRENCY,
        help=f"slots the re-runs start ahead on, as `run` (default {CONCURRENCY}; 1: none)",
    )
    parser.add_argument(
        "--check-ahead",
        action="store_true",
        help="run every trial again with one re-run a round: the verdicts and runs used match",
    )
    args = parser.parse_args()
    histories = {"both": (True, False), "yes": (True,), "no": (False,)}[args.history]
    scenarios = tuple(s for s in SCENARIOS if s in args.scenarios)
    shapes = tuple(s for s in SHAPES if not args.cases or s.cases in args.cases)
    print(
        f"re-runs start ahead on {args.concurrency} slot(s), as every route starts them "
        "(`run`, the pytest route, the action)",
        flush=True,
    )
    print(HEADER, flush=True)
    rows = measure(
        args.trials,
        args.no_history_trials,
        histories,
        scenarios,
        each=lambda row: print(line(row), flush=True),
        shapes=shapes,
        concurrency=args.concurrency,
        check=args.check_ahead,
        pairings=(False, True) if args.paired else (False,),
    )
    print(f"all targets met: {'yes' if all(r['met'] for r in rows) else 'NO'}")
    if args.check_ahead:
        differ, checked = sum(r["differ"] for r in rows), sum(r["trials"] for r in rows)
        print(
            f"without run-ahead: {differ} of {checked} trials differ in verdict or runs used",
        )


if __name__ == "__main__":
    main()
