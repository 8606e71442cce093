"""The Diff: what changed between a baseline Results and the current one (schema "agent-eval-diff/1").

Pure data, serialisable and versioned, so reports and the action render it and
other tools can read it. Records, like the Results (msgspec Structs: results.py).
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import BinaryIO, Final, Literal

import msgspec

from ..core import Axis, CaseKey
from ..results import Instant, Record, Source, Status, dump_json, stream_json, write_json

DIFF_SCHEMA: Final = "agent-eval-diff/1"


class Change(StrEnum):
    """What happened to one case (or one of its metrics) between baseline and current."""

    NEW_FAILURE = "new_failure"  # passed -> failed, and the flip is real
    REGRESSED = "regressed"  # a real drop in score
    FIXED = "fixed"  # failed -> passed
    IMPROVED = "improved"  # a real rise in score
    STILL_FAILING = "still_failing"  # failed on both sides
    UNCHANGED = "unchanged"
    INCOMPLETE = "incomplete"  # a current metric could not be computed
    ERRORED = "errored"  # a run errored on either side
    ADDED = "added"  # only in current
    REMOVED = "removed"  # only in baseline


# Changes that blame the PR.
REGRESSIONS = frozenset({Change.NEW_FAILURE, Change.REGRESSED})


class Pattern(StrEnum):
    """How the two axes moved together in a regressed case."""

    LUCKY_ANSWER = "lucky_answer"  # trajectory regressed, the response held
    FUMBLED_SUMMARY = "fumbled_summary"  # response regressed, the trajectory held
    BOTH = "both"


class Rule(StrEnum):
    """The rule that decided a metric's change (docs/statistics.md): the decision as a value,
    which the code reads; `MetricDiff.reason` is its wording, which only reports show."""

    ONE_SIDED = "one_sided"  # the metric (or its case) is on one side only
    THRESHOLD = "threshold"  # no baseline score: judged by its threshold alone
    NOT_COMPUTED = "not_computed"  # the current score could not be computed
    DETERMINISTIC = "deterministic"  # steady runs on both sides: a flip or a move counts
    UNMOVED = "unmoved"  # the runs vary, but nothing moved by enough to count
    WITHIN_NOISE = "within_noise"  # it moved, and varying runs (or main's history) explain it
    BEYOND_NOISE = "beyond_noise"  # the per-case test alone, at its share of the false-alarm budget
    CONFIRMED = "confirmed"  # every confirmation re-run showed it again, beyond noise
    NOT_REPRODUCED = "not_reproduced"  # a re-run did not show it again
    UNTELLABLE = "untellable"  # the re-runs (run or allowed) cannot tell it from noise
    # a confirmation re-run errored or went unscored, the others showed it again, and no more
    # may run: not confirmed, never cleared by a fault; the regression stands
    UNCONFIRMED = "unconfirmed"


# The rules that leave a flip or drop to noise: the case is likely noise, and flaky.
NOISE_RULES = frozenset({Rule.WITHIN_NOISE, Rule.NOT_REPRODUCED, Rule.UNTELLABLE})


class MetricDiff(Record, kw_only=True):
    metric: str
    axis: Axis
    baseline_score: float | None
    current_score: float | None
    delta: float | None
    baseline_status: Status | None
    current_status: Status | None
    threshold: float | None
    baseline_runs: tuple[float | None, ...] = ()
    current_runs: tuple[float | None, ...] = ()
    noisy: bool = False  # runs disagree on either side
    # a flip or drop seen in one run of a case that varies on main: what it would be if
    # confirmation re-runs showed it again (compare/confirm.py)
    pending: Change | None = None
    p_value: float | None = None  # per-case test, when there were enough runs
    change: Change
    # what decided `change`; None only in Diffs written before rules were recorded
    rule: Rule | None = None
    reason: str = ""  # one line: why this change was decided, in words (reports only)


class TurnDiff(Record, kw_only=True):
    """The first turn where the current behaviour departs, with its tool calls side by side."""

    turn: int  # 0-based
    user_text: str
    expected_calls: list[str]
    baseline_calls: list[str] | None
    current_calls: list[str]
    expected_answer: str | None
    baseline_answer: str | None
    current_answer: str | None
    baseline_run: int | None
    current_run: int
    # a scenario case (simulated user turns, nothing expected): the baseline run's user
    # message at this turn, when the simulated user said something else there
    simulated: bool = False
    baseline_user_text: str | None = None


class Confirmation(Record, kw_only=True):
    """Re-runs of a regressed case (compare/confirm.py): how many, and how many showed the
    regression again."""

    runs: int
    reproduced: int
    # re-runs that errored or could not be scored: they neither showed it again nor cleared it
    inconclusive: int = 0


class CaseRef(Record, kw_only=True):
    """A case as the baseline knew it: a renamed case's old identity, or a baseline case the
    current selection left out."""

    eval_set_id: str
    eval_id: str
    file: str
    line: int = 1
    status: Status | None = None  # on the baseline

    @property
    def key(self) -> CaseKey:
        return CaseKey(self.eval_set_id, self.eval_id)


class CaseDiff(Record, kw_only=True):
    eval_set_id: str
    eval_id: str
    file: str
    line: int
    change: Change
    pattern: Pattern | None = None
    axes: dict[Axis, Change] = msgspec.field(default_factory=dict)
    baseline_status: Status | None
    current_status: Status | None
    flaky: bool = False
    likely_noise: bool = False  # a flip or drop that the noise seen explains
    # tuples, like every sequence of these records: a suite's 100,000 CaseDiffs then hold
    # no container the garbage collector scans but `axes`
    metrics: tuple[MetricDiff, ...] = ()
    divergence: TurnDiff | None = None
    # the facts below in words, for versions before the facts (an older comment job reads
    # a newer Diff): written, never read back but by `__post_init__` for such old Diffs
    notes: tuple[str, ...] = ()
    confirmation: Confirmation | None = None
    # the same case (the same content, case_sha256) under another id on the baseline:
    # compared with that, never counted as removed and added
    renamed_from: CaseRef | None = None
    # the side whose run errored (the current one when both did), and why, as its case says
    errored_side: CaseSide | None = None
    error: str | None = None
    expectation_changed: bool = False  # its eval file's expected turns differ from the baseline's
    no_longer_scored: tuple[str, ...] = ()  # metrics the baseline scored and this run does not

    def __post_init__(self) -> None:
        if self.notes and self.errored_side is None and not self.expectation_changed:
            legacy_facts(self)

    @property
    def key(self) -> CaseKey:
        return CaseKey(self.eval_set_id, self.eval_id)


CaseSide = Literal["current", "baseline"]
# how a version before the facts worded them in `notes` (compare/engine.py wrote them)
ERRORED_ON = "errored on the {} side: "
EXPECTATION_CHANGED = "expectation changed"
NO_LONGER_SCORED = "no longer scored: "


def legacy_facts(case: CaseDiff) -> None:
    """The facts of a CaseDiff written before they were fields, read once from its notes."""
    for note in case.notes:
        for side in ("current", "baseline"):
            if note.startswith(ERRORED_ON.format(side)) and case.errored_side is None:
                case.errored_side, case.error = side, note.removeprefix(ERRORED_ON.format(side))
        if note.startswith(EXPECTATION_CHANGED):
            case.expectation_changed = True
        if note.startswith(NO_LONGER_SCORED):
            case.no_longer_scored = tuple(note.removeprefix(NO_LONGER_SCORED).split(", "))


class SuiteTest(Record, kw_only=True):
    """The paired test over noisy cases: did they get worse together?"""

    axis: Axis
    cases: int  # cases whose runs on this axis varied, on main or here: those that weigh
    mean_delta: float
    worse: int
    better: int
    p_value: float
    alpha: float
    significant: bool
    # the test on one run per case, when suite rounds ran the suite again and p_value and
    # alpha are those of the test with their runs too (docs/statistics.md)
    first_p_value: float | None = None
    rounds: int = 0  # the suite rounds whose runs p_value includes


class Sensitivity(Record, kw_only=True):
    """What the suite-level test on one axis can detect in this suite (an estimate)."""

    axis: Axis
    cases: int  # cases not known to be deterministic: those a broad drop is tested over
    drop: float  # the drop in every such case's pass rate ...
    power: float  # ... caught this often
    smallest: float | None  # the smallest such drop caught 80% of the time; None: none is


class Policy(Record, kw_only=True):
    fail_on: list[str]
    min_delta: dict[Axis, float]
    case_alpha: float  # the per-case test's level that nominates for re-runs
    # the per-case test's level when it blames alone (confirm-runs 0), and the chance of
    # one false blame after re-runs, split over the cases compared (0.0: Diffs written
    # before they were recorded)
    case_alone_alpha: float = 0.0
    blame_alpha: float = 0.0
    case_min_runs: int
    suite_alpha: float
    # the suite rounds (compare/confirm.py): the first runs when the test on one run per case
    # falls below suite_round_below, each next one while the test with the rounds' runs falls
    # below suite_round_continue, at most suite_rounds; each test after a round at
    # suite_round_alpha
    suite_round_below: float = 0.0
    suite_round_alpha: float = 0.0
    suite_round_continue: float = 0.0
    suite_rounds: int = 0


# What the gate can fail on (compare/policy.py), one code each.
GateCode = Literal[
    "none_evaluated",  # no case, or every case errored
    "not_comparable",  # the baseline and this run have no case in common
    "thresholds",  # cases that do not pass their thresholds (fail-on threshold)
    "over_budget",  # cases over an efficiency budget
    "regressions",  # cases regressed on an axis
    "suite_drop",  # the noisy cases got worse together on an axis
    "incomplete",  # cases whose metrics on an axis could not be computed
    "errored",  # compared cases that errored here
    "added_failing",  # added cases that do not pass
    "removed_passed",  # removed cases that passed on the baseline
]


class GateReason(Record, kw_only=True):
    """One thing the gate fails on, as a value; `text` says it (the Verdict's `reasons`)."""

    code: GateCode
    axis: Axis | None = None
    cases: int = 0  # the cases it counts (the suite-level test: those it weighed)
    text: str


class Verdict(Record, kw_only=True):
    passed: bool
    reasons: list[str]  # why it failed (or what it would have failed on, when policy is never)
    # the same reasons as values (empty in Diffs written before them)
    why: list[GateReason] = msgspec.field(default_factory=list)
    counts: dict[str, int]
    trajectory_regressions: int
    response_regressions: int
    accepted: bool = False
    # said at the top, with the verdict: what the verdict alone does not show (removed
    # cases, cases the selection left out, a baseline of another agent or another policy)
    notes: list[str] = msgspec.field(default_factory=list)
    # the policies that decided: fail_on as given, or `threshold` without a baseline
    decided_by: list[str] = msgspec.field(default_factory=list)


class EfficiencyFigure(Record, kw_only=True):
    """One of ADK's efficiency metrics over the suite: the mean of the per-case totals,
    over the cases both sides measured when there is a baseline."""

    metric: str
    current: float | None
    baseline: float | None = None
    cases: int  # the cases averaged


class EfficiencyChange(Record, kw_only=True):
    """One efficiency metric of one case: its per-case total on each side, and its budget."""

    metric: str
    baseline: float | None
    current: float | None
    budget: float | None = None


class CaseEfficiency(Record, kw_only=True):
    """A case whose efficiency is worth a note: a total that moved a lot, or a budget exceeded."""

    eval_set_id: str
    eval_id: str
    file: str
    line: int
    changed: list[EfficiencyChange] = msgspec.field(default_factory=list)
    over_budget: list[EfficiencyChange] = msgspec.field(default_factory=list)

    @property
    def key(self) -> CaseKey:
        return CaseKey(self.eval_set_id, self.eval_id)


class EfficiencyDiff(Record, kw_only=True):
    """ADK's efficiency metrics (informational): the suite's figures, and the cases whose
    figures changed a lot against the baseline or exceeded a budget (compare/efficiency.py)."""

    suite: list[EfficiencyFigure] = msgspec.field(default_factory=list)
    cases: list[CaseEfficiency] = msgspec.field(default_factory=list)


class BaselineInfo(Record, kw_only=True):
    source: Source
    created_at: Instant
    tool_version: str
    adk_version: str | None
    num_runs: int


class Diff(Record, kw_only=True):
    schema_: Literal["agent-eval-diff/1"] = msgspec.field(default=DIFF_SCHEMA, name="schema")
    created_at: Instant = msgspec.field(default_factory=lambda: datetime.now(UTC))
    baseline: BaselineInfo | None  # None: no usable baseline (see notes)
    current: Source
    policy: Policy
    verdict: Verdict
    notes: list[str] = msgspec.field(default_factory=list)  # comparability, said once for the suite
    suite_tests: list[SuiteTest] = msgspec.field(default_factory=list)
    # per axis, what the suite-level test could detect here (docs/statistics.md)
    sensitivity: list[Sensitivity] = msgspec.field(default_factory=list)
    cases: list[CaseDiff]
    # baseline cases the current selection left out (`FILE:id`, narrower eval paths): not
    # run, never counted as removed (docs/statistics.md, "Removed, renamed and not run")
    not_run: list[CaseRef] = msgspec.field(default_factory=list)
    # False: the baseline and this run have no case in common; nothing was compared
    comparable: bool = True
    # ADK's efficiency metrics; None when no case recorded them (Results before they were)
    efficiency: EfficiencyDiff | None = None

    @classmethod
    def from_json(cls, data: bytes | str) -> Diff:
        """A Diff from JSON (msgspec.ValidationError or DecodeError when it is not one)."""
        return msgspec.json.decode(data, type=cls)

    def dump_json(self) -> str:
        return dump_json(self)

    def write(self, path: Path) -> None:
        """Write `dump_json` and a line break, atomically and a few cases at a time (the
        Diff of 100,000 cases is hundreds of MB of JSON, never held at once)."""
        write_json(self, "cases", path, end=b"\n")

    def stream(self, out: BinaryIO) -> None:
        """Write `dump_json` and a line break to `out`, a few cases at a time."""
        stream_json(self, "cases", out, end=b"\n")
