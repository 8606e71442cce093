"""Every rule that decides a metric's change, in one function: `decide_metric(evidence,
policy)` (docs/statistics.md says the rules in words).

The engine (engine.py) and the confirmation step (confirm.py) only gather the evidence, as
typed values, and record the decision on the metric (`record_decision`); the words of its
`reason` are made from the decision's values by wording.py, never read back. The function
is called at two moments: when a metric is first compared (its scores, how steady its runs
were, the per-case test), and, for a regression left to re-runs, once more after them, with
the same evidence and a `reruns` part: the first decision is made again and the re-runs
decide from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from ..results import Status
from . import wording
from .evidence import blame_level, unchanged_p
from .model import REGRESSIONS, Change, MetricDiff, Rule
from .statistics_policy import DEFAULT, StatisticsPolicy
from .stats import EPSILON

# where the metric was scored: both sides, or one (a case or metric added or removed), or
# the current side judged by its threshold (no baseline Results at all; a metric new on the
# baseline's cases; one the baseline could not score)
Sides = Literal["both", "added", "removed", "no_baseline", "new_metric", "no_baseline_score"]
# (failed on main, runs on main, failed here, runs here) of a new failure's metric
Tally = tuple[int, int, int, int]


@dataclass(frozen=True, slots=True)
class RunSetting:
    """What the run's configuration says to one metric's decision."""

    min_delta: float = 0.0  # the least move that counts on the metric's axis (or --min-delta)
    confirm_runs: int | None = None  # the re-runs the gate allows (0 or None: off)
    family: int = 0  # the cases compared: a streak's blame is split over them


@dataclass(frozen=True, slots=True)
class CaseTest:
    """What the per-case test says of a noisy metric with enough runs on both sides."""

    p_value: float
    nominated: bool  # significant at the level that nominates (Benjamini-Hochberg)
    significant_alone: bool  # significant at the level that blames alone


@dataclass(frozen=True, slots=True)
class Streaks:
    """What a regressed case's runs here (re-runs included) say against its record on main."""

    tallies: tuple[Tally, ...]  # one per new failure among the metrics to confirm
    changed_behaviour: bool  # one behaviour on main, one here, and not the same
    one_behaviour_unrecorded: bool  # every finished run here alike, and no run on main


@dataclass(frozen=True, slots=True)
class Reruns:
    """The confirmation re-runs of a metric whose first decision left it to them."""

    ran: int  # re-runs of the case so far
    shown: int  # of them, those that showed this metric's regression again
    faults: int  # those that errored or did not score it: no evidence either way
    tally: Tally | None  # this metric's, when it is a new failure
    on_main: tuple[int, int]  # (failed, runs) of the metric on main
    case: Streaks


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricEvidence:
    """Everything a metric's change is decided from."""

    sides: Sides = "both"
    baseline_score: float | None = None
    current_score: float | None = None
    baseline_status: Status | None = None
    current_status: Status | None = None
    error: str | None = None  # why the current score is missing
    noisy: bool = False  # runs disagree on either side (what they did, or their scores)
    known_flaky: bool = False  # one run on each side, of a case that varies on main
    test: CaseTest | None = None
    run: RunSetting = field(default_factory=RunSetting)
    reruns: Reruns | None = None


Phrase = Literal[
    "none",
    "new_metric",
    "no_baseline_score",
    "not_computed",
    "moved",
    "within_noise",
    "nominated",
    "below_alone",
    "beyond_noise",
    "beyond_share",
    "streak",
    "untellable_allowed",
    "confirmed",
    "shown_so_far",
    "not_reproduced",
    "unconfirmed",
    "untellable_shown",
]


@dataclass(frozen=True, slots=True)
class Said:
    """Which words say the decision, with the numbers they quote."""

    phrase: Phrase = "none"
    p_value: float = 0.0
    level: float = 0.0
    tally: tuple[int, int, int, int, float] | None = None
    shown: int = 0
    runs: int = 0  # re-runs decided, ran or allowed
    faults: int = 0
    on_main: tuple[int, int] = (0, 0)
    though_varies: bool = False  # a move first left to main's noise, then shown again
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    change: Change
    rule: Rule
    pending: Change | None = None  # what re-runs would make it, if they show it again
    said: Said = Said()
    by_reruns: bool = False  # decided by the re-runs, on top of the first decision


