"""What each section of the report shows, as typed values: the view model of the templates.

One builder per section takes the Report and a Detail and returns the section's view.
Every list the budget can shorten is a `Listing` field (report/budget.py), which knows
how many items it leaves out. Strings from agents, tools, eval files and Results files
stay raw here and are escaped by the templates; only what is built from escaped parts
(links, code blocks, table cells of shortened text) arrives as `Md`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import takewhile
from typing import Generic, TypeVar

from ..compare.model import (
    REGRESSIONS,
    CaseDiff,
    Change,
    MetricDiff,
    Pattern,
    Sensitivity,
    SuiteTest,
    TurnDiff,
)
from ..core import Axis
from ..results import Results, Source, Status
from . import escape
from .budget import Cut, Detail, Listing, Shortens, size
from .cuts import DIVERGENCES, EVAL_SETS, FAILING, NOTES, OTHERS, REGRESSION_ROWS, WARNINGS
from .divergence import divergence_text
from .escape import Md
from .labels import (
    age,
    case_class,
    case_notes,
    confirmed,
    decided_by,
    fell_back,
    headline,
    notes_at_top,
    notes_below,
    plural,
)
from .links import branch, commit_link, report_link, run_link
from .model import (
    AcceptOffer,
    EvalSetRow,
    Options,
    Report,
    gate_counts_failing,
)
from .states import suite_test_shown

R = TypeVar("R")


# ---- the head: verdict and provenance ----------------------------------------------------


@dataclass(frozen=True)
class Gate:
    passed: bool
    accepted: bool  # the accept label (on this PR, or on a PR of the merge group)
    report_only: bool  # fail-on: never
    reasons: tuple[str, ...]
    policy: str  # the fail-on that decided, e.g. "regression,-removed"
    asked: str | None  # the fail-on asked for, when `threshold` decided for want of a baseline


@dataclass(frozen=True)
class TopNote:
    """A note said at the top, with the verdict: `icon` **`lead`** `rest`."""

    icon: str
    lead: str  # up to its first ": ", or all of it
    rest: str


@dataclass(frozen=True)
class BaselineLine:
    what: Md  # the commit, its branch and how it relates to this one; or the file: never empty
    age: str
    run: Md
    num_runs: int
    tool_version: str


@dataclass(frozen=True)
class Head:
    headline: str  # plain text (it may hold an error's): the template escapes it
    news: tuple[TopNote, ...]  # why there is no baseline, the verdict's notes: said first
    gate: Gate
    baseline: BaselineLine | None
    current: Md  # the commit, or the file, or "this run": never empty
    run: Md
    check_name: str
    report: Md  # where the drill-down report.html is, or empty (links.report_link)


def head(report: Report, detail: Detail) -> Head:
    diff, options = report.diff, report.options
    verdict, baseline = diff.verdict, diff.baseline
    current, run = _current(report)
    than = "the current Results" if options.current_file else "this run"
    return Head(
        headline=headline(diff, report.current),
        news=tuple(map(_top_note, notes_at_top(diff))),
        gate=Gate(
            verdict.passed,
            verdict.accepted,
            "never" in diff.policy.fail_on,
            tuple(verdict.reasons),
            decided_by(diff),
            fell_back(diff),
        ),
        baseline=None
        if baseline is None
        else BaselineLine(
            what=_baseline_what(baseline.source, options),
            age=age(report.current.created_at - baseline.created_at, than),
            run=run_link(baseline.source, options, "its run"),
            num_runs=baseline.num_runs,
            tool_version=baseline.tool_version,
        ),
        current=current,
        run=run,
        check_name=options.check_name,
        report=report_link(options),
    )


def _top_note(note: str) -> TopNote:
    """A note as headline news: its icon (⚠️ unless it brings its own), its lead in bold."""
    first, _, after = note.partition(" ")
    icon, text = (first, after) if after and not any(c.isalnum() for c in first) else ("⚠️", note)
    lead, colon, rest = text.partition(": ")
    return TopNote(icon, lead + colon.rstrip(), rest) if colon else TopNote(icon, text, "")


def _relation(relation: str | None, sha: str | None) -> str | None:
    """How the baseline relates to this run, without the commit the line already shows
    ("the merge-base 1a2b3c4" after `1a2b3c4` is "the merge-base")."""
    if not relation or not sha:
        return relation or None
    short = sha[:7]
    if relation == short:
        return None
    return relation.removeprefix(f"{short}, ").removesuffix(f" {short}")


def _baseline_what(source: Source, options: Options) -> Md:
    """The baseline: its commit (a link), branch and relation, or the file it was read
    from; never empty, whatever its Results record."""
    commit = commit_link(source, options)
    relation = _relation(options.baseline_relation, source.sha if commit else None)
    about = (
        escape.text(relation)
        if relation
        else Md(f"the file {escape.code(options.baseline_file)}")
        if options.baseline_file
        else None
    )
    if not commit:
        return about or Md("Results that name no commit")
    on = branch(source.ref)
    text = commit + (f" on {escape.code(on)}" if on else "") + (f" ({about})" if about else "")
    return Md(text)


def _current(report: Report) -> tuple[Md, Md]:
    """The current side: its commit, and the file it was read from under `compare` (there is
    no run then: its run is the one that made the file); else "this run"."""
    diff, options = report.diff, report.options
    commit = commit_link(diff.current, options)
    if options.current_file:
        about = Md(f"the file {escape.code(options.current_file)}")
        return (Md(f"{commit} ({about})") if commit else about), run_link(
            diff.current, options, "its run"
        )
    return (commit or Md("this run")), run_link(diff.current, options, "this run")


# ---- eval sets ----------------------------------------------------------------------------


@dataclass(frozen=True)
class EvalSets:
    rows: Listing[EvalSetRow]
    with_baseline: bool


def eval_sets(report: Report, detail: Detail) -> EvalSets:
    return EvalSets(
        Listing.of(EVAL_SETS, report.eval_sets, detail), report.diff.baseline is not None
    )


# ---- cases --------------------------------------------------------------------------------


@dataclass(frozen=True)
class CaseRow:
    """A case in a table: its name, how it changed, and the metrics the table lists."""

    name: str  # "eval set / eval id"
    label: str  # e.g. "new failure · lucky answer"
    metrics: tuple[MetricDiff, ...]


def _listing(
    cut: Cut, cases: Sequence[CaseDiff], detail: Detail, row: Callable[[CaseDiff], R]
) -> Listing[R]:
    """The cases a Detail lets through, each as its row."""
    listed = Listing.of(cut, cases, detail)
    return Listing(cut, tuple(map(row, listed.items)), listed.total)


def _name(case: CaseDiff) -> str:
    return case.key.name


def _row(case: CaseDiff, metrics: list[MetricDiff]) -> CaseRow:
    return CaseRow(_name(case), case_class(case), tuple(metrics))


def _changed_metrics(case: CaseDiff) -> CaseRow:
    """The metrics that changed or say why; all of them when none does."""
    changed = [m for m in case.metrics if m.change != Change.UNCHANGED or m.reason]
    return _row(case, changed or list(case.metrics))


@dataclass(frozen=True)
class Divergence(Shortens):
    """A case's first divergent turn, as a diff block: a regressed case's against its
    baseline run, a failing case's against its eval file."""

    name: str
    where: str  # file:line of the case
    turn: TurnDiff
    chars: int  # per text
    open: bool  # shown unfolded (the job summary collapses nothing)

    @cached_property  # printed by its template, then weighed by the budget
    def block(self) -> Md:
        return self._block(self.chars)

    def text_bytes(self, chars: int) -> int:
        return size(self.block if chars == self.chars else self._block(chars))

    def _block(self, chars: int) -> Md:
        return escape.code_block(divergence_text(self.turn, chars), "diff")


