"""Representative diffs for the report tests (golden files, structure, browser, budget)."""

from __future__ import annotations

import copy
from datetime import timedelta

from helpers.factory import NOW, case, results

from agent_eval_action.compare import compare
from agent_eval_action.compare.model import Diff
from agent_eval_action.results import (
    CaseResult,
    Content,
    FunctionCall,
    GatePolicy,
    Results,
    SelectedPath,
    Selection,
    Source,
)

T, R = "tool_trajectory_avg_score", "response_match_score"
REPO = "octo-org/shop-agent"


def _dated(res: Results, when, sha: str, ref: str, run_id: str) -> Results:
    return res.replace(
        created_at=when,
        source=Source(repo=REPO, sha=sha, ref=ref, run_id=run_id, event="push"),
    )


def pair(before: list, after: list, **gate) -> tuple[Diff, Results]:
    base = _dated(results(*before), NOW - timedelta(hours=5), "1" * 40, "refs/heads/main", "101")
    cur = _dated(results(*after), NOW, "2" * 40, "refs/pull/7/merge", "202")
    return compare(cur, base, **gate), cur


CRASH = "run 1: RuntimeError: payment service down (agent/tools.py:16) at turn 1 of 1"


def crashed(res: CaseResult, note: str = CRASH) -> CaseResult:
    """The case as the score stage records a crash: its note holds each run's error."""
    res.note = note
    return res


def confirmed_by(res: CaseResult, reruns: list[float], metric: str = "tool_trajectory_avg_score"):
    """The case with confirmation re-runs after its own run: `reruns` are their scores (the
    action's run-cases --confirm; compare/confirm.py reads them)."""
    first = res.runs[0]
    for i, score in enumerate(reruns, start=2):
        rerun = copy.deepcopy(first).replace(run=i, confirms=f"trajectory {metric}")
        res.runs.append(rerun)
        res.metrics[metric].runs += (score,)
        res.metrics[metric].invocations += ((score,),)
    return res


def mixed() -> tuple[Diff, Results]:
    """Every section: regressions on both axes, improvements, still failing, added, removed,
    errored, flaky cases with their suite test, and a comparability note."""
    before = [
        case("lucky", {T: [1.0], R: [0.9]}, eval_set_id="refunds", line=12),
        case("fumbled", {T: [1.0], R: [0.9]}, eval_set_id="refunds", line=40),
        case("both", {T: [1.0], R: [1.0]}, eval_set_id="refunds", line=70),
        case("fixed", {T: [0.0], R: [0.9]}, ["old"], eval_set_id="orders", line=5),
        case("stuck", {T: [0.0], R: [0.9]}, ["bad"], eval_set_id="orders", line=30),
        case("gone", {T: [1.0]}, eval_set_id="orders", line=50),
        case("crash", {T: [1.0]}, eval_set_id="orders", line=60),
        *[
            case(f"noisy{i}", {T: [1.0, 0.0, 1.0]}, ["a", "b", "a"], eval_set_id="faq", line=i)
            for i in range(3)
        ],
    ]
    after = [
        case("lucky", {T: [0.0], R: [0.9]}, ["skipped lookup"], eval_set_id="refunds", line=12),
        case("fumbled", {T: [1.0], R: [0.5]}, eval_set_id="refunds", line=40),
        case("both", {T: [0.5], R: [0.2]}, ["wrong"], eval_set_id="refunds", line=70),
        case("fixed", {T: [1.0], R: [0.9]}, eval_set_id="orders", line=5),
        case("stuck", {T: [0.0], R: [0.9]}, ["bad"], eval_set_id="orders", line=30),
        crashed(case("crash", {T: [1.0]}, eval_set_id="orders", errored_runs=(1,), line=60)),
        case("new", {T: [1.0]}, eval_set_id="orders", line=80),
        *[
            case(f"noisy{i}", {T: [0.0, 1.0, 0.0]}, ["b", "a", "b"], eval_set_id="faq", line=i)
            for i in range(3)
        ],
    ]
    diff, cur = pair(before, after)
    diff.notes.append("The agent-eval-action version differs: 0.0.9 on the baseline, 0.1.0 now.")
    return diff, cur


