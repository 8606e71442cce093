"""Our tool-trajectory scores against ADK 2.13's own TrajectoryEvaluator."""

from __future__ import annotations

import inspect
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_eval_action.evalset.models import (
    Content,
    FunctionCall,
    IntermediateData,
    Invocation,
    InvocationEvent,
    InvocationEvents,
    Part,
)
from agent_eval_action.metrics.trajectory import MatchType, calls_match, invocation_score

trajectory_evaluator = pytest.importorskip("google.adk.evaluation.trajectory_evaluator")
eval_case = pytest.importorskip("google.adk.evaluation.eval_case")
eval_metrics = pytest.importorskip("google.adk.evaluation.eval_metrics")
genai_types = pytest.importorskip("google.genai.types")

pytestmark = pytest.mark.adk

Criterion = eval_metrics.ToolTrajectoryCriterion
MODES = [(m, ignore) for m in MatchType for ignore in (False, True)]
TOLERANCE = 1e-9


def call(name: str, args: dict[str, Any] | None = None, id: str | None = None) -> FunctionCall:
    return FunctionCall(name=name, args=args, id=id)


# --- running ADK ----------------------------------------------------------------------


def adk_evaluator(match_type: MatchType, ignore_args: bool) -> Any:
    """Built as ADK's metric registry builds it: from an EvalMetric with a criterion."""
    metric = eval_metrics.EvalMetric(
        metric_name="tool_trajectory_avg_score",
        criterion=Criterion(
            threshold=1.0,
            match_type=Criterion.MatchType[match_type.name],
            ignore_args=ignore_args,
        ),
    )
    return trajectory_evaluator.TrajectoryEvaluator(eval_metric=metric)


def adk_invocation(calls: list[FunctionCall], as_events: bool = False) -> Any:
    uses = [genai_types.FunctionCall(name=c.name, args=c.args, id=c.id) for c in calls]
    user = genai_types.Content(role="user", parts=[genai_types.Part(text="hi")])
    if as_events:
        events = [
            eval_case.InvocationEvent(
                author="agent",
                content=genai_types.Content(
                    role="model", parts=[genai_types.Part(function_call=u)]
                ),
            )
            for u in uses
        ]
        data: Any = eval_case.InvocationEvents(invocation_events=events)
    else:
        data = eval_case.IntermediateData(tool_uses=uses)
    return eval_case.Invocation(user_content=user, intermediate_data=data)


def adk_scores(
    pairs: list[tuple[list[FunctionCall], list[FunctionCall]]],
    match_type: MatchType,
    ignore_args: bool,
    as_events: bool = False,
) -> tuple[list[float], float | None]:
    evaluator = adk_evaluator(match_type, ignore_args)
    actual = [adk_invocation(a, as_events) for a, _ in pairs]
    expected = [adk_invocation(e, as_events) for _, e in pairs]
    result = evaluator.evaluate_invocations(actual, expected)
    if inspect.isawaitable(result):
        import asyncio

        result = asyncio.run(result)
    return [r.score for r in result.per_invocation_results], result.overall_score


def our_scores(
    pairs: list[tuple[list[FunctionCall], list[FunctionCall]]],
    match_type: MatchType,
    ignore_args: bool,
) -> tuple[list[float], float | None]:
    scores = [invocation_score(a, e, match_type, ignore_args) for a, e in pairs]
    if not scores:
        return scores, None
    total = 0.0
    for score in scores:  # ADK accumulates one by one (not math.fsum / 3.12's sum)
        total += score
    return scores, total / len(scores)


def assert_parity(pairs, match_type, ignore_args) -> None:
    ours, our_overall = our_scores(pairs, match_type, ignore_args)
    theirs, their_overall = adk_scores(pairs, match_type, ignore_args)
    assert len(ours) == len(theirs)
    for index, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert abs(a - b) <= TOLERANCE, (index, pairs[index], match_type, ignore_args, a, b)
    if their_overall is None:
        assert our_overall is None
    else:
        assert our_overall is not None
        assert abs(our_overall - their_overall) <= TOLERANCE


# --- corpus ---------------------------------------------------------------------------