@dataclass(frozen=True)
class Regressions:
    axis: Axis
    cases: Listing[CaseRow]
    divergences: Listing[Divergence]


def regressions(axis: Axis) -> Callable[[Report, Detail], Regressions]:
    """The builder of one axis's regressions (their sections follow in the order of AXES)."""

    def build(report: Report, detail: Detail) -> Regressions:
        listed = Listing.of(REGRESSION_ROWS, report.regressed[axis], detail)
        rows = tuple(_regressed_metrics(c, axis) for c in listed.items)
        return Regressions(
            axis, Listing(REGRESSION_ROWS, rows, listed.total), _divergences(report, detail, axis)
        )

    return build


def _regressed_metrics(case: CaseDiff, axis: Axis) -> CaseRow:
    return _row(case, [m for m in case.metrics if m.axis == axis and m.change in REGRESSIONS])


def _rows(report: Report, detail: Detail, place: str) -> int:
    """How many case rows one of Report.lists lists at `detail`."""
    if place == "still_failing":
        return len(_failing(report, detail).items)
    cut = REGRESSION_ROWS if place in report.regressed else OTHERS
    return len(Listing.of(cut, report.lists[place], detail).items)


def _divergences(report: Report, detail: Detail, place: str) -> Listing[Divergence]:
    """The first divergent turns of one list (Report.blocks), of those the Detail shows,
    out of all it could show. A block goes with its case's row: none when the Detail
    leaves the row out. The Detail limits how many are shown over all lists (the cut is
    `across`), counted in the full report's order whatever rows it leaves out, so that
    regressions keep theirs longest and leaving rows out never brings a later block in
    (the budget plans by these counts: report/budget.py)."""
    rows, limit = _rows(report, detail, place), detail.limit(DIVERGENCES)
    mine = list(takewhile(lambda b: b.row < rows, report.blocks[place]))
    blocks = tuple(
        Divergence(
            _name(b.case),
            f"{b.case.file}:{b.case.line}",
            b.case.divergence,
            detail.text_chars,
            open=not detail.collapse_rest,
        )
        for b in mine
        if (limit is None or b.number < limit) and b.case.divergence is not None
    )
    return Listing(DIVERGENCES, blocks, len(mine))