def decide_metric(evidence: MetricEvidence, policy: StatisticsPolicy = DEFAULT) -> Decision:
    """The metric's change, the rule that decided it, and what the words need."""
    first = _first(evidence, policy)
    reruns = evidence.reruns
    if reruns is None or not (first.change in REGRESSIONS or first.pending in REGRESSIONS):
        return first
    return _after_reruns(first, evidence, reruns, policy)


def _first(e: MetricEvidence, policy: StatisticsPolicy) -> Decision:
    if e.sides in ("added", "removed"):
        return Decision(Change(e.sides), Rule.ONE_SIDED)
    if e.sides == "no_baseline":
        return Decision(Change.UNCHANGED, Rule.THRESHOLD)
    if e.sides in ("new_metric", "no_baseline_score"):
        phrase: Phrase = "new_metric" if e.sides == "new_metric" else "no_baseline_score"
        return Decision(
            _by_threshold(e.current_status), Rule.THRESHOLD, said=Said(phrase, error=e.error)
        )
    if e.current_score is None:
        return Decision(
            Change.INCOMPLETE, Rule.NOT_COMPUTED, said=Said("not_computed", error=e.error)
        )
    assert e.baseline_score is not None
    delta = e.current_score - e.baseline_score
    drop, rise = moves(delta, e.run.min_delta)
    flip = e.baseline_status == Status.PASSED and e.current_status == Status.FAILED
    fix = e.baseline_status == Status.FAILED and e.current_status == Status.PASSED
    both_failed = e.baseline_status == e.current_status == Status.FAILED
    if not e.noisy and not e.known_flaky:
        steady = _steady_change(flip, fix, drop, rise, both_failed)
        return Decision(steady, Rule.DETERMINISTIC, said=Said("moved"))
    still = Change.STILL_FAILING if both_failed else Change.UNCHANGED
    decided = Decision(still, Rule.UNMOVED)
    if flip or drop or fix or rise:
        pending = None
        if e.known_flaky and not e.noisy and (flip or drop):
            # one run against a case that varies on main: only re-runs can tell
            pending = Change.NEW_FAILURE if flip else Change.REGRESSED
        decided = Decision(still, Rule.WITHIN_NOISE, pending, Said("within_noise"))
    if e.test is None:
        return decided
    return _tested(decided, e, e.test, delta, flip, fix, policy)


def moves(delta: float, min_delta: float) -> tuple[bool, bool]:
    """Whether the score dropped, or rose, by enough to count on its axis."""
    return (
        delta < -EPSILON and -delta >= min_delta - EPSILON,
        delta > EPSILON and delta >= min_delta - EPSILON,
    )


def _steady_change(flip: bool, fix: bool, drop: bool, rise: bool, both_failed: bool) -> Change:
    if flip:
        return Change.NEW_FAILURE
    if drop:
        return Change.REGRESSED
    if fix:
        return Change.FIXED
    if rise:
        return Change.IMPROVED
    return Change.STILL_FAILING if both_failed else Change.UNCHANGED


def _by_threshold(status: Status | None) -> Change:
    if status == Status.FAILED:
        return Change.NEW_FAILURE
    if status == Status.NOT_EVALUATED:
        return Change.INCOMPLETE
    return Change.UNCHANGED


