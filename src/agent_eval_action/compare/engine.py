"""Compare a current Results with its baseline, case by case and metric by metric (pure).

This module gathers each metric's evidence (scores, how steady the runs were, the per-case
test's p-values) and records what `decision.decide_metric` decides from it; the rules
themselves are all there (docs/statistics.md explains them in plain words):

- A case whose runs all behaved the same on each side (same tool calls, same
  answers, same scores) is deterministic: any trajectory drop, a response drop
  of at least `min_delta`, or a passed -> failed flip is a regression. With one
  run on a side this cannot be seen; a flip then counts unless the case is known
  to be flaky from main's history.
- A case whose runs disagree on either side is noisy ("flaky"): a flip or drop
  alone proves nothing. With enough runs on both sides it gets an exact
  permutation test, Benjamini-Hochberg across cases: with confirmation re-runs it
  nominates the case for them, without it decides alone at a lower level (the
  false-alarm budget: statistics_policy.py); in any
  case its runs' pass/fail enter a stratified shuffle test over all noisy cases
  per axis, which catches a broad degradation no single case shows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from ..core import CaseKey
from ..results import CaseResult, MetricResult, Results, Status
from . import confirm, stats, wording
from .decision import (
    CaseTest,
    MetricEvidence,
    RunSetting,
    Sides,
    decide_metric,
    moves,
    record_decision,
)
from .divergence import behaviour_varies, finished_runs, first_divergence, first_failure
from .efficiency import efficiency_diff
from .evidence import MainRuns, passes
from .matching import Matching, by_id, match_cases
from .model import (
    NOISE_RULES,
    REGRESSIONS,
    Axis,
    BaselineInfo,
    CaseDiff,
    CaseRef,
    Change,
    Diff,
    MetricDiff,
    Pattern,
    Policy,
    Rule,
    Sensitivity,
    SuiteTest,
)
from .notes import comparability_notes, verdict_notes
from .policy import decide
from .record import MainRecord
from .statistics_policy import DEFAULT as STATISTICS

# When several metrics of a case changed differently, the case shows the most telling.
_PRECEDENCE = [
    Change.NEW_FAILURE,
    Change.REGRESSED,
    Change.INCOMPLETE,
    Change.ERRORED,
    Change.FIXED,
    Change.IMPROVED,
    Change.STILL_FAILING,
    Change.ADDED,
    Change.REMOVED,
    Change.UNCHANGED,
]


def compare(
    current: Results,
    baseline: Results | None,
    *,
    fail_on: Sequence[str] = ("regression",),
    min_delta: Mapping[Axis, float] | None = None,
    history: MainRecord | None = None,
    known_flaky: Iterable[CaseKey] = (),
    no_baseline_reason: str | None = None,
    accepted: bool = False,
) -> Diff:
    """`history`: main's record of its older baselines (compare/record.py); with the
    baseline's it is main's record of each case (how noisy it is, how often it failed:
    compare/evidence.py). `known_flaky`: more cases to treat as noisy on main."""
    config = current.run_config
    sharded = current.shard is not None or bool(current.merged_shards)
    two_step = STATISTICS.suite_in_looks(config.num_runs, config.confirm_runs, sharded)
    s = STATISTICS
    policy = Policy(
        fail_on=list(fail_on),
        min_delta={**s.min_delta, **(min_delta or {})},
        case_alpha=s.case_nominate_alpha,
        case_alone_alpha=s.case_alone_alpha,
        blame_alpha=s.blame_alpha,
        case_min_runs=s.case_min_runs,
        suite_alpha=s.suite_first_alpha if two_step else s.suite_alpha,
        suite_round_alpha=s.suite_round_alpha if two_step else 0.0,
        suite_round_below=s.suite_round_below if two_step else 0.0,
        suite_round_continue=s.suite_round_continue if two_step else 0.0,
        suite_rounds=s.suite_rounds if two_step else 0,
    )
    if baseline is None:
        reason = no_baseline_reason or "no baseline was given"
        notes = [f"No baseline: {reason}. Cases are judged by their thresholds alone."]
        # as its own runs scored each case: a recorded baseline's sampling runs are main's
        # record, shown as the baseline's scores nowhere
        current = confirm.originals(current)
        cases = [_without_baseline(case) for case in current.cases]
        suite_tests: list[SuiteTest] = []
        sensitivity: list[Sensitivity] = []
        matching = Matching(common=len(current.cases))
    else:
        # main's record: the baseline's runs with its sampling runs
        main = (history or MainRecord()).plus(baseline)
        baseline = confirm.originals(baseline)  # its cases as its own runs scored them
        matching = match_cases(baseline, current)
        notes = comparability_notes(baseline, current, matching)
        flaky = set(known_flaky) | main.flaky
        extra: dict[int, list[dict[str, bool]]] = {}  # id(case diff) -> its suite re-runs
        cases = _compare_cases(baseline, current, policy, flaky, matching, main, extra)
        suite_tests, sensitivity = _suite_tests(cases, policy, main, extra)
    comparable = baseline is None or not baseline.cases or not current.cases or matching.comparable
    verdict = decide(
        current,
        cases,
        suite_tests,
        policy,
        has_baseline=baseline is not None,
        accepted=accepted,
        comparable=comparable,
    )
    if baseline is not None:
        verdict.notes = verdict_notes(baseline, current, matching, policy, comparable=comparable)
    return Diff(
        baseline=None if baseline is None else _baseline_info(baseline),
        current=current.source,
        policy=policy,
        verdict=verdict,
        notes=notes,
        suite_tests=suite_tests,
        sensitivity=sensitivity,
        cases=cases,
        not_run=[_case_ref(case) for case in matching.not_run],
        comparable=comparable,
        efficiency=efficiency_diff(current, baseline),
    )


def _case_ref(case: CaseResult) -> CaseRef:
    return CaseRef(
        eval_set_id=case.eval_set_id,
        eval_id=case.eval_id,
        file=case.file,
        line=case.line,
        status=case.status,
    )


def _baseline_info(baseline: Results) -> BaselineInfo:
    return BaselineInfo(
        source=baseline.source,
        created_at=baseline.created_at,
        tool_version=baseline.tool_version,
        adk_version=baseline.adk_version,
        num_runs=baseline.run_config.num_runs,
    )


def _case_shell(case: CaseResult, change: Change, baseline: CaseResult | None = None) -> CaseDiff:
    return CaseDiff(
        eval_set_id=case.eval_set_id,
        eval_id=case.eval_id,
        file=case.file,
        line=case.line,
        change=change,
        pattern=None,
        axes={},
        baseline_status=baseline.status if baseline else None,
        current_status=case.status,
        flaky=False,
        likely_noise=False,
        metrics=(),
        divergence=None,
        notes=(),
    )


def _without_baseline(case: CaseResult) -> CaseDiff:
    change = {Status.PASSED: Change.UNCHANGED, Status.ERRORED: Change.ERRORED}.get(case.status)
    if change is None:
        change = Change.INCOMPLETE if case.status == Status.NOT_EVALUATED else Change.STILL_FAILING
    diff = _case_shell(case, change)
    diff.metrics = tuple(_one_sided(name, m, "no_baseline") for name, m in case.metrics.items())
    diff.divergence = first_failure(case, diff.metrics)
    return diff


def _one_sided(name: str, metric: MetricResult, sides: Sides) -> MetricDiff:
    """A metric scored on one side only (`sides`), decided as such."""
    baseline = sides == "removed"
    diff = MetricDiff(
        metric=name,
        axis=metric.axis,
        baseline_score=metric.score if baseline else None,
        current_score=None if baseline else metric.score,
        delta=None,
        baseline_status=metric.status if baseline else None,
        current_status=None if baseline else metric.status,
        threshold=metric.threshold,
        baseline_runs=metric.runs if baseline else (),
        current_runs=() if baseline else metric.runs,
        noisy=False,
        p_value=None,
        change=Change.UNCHANGED,
    )
    if sides in ("new_metric", "no_baseline_score"):
        return diff  # decided with its baseline's fields (_compare_metric)
    record_decision(diff, decide_metric(MetricEvidence(sides=sides), STATISTICS))
    return diff


def _compare_cases(
    baseline: Results,
    current: Results,
    policy: Policy,
    known_flaky: set[CaseKey],
    matching: Matching,
    main: MainRecord,
    extra: dict[int, list[dict[str, bool]]],
) -> list[CaseDiff]:
    """Every current case against its baseline self (same key, or renamed: matching.py),
    then the removed ones; cases the selection left out are not among them (Diff.not_run).
    Each metric is decided from its evidence (decision.py): first as compared, the per-case
    test's metrics once Benjamini-Hochberg has seen them all, then those left to re-runs
    with them (confirm.settle)."""
    before = by_id(baseline.cases)
    found = [
        (case, before.get(case.eval_set_id, {}).get(case.eval_id) or matching.renamed.get(case.key))
        for case in current.cases
    ]
    family = confirm.family_size(current, sum(base is not None for _, base in found))
    confirm_runs = current.run_config.confirm_runs
    setting = {
        axis: RunSetting(min_delta, confirm_runs, family)
        for axis, min_delta in policy.min_delta.items()
    }
    diffs, pairs = [], []
    for case, base in found:
        if base is not None:
            own = confirm.original(case)  # re-runs never change the scores compared
            diff, kept = _compare_case(base, own, setting, base.key in known_flaky)
            diffs.append(diff)
            if base.key != case.key:
                diff.renamed_from = _case_ref(base)
                diff.notes = wording.facts_in_words(diff)
            pairs.append((diff, base, case, kept))
        else:
            diff = _case_shell(case, Change.ADDED)
            diff.metrics = tuple(_one_sided(n, m, "added") for n, m in case.metrics.items())
            diff.divergence = first_failure(case, diff.metrics)
            diffs.append(diff)
    for case in matching.removed:
        diff = _case_shell(case, Change.REMOVED, baseline=case)
        diff.current_status = None
        diff.metrics = tuple(_one_sided(n, m, "removed") for n, m in case.metrics.items())
        diffs.append(diff)
    _decide_tested(pairs, policy)
    for diff, _, cur, _ in pairs:
        rounds = confirm.suite_round_runs(cur)
        if rounds:  # most cases have none: no empty list each
            extra[id(diff)] = passes(cur, rounds)
    for diff, base, cur, kept in pairs:
        if kept:
            firsts = {m.metric: e for m, e in kept}
            confirm.settle(diff, cur, main.runs(base.key), firsts)
    for diff, base, cur, _ in pairs:
        regressed = next((m for m in diff.metrics if m.change in REGRESSIONS), None)
        if regressed is not None:
            diff.divergence = first_divergence(base, cur, regressed)
        else:  # a failing case explains itself against its eval file
            diff.divergence = first_failure(cur, diff.metrics)
    for diff in diffs:
        _summarise(diff)
    return diffs


# a case's metrics whose evidence is kept past their first decision (the per-case test's,
# and those left to re-runs), with it; most cases have none
Kept = list[tuple[MetricDiff, MetricEvidence]]


def _compare_case(
    base: CaseResult, cur: CaseResult, setting: Mapping[Axis, RunSetting], known_flaky: bool
) -> tuple[CaseDiff, Kept]:
    diff = _case_shell(cur, Change.UNCHANGED, base)
    behaviour_noisy = behaviour_varies(base) or behaviour_varies(cur)
    single_run = finished_runs(base) <= 1 and finished_runs(cur) <= 1
    kept: Kept = []
    metrics = []
    for name in dict.fromkeys([*cur.metrics, *base.metrics]):
        metric, evidence = _compare_metric(
            name,
            base.metrics.get(name),
            cur.metrics.get(name),
            setting,
            behaviour_noisy=behaviour_noisy,
            known_flaky=known_flaky and single_run,
        )
        metrics.append(metric)
        if evidence is not None and (metric.p_value is not None or _to_rerun(metric)):
            kept.append((metric, evidence))
    diff.metrics = tuple(metrics)
    if Status.ERRORED in (base.status, cur.status):
        diff.change = Change.ERRORED
        diff.errored_side = "current" if cur.status == Status.ERRORED else "baseline"
        diff.error = (cur if diff.errored_side == "current" else base).note or "a run failed"
    diff.expectation_changed = not _same_content(base, cur)
    diff.no_longer_scored = tuple(m.metric for m in diff.metrics if m.change == Change.REMOVED)
    diff.notes = wording.facts_in_words(diff)
    diff.flaky = behaviour_noisy or any(m.noisy for m in diff.metrics)
    return diff, kept


def _to_rerun(m: MetricDiff) -> bool:
    """A regression, or a move nominated for re-runs: they decide it again."""
    return m.change in REGRESSIONS or m.pending in REGRESSIONS


def _same_content(base: CaseResult, cur: CaseResult) -> bool:
    """The same expected turns: by content_sha256 when both sides record it (a renamed case
    keeps it), else by case_sha256 (which hashes the eval_id too)."""
    if base.content_sha256 and cur.content_sha256:
        return base.content_sha256 == cur.content_sha256
    return base.case_sha256 == cur.case_sha256


def _scores_vary(metric: MetricResult) -> bool:
    known = [s for s in metric.runs if s is not None]
    return bool(known) and max(known) - min(known) > stats.EPSILON


def _compare_metric(
    name: str,
    base: MetricResult | None,
    cur: MetricResult | None,
    setting: Mapping[Axis, RunSetting],
    *,
    behaviour_noisy: bool,
    known_flaky: bool,
) -> tuple[MetricDiff, MetricEvidence | None]:
    """The metric's diff with its first decision, and its evidence (None for a metric only
    the baseline scored, which nothing decides again); the per-case test's p-value when it has enough
    runs, for Benjamini-Hochberg over every metric tested (`_decide_tested`)."""
    if cur is None:
        assert base is not None
        return _one_sided(name, base, "removed"), None
    if base is None or base.score is None:
        sides: Sides = "new_metric" if base is None else "no_baseline_score"
        diff = _one_sided(name, cur, sides)
        if base is not None:
            diff.baseline_status, diff.baseline_runs = base.status, base.runs
        evidence = MetricEvidence(
            sides=sides,
            baseline_status=diff.baseline_status,
            current_status=cur.status,
            error=cur.error,
            run=setting[cur.axis],
        )
        record_decision(diff, decide_metric(evidence, STATISTICS))
        return diff, evidence
    noisy = behaviour_noisy or _scores_vary(base) or _scores_vary(cur)
    diff = MetricDiff(
        metric=name,
        axis=cur.axis,
        baseline_score=base.score,
        current_score=cur.score,
        delta=None if cur.score is None else cur.score - base.score,
        baseline_status=base.status,
        current_status=cur.status,
        threshold=cur.threshold,
        baseline_runs=base.runs,
        current_runs=cur.runs,
        noisy=noisy,
        p_value=None,
        change=Change.UNCHANGED,
    )
    evidence = MetricEvidence(
        baseline_score=base.score,
        current_score=cur.score,
        baseline_status=base.status,
        current_status=cur.status,
        error=cur.error,
        noisy=noisy,
        known_flaky=known_flaky,
        run=setting[cur.axis],
    )
    first = decide_metric(evidence, STATISTICS)
    record_decision(diff, first)
    if first.rule in (Rule.NOT_COMPUTED, Rule.DETERMINISTIC):
        return diff, evidence
    base_runs = [s for s in base.runs if s is not None]
    cur_runs = [s for s in cur.runs if s is not None]
    if noisy and min(len(base_runs), len(cur_runs)) >= STATISTICS.case_min_runs:
        # every noisy metric with enough runs is tested, moved or not: a family made only of
        # the metrics that moved would be picked for small p-values (see _decide_tested)
        delta = diff.delta or 0.0
        flip = base.status == Status.PASSED and cur.status == Status.FAILED
        drop = moves(delta, setting[cur.axis].min_delta)[0]
        worse = flip or drop or delta <= 0
        tail = (base_runs, cur_runs) if worse else (cur_runs, base_runs)
        diff.p_value = stats.runs_worse_p(*tail)
    return diff, evidence


def _decide_tested(
    pairs: list[tuple[CaseDiff, CaseResult, CaseResult, Kept]], policy: Policy
) -> None:
    """Noisy metrics with enough runs, all of them tested (a family made only of the metrics
    that moved would be picked for small p-values), Benjamini-Hochberg over them at the
    level that nominates and at the level that blames alone; then each one decided again
    with what the test says (decision.py). Past it, a case keeps the evidence of the
    metrics left to re-runs alone."""
    tested = [
        (kept, j, m.p_value)
        for _, _, _, kept in pairs
        for j, (m, _) in enumerate(kept)
        if m.p_value is not None
    ]
    p_values = [p for _, _, p in tested]
    nominated = stats.benjamini_hochberg(p_values, policy.case_alpha)
    alone = stats.benjamini_hochberg(p_values, policy.case_alone_alpha)
    for (kept, j, p), nominate, blame in zip(tested, nominated, alone, strict=True):
        metric, evidence = kept[j]
        evidence = replace(evidence, test=CaseTest(p, nominate, blame))
        record_decision(metric, decide_metric(evidence, STATISTICS))
        kept[j] = (metric, evidence)
    for _, _, _, kept in pairs:
        if kept:
            kept[:] = [(m, e) for m, e in kept if _to_rerun(m)]


def _strongest(changes: Iterable[Change]) -> Change:
    present = set(changes)
    return next((c for c in _PRECEDENCE if c in present), Change.UNCHANGED)


def _summarise(diff: CaseDiff) -> None:
    """The case's change per axis and overall, and the two-axis pattern of a regression."""
    diff.likely_noise = diff.likely_noise or any(m.rule in NOISE_RULES for m in diff.metrics)
    # A change judged against noise makes the case flaky, whether its runs disagree or
    # main's history says so: `flaky` is the one source the reports read.
    diff.flaky = diff.flaky or diff.likely_noise
    for axis in ("trajectory", "response"):
        changes = [m.change for m in diff.metrics if m.axis == axis]
        if changes:
            diff.axes[axis] = _strongest(changes)
    if diff.change in (Change.ADDED, Change.REMOVED, Change.ERRORED):
        return
    diff.change = _strongest(m.change for m in diff.metrics)
    # "still failing" claims the baseline failed too: a flip within noise stays unchanged
    failed = (diff.baseline_status, diff.current_status) == (Status.FAILED, Status.FAILED)
    if diff.change == Change.UNCHANGED and failed:
        diff.change = Change.STILL_FAILING
    trajectory = diff.axes.get("trajectory") in REGRESSIONS
    response = diff.axes.get("response") in REGRESSIONS
    if trajectory and response:
        diff.pattern = Pattern.BOTH
    elif trajectory and "response" in diff.axes:
        diff.pattern = Pattern.LUCKY_ANSWER
    elif response and "trajectory" in diff.axes:
        diff.pattern = Pattern.FUMBLED_SUMMARY


