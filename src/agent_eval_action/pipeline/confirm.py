"""Confirmation rounds: re-run the regressed cases, one more run each per round, until
each is confirmed (every re-run showed the regression again: `confirm_runs` of them) or
not reproduced (a re-run did not show it); compare/confirm.py decides from the runs.

Each round is an agent stage over the regressed cases alone (runs numbered after the
suite's own, each saying what it confirms), judged and scored like the others. The whole
re-scoring is pure; only the new runs are judged. `confirm_limit` bounds the extra
case-runs; a regression whose re-runs the limit cut is kept as it is (never dropped), and
the Results' warnings say the limit was reached.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import replace

from ..compare.confirm import to_confirm
from ..compare.model import Diff
from ..core import CaseKey
from ..traces import CaseRunRequest, CaseRuns
from .plan import Plan, restrict

LIMIT_REACHED = (
    "confirmation re-runs stopped at the limit of {limit} extra case-runs: {left} regressed "
    "case(s) kept their verdict unconfirmed (raise confirm-limit, or set confirm-runs 0)"
)


def confirmation_plan(plan: Plan, wanted: Sequence[tuple[CaseKey, str]], run: int) -> Plan:
    """One more run, numbered `run`, of each wanted case, saying what it re-runs to confirm."""
    cases = plan.cases
    requests = []
    for key, what in wanted:
        _, case = cases[key]
        requests.append(
            CaseRunRequest(
                eval_set_id=key.eval_set_id,
                eval_id=key.eval_id,
                run=run,
                session_input=case.session_input,
                user_contents=[turn.user_content for turn in case.conversation or ()],
                confirms=what,
            )
        )
    return replace(restrict(plan, {key for key, _ in wanted}), requests=requests)


def rounds(
    plan: Plan,
    case_runs: CaseRuns,
    diff: Diff,
    *,
    known: Sequence,
    runs: int,
    limit: int,
    run_round: Callable[[Plan], CaseRuns],
    rescore: Callable[[CaseRuns, CaseRuns], Diff],
) -> tuple[CaseRuns, Diff, list[str]]:
    """Run confirmation rounds until nothing is left to confirm; (all case-runs, the last
    diff, warnings). `run_round` runs a round's plan (the agent stage); `rescore` scores the
    case-runs with the round's new ones and compares again."""
    used, warnings = 0, []
    for round_number in range(1, runs + 1):
        wanted = to_confirm(diff, known, runs)
        if not wanted:
            break
        if used + len(wanted) > limit:
            kept = wanted[: max(0, limit - used)]
            warnings.append(LIMIT_REACHED.format(limit=limit, left=len(wanted) - len(kept)))
            wanted = kept
            if not wanted:
                break
        used += len(wanted)
        print(
            f"confirming {len(wanted)} regressed case(s): re-run {round_number} of at most {runs}",
            file=sys.stderr,
        )
        new = run_round(confirmation_plan(plan, wanted, plan.num_runs + round_number))
        diff = rescore(case_runs, new)
        case_runs = CaseRuns(
            case_runs.runner,
            case_runs.target,
            case_runs.started_at,
            [*case_runs.traces, *new.traces],
            case_runs.cancelled or new.cancelled,
        )
        if new.cancelled:
            break
    return case_runs, diff, warnings
