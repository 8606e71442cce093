"""A corpus of comparisons that reaches every rule of compare/model.py `Rule` and every
fact of a CaseDiff: random suites (steady and varying runs, one to five a side, scores not
computed, metrics and cases on one side, errored runs, edited expectations, confirmation
re-runs, main's flaky cases, no baseline), a case the per-case test decides and a renamed
case. It imports only what every version since run kinds has, so
tests/test_legacy_oracle.py builds it under a frozen engine too."""

from __future__ import annotations

import random
from typing import Any

import msgspec

from agent_eval_action.compare import compare
from agent_eval_action.compare.model import Diff
from agent_eval_action.core import Purpose
from agent_eval_action.results import CaseResult, Results, purpose_fields
from helpers.factory import case, results

T, R = "tool_trajectory_avg_score", "response_match_score"
SCORES = [0.0, 0.5, 0.8, 0.9, 1.0]


def _suite(rng: random.Random, side: str) -> list[CaseResult]:
    cases = []
    for i in range(rng.randint(1, 6)):
        if rng.random() < 0.08:
            continue  # on one side only: added or removed
        runs = rng.choice([1, 1, 3, 5])
        base = rng.choice(SCORES)
        scores: dict[str, list[float | None]] = {
            T: [base if rng.random() < 0.7 else rng.choice(SCORES) for _ in range(runs)],
            R: [rng.choice(SCORES) for _ in range(runs)],
        }
        if rng.random() < 0.05:
            scores[R][-1] = None  # not computed
        if rng.random() < 0.05:  # scored on one side only
            scores["new_metric" if side == "current" else "old_metric"] = [
                rng.choice(SCORES)
            ] * runs
        steady = rng.random() < 0.6
        behaviour = ["a"] * runs if steady else [rng.choice("ab") for _ in range(runs)]
        crashed = (runs,) if rng.random() < 0.05 else ()
        content = f"sha-{i}" if rng.random() < 0.9 else f"sha-{i}-{side}"  # expectation edited
        cases.append(
            case(f"c{i}", scores, behaviour, line=i + 1, errored_runs=crashed, case_sha256=content)
        )
    return cases


def _rerun(c: CaseResult, rng: random.Random) -> CaseResult:
    """The case with 1-3 confirmation re-runs after its own runs, showing it again or not."""
    n = rng.randint(1, 3)
    extra = {
        name: [rng.choice([m.runs[0], 0.0, 1.0]) for _ in range(n)] for name, m in c.metrics.items()
    }
    longer = case(
        c.eval_id,
        {name: [*m.runs, *extra[name]] for name, m in c.metrics.items()},
        [rng.choice("ab") for _ in range(len(c.runs) + n)],
        line=c.line,
    )
    why = purpose_fields(Purpose("confirmation", "trajectory x: passed -> failed"))
    runs = [*longer.runs[: len(c.runs)], *(r.replace(**why) for r in longer.runs[len(c.runs) :])]
    return longer.replace(runs=runs, metrics=longer.metrics, status=c.status)


def _pair(seed: int) -> tuple[Results, Results | None, dict[str, Any]]:
    rng = random.Random(seed)
    before, now = _suite(rng, "baseline"), _suite(rng, "current")
    confirm_runs = rng.choice([None, 0, 3, 3])
    if confirm_runs:
        now = [_rerun(c, rng) if rng.random() < 0.4 and len(c.runs) == 1 else c for c in now]
    current = results(*now, num_runs=max((len(c.runs) for c in now), default=1), sha="pr")
    current.run_config.confirm_runs = confirm_runs
    baseline = None if rng.random() < 0.1 else results(*before, sha="main")
    flaky = [c.key for c in before if rng.random() < 0.3]
    return current, baseline, {"known_flaky": flaky}


def _beyond_noise() -> tuple[Results, Results | None, dict[str, Any]]:
    """Six varying runs a side, all passing on main and failing here: the per-case test
    blames alone (no re-runs; six runs a side reach its level, five cannot)."""
    before = case("n", {T: [1.0] * 6}, list("ababab"))
    after = case("n", {T: [0.0] * 6}, list("bababa"))
    return results(after, sha="pr"), results(before, sha="main"), {}


def _renamed() -> tuple[Results, Results | None, dict[str, Any]]:
    """A case whose id changed, its content not: compared with its old self."""
    before = case("old", {T: [1.0]}, case_sha256="same")
    after = case("new", {T: [0.0]}, case_sha256="same")
    return results(after, sha="pr"), results(before, sha="main"), {}


def _unconfirmed() -> tuple[Results, Results | None, dict[str, Any]]:
    """A flip whose every confirmation re-run errored: no evidence either way, so the
    regression stands, unconfirmed."""
    before = case("u", {T: [1.0]}, ["a"])
    after = _rerun_errored(case("u", {T: [0.0, None, None]}, ["b"] * 3, errored_runs=(2, 3)))
    current = results(after, sha="pr")
    current.run_config.confirm_runs = 2
    return current, results(before, sha="main"), {}


def _rerun_errored(c: CaseResult) -> CaseResult:
    why = purpose_fields(Purpose("confirmation", "trajectory x: passed -> failed"))
    return c.replace(runs=[c.runs[0], *(r.replace(**why) for r in c.runs[1:])])


CORPUS = [_beyond_noise(), _renamed(), _unconfirmed(), *(_pair(seed) for seed in range(400))]


def compare_all() -> list[Diff]:
    return [compare(cur, base, **kw) for cur, base, kw in CORPUS]


def plain(diff: Diff, leave_out: tuple[str, ...]) -> Any:
    """The Diff as JSON values, without the fields named in `leave_out` (at any depth)."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in leave_out}
        if isinstance(node, list | tuple):
            return [strip(v) for v in node]
        return node

    return strip(msgspec.to_builtins(diff))
