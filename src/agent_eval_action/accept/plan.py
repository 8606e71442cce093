"""Which cases and axes to accept, and what each accepted turn should expect from now on.

Cases: those named, else the regressed ones of a Diff, else the failing ones of the Results.
Per case and axis the new expectation is what the agent did: the trajectory axis rewrites
each turn's expected tool calls (and, when asked, what the tools answered them), the response
axis its reference answer, and nothing else.
A case is refused, with the reason, where accepting would not make it pass or would pick one
of several behaviours: a metric on the axis with no expectation to rewrite, a scenario case,
a run that errored, runs that disagree (unless `run` picks one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..compare.model import REGRESSIONS, Diff
from ..core import AXES, Axis, CaseKey
from ..results import (
    Actual,
    CaseResult,
    Content,
    FunctionCall,
    InvocationRecord,
    Results,
    RunRecord,
    Status,
)

# the metrics each axis's rewrite satisfies: they compare what it writes
REWRITES: dict[Axis, frozenset[str]] = {
    "trajectory": frozenset({"tool_trajectory_avg_score"}),
    "response": frozenset({"response_match_score", "final_response_match_v2"}),
}


@dataclass
class Expectation:
    """What one turn expects from now on: None where its axis is not accepted.

    `tool_responses` (only with `with_tool_responses`) holds, per call of `tool_uses`, the
    response the run's tool gave it, or None where the run has none for that call."""

    tool_uses: list[dict[str, Any]] | None = None
    final_response: dict[str, Any] | None = None
    tool_responses: list[dict[str, Any] | None] | None = None


@dataclass
class Accepted:
    case: CaseResult
    axes: tuple[Axis, ...]
    run: int
    turns: list[Expectation] = field(default_factory=list)


@dataclass
class NotAccepted:
    key: CaseKey
    why: str


def choose(
    results: Results,
    names: Sequence[str],
    *,
    diff: Diff | None = None,
    axes: Sequence[Axis] = AXES,
    run: int | None = None,
    with_tool_responses: bool = False,
) -> tuple[list[Accepted], list[NotAccepted]]:
    """The cases to accept on `axes` (and the axes each accepts), or why not; with
    `with_tool_responses`, a trajectory also takes what the run's tools answered."""
    wanted = _wanted(results, names, diff, axes)
    regressed = {
        c.key: {m.metric for m in c.metrics if m.change in REGRESSIONS}
        for c in (diff.cases if diff is not None else ())
    }
    accepted: list[Accepted] = []
    refused: list[NotAccepted] = []
    thoughts_read = results.run_config.response_thoughts == "included"
    for case, case_axes in wanted:
        outcome = _accept(case, case_axes, run, regressed.get(case.key, set()), with_tool_responses)
        if isinstance(outcome, Accepted) and thoughts_read and _thinks(case, outcome):
            outcome = NotAccepted(
                case.key,
                "its answers hold thought parts, which response_match_score reads as part of "
                "the answer unless thoughts are stripped: a reference without them would not "
                "match; run with --strip-thoughts (the action's strip-thoughts), then accept",
            )
        if isinstance(outcome, Accepted):
            accepted.append(outcome)
        else:
            refused.append(outcome)
    return accepted, refused


def _wanted(
    results: Results, names: Sequence[str], diff: Diff | None, axes: Sequence[Axis]
) -> list[tuple[CaseResult, tuple[Axis, ...]]]:
    by_key = {case.key: case for case in results.cases}
    if names:
        return [(_named(results, name), tuple(axes)) for name in names]
    if diff is not None:
        found = []
        for case in diff.cases:
            regressed = tuple(a for a in axes if case.axes.get(a) in REGRESSIONS)
            if regressed and case.key in by_key:
                found.append((by_key[case.key], regressed))
        return found
    return [(case, tuple(axes)) for case in results.cases if case.status == Status.FAILED]


def _named(results: Results, name: str) -> CaseResult:
    """A case by `SET/ID`, `SET / ID`, or its id alone when no other set has it."""
    from ..errors import InputError

    set_id, _, case_id = name.replace(" / ", "/").rpartition("/")
    found = [
        c for c in results.cases if c.eval_id == case_id and (not set_id or c.eval_set_id == set_id)
    ]
    if len(found) != 1:
        why = "no case" if not found else f"{len(found)} cases (name it SET/ID)"
        raise InputError(f'"{name}": {why} of that name in the Results')
    return found[0]


