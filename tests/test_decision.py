"""The one function that decides a metric (compare/decision.py): a table of typed evidence
and the change, rule and pending change each gets, reaching every rule at both moments
(first comparison, after re-runs); and no other module sets a metric's rule."""

from __future__ import annotations

import ast
from dataclasses import replace

import pytest
from helpers.paths import ROOT

from agent_eval_action.compare.decision import (
    CaseTest,
    MetricEvidence,
    Reruns,
    RunSetting,
    Streaks,
    Tally,
    decide_metric,
    record_decision,
)
from agent_eval_action.compare.model import Change, MetricDiff, Rule
from agent_eval_action.results import Status

P, F, N = Status.PASSED, Status.FAILED, Status.NOT_EVALUATED
OFF = RunSetting(min_delta=0.1, confirm_runs=0, family=1)
ON = RunSetting(min_delta=0.1, confirm_runs=3, family=1)


def both(base: float, cur: float | None, statuses: tuple[Status, Status], **kw) -> MetricEvidence:
    """A metric scored on both sides (re-runs off unless `run` says otherwise)."""
    kw.setdefault("run", OFF)
    b, c = statuses
    return MetricEvidence(
        baseline_score=base, current_score=cur, baseline_status=b, current_status=c, **kw
    )


FLIP = both(1.0, 0.0, (P, F))
NOISY_FLIP = replace(FLIP, noisy=True)
# one run on each side of a case that varies on main: left to re-runs, which decide it
HISTORY_FLIP = replace(FLIP, known_flaky=True, run=ON)


def case_test(p: float, *, nominated: bool = True, alone: bool = False) -> CaseTest:
    return CaseTest(p_value=p, nominated=nominated, significant_alone=alone)


def reruns(ran: int, shown: int, tally: Tally | None, *, faults: int = 0, **case) -> Reruns:
    streaks = Streaks(
        tallies=() if tally is None else (tally,),
        changed_behaviour=case.get("changed", False),
        one_behaviour_unrecorded=False,
    )
    on_main = (0, 0) if tally is None else (tally[0], tally[1])
    return Reruns(ran, shown, faults, tally, on_main, streaks)


FIRST = [
    # (what, evidence, change, rule, pending)
    ("case added", MetricEvidence(sides="added"), Change.ADDED, Rule.ONE_SIDED, None),
    ("metric removed", MetricEvidence(sides="removed"), Change.REMOVED, Rule.ONE_SIDED, None),
    ("no baseline", MetricEvidence(sides="no_baseline"), Change.UNCHANGED, Rule.THRESHOLD, None),
    (
        "a new metric that fails",
        MetricEvidence(sides="new_metric", current_status=F),
        Change.NEW_FAILURE,
        Rule.THRESHOLD,
        None,
    ),
    (
        "no baseline score, none here",
        MetricEvidence(sides="no_baseline_score", current_status=N),
        Change.INCOMPLETE,
        Rule.THRESHOLD,
        None,
    ),
    ("not computed", both(1.0, None, (P, N)), Change.INCOMPLETE, Rule.NOT_COMPUTED, None),
    ("steady flip", FLIP, Change.NEW_FAILURE, Rule.DETERMINISTIC, None),
    ("steady drop", both(0.9, 0.7, (P, P)), Change.REGRESSED, Rule.DETERMINISTIC, None),
    (
        "steady, under min-delta",
        both(0.9, 0.85, (P, P)),
        Change.UNCHANGED,
        Rule.DETERMINISTIC,
        None,
    ),
    ("steady rise", both(0.5, 0.8, (P, P)), Change.IMPROVED, Rule.DETERMINISTIC, None),
    ("noisy flip", NOISY_FLIP, Change.UNCHANGED, Rule.WITHIN_NOISE, None),
    (
        "noisy, both failing",
        both(0.4, 0.1, (F, F), noisy=True),
        Change.STILL_FAILING,
        Rule.WITHIN_NOISE,
        None,
    ),
    ("noisy, unmoved", both(0.8, 0.8, (P, P), noisy=True), Change.UNCHANGED, Rule.UNMOVED, None),
    (
        "flip on a case flaky on main",
        HISTORY_FLIP,
        Change.UNCHANGED,
        Rule.WITHIN_NOISE,
        Change.NEW_FAILURE,
    ),
    (
        "the per-case test alone, re-runs off",
        replace(NOISY_FLIP, test=case_test(0.001, alone=True)),
        Change.NEW_FAILURE,
        Rule.BEYOND_NOISE,
        None,
    ),
    (
        "nominated, but not significant alone, re-runs off",
        replace(NOISY_FLIP, test=case_test(0.01)),
        Change.UNCHANGED,
        Rule.WITHIN_NOISE,
        None,
    ),
    (
        "nominated for re-runs",
        replace(NOISY_FLIP, test=case_test(0.01), run=ON),
        Change.UNCHANGED,
        Rule.WITHIN_NOISE,
        Change.NEW_FAILURE,
    ),
    (
        "a rise within the case's share of the budget, re-runs on",
        both(0.5, 0.9, (P, P), noisy=True, test=case_test(0.0001), run=ON),
        Change.IMPROVED,
        Rule.BEYOND_NOISE,
        None,
    ),
    (
        "significant, but not moved by enough to count",
        both(0.8, 0.78, (P, P), noisy=True, test=case_test(0.0001, alone=True)),
        Change.UNCHANGED,
        Rule.UNMOVED,
        None,
    ),
]