def _known_deterministic(case: CaseDiff, record: MainRuns) -> bool:
    """Two or more runs on each side, and on each side all alike (main's older runs too)."""
    return (
        record.deterministic
        and not any(m.noisy for m in case.metrics)
        and all(min(len(m.baseline_runs), len(m.current_runs)) >= 2 for m in case.metrics)
    )


def _base_key(case: CaseDiff) -> CaseKey:
    """The key the case had on main (its old one, if it was renamed)."""
    renamed = case.renamed_from
    if renamed is not None:
        return renamed.key
    return case.key


def _side_passes(
    noisy: Mapping[Axis, list[MetricDiff]], axes: tuple[Axis, ...], side: str
) -> list[tuple[float, ...]]:
    """Per run of one side of the diff, its pass share per axis."""
    columns = {axis: _axis_passes(noisy[axis], side) for axis in axes if noisy[axis]}
    runs = min(len(column) for column in columns.values())
    padded = [columns.get(axis, [0.0] * runs)[:runs] for axis in axes]
    return list(zip(*padded, strict=True))


class _Shared:
    """One object kept for each distinct value: a row (a run's pass share per axis), a side's
    rows, a case's pass rate on main. A suite's runs pass in a few ways, and at 100,000
    cases each case's rows and rates would otherwise be as many objects of their own."""

    def __init__(self) -> None:
        self._kept: dict[tuple, tuple] = {}

    def __call__(self, value: tuple) -> tuple:
        return self._kept.setdefault(value, value)

    def side(self, runs: Sequence[tuple[float, ...]]) -> tuple[tuple[float, ...], ...]:
        return self(tuple(self(row) for row in runs))


