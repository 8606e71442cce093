"""Merge the Results of shards (one matrix job each) into the Results of the whole suite.

The shards must be one partition: the same shard count, partition hash, baseline
and run configuration, every index 1..N exactly once, and disjoint cases that
together are all of it. A missing shard is an infrastructure failure (exit 3):
merging without it would hide its cases.

Each case keeps all its runs, a shard's confirmation re-runs included (`runs[].confirms`),
and the shards' one run configuration (`confirm_runs` with it): comparing the merged
Results decides each case from its runs as its shard did, and takes the suite-level test
over the whole suite (docs/statistics.md, "Confirmation in a sharded run").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..core import CaseKey
from ..errors import InfrastructureError, InputError
from ..results import Results, Shard, Timing, Usage


def _shard(results: Results) -> Shard:
    assert results.shard is not None  # merge() checks every shard first
    return results.shard


def _same(
    shards: Sequence[tuple[str, Results]], what: str, value: Callable[[Results], object]
) -> None:
    first_name, first = shards[0]
    for name, shard in shards[1:]:
        if value(shard) != value(first):
            raise InputError(
                f"{what} differs from {first_name}'s; these shards are not one run", name
            )


def merge(shards: Sequence[tuple[str, Results]]) -> Results:
    """Merge (file name, Results) pairs; errors name the offending file."""
    if not shards:
        raise InputError("merge needs at least one shard")
    records: dict[str, Shard] = {}
    for name, results in shards:
        if results.shard is None:
            raise InputError("is not a shard's Results (it has no shard field)", name)
        records[name] = results.shard
    _same(shards, "the shard count", lambda r: _shard(r).count)
    _same(shards, "the partition", lambda r: _shard(r).partition_hash)
    _same(shards, "the baseline", lambda r: _shard(r).baseline_sha)
    _same(shards, "the run configuration", lambda r: r.run_config)
    _same(shards, "the eval sets (files or criteria)", lambda r: r.eval_sets)
    _same(shards, "the commit", lambda r: (r.source.repo, r.source.sha))
    _same(shards, "the agent-eval-action version", lambda r: r.tool_version)
    count = records[shards[0][0]].count
    seen: dict[int, str] = {}
    for name in records:
        index = records[name].index
        if index in seen:
            raise InputError(f"shard {index}/{count} is also in {seen[index]}", name)
        seen[index] = name
    missing = sorted(set(range(1, count + 1)) - set(seen))
    if missing:
        raise InfrastructureError(
            f"shard{'s' if len(missing) > 1 else ''} {', '.join(f'{i}/{count}' for i in missing)} "
            "missing: without them the verdict would skip their cases"
        )
    owner: dict[CaseKey, str] = {}
    for name, results in shards:
        for case in results.cases:
            key = case.key
            if key in owner:
                raise InputError(f'case "{key[0]} / {key[1]}" is also in {owner[key]}', name)
            owner[key] = name
    first = shards[0][1]
    total = records[shards[0][0]].cases_total
    if len(owner) != total:
        raise InputError(f"the shards hold {len(owner)} cases but the partition has {total}")
    order = {s.eval_set_id: i for i, s in enumerate(first.eval_sets)}
    cases = sorted(
        (case for _, r in shards for case in r.cases),
        key=lambda c: (order.get(c.eval_set_id, len(order)), c.line, c.eval_id),
    )
    usage = Usage()
    for case in cases:
        usage.add(case.usage)
    started = min(r.timing.started_at for _, r in shards)
    finished = max(r.timing.finished_at for _, r in shards)
    return first.replace(
        partial=any(r.partial for _, r in shards),
        shard=None,
        merged_shards=count,
        cases=cases,
        usage=usage,
        timing=Timing(
            started_at=started,
            finished_at=finished,
            duration_s=(finished - started).total_seconds(),
        ),
        warnings=list(dict.fromkeys(w for _, r in shards for w in r.warnings)),
    )
