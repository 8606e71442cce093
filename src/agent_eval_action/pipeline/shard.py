"""Split a suite's cases over N shards (`run --shard I/N`), the same way in every shard.

Every shard computes the whole partition from the same inputs (the suite and, when
given, the baseline) and keeps its own part, so no job needs to talk to another:

- with the baseline's per-case durations: greedy longest-processing-time (LPT), the
  longest case first, each to the shard with the least time so far (ties: the lowest
  index); cases of equal duration are ordered by a stable key, and a case the
  baseline lacks is given the mean known duration;
- without them: cases ordered by sha256("eval_set_id/eval_id") and dealt round-robin,
  so shard sizes differ by at most one case.

A case (all its runs) is the unit: every case is in exactly one shard.
`partition_hash` hashes the full ordered assignment and the durations it used: equal
for every shard of one partition, different when the suite, N or the durations differ.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..core import CaseKey

if TYPE_CHECKING:
    from ..results import Results, Shard
    from .gate import Baseline
    from .plan import Plan

_SHARD = re.compile(r"(\d+)/(\d+)")


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N` as (I, N) with 1 <= I <= N; ValueError with a one-line reason otherwise."""
    match = _SHARD.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"--shard: {text!r} is not I/N (e.g. 2/4)")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1:
        raise ValueError(f"--shard: {text!r}: the shard count must be at least 1")
    if not 1 <= index <= count:
        raise ValueError(f"--shard: {text!r}: the index must be within 1..{count}")
    return index, count


def _stable_key(case: CaseKey) -> str:
    return hashlib.sha256(f"{case[0]}/{case[1]}".encode()).hexdigest()


@dataclass(frozen=True)
class Partition:
    count: int
    assignment: dict[CaseKey, int]  # case -> shard index 1..count, in the suite's order
    partition_hash: str
    by_durations: bool  # False: by stable hash, balanced in count

    def cases(self, index: int) -> list[CaseKey]:
        """The cases of shard `index`, in the suite's order."""
        return [case for case, shard in self.assignment.items() if shard == index]


def partition(
    cases: Sequence[CaseKey], count: int, durations: Mapping[CaseKey, float] | None = None
) -> Partition:
    """Assign every case to a shard 1..count.

    `durations` (seconds per case, e.g. a baseline's) are used when at least one of the
    cases has a positive one; otherwise the split is by stable hash.
    """
    if count < 1:
        raise ValueError("the shard count must be at least 1")
    if len(set(cases)) != len(cases):
        raise ValueError("cases must be distinct")
    known = {c: float(durations[c]) for c in cases if durations and c in durations}
    by_durations = any(d > 0 for d in known.values())
    used: dict[CaseKey, float] = {}
    shard_of: dict[CaseKey, int] = {}
    if by_durations:
        default = sum(known.values()) / len(known)
        used = {c: known.get(c, default) for c in cases}
        loads = [(0.0, index) for index in range(1, count + 1)]  # a heap: least time, lowest index
        for case in sorted(cases, key=lambda c: (-used[c], _stable_key(c))):
            load, index = heapq.heappop(loads)
            shard_of[case] = index
            heapq.heappush(loads, (load + used[case], index))
    else:
        for position, case in enumerate(sorted(cases, key=_stable_key)):
            shard_of[case] = position % count + 1
    assignment = {case: shard_of[case] for case in cases}
    record = {
        "count": count,
        "method": "durations" if by_durations else "hash",
        "assignment": [
            [c[0], c[1], shard, used[c] if by_durations else None]
            for c, shard in assignment.items()
        ],
    }
    digest = hashlib.sha256(json.dumps(record, separators=(",", ":")).encode()).hexdigest()
    return Partition(count, assignment, digest, by_durations)


def shard_plan(
    plan: Plan, index: int, count: int, baseline: Baseline
) -> tuple[Plan, Shard, Baseline]:
    """Shard `index` of `count`: its part of the plan, the `shard` record of its Results, and
    the baseline it compares with (`shard_baseline`). Every shard computes the same
    partition from the same suite and baseline."""
    from ..results import Shard
    from .plan import restrict

    cases = [CaseKey(s.eval_set_id, c.eval_id) for s in plan.suite.eval_sets for c in s.cases]
    main = baseline.results
    durations = {case.key: case.duration_s for case in main.cases} if main else None
    split = partition(cases, count, durations)
    mine = split.cases(index)
    how = "the baseline's case durations" if split.by_durations else "stable hash"
    print(
        f"shard {index}/{count}: {len(mine)} of {len(cases)} cases (split by {how})",
        file=sys.stderr,
    )
    record = Shard(
        index=index,
        count=count,
        partition_hash=split.partition_hash,
        cases_total=len(cases),
        baseline_sha=main.source.sha if main else None,
        cases_compared=cases_compared(plan, main) if main else None,
    )
    return restrict(plan, set(mine)), record, shard_baseline(baseline, set(cases) - set(mine))


def cases_compared(plan: Plan, baseline: Results) -> int:
    """How many of the whole suite's cases the merged run compares with the baseline (by key,
    or renamed: compare/matching.py): the family every shard holds its per-case evidence
    over (compare/confirm.py), so that a shard blames a case as the merged suite would, and
    sharding does not loosen the suite's chance of one false blame."""
    from ..compare.matching import compared_count
    from .score import case_shell

    suite = [case_shell(eval_set, case) for eval_set, case in plan.cases.values()]
    return compared_count(baseline.cases, suite)


def shard_baseline(baseline: Baseline, others: set[CaseKey]) -> Baseline:
    """What a shard compares its own cases with: the baseline without the other shards'
    cases (`others`), so they are not taken for removed ones, and a case of this shard is
    paired as in the merged run. Cases the suite no longer has stay (removed or renamed
    ones); older baselines stay whole (they are main's record, read per case)."""
    if baseline.results is None:
        return baseline
    kept = [case for case in baseline.results.cases if case.key not in others]
    return replace(baseline, results=baseline.results.replace(cases=kept))