class _PassRows:
    """Main's side of a case in the suite test: per run that scored every metric tested, its
    pass share per axis, as one shared tuple. A run's pass mapping is shared by the runs that
    passed alike (compare/evidence.passes), and a case has main's runs of every older
    baseline: a row is worked out once per mapping and set of metrics tested, and a side
    once per sequence of mappings (at 100,000 cases with ten older baselines, over a million
    runs, in a few dozen sequences)."""

    def __init__(self, shared: _Shared) -> None:
        self.shared = shared
        # (id of the mapping, metrics tested) -> (the mapping, kept alive; its row)
        self._rows: dict[tuple[int, Tested], tuple[dict[str, bool], tuple[float, ...] | None]] = {}
        # (ids of the mappings, metrics tested) -> (the mappings, kept alive; the side)
        self._sides: dict[tuple[tuple[int, ...], Tested], tuple[Sequence, tuple]] = {}

    def side(
        self, runs: Sequence[dict[str, bool]], tested: Tested
    ) -> tuple[tuple[float, ...], ...]:
        key = (tuple(map(id, runs)), tested)
        found = self._sides.get(key)
        if found is None:
            found = self._sides[key] = (runs, self.shared.side(self._rows_of(runs, tested)))
        return found[1]

    def _rows_of(self, runs: Sequence[dict[str, bool]], tested: Tested) -> list[tuple[float, ...]]:
        rows = []
        for passed in runs:
            found = self._rows.get((id(passed), tested))
            if found is None:
                found = self._rows[(id(passed), tested)] = (passed, _pass_row(passed, tested))
            if found[1] is not None:
                rows.append(found[1])
        return rows