_NO_BLOCKS: Listing[Divergence] = Listing(DIVERGENCES, (), 0)


@dataclass(frozen=True)
class Cases(Generic[R]):
    """A list of cases that are not regressions: collapsed in the comment (but the failing
    cases when the gate counts them), then the first divergent turn of those that fail."""

    cases: Listing[R]
    collapse: bool
    with_baseline: bool = False
    divergences: Listing[Divergence] = _NO_BLOCKS

    @property
    def visible(self) -> bool:
        """Shown only with cases to list: its count is its rows."""
        return bool(self.cases.total)


def improvements(report: Report, detail: Detail) -> Cases[CaseRow]:
    rows = _listing(OTHERS, report.improvements, detail, _changed_metrics)
    blocks = _divergences(report, detail, "improvements")
    return Cases(rows, detail.collapse_rest, divergences=blocks)


def _failing(report: Report, detail: Detail) -> Listing[CaseDiff]:
    """The failing cases a Detail lets through: cut late when the gate counts them, as
    regressions are; else among the other cases."""
    cut = FAILING if gate_counts_failing(report.diff) else OTHERS
    return Listing.of(cut, report.still_failing, detail)


def still_failing(report: Report, detail: Detail) -> Cases[CaseRow]:
    listed = _failing(report, detail)
    rows = Listing(listed.cut, tuple(map(_failed_metrics, listed.items)), listed.total)
    return Cases(
        rows,
        detail.collapse_rest and not gate_counts_failing(report.diff),
        report.diff.baseline is not None,
        divergences=_divergences(report, detail, "still_failing"),
    )


def _failed_metrics(case: CaseDiff) -> CaseRow:
    return _row(case, [m for m in case.metrics if m.current_status == Status.FAILED])