A, B, C = call("a"), call("b"), call("c")
HAND_PICKED: list[tuple[list[FunctionCall], list[FunctionCall]]] = [
    ([], []),
    ([A], []),
    ([], [A]),
    ([A, B], [A, B]),
    ([A, B, C], [A, B]),  # extra call at the end
    ([C, A, B], [A, B]),  # extra call at the start
    ([A, C, B], [A, B]),  # extra call in between
    ([A], [A, B]),  # missing call
    ([B, A], [A, B]),  # reordered
    ([A, A], [A]),  # repeated actual
    ([A], [A, A]),  # repeated expected
    ([A, B, A], [A, A]),
    ([B, A, A], [A, A, B]),
    ([A, B, B, A], [B, A, B]),
    # argument values: Python equality, whatever the key order or numeric type
    ([call("a", {"x": 1, "y": 2})], [call("a", {"y": 2, "x": 1})]),
    ([call("a", {"x": 2})], [call("a", {"x": 2.0})]),
    ([call("a", {"x": True})], [call("a", {"x": 1})]),
    ([call("a", {"x": False})], [call("a", {"x": 0})]),
    ([call("a", {"x": False})], [call("a", {"x": None})]),
    ([call("a", {"x": "1"})], [call("a", {"x": 1})]),
    ([call("a", None)], [call("a", {})]),
    ([call("a", {})], [call("a", None)]),
    ([call("a", None)], [call("a", None)]),
    ([call("a", {"x": None})], [call("a", {})]),
    ([call("a", {"x": [1, 2]})], [call("a", {"x": [2, 1]})]),
    ([call("a", {"x": {"n": [1, {"m": 2}]}})], [call("a", {"x": {"n": [1, {"m": 2.0}]}})]),
    ([call("a", {"x": {"n": [1, {"m": 2}]}})], [call("a", {"x": {"n": [1, {"m": 3}]}})]),
    ([call("a", {"q": "Paris"})], [call("a", {"q": "paris"})]),
    (
        [call("a", {"q": "x"}), call("a", {"q": "y"})],
        [call("a", {"q": "y"}), call("a", {"q": "x"})],
    ),
    ([call("a", {"q": "x"}, id="1")], [call("a", {"q": "x"}, id="2")]),  # ids are ignored
    ([call("A")], [call("a")]),  # names are case-sensitive
    ([call("a", {"x": 1}), call("a", {"x": 2})], [call("a", {"x": 2})]),
    ([call("a", {"x": 2}), call("a", {"x": 1})], [call("a", {"x": 1}), call("a", {"x": 2})]),
]


def random_pairs(seed: int, n: int) -> list[tuple[list[FunctionCall], list[FunctionCall]]]:
    rng = random.Random(seed)
    values: list[Any] = [0, 1, 1.0, True, False, None, "1", "x", [1, 2], {"k": 1}, {"k": 1.0}]

    def random_call() -> FunctionCall:
        args: dict[str, Any] | None = None
        roll = rng.random()
        if roll < 0.2:
            args = {}
        elif roll < 0.8:
            args = {k: rng.choice(values) for k in rng.sample("pqr", rng.randint(1, 2))}
        return call(rng.choice("abc"), args)

    pairs = []
    for _ in range(n):
        expected = [random_call() for _ in range(rng.randint(0, 4))]
        actual = [c.model_copy(deep=True) for c in expected]
        for _ in range(rng.randint(0, 3)):
            op = rng.randrange(5)
            if op == 0 and actual:
                del actual[rng.randrange(len(actual))]
            elif op == 1:
                actual.insert(rng.randint(0, len(actual)), random_call())
            elif op == 2:
                rng.shuffle(actual)
            elif op == 3 and actual:
                actual.append(actual[rng.randrange(len(actual))])
            elif actual:
                actual[rng.randrange(len(actual))] = random_call()
        pairs.append((actual, expected))
    return pairs


# --- parity ---------------------------------------------------------------------------


@pytest.mark.parametrize(("match_type", "ignore_args"), MODES)
def test_hand_picked_cases_match_adk(match_type: MatchType, ignore_args: bool) -> None:
    assert_parity(HAND_PICKED, match_type, ignore_args)


@pytest.mark.parametrize(("match_type", "ignore_args"), MODES)
def test_random_corpus_matches_adk(match_type: MatchType, ignore_args: bool) -> None:
    assert_parity(random_pairs(seed=1234 + match_type, n=1500), match_type, ignore_args)


@pytest.mark.parametrize(("match_type", "ignore_args"), MODES)
def test_one_invocation_per_case_matches_adk(match_type: MatchType, ignore_args: bool) -> None:
    for pair in HAND_PICKED:
        assert_parity([pair], match_type, ignore_args)


def test_no_invocations_gives_no_overall_score() -> None:
    assert our_scores([], MatchType.EXACT, False) == ([], None)
    assert adk_scores([], MatchType.EXACT, False) == ([], None)


@pytest.mark.parametrize(("match_type", "ignore_args"), MODES)
def test_event_form_of_intermediate_data_matches_adk(
    match_type: MatchType, ignore_args: bool
) -> None:
    """Calls read from recorded events (our Invocation.tool_calls) score as ADK's do."""

    def ours(calls: list[FunctionCall]) -> Invocation:
        events = [
            InvocationEvent(
                author="agent", content=Content(role="model", parts=[Part(function_call=c)])
            )
            for c in calls
        ]
        return Invocation(
            user_content=Content.from_text("hi", "user"),
            intermediate_data=InvocationEvents(invocation_events=events),
        )

    pairs = random_pairs(seed=99, n=300)
    theirs, _ = adk_scores(pairs, match_type, ignore_args, as_events=True)
    mine = [
        invocation_score(ours(a).tool_calls(), ours(e).tool_calls(), match_type, ignore_args)
        for a, e in pairs
    ]
    assert mine == theirs
    hand_written = Invocation(
        user_content=Content.from_text("hi", "user"),
        intermediate_data=IntermediateData(tool_uses=[A, B]),
    )
    assert invocation_score(hand_written.tool_calls(), [A, B], match_type, ignore_args) == 1.0