Tested = tuple[tuple[str, ...], ...]  # per axis, the metrics the suite test weighs


def _pass_row(passed: dict[str, bool], tested: Tested) -> tuple[float, ...] | None:
    """The run's pass share per axis, None unless it scored every metric tested."""
    if not all(name in passed for metrics in tested for name in metrics):
        return None
    return tuple(
        sum(passed[n] for n in metrics) / len(metrics) if metrics else 0.0 for metrics in tested
    )


def _axis_passes(metrics: list[MetricDiff], side: str) -> list[float]:
    """Per run on one side, the share of the given metrics that the run passed (its score
    reached the metric's threshold, as a case passes; a score that could not be computed
    never passes)."""
    columns = []
    for m in metrics:
        threshold = m.threshold
        runs = getattr(m, f"{side}_runs")
        columns.append(
            [float(s is not None and threshold is not None and s >= threshold) for s in runs]
        )
    return [sum(run) / len(run) for run in zip(*columns, strict=False)]


def _power(rates: list[tuple[float, int, int]], policy: Policy) -> Callable[[float], float]:
    """How often the suite test, with the suite rounds it may take, catches a drop."""
    return lambda drop: stats.looks_power(
        rates,
        drop,
        policy.suite_alpha,
        policy.suite_rounds,
        policy.suite_round_below,
        policy.suite_round_alpha,
    )