@dataclass(frozen=True)
class OddRow(Shortens):
    """An added, removed, errored or incomplete case, and why."""

    name: str
    label: str
    reasons: str
    chars: int

    @property
    def why(self) -> Md:
        return self._why(self.chars)

    def text_bytes(self, chars: int) -> int:
        return size(self._why(chars))

    def _why(self, chars: int) -> Md:
        return escape.cell(escape.truncate(self.reasons, chars))


def not_comparable(report: Report, detail: Detail) -> Cases[OddRow]:
    def row(case: CaseDiff) -> OddRow:
        return OddRow(_name(case), case_class(case), why(case, report.current), detail.text_chars)

    rows = _listing(OTHERS, report.not_comparable, detail, row)
    blocks = _divergences(report, detail, "not_comparable")
    return Cases(rows, detail.collapse_rest, divergences=blocks)


def why(case: CaseDiff, current: Results | None = None) -> str:
    """Why a case is listed as it is: its notes and error (labels.case_notes), its metrics'
    reasons."""
    reasons = [
        *case_notes(case, current),
        *(f"{m.metric}: {m.reason}" for m in case.metrics if m.reason),
    ]
    if not reasons and case.change == Change.ADDED:
        reasons = ["new in this run"]
    if not reasons and case.change == Change.REMOVED:
        reasons = ["not in this run"]
    return "; ".join(reasons)


def flaky(report: Report, detail: Detail) -> Cases[CaseRow]:
    rows = _listing(OTHERS, report.flaky, detail, _changed_metrics)
    blocks = _divergences(report, detail, "flaky")
    return Cases(rows, detail.collapse_rest, divergences=blocks)


@dataclass(frozen=True)
class SuiteLevel:
    """The suite-level test, one row per axis it was taken on; none where the reports do
    not show it (states.suite_test_shown) and in the minimal report."""

    tests: tuple[SuiteTest, ...]
    collapse: bool

    @property
    def visible(self) -> bool:
        return bool(self.tests)


def suite_level(report: Report, detail: Detail) -> SuiteLevel:
    shown = not detail.minimal and suite_test_shown(report.diff)
    return SuiteLevel(tuple(report.diff.suite_tests) if shown else (), detail.collapse_rest)


# ---- the rest -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Legend:
    terms: tuple[tuple[str, str], ...]  # (term, what it means), for the terms the report uses


LEGEND = {
    "lucky answer": "the tool calls regressed while the answer held",
    "fumbled summary": "the answer regressed while the tool calls held",
    "flaky": "its runs disagree, or main's history shows it flaky; a change within that "
    "noise is not blamed",
    "confirmed": "the regression showed again in every re-run of the case",
}


def legend(report: Report, detail: Detail) -> Legend:
    """The terms of the case classes that this report uses, and only those (none in the
    minimal report, which lists no case)."""
    if detail.minimal:
        return Legend(())
    patterns = {c.pattern for cases in report.regressed.values() for c in cases}
    used = {
        "lucky answer": Pattern.LUCKY_ANSWER in patterns,
        "fumbled summary": Pattern.FUMBLED_SUMMARY in patterns,
        "flaky": bool(report.flaky),
        "confirmed": any(confirmed(c) for cases in report.regressed.values() for c in cases),
    }
    return Legend(tuple((term, LEGEND[term]) for term, shown in used.items() if shown))


@dataclass(frozen=True)
class Accept:
    """How to accept the regressions as intended (accept/offer.py), or nothing to show."""

    offer: AcceptOffer | None
    where: Md  # a link to this run, whose artifacts hold its results.json and diff.json

    @property
    def names(self) -> list[str]:
        assert self.offer is not None
        return [f"{key.name} ({', '.join(axes)})" for key, axes in self.offer.cases]


def accept(report: Report, detail: Detail) -> Accept:
    """Nothing in the minimal report, nor when no regressed case can be accepted."""
    offer = report.options.accept
    if detail.minimal or offer is None or not offer.cases:
        return Accept(None, Md(""))
    return Accept(offer, run_link(report.current.source, report.options, "this run"))