ARG_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-2, 2),
        st.sampled_from([0.0, 1.0, 2.0, 0.5]),
        st.sampled_from(["", "a", "1"]),
    ),
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from("uv"), inner, max_size=2)
    ),
    max_leaves=4,
)
CALLS = st.builds(
    call,
    name=st.sampled_from(["a", "b", "c"]),
    args=st.none() | st.dictionaries(st.sampled_from("xy"), ARG_VALUES, max_size=2),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    actual=st.lists(CALLS, max_size=6),
    expected=st.lists(CALLS, max_size=4),
    mode=st.sampled_from(MODES),
)
def test_random_call_lists_match_adk(actual, expected, mode) -> None:
    match_type, ignore_args = mode
    assert_parity([(actual, expected)], match_type, ignore_args)


@settings(max_examples=200, deadline=None)
@given(expected=st.lists(CALLS, max_size=5), data=st.data())
def test_subsequences_and_permutations_match_adk(expected, data) -> None:
    """Cases built to pass: extra calls interleaved, or the same calls shuffled."""
    extra = data.draw(st.lists(CALLS, max_size=3))
    actual = list(expected)
    for extra_call in extra:
        actual.insert(data.draw(st.integers(0, len(actual))), extra_call)
    shuffled = data.draw(st.permutations(actual))
    for match_type, ignore_args in MODES:
        assert_parity([(actual, expected), (shuffled, expected)], match_type, ignore_args)
    assert calls_match(actual, expected, MatchType.IN_ORDER)
    assert calls_match(shuffled, expected, MatchType.ANY_ORDER)


# --- known values and API -------------------------------------------------------------


def test_known_values() -> None:
    x = call("x")
    assert invocation_score([A, x, B], [A, B], MatchType.IN_ORDER) == 1.0
    assert invocation_score([B, A], [A, B], MatchType.IN_ORDER) == 0.0
    assert invocation_score([B, A], [A, B], MatchType.ANY_ORDER) == 1.0
    assert invocation_score([A, x, B], [A, B], MatchType.EXACT) == 0.0
    assert invocation_score([], [], MatchType.EXACT) == 1.0
    assert invocation_score([A], [], MatchType.EXACT) == 0.0
    assert invocation_score([A], [], MatchType.IN_ORDER) == 1.0
    assert invocation_score([A], [], MatchType.ANY_ORDER) == 1.0
    assert invocation_score([A], [A, A], MatchType.ANY_ORDER) == 0.0
    assert calls_match([call("a", {"x": 1})], [call("a", {"x": 1.0})], MatchType.EXACT)
    assert calls_match([call("a", {"x": True})], [call("a", {"x": 1})], MatchType.EXACT)
    assert not calls_match([call("a", None)], [call("a", {})], MatchType.EXACT)
    assert calls_match([call("a", None)], [call("a", {})], MatchType.EXACT, ignore_args=True)


def test_genai_function_calls_are_accepted_too() -> None:
    adk_call = genai_types.FunctionCall(name="a", args={"x": 1})
    assert calls_match([adk_call], [call("a", {"x": 1})], MatchType.EXACT)


def test_match_type_parse() -> None:
    assert MatchType.parse("in-order") is MatchType.IN_ORDER
    assert MatchType.parse(2) is MatchType.ANY_ORDER
    assert MatchType.parse(0) is MatchType.EXACT
    assert MatchType.parse(" Any Order ") is MatchType.ANY_ORDER
    assert MatchType.parse("EXACT") is MatchType.EXACT
    assert MatchType.parse(MatchType.IN_ORDER) is MatchType.IN_ORDER
    assert MatchType.parse(Criterion.MatchType.ANY_ORDER) is MatchType.ANY_ORDER
    assert MatchType.parse(1.0) is MatchType.IN_ORDER
    assert calls_match([A], [A], "exact")  # type: ignore[arg-type]
    for bad in ["bogus", "", "1", "in order please", 3, -1, 1.5, True, False, None, [1]]:
        with pytest.raises(ValueError, match="invalid match type") as raised:
            MatchType.parse(bad)
        assert "IN_ORDER" in str(raised.value)


@pytest.mark.parametrize(
    "value", ["exact", "in-order", "IN_ORDER", " any order ", "Any-Order", "in_order", 0, 1, 2]
)
def test_match_type_parse_agrees_with_adk_criterion(value: object) -> None:
    parsed = Criterion(threshold=1.0, match_type=value).match_type
    assert MatchType.parse(value).name == parsed.name


@pytest.mark.parametrize("value", ["bogus", "1", 3, "in order please"])
def test_match_type_rejections_agree_with_adk_criterion(value: object) -> None:
    with pytest.raises(ValueError):
        Criterion(threshold=1.0, match_type=value)
    with pytest.raises(ValueError):
        MatchType.parse(value)