NOMINATED = replace(NOISY_FLIP, test=case_test(0.01), run=ON)
AFTER = [
    # (what, evidence, change, rule, pending): the first decision left it to re-runs
    (
        "every re-run failed, beyond main's record",
        replace(HISTORY_FLIP, reruns=reruns(3, 3, (0, 20, 4, 4))),
        Change.NEW_FAILURE,
        Rule.CONFIRMED,
        None,
    ),
    (
        "every re-run showed one new behaviour",
        replace(HISTORY_FLIP, reruns=reruns(3, 3, None, changed=True)),
        Change.NEW_FAILURE,
        Rule.CONFIRMED,
        None,
    ),
    (
        "a re-run passed",
        replace(HISTORY_FLIP, reruns=reruns(2, 1, (0, 20, 2, 3))),
        Change.UNCHANGED,
        Rule.NOT_REPRODUCED,
        None,
    ),
    (
        "shown again so far, more re-runs may blame it",
        replace(HISTORY_FLIP, reruns=reruns(1, 1, (0, 20, 1, 1))),
        Change.UNCHANGED,
        Rule.WITHIN_NOISE,
        Change.NEW_FAILURE,
    ),
    (
        "every re-run failed, as main's record explains",
        replace(HISTORY_FLIP, reruns=reruns(3, 3, (10, 20, 4, 4))),
        Change.UNCHANGED,
        Rule.UNTELLABLE,
        None,
    ),
    (
        "a re-run faulted where it could have blamed",
        replace(
            HISTORY_FLIP,
            run=replace(ON, confirm_runs=2),
            reruns=reruns(2, 1, (3, 20, 3, 3), faults=1),
        ),
        Change.NEW_FAILURE,
        Rule.UNCONFIRMED,
        None,
    ),
    (
        "not re-run, no number allowed could tell",
        replace(HISTORY_FLIP, reruns=reruns(0, 0, (10, 20, 1, 1))),
        Change.UNCHANGED,
        Rule.UNTELLABLE,
        None,
    ),
    (
        "nominated, its own runs already a streak",
        replace(NOMINATED, reruns=reruns(0, 0, (0, 20, 5, 6))),
        Change.NEW_FAILURE,
        Rule.BEYOND_NOISE,
        None,
    ),
]


@pytest.mark.parametrize(("what", "evidence", "change", "rule", "pending"), FIRST + AFTER)
def test_evidence_decides_the_change_and_the_rule(what, evidence, change, rule, pending):
    decided = decide_metric(evidence)
    assert (decided.change, decided.rule, decided.pending) == (change, rule, pending), what


def test_the_table_reaches_every_rule():
    assert {row[3] for row in FIRST + AFTER} == set(Rule)


def test_re_runs_decide_only_what_the_first_decision_left_to_them():
    unmoved = both(0.8, 0.8, (P, P), noisy=True, run=ON)
    ran = reruns(3, 3, (0, 20, 4, 4))
    assert decide_metric(replace(unmoved, reruns=ran)) == decide_metric(unmoved)
    # re-runs off and none ran: the first decision stands, nothing re-recorded
    off = replace(HISTORY_FLIP, run=OFF, reruns=reruns(0, 0, (10, 20, 1, 1)))
    kept = decide_metric(off)
    assert not kept.by_reruns and kept == decide_metric(replace(off, reruns=None))


def test_recording_a_decision_after_re_runs_builds_on_the_first_words():
    m = MetricDiff(
        metric="m",
        axis="response",
        baseline_score=1.0,
        current_score=0.0,
        delta=-1.0,
        baseline_status=P,
        current_status=F,
        threshold=0.5,
        change=Change.UNCHANGED,
    )
    record_decision(m, decide_metric(HISTORY_FLIP))
    first = m.reason
    record_decision(m, decide_metric(replace(HISTORY_FLIP, reruns=reruns(3, 3, (0, 20, 4, 4)))))
    assert (m.change, m.rule, m.pending) == (Change.NEW_FAILURE, Rule.CONFIRMED, None)
    assert m.reason != first and "3/3" in m.reason


# --- the rules live in decision.py alone -----------------------------------------------------

PACKAGE = ROOT / "src" / "agent_eval_action"
DECIDED = {"rule", "pending"}


def sets_a_decision(source: str) -> list[int]:
    """Lines that set a metric's `rule` or `pending`: an assignment to such an attribute, or
    a keyword of that name in a call."""
    found = []
    for node in ast.walk(ast.parse(source)):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = [t for target in node.targets for t in _flat(target)]
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Attribute) and t.attr in DECIDED for t in targets):
            found.append(node.lineno)
        if isinstance(node, ast.Call) and any(k.arg in DECIDED for k in node.keywords):
            found.append(node.lineno)
    return found


def _flat(target: ast.expr) -> list[ast.expr]:
    return list(target.elts) if isinstance(target, ast.Tuple) else [target]


def test_only_the_decision_module_sets_a_metrics_rule():
    where = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).as_posix() != "compare/decision.py"
        for line in sets_a_decision(path.read_text(encoding="utf-8"))
    ]
    assert not where, "decide in compare/decision.py:\n" + "\n".join(where)


@pytest.mark.parametrize(
    "source", ["m.rule = Rule.CONFIRMED", "m.change, m.pending = x, None", "MetricDiff(rule=r)"]
)
def test_the_check_catches_each_way_of_setting(source):
    assert sets_a_decision(source)
