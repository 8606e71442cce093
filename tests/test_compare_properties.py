"""Properties of compare and merge that must hold for any Results."""

from __future__ import annotations

from helpers.factory import case, results
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_eval_action.compare import compare
from agent_eval_action.compare.merge import merge
from agent_eval_action.compare.model import Change
from agent_eval_action.results import Shard

T, R = "tool_trajectory_avg_score", "response_match_score"
SCORES = st.sampled_from([0.0, 0.25, 0.5, 0.8, 0.85, 0.9, 1.0])
MIRROR = {
    Change.NEW_FAILURE: Change.FIXED,
    Change.FIXED: Change.NEW_FAILURE,
    Change.REGRESSED: Change.IMPROVED,
    Change.IMPROVED: Change.REGRESSED,
    Change.UNCHANGED: Change.UNCHANGED,
    Change.STILL_FAILING: Change.STILL_FAILING,
}


@st.composite
def side(draw, names: list[str], runs: int):
    """One side's cases: the given case names, each with scores and behaviours per run."""
    cases = []
    for name in names:
        behaviour = draw(st.lists(st.sampled_from("abc"), min_size=runs, max_size=runs))
        scores = {m: draw(st.lists(SCORES, min_size=runs, max_size=runs)) for m in (T, R)}
        cases.append(case(name, scores, behaviour, line=names.index(name) + 1))
    return results(*cases, num_runs=runs)


@st.composite
def two_sides(draw):
    names = draw(
        st.lists(st.sampled_from([f"c{i}" for i in range(12)]), min_size=1, max_size=8, unique=True)
    )
    runs = draw(st.sampled_from([1, 3, 5]))
    return draw(side(names, runs)), draw(side(names, runs))


@settings(max_examples=150, deadline=None)
@given(two_sides())
def test_compare_with_itself_has_no_regressions_and_passes(sides):
    x, _ = sides
    diff = compare(x, x)
    assert diff.verdict.trajectory_regressions == diff.verdict.response_regressions == 0
    assert all(c.change in (Change.UNCHANGED, Change.STILL_FAILING) for c in diff.cases)
    assert diff.verdict.passed


@settings(max_examples=150, deadline=None)
@given(two_sides())
def test_swapping_sides_swaps_regressions_and_improvements(sides):
    x, y = sides
    forward, backward = compare(y, x), compare(x, y)
    back = {(c.eval_id, m.metric): m.change for c in backward.cases for m in c.metrics}
    for c in forward.cases:
        for m in c.metrics:
            assert back[(c.eval_id, m.metric)] == MIRROR[m.change], (c.eval_id, m.metric)
    for test in forward.suite_tests:
        mirror = next(t for t in backward.suite_tests if t.axis == test.axis)
        assert mirror.mean_delta == -test.mean_delta and (mirror.worse, mirror.better) == (
            test.better,
            test.worse,
        )


@settings(max_examples=100, deadline=None)
@given(two_sides(), st.data())
def test_merging_shards_gives_back_the_unsharded_results(sides, data):
    whole, _ = sides
    count = data.draw(st.integers(1, 4))
    owner = [data.draw(st.integers(1, count)) for _ in whole.cases]
    shards = []
    for index in range(1, count + 1):
        part = whole.replace(
            cases=[c for c, o in zip(whole.cases, owner, strict=True) if o == index],
            shard=Shard(index=index, count=count, partition_hash="p", cases_total=len(whole.cases)),
        )
        shards.append((f"shard{index}.json", part))
    merged = merge(list(reversed(shards)))
    assert merged.cases == whole.cases
    assert merged.eval_sets == whole.eval_sets and merged.usage == whole.usage
    assert merged.shard is None and merged.partial is False
