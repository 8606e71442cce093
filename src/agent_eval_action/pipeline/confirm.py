"""Confirmation rounds: re-run the regressed cases, one more run each per round, until
each is confirmed or not reproduced (a re-run did not show it), or no further re-run could
blame it; compare/confirm.py decides from the runs. Then, with one run per case, perhaps
suite rounds: the suite once more, while the suite-level test hints at a broad drop (a few
times at most).

Each round is an agent stage over the regressed cases alone (runs numbered after the
suite's own, each saying what it confirms), judged and scored like the others. The whole
re-scoring is pure; only the new runs are judged. `confirm_limit` bounds the extra
case-runs; a regression whose re-runs the limit cut is kept as it is (never dropped), and
the Results' warnings say the limit was reached.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace

from ..compare.confirm import suite_round, to_confirm, to_sample
from ..compare.model import Diff
from ..compare.record import MainRecord
from ..compare.statistics_policy import DEFAULT as STATISTICS
from ..core import RUN_KINDS, CaseKey, Purpose
from ..errors import InputError
from ..results import Results, kind_of
from .plan import Plan, request, restrict

SUITE_LIMIT = (
    "the suite-level test was not taken again with more runs: they would be {needed} "
    "case-runs, over the limit of {limit} extra case-runs (raise confirm-limit)"
)
LIMIT_REACHED = (
    "confirmation re-runs stopped at the limit of {limit} extra case-runs: {left} regressed "
    "case(s) kept their verdict unconfirmed (raise confirm-limit, or set confirm-runs 0)"
)


Wanted = list[tuple[CaseKey, Purpose]]  # a round's cases, each with why it runs


def confirmation_plan(
    plan: Plan, wanted: Sequence[tuple[CaseKey, Purpose]], run: int, ahead: int = 0
) -> Plan:
    """One more run, numbered `run`, of each wanted case, saying why it runs; and, `ahead`
    > 0, its next `ahead` runs too, started at once for later rounds (pipeline/ahead.py)."""
    requests = [
        request(key.eval_set_id, plan.cases[key][1], run + later, why)
        for later in range(ahead + 1)
        for key, why in wanted
    ]
    return replace(restrict(plan, {key for key, _ in wanted}), requests=requests)


def runs_ahead(
    need: Sequence[tuple[CaseKey, Purpose]],
    round_number: int,
    *,
    confirm_runs: int,
    concurrency: int,
    limit_left: int,
) -> int:
    """How many later confirmation re-runs of each case a round starts beside its own run,
    on the slots it leaves idle (pipeline/session.py; bench/gate_trust_single.py simulates
    it): no more than the rounds still to come could want, and no more than fit, with the
    round's own runs, in `concurrency` slots and in the `limit_left` extra case-runs the
    limit has left. None for suite rounds or main's sampling: each is a look of its own."""
    if not need or any(why.kind != "confirmation" for _, why in need):
        return 0
    room = min(concurrency, limit_left) // len(need) - 1
    return max(0, min(confirm_runs - round_number, room))


ROUND_FORMAT = (
    '{"run": N, "cases": [[EVAL_SET_ID, EVAL_ID, WHAT, KIND, PAIRED_WITH], ...], '
    '"ahead": K, "stage": ROUND}'
)
_RERUN_KINDS = frozenset(RUN_KINDS) - {"suite"}


def round_json(
    run: int,
    wanted: Sequence[tuple[CaseKey, Purpose]],
    ahead: int = 0,
    stage: str | None = None,
) -> str:
    """A round's plan as ROUND_FORMAT: what `round_plan` reads. `ahead`: the agent stage
    also runs each case's next `ahead` runs; `stage`: the plan (round_json) of the agent
    stage whose traces file holds the round's runs, when it started them ahead."""
    cases = [[*key, why.text, why.kind, why.paired_with] for key, why in wanted]
    data: dict[str, object] = {"run": run, "cases": cases}
    if ahead:
        data["ahead"] = ahead
    if stage is not None:
        data["stage"] = json.loads(stage)
    return json.dumps(data)


def _purpose(entry: object) -> Purpose | None:
    """A case entry's (key, why): [EVAL_SET_ID, EVAL_ID, WHAT, KIND, PAIRED_WITH]; written
    before KIND, [EVAL_SET_ID, EVAL_ID, WHAT] (its kind as WHAT words it). None: not one."""
    if not isinstance(entry, list) or len(entry) not in (3, 5):
        return None
    if not all(isinstance(p, str) for p in entry[:3]):
        return None
    text = entry[2]
    kind, paired_with = kind_of(text) if len(entry) == 3 else (entry[3], entry[4])
    if kind not in _RERUN_KINDS:
        return None
    if kind == "paired" and paired_with not in ("confirmation", "suite_round"):
        return None
    if kind != "paired" and paired_with is not None:
        return None
    return Purpose(kind, text, paired_with)


def round_plan(plan: Plan, text: str, display: str) -> Plan:
    """A confirmation round's plan from its JSON, ROUND_FORMAT (what the action hands to
    `run-cases --confirm` and to `score --round`): run N of each case, N after the suite's
    own runs, each case once, saying why it runs; with "ahead": K, runs N+1 to N+K of each
    too (never a scenario case's: its user simulator spends the judge's key). With
    "stage": the plan of the agent stage that ran them ahead (`score --round`): the
    round's runs are among the stage's, and its traces file's other runs are passed over.
    InputError naming `display` when it is not one, or names a case or run the suite does
    not have."""
    try:
        data = json.loads(text)
    except ValueError as err:
        raise InputError(f"not a confirmation round: not JSON: {err}", display) from None
    taken, ahead = _round(plan, data, display)
    stage = data.get("stage")
    if stage is None:
        return taken
    started, _ = _round(plan, stage, display)
    ran = {r.run_key: r.purpose for r in started.requests}
    if ahead or "stage" in stage or any(r.run_key not in ran for r in taken.requests):
        raise InputError("the round takes runs its stage did not start, or starts some", display)
    return replace(taken, stage=ran)