def _suite_tests(
    cases: list[CaseDiff],
    policy: Policy,
    main: MainRecord,
    extra: Mapping[int, list[dict[str, bool]]],
) -> tuple[list[SuiteTest], list[Sensitivity]]:
    """Per axis, a stratified shuffle test over the cases: did their runs pass less often
    together? Each run counts by the share of the axis's metrics it passed (per-run
    pass/fail: the wording of a right or a wrong answer moves its score, not its verdict);
    the runs on main are all main's record has (the baseline's and older baselines'), the
    runs here this run's own (never its confirmation re-runs, which were picked for having
    regressed). A case known to be deterministic (two or more runs on each side, alike on
    each) is left to its own verdict; a case whose runs all agree weighs nothing (an axis on
    which none varies is not reported). When the suite
    was run again for this test (`extra`: the suite rounds' runs, confirm.py), the test is
    taken again with those runs too, at its own alpha. The report's mean change is that of the
    scores."""
    axes: tuple[Axis, ...] = ("trajectory", "response")
    strata: list[stats.Case] = []
    second: list[stats.Case] = []
    rounds_ran = any(extra.values())  # else there is no second test to build rows for
    shared = _Shared()
    pass_rows = _PassRows(shared)
    rate_of: dict[int, list[float]] = {}  # id(a shared side) -> its pass rate per axis
    deltas: dict[Axis, list[float]] = {axis: [] for axis in axes}
    rates: dict[Axis, list[tuple[float, int, int]]] = {axis: [] for axis in axes}
    for case in cases:
        if case.change in (Change.ADDED, Change.REMOVED, Change.ERRORED):
            continue
        family = {
            axis: [m for m in case.metrics if m.axis == axis and m.delta is not None]
            for axis in axes
        }
        if not any(family.values()):
            continue
        record = main.runs(_base_key(case))
        if _known_deterministic(case, record):  # judged on its own, like any certain change
            continue
        weighed = tuple(tuple(m.metric for m in family[axis]) for axis in axes)
        on_main = pass_rows.side(record.recorded, weighed) or shared.side(
            _side_passes(family, axes, "baseline")
        )
        here = shared.side(_side_passes(family, axes, "current"))
        sampled, more = on_main, here
        if rounds_ran:
            sampled = pass_rows.side(record.sampled, weighed) or on_main
            more = here + pass_rows.side(extra.get(id(case), []), weighed)
            second.append((sampled, more))
        if on_main and here:
            rate = rate_of.get(id(on_main))
            if rate is None:
                columns = zip(*on_main, strict=True)
                rate = rate_of[id(on_main)] = [sum(c) / len(on_main) for c in columns]
            for i, axis in enumerate(axes):
                if family[axis]:
                    rates[axis].append(shared((rate[i], len(on_main), len(here))))
        strata.append((on_main, here))
        for i, axis in enumerate(axes):
            if family[axis] and len({row[i] for row in sampled + more}) > 1:  # it can weigh
                deltas[axis].append(sum(m.delta for m in family[axis]) / len(family[axis]))  # type: ignore[misc]
    sensitivity = [
        Sensitivity(
            axis=axis,
            cases=len(rates[axis]),
            drop=STATISTICS.detect_drop,
            power=_power(rates[axis], policy)(STATISTICS.detect_drop),
            smallest=stats.smallest_drop(_power(rates[axis], policy)),
        )
        for axis in axes
        if rates[axis]
    ]
    tested = [axis for axis in axes if deltas[axis]]
    if not tested:
        return [], sensitivity
    p_values = stats.stratified_shift_p(strata, axes)
    again = stats.stratified_shift_p(second, axes) if rounds_ran else None
    rounds = max((len(runs) for runs in extra.values()), default=0)
    tests = []
    for axis in tested:
        values = deltas[axis]
        signs = Counter((v > stats.EPSILON) - (v < -stats.EPSILON) for v in values)
        mean = sum(values) / len(values)
        p, alpha = p_values[axis], policy.suite_alpha
        if again is not None and p > alpha:  # decided by the test with the suite rounds
            p, alpha = again[axis], policy.suite_round_alpha
        tests.append(
            SuiteTest(
                axis=axis,
                cases=len(values),
                mean_delta=mean,
                worse=signs[-1],
                better=signs[1],
                p_value=p,
                alpha=alpha,
                significant=p <= alpha and mean < 0,
                first_p_value=None if again is None else p_values[axis],
                rounds=0 if again is None else rounds,
            )
        )
    return tests, sensitivity