def _tested(
    decided: Decision,
    e: MetricEvidence,
    test: CaseTest,
    delta: float,
    flip: bool,
    fix: bool,
    policy: StatisticsPolicy,
) -> Decision:
    """The per-case test's verdict on a metric that moved by enough to count (a flip, or
    min-delta), before any re-run. It blames only where its share of the false-alarm budget
    allows (statistics_policy.py):

    - re-runs off: a worse metric significant at `case_alone_alpha` (Benjamini-Hochberg) is
      a regression, a better one an improvement (the same bar both ways: swapping the sides
      swaps the verdicts); the rest is within noise;
    - re-runs on: a worse metric significant at `case_nominate_alpha` is only nominated
      (`pending`: within noise until they show it again); the streak rules decide it, with
      its re-runs or, when the confirm limit leaves it none, with its own runs. A better
      metric is improved when its p-value is within its case's share of the blame budget
      (`blame_level`); a gain fails no gate."""
    # the test's own bar for a move: |delta| at least min-delta (and above rounding)
    moved = flip or fix or abs(delta) >= max(e.run.min_delta, EPSILON)
    if not test.nominated or not moved:  # not significant, or not by enough to count
        return decided
    p = test.p_value
    worse = delta < 0
    confirm_runs = e.run.confirm_runs
    if confirm_runs and worse:
        pending = Change.NEW_FAILURE if flip else Change.REGRESSED
        said = Said("nominated", p_value=p, level=policy.case_nominate_alpha)
        return Decision(decided.change, Rule.WITHIN_NOISE, pending, said)
    if confirm_runs:
        level = blame_level(e.run.family, policy)
        alone = p <= level
    else:
        level, alone = policy.case_alone_alpha, test.significant_alone
    if not alone:
        return replace(decided, said=Said("below_alone", p_value=p, level=level))
    if worse:
        change = Change.NEW_FAILURE if flip else Change.REGRESSED
        return Decision(change, Rule.BEYOND_NOISE, said=Said("beyond_noise", p, level))
    phrase: Phrase = "beyond_share" if confirm_runs else "beyond_noise"
    change = Change.FIXED if fix else Change.IMPROVED
    return Decision(change, Rule.BEYOND_NOISE, said=Said(phrase, p, level))


def _after_reruns(
    first: Decision, e: MetricEvidence, r: Reruns, policy: StatisticsPolicy
) -> Decision:
    """A regression (or a move nominated for re-runs) decided by its case's re-runs: it stands
    if every re-run showed it again and that is more than noise explains, and is otherwise
    likely noise. Not re-run, it keeps its first decision, unless its own runs already blame
    it, or no number of re-runs within `confirm_runs` could have (then it is noise: one run
    proves nothing). A re-run that faulted is no evidence either way."""
    level = blame_level(e.run.family, policy)
    confirm_runs = e.run.confirm_runs
    if not r.ran:
        if confirm_runs and streak_blamed(r.case, level):
            # a nominated metric whose own runs already failed more often than noise explains
            p = unchanged_p(*r.tally) if r.tally is not None else 1.0
            if first.pending is None or r.tally is None or p > level:
                return first
            said = Said("streak", tally=(*r.tally, p))
            return Decision(first.pending, Rule.BEYOND_NOISE, said=said, by_reruns=True)
        if confirm_runs and not can_blame(r.case, confirm_runs, level):
            said = Said("untellable_allowed", runs=confirm_runs, on_main=r.on_main)
            return _noise(e, Rule.UNTELLABLE, said)
        return first
    own = replace(r.case, tallies=() if r.tally is None else (r.tally,))
    decided = r.ran - r.faults  # re-runs that either showed it again or did not
    blamed = r.shown == decided > 0
    if blamed and not r.case.changed_behaviour:
        p = unchanged_p(*r.tally) if r.tally is not None else 1.0
        blamed = r.tally is not None and p <= level
        tally = None if r.tally is None else (*r.tally, p)
    else:
        tally = None
    if blamed:
        change = first.change if first.pending is None else first.pending
        said = Said("confirmed", tally=tally, runs=decided, though_varies=first.pending is not None)
        return Decision(change, Rule.CONFIRMED, said=said, by_reruns=True)
    left = (confirm_runs or 0) - r.ran
    if r.shown == decided and left > 0 and can_blame(own, left, level):
        # every re-run so far that finished showed it again, and the ones left may still
        # blame it: undecided until they ran; the rule stays
        said = Said("shown_so_far", shown=r.shown, faults=r.faults)
        return replace(first, said=said, by_reruns=True)
    if r.shown < decided:
        return _noise(e, Rule.NOT_REPRODUCED, Said("not_reproduced", shown=r.shown, runs=decided))
    if r.faults and can_blame(own, r.faults, level):
        # a re-run that crashed, timed out or went unscored, where one that showed it again
        # could have blamed it, never turns the regression into noise
        change = first.change if first.pending is None else first.pending
        said = Said("unconfirmed", shown=r.shown, faults=r.faults)
        return Decision(change, Rule.UNCONFIRMED, said=said, by_reruns=True)
    return _noise(e, Rule.UNTELLABLE, Said("untellable_shown", runs=r.ran, on_main=r.on_main))