def _round(plan: Plan, data: object, display: str) -> tuple[Plan, int]:
    """One ROUND_FORMAT object's plan (its runs started ahead too), and its "ahead"."""
    run = data.get("run") if isinstance(data, dict) else None
    cases = data.get("cases") if isinstance(data, dict) else None
    ahead = data.get("ahead", 0) if isinstance(data, dict) else None
    purposes = [_purpose(case) for case in cases] if isinstance(cases, list) else [None]
    numbers = (run, ahead)
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
        raise InputError(f"not a confirmation round: want {ROUND_FORMAT}", display)
    if None in purposes:
        raise InputError(f"not a confirmation round: want {ROUND_FORMAT}", display)
    assert isinstance(cases, list) and isinstance(run, int) and isinstance(ahead, int)
    wanted = [
        (CaseKey(case[0], case[1]), why) for case, why in zip(cases, purposes, strict=True) if why
    ]
    unknown = [key for key, _ in wanted if key not in plan.cases]
    if unknown or run <= plan.num_runs or ahead < 0:
        raise InputError("the round names cases or runs the suite does not have", display)
    if len({key for key, _ in wanted}) != len(wanted):
        raise InputError("the round names a case twice", display)
    if ahead and any(
        plan.cases[key][1].conversation_scenario or why.kind != "confirmation"
        for key, why in wanted
    ):
        raise InputError("only a confirmation round's non-scenario cases run ahead", display)
    return confirmation_plan(plan, wanted, run, ahead), ahead


def rounds(
    diff: Diff,
    current: Results,
    *,
    known: Callable[[], MainRecord],
    runs: int,
    limit: int,
    confirm: Callable[[Wanted, int], tuple[Diff, Results] | None],
    made: Callable[[], int] | None = None,
    fresh: Callable[[Wanted, int], int] | None = None,
) -> tuple[Diff, list[str]]:
    """Run confirmation rounds until nothing is left to confirm, then suite rounds while the
    suite-level test asks for them (compare/confirm.suite_round); (the last diff, warnings).
    `confirm(wanted, round)` re-runs the wanted cases once more (the agent stage), scores
    everything again and returns the new diff and Results, or None when it was cancelled.
    `known()` is main's record as it stands: the paired runs on the merge-base's code, when
    there are some, grow with each round.
    A shard's diff plans no suite rounds (compare/engine.py): the suite-level test needs the
    whole suite.
    `limit` counts every extra case-run started: with re-runs started ahead on idle slots,
    `made()` says how many were (those no round took too), and `fresh(wanted, round)` how
    many of a round's runs are still to start (the others were started ahead)."""
    used, warnings, done = 0, [], 0

    def spent() -> int:
        return max(used, made()) if made is not None else used

    for round_number in range(1, runs + 1):
        wanted = to_confirm(diff, current, known(), runs)
        starts = fresh(wanted, round_number) if fresh is not None else len(wanted)
        if spent() + starts > limit:
            kept = wanted[: max(0, limit - spent() + len(wanted) - starts)]
            warnings.append(LIMIT_REACHED.format(limit=limit, left=len(wanted) - len(kept)))
            wanted = kept
        if not wanted:
            break
        used += len(wanted)
        print(
            f"confirming {len(wanted)} regressed case(s): re-run {round_number} of at most {runs}",
            file=sys.stderr,
        )
        new = confirm(wanted, round_number)
        if new is None:
            return diff, warnings
        diff, current = new
        done = round_number
    while wanted := suite_round(diff, current, known()):
        needed = len(wanted) * STATISTICS.suite_round_runs
        if spent() + needed > limit:
            warnings.append(SUITE_LIMIT.format(needed=needed, limit=limit))
            break
        used += needed
        print(
            f"running {len(wanted)} case(s) {STATISTICS.suite_round_runs} more time(s): {wanted[0][1].text}",
            file=sys.stderr,
        )
        for _ in range(STATISTICS.suite_round_runs):
            done += 1
            new = confirm(wanted, done)
            if new is None:
                return diff, warnings
            diff, current = new
    return diff, warnings


def sampling_rounds(
    current: Results,
    *,
    known: MainRecord,
    runs: int,
    sample: Callable[[Wanted, int], Results | None],
) -> int:
    """Main's sampling, when a run records the baseline: while cases have fewer than `runs`
    finished runs on main (compare/confirm.to_sample), each runs once more, a round at a
    time. `sample(wanted, round)` runs them (the agent stage), scores everything again and
    returns the new Results, or None when it was cancelled. At most `runs` - 1 rounds: a
    case whose runs end in errors gains none. The case-runs it added."""
    added = 0
    for round_number in range(1, runs):
        wanted = to_sample(current, known, runs)
        if not wanted:
            break
        print(
            f"sampling {len(wanted)} case(s) on main: round {round_number}, until each has "
            f"{runs} runs here or is seen to be deterministic",
            file=sys.stderr,
        )
        new = sample(wanted, round_number)
        if new is None:
            break
        current = new
        added += len(wanted)
    return added