def news() -> tuple[Diff, Results]:
    """What the top of the report says beside the verdict, and what confirmation re-runs
    showed: a case renamed and regressed (confirmed in 3/3 re-runs), a flip a re-run did not
    show again (likely noise), a case removed (its suite shrank; `-removed` opts out), a
    case the selection did not run, an added case that crashed, a baseline of another
    agent and another policy."""
    renamed_old = case("refund", {T: [1.0]}, eval_set_id="orders", line=10)
    renamed_new = case("refund_v2", {T: [0.0]}, ["skipped lookup"], eval_set_id="orders", line=10)
    renamed_old.content_sha256 = renamed_new.content_sha256 = "refund-content"
    before = [
        renamed_old,
        case("lookup", {T: [1.0]}, eval_set_id="orders", line=20),
        case("cancel", {T: [1.0]}, eval_set_id="orders", line=30),
        case("ping", {T: [1.0]}, eval_set_id="smoke", line=5),
    ]
    after = [
        confirmed_by(renamed_new, [0.0, 0.0, 0.0]),
        confirmed_by(
            case("lookup", {T: [0.0]}, ["other path"], eval_set_id="orders", line=20), [1.0]
        ),
        crashed(case("late_fee", {T: [None]}, eval_set_id="orders", errored_runs=(1,), line=40)),
    ]
    base = _dated(results(*before), NOW - timedelta(days=2), "1" * 40, "refs/heads/main", "101")
    base.run_config.target = "python agent.py"
    base.run_config.selection = Selection(paths=[SelectedPath(path="evals", directory=True)])
    base.run_config.gate = GatePolicy(
        fail_on=["regression"], min_delta={"trajectory": 0.0, "response": 0.1}
    )
    cur = _dated(results(*after, num_runs=1), NOW, "2" * 40, "refs/pull/7/merge", "202")
    cur.run_config.target = "python agent_v2.py"
    cur.run_config.selection = Selection(paths=[SelectedPath(path="evals/orders.evalset.json")])
    diff = compare(cur, base, fail_on=["regression", "-removed"])
    return diff, cur


def clean() -> tuple[Diff, Results]:
    cases = [case(f"c{i}", {T: [1.0], R: [1.0]}) for i in range(4)]
    return pair(cases, cases)


EXPECTED_REFUND = (
    "Your refund of $40.00 for order 1234 has been issued to the Visa card ending in 4242. "
    "It usually reaches your account within 3 to 5 business days, and you will get an "
    "e-mail when it is sent."
)
ACTUAL_REFUND = EXPECTED_REFUND.replace("$40.00", "$400.00").replace("3 to 5", "10")


def answering(res: CaseResult, expected: str, actual: str) -> CaseResult:
    """The case with these answers on its one turn, and the tool calls it was expected to
    make (so that only its answer departs from the eval file)."""
    for run in res.runs:
        (turn,) = run.turns()
        turn.expected.final_response = Content.from_text(expected, "model")
        assert turn.actual is not None
        turn.actual.final_response = Content.from_text(actual, "model")
        turn.actual.tool_uses = [FunctionCall(name="lookup", args={"id": 1})]
    return res


def no_baseline() -> tuple[Diff, Results]:
    """The first run after adoption: one case passes, one calls the wrong tool arguments,
    one answers a long answer with two details wrong (shown word by word)."""
    refund = answering(
        case("refund", {T: [1.0], R: [0.4]}, line=20), EXPECTED_REFUND, ACTUAL_REFUND
    )
    cur = _dated(
        results(case("ok", {T: [1.0]}), case("bad", {T: [0.0]}, ["x"], line=10), refund),
        NOW,
        "2" * 40,
        "",
        "9",
    )
    return compare(cur, None, no_baseline_reason="the baseline artifact has expired"), cur


def huge(n: int = 5_000) -> tuple[Diff, Results]:
    """n cases over 50 eval sets: a fifth regress, a fifth improve, the rest unchanged."""
    before, after = [], []
    for i in range(n):
        kind, name, where = i % 5, f"case_{i:05d}", f"set_{i % 50:02d}"
        long = "a fairly long agent answer that goes on " * 5
        if kind == 0:
            before.append(case(name, {T: [1.0], R: [1.0]}, eval_set_id=where, line=i + 1))
            after.append(
                case(name, {T: [0.0], R: [0.2]}, [f"{long}{i}"], eval_set_id=where, line=i + 1)
            )
        elif kind == 1:
            before.append(case(name, {T: [0.0]}, ["old"], eval_set_id=where, line=i + 1))
            after.append(case(name, {T: [1.0]}, eval_set_id=where, line=i + 1))
        else:
            before.append(case(name, {T: [1.0]}, eval_set_id=where, line=i + 1))
            after.append(case(name, {T: [1.0]}, eval_set_id=where, line=i + 1))
    return pair(before, after)


DIFFS = {"mixed": mixed, "clean": clean, "no_baseline": no_baseline, "news": news}