@dataclass(frozen=True)
class Detects:
    """What the suite-level test could detect in this suite (one line, docs/statistics.md),
    and how a single case's regression is caught instead: by re-running the case when
    confirmation is on, else by its own runs."""

    axes: tuple[Sensitivity, ...]
    reruns: bool  # confirmation re-runs on (`confirm-runs` > 0), or some case was re-run

    @property
    def cases(self) -> int:
        return max((s.cases for s in self.axes), default=0)

    @property
    def weak(self) -> tuple[Sensitivity, ...]:
        """The axes on which the broad drop is caught less than 4 times in 5, but some is."""
        return tuple(s for s in self.axes if s.power < 0.8 and s.smallest is not None)

    @property
    def blind(self) -> bool:
        """Too few cases: not even a total loss would be caught 4 times in 5 on any axis."""
        return all(s.smallest is None for s in self.axes)

    @property
    def alike(self) -> bool:
        """Every axis reads the same (power in whole percent, the drop caught 4 times in 5):
        the line says it once, naming no axis."""
        return len({(round(100 * s.power), s.smallest) for s in self.axes}) == 1


def detects(report: Report, detail: Detail) -> Detects:
    """Nothing in the minimal report, which lists no case; nothing where no case is left to
    the suite-level test (the line's premise: cases not known to be deterministic)."""
    diff = report.diff
    axes = () if detail.minimal else tuple(s for s in diff.sensitivity if s.cases)
    reruns = bool(report.current.run_config.confirm_runs) or any(c.confirmation for c in diff.cases)
    return Detects(axes, reruns)


@dataclass(frozen=True)
class Notes:
    notes: Listing[str]  # comparability, said once for the suite


def notes(report: Report, detail: Detail) -> Notes:
    notes = notes_below(report.diff)
    return Notes(Listing.of(NOTES, notes, detail))


@dataclass(frozen=True)
class Warnings:
    warnings: Listing[str]  # what the run warned of (eval files, the judge, the baseline)


def warnings(report: Report, detail: Detail) -> Warnings:
    """The run's warnings, from its Results, but those the top of the report already says
    (the action puts what a run could not do there too)."""
    said = " ".join(report.diff.verdict.notes).casefold()
    shown = [w for w in dict.fromkeys(report.current.warnings) if w.casefold() not in said]
    return Warnings(Listing.of(WARNINGS, shown, detail))


@dataclass(frozen=True)
class UsageLine:
    parts: tuple[str, ...]  # time, judge calls and cost, tokens, cases by runs


def usage(report: Report, detail: Detail) -> UsageLine:
    current = report.current
    used, parts = current.usage, [f"⏱️ {current.timing.duration_s:,.1f} s"]
    refused = used.judge_refused + used.simulator_refused
    if used.judge_calls or used.judge_reused or used.simulator_calls or refused:
        parts.append(
            f"judge: {plural(used.judge_calls, 'call')}, "
            f"{plural(used.judge_reused, 'reused verdict')}"
            + (f", {used.judge_refused:,} refused" if used.judge_refused else "")
        )
        if used.simulator_calls or used.simulator_refused:
            parts.append(
                f"user simulator: {plural(used.simulator_calls, 'call')}"
                + (f", {used.simulator_refused:,} refused" if used.simulator_refused else "")
            )
        cost = "n/a" if used.cost_usd is None else f"${used.cost_usd:,.4f}"
        parts.append(f"judge cost {cost}")
    if used.prompt_tokens or used.output_tokens:
        parts.append(f"agent tokens {used.prompt_tokens:,} in / {used.output_tokens:,} out")
    runs = current.run_config.num_runs
    parts.append(f"{plural(len(current.cases), 'case')} \u00d7 {plural(runs, 'run')}")
    return UsageLine(tuple(parts))