def _noise(e: MetricEvidence, rule: Rule, said: Said) -> Decision:
    """A regression that noise explains: unchanged (or still failing)."""
    both_failed = e.baseline_status == Status.FAILED and e.current_status == Status.FAILED
    change = Change.STILL_FAILING if both_failed else Change.UNCHANGED
    return Decision(change, rule, said=said, by_reruns=True)


def streak_blamed(streaks: Streaks, level: float) -> bool:
    """Whether a new failure's runs here already failed more often than its record on main
    makes likely, at `level` (a case's share of the blame budget)."""
    return any(unchanged_p(*tally) <= level for tally in streaks.tallies)


def can_blame(streaks: Streaks, left: int, level: float) -> bool:
    """Whether `left` more re-runs, all showing the regression again, could blame it, and
    nothing blames it yet: its runs may still all be one new behaviour (re-run up to the
    end), or a new failure's streak may still become unlikely enough."""
    if streak_blamed(streaks, level):
        return False
    if streaks.changed_behaviour or streaks.one_behaviour_unrecorded:
        return True
    return any(
        unchanged_p(main_failed, main_runs, failed + left, here + left) <= level
        for main_failed, main_runs, failed, here in streaks.tallies
    )


def record_decision(m: MetricDiff, d: Decision) -> None:
    """Set the metric's change, pending change, rule and reason from a decision. A decision
    the re-runs made words itself from the first one's words, which `m` holds then."""
    s = d.said
    m.change, m.pending = d.change, d.pending
    if s.though_varies:
        m.reason = wording.though_varies(m)
    reason = _words(m, s)  # of the rule and words before this decision, where they build on them
    m.rule, m.reason = d.rule, reason


def _words(m: MetricDiff, s: Said) -> str:
    match s.phrase:
        case "none":
            return ""
        case "new_metric":
            return wording.threshold(m, wording.NEW_METRIC, s.error)
        case "no_baseline_score":
            return wording.threshold(m, wording.NO_BASELINE_SCORE, s.error)
        case "not_computed":
            return wording.not_computed(s.error)
        case "moved":
            return wording.moved(m, m.change)
        case "within_noise":
            return wording.within_noise(m)
        case "nominated":
            return wording.nominated(s.p_value, s.level)
        case "below_alone":
            return wording.below_alone(m, s.p_value, s.level)
        case "beyond_noise":
            return wording.beyond_noise(s.p_value, s.level)
        case "beyond_share":
            return wording.beyond_share(s.p_value, s.level)
        case "streak":
            assert s.tally is not None
            return wording.streak(m, s.tally)
        case "untellable_allowed":
            return wording.untellable(m, wording.noise_record(*s.on_main), allowed=s.runs)
        case "confirmed":
            return wording.confirmed_in(m, s.runs, s.tally)
        case "shown_so_far":
            return wording.shown_so_far(m, s.shown, s.faults)
        case "not_reproduced":
            return wording.not_reproduced(m, s.shown, s.runs)
        case "unconfirmed":
            return wording.unconfirmed(m, s.shown, s.faults)
        case "untellable_shown":
            return wording.untellable(m, wording.noise_record(*s.on_main), shown=s.runs)