def _accept(
    case: CaseResult,
    axes: tuple[Axis, ...],
    run: int | None,
    regressed: set[str],
    with_tool_responses: bool,
) -> Accepted | NotAccepted:
    if case.scenario:
        return NotAccepted(case.key, "a conversation_scenario case expects no turns to rewrite")
    stuck = sorted(
        name
        for name, metric in case.metrics.items()
        if metric.axis in axes
        and (metric.status == Status.FAILED or name in regressed)
        and name not in REWRITES[metric.axis]
    )
    if stuck:
        return NotAccepted(
            case.key,
            f"{', '.join(stuck)} failed or regressed, and no expectation of the eval file "
            "decides it (only expected tool calls and reference answers are rewritten)",
        )
    chosen = _run(case, axes, run)
    if isinstance(chosen, str):
        return NotAccepted(case.key, chosen)
    turns = [_turn(t, axes, with_tool_responses) for t in chosen.turns()]
    return Accepted(case, axes, chosen.run, turns)


def _thinks(case: CaseResult, accepted: Accepted) -> bool:
    """Whether the reference answers accepted for response_match_score come from answers with
    thought parts."""
    if "response" not in accepted.axes or "response_match_score" not in case.metrics:
        return False
    run = next(r for r in case.runs if r.run == accepted.run and r.purpose()[0] == "suite")
    return any(
        part.thought
        for turn in run.turns()
        if turn.actual and turn.actual.final_response
        for part in turn.actual.final_response.parts or ()
    )


def _run(case: CaseResult, axes: tuple[Axis, ...], run: int | None) -> RunRecord | str:
    """The run whose behaviour becomes the expectation, or why none can be."""
    own = [r for r in case.runs if r.purpose()[0] == "suite"]
    if run is not None:
        picked = next((r for r in own if r.run == run), None)
        if picked is None:
            return f"it has no run {run}"
        return picked if picked.error is None else f"run {run} errored: {picked.error}"
    if any(r.error is not None for r in own) or not own:
        return "a run errored; accept it from a run that finished (--run N)"
    seen = {repr([_turn(t, axes) for t in r.turns()]) for r in own}
    if len(seen) > 1:
        return f"its {len(own)} runs did different things on {'/'.join(axes)}; pick one (--run N)"
    return own[0]


def _turn(
    record: InvocationRecord, axes: tuple[Axis, ...], with_tool_responses: bool = False
) -> Expectation:
    actual = record.actual
    turn = Expectation()
    if "trajectory" in axes:
        turn.tool_uses = [_call(c) for c in actual.tool_uses] if actual else []
        if with_tool_responses:
            turn.tool_responses = _responses(actual) if actual else []
    if "response" in axes:
        turn.final_response = _answer(actual.final_response if actual else None)
    return turn


def _call(call: FunctionCall) -> dict[str, Any]:
    """A tool call without what changes from run to run (its id, streaming fields)."""
    return {"name": call.name, "args": call.args or {}}


def _responses(actual: Actual) -> list[dict[str, Any] | None]:
    """Per call, what its tool answered (name and response, no id), or None."""
    calls = [{"name": c.name, "id": c.id} for c in actual.tool_uses]
    said = [{"name": r.name, "response": r.response, "id": r.id} for r in actual.tool_responses]
    return [
        None if r is None else {"name": r["name"] or c["name"], "response": r["response"] or {}}
        for c, r in zip(calls, pair(calls, said), strict=True)
    ]


def pair(calls: Sequence[Any], responses: Sequence[Any]) -> list[Any]:
    """Per call, its response: the one with the call's id where both carry ids, else the one
    at its position (ADK's pairing of `tool_uses` and `tool_responses`); None for none."""
    by_id = {r.get("id"): r for r in responses if isinstance(r, dict) and r.get("id")}
    found: list[Any] = []
    for index, call in enumerate(calls):
        key = call.get("id") if isinstance(call, dict) else None
        if key and by_id:
            found.append(by_id.get(key))
        else:
            found.append(responses[index] if index < len(responses) else None)
    return found


def _answer(content: Content | None) -> dict[str, Any]:
    """The answer's text parts (no thoughts, no signatures), as the model said them."""
    said = content.parts or [] if content is not None else []
    return {"parts": [{"text": p.text} for p in said if p.text and not p.thought], "role": "model"}
