"""The comparison as GitHub markdown: the PR comment, the job summary, the check run's text.

Pure: a Diff and the current Results in, a string out. The layout lives in
templates/report.md.j2; this module gathers what it shows and fits it into GitHub's
limits (report/budget.py). Every string that came from an agent, a tool, an eval file or
a Results file reaches the page through report/escape.py.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import timedelta
from functools import cache
from typing import Any

import jinja2

from ..compare.model import REGRESSIONS, CaseDiff, Change, Diff, MetricDiff, TurnDiff
from ..results import Results, Source, Status
from . import escape
from .budget import Detail, fit
from .escape import Md

COMMENT_LIMIT = 65_536  # bytes of an issue comment body, marker included
SUMMARY_LIMIT = 1_048_576  # $GITHUB_STEP_SUMMARY per step
CHECK_LIMIT = 65_535  # check run output.summary and output.text
DEFAULT_CHECK_NAME = "agent-eval"
DEFAULT_SERVER_URL = "https://github.com"

CHANGE_LABEL = {
    Change.NEW_FAILURE: "new failure",
    Change.REGRESSED: "regressed",
    Change.FIXED: "fixed",
    Change.IMPROVED: "improved",
    Change.STILL_FAILING: "still failing",
    Change.UNCHANGED: "unchanged",
    Change.INCOMPLETE: "incomplete",
    Change.ERRORED: "errored",
    Change.ADDED: "added",
    Change.REMOVED: "removed",
}
PATTERN_LABEL = {"lucky_answer": "lucky answer", "fumbled_summary": "fumbled summary"}
NOT_COMPARABLE = (Change.ADDED, Change.REMOVED, Change.ERRORED, Change.INCOMPLETE)
IMPROVEMENTS = (Change.FIXED, Change.IMPROVED)

_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_SHA = re.compile(r"^[0-9a-f]{7,64}$")
_RUN_ID = re.compile(r"^[0-9]{1,20}$")
_SERVER = re.compile(r"^https?://[A-Za-z0-9.:\[\]-]+(/[A-Za-z0-9._~/-]*)?$")


def marker(check_name: str = DEFAULT_CHECK_NAME) -> str:
    """The hidden line the action finds its sticky comment by."""
    return f"<!-- agent-eval-action:{_marker_safe(check_name)} -->"


def _marker_safe(name: str) -> str:
    # a check name may not end the comment early or spread over lines
    return re.sub(r"[^A-Za-z0-9 ._/:()+-]", "-", name).strip() or DEFAULT_CHECK_NAME


@dataclass(frozen=True)
class Options:
    """Where the report is shown, and what the action knows that the Diff does not."""

    check_name: str = DEFAULT_CHECK_NAME
    server_url: str = DEFAULT_SERVER_URL
    # e.g. "the PR's merge-base" or "the nearest older commit"; filled by the action
    baseline_relation: str | None = None


@dataclass
class Report:
    """Everything the template shows, before any cut."""

    diff: Diff
    current: Results
    options: Options
    trajectory: list[CaseDiff] = field(default_factory=list)
    response: list[CaseDiff] = field(default_factory=list)
    improvements: list[CaseDiff] = field(default_factory=list)
    still_failing: list[CaseDiff] = field(default_factory=list)
    not_comparable: list[CaseDiff] = field(default_factory=list)
    flaky: list[CaseDiff] = field(default_factory=list)

    @classmethod
    def of(cls, diff: Diff, current: Results, options: Options) -> Report:
        report = cls(diff, current, options)
        for case in diff.cases:
            regressed = False
            if case.axes.get("trajectory") in REGRESSIONS:
                report.trajectory.append(case)
                regressed = True
            if case.axes.get("response") in REGRESSIONS:
                report.response.append(case)
                regressed = True
            if regressed:
                continue
            if case.change in IMPROVEMENTS:
                report.improvements.append(case)
            elif case.change == Change.STILL_FAILING:
                report.still_failing.append(case)
            elif case.change in NOT_COMPARABLE:
                report.not_comparable.append(case)
            if case.flaky or case.likely_noise:
                report.flaky.append(case)
        for axis in ("trajectory", "response"):  # new failures first, then the largest drops
            getattr(report, axis).sort(key=lambda c, axis=axis: _severity(c, axis))
        return report

    @property
    def others(self) -> int:
        """The most cases any non-regression section has (what the `others` cut bounds)."""
        return max(
            map(len, (self.improvements, self.still_failing, self.not_comparable, self.flaky))
        )


def _severity(case: CaseDiff, axis: str) -> tuple[bool, float]:
    drops = [m.delta for m in case.metrics if m.axis == axis and m.delta is not None]
    return case.axes.get(axis) != Change.NEW_FAILURE, min(drops, default=0.0)


# ---- numbers and labels ---------------------------------------------------------------


def score(value: float | None) -> Md:
    return Md("\u2013" if value is None else f"{value:.3f}")


def delta_bar(delta: float | None) -> Md:
    """Δ as a signed number and a bar of up to four squares (one per 0.25, at least one)."""
    if delta is None:
        return Md("")
    if abs(delta) < 1e-9:
        return Md("±0")
    cells = max(1, min(4, round(abs(delta) * 4)))
    square = "🟥" if delta < 0 else "🟩"
    sign = "\u2212" if delta < 0 else "+"
    return Md(f"{sign}{abs(delta):.2f}\u00a0{square * cells}")


def case_class(case: CaseDiff) -> str:
    parts = [CHANGE_LABEL[case.change]]
    if case.pattern is not None:
        parts.append(PATTERN_LABEL.get(case.pattern.value, "both axes"))
    if case.likely_noise:
        parts.append("likely noise")
    return " · ".join(parts)


def _plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count:,} {one if count == 1 else (many or one + 's')}"


def headline(diff: Diff) -> str:
    """One line: the verdict and what it rests on, e.g. ❌ 2 trajectory regressions · 38 unchanged."""
    verdict, counts = diff.verdict, Counter(diff.verdict.counts)
    icon = "❌" if not verdict.passed else ("☑️" if verdict.accepted else "✅")
    parts = []
    if verdict.trajectory_regressions:
        parts.append(_plural(verdict.trajectory_regressions, "trajectory regression"))
    if verdict.response_regressions:
        parts.append(_plural(verdict.response_regressions, "response regression"))
    if diff.baseline is not None and not parts:
        parts.append("no regressions")
    if diff.baseline is None:
        passed = sum(c.current_status == Status.PASSED for c in diff.cases)
        parts = ["no baseline", f"{passed:,} of {_plural(len(diff.cases), 'case')} passed"]
    else:
        improved = counts[Change.FIXED.value] + counts[Change.IMPROVED.value]
        for number, one, many in (
            (improved, "improvement", None),
            (counts[Change.STILL_FAILING.value], "still failing", "still failing"),
            (counts[Change.ADDED.value], "added", "added"),
            (counts[Change.REMOVED.value], "removed", "removed"),
            (counts[Change.ERRORED.value], "errored", "errored"),
            (counts[Change.INCOMPLETE.value], "incomplete", "incomplete"),
        ):
            if number:
                parts.append(_plural(number, one, many))
        parts.append(f"{counts[Change.UNCHANGED.value]:,} unchanged")
    text = f"{icon} " + " · ".join(parts)
    return text + (" (accepted)" if verdict.accepted else "")


def _age(delta: timedelta) -> str:
    seconds = delta.total_seconds()
    if seconds < 0:
        return "recorded after this run"
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if seconds >= size:
            return f"recorded {_plural(int(seconds // size), unit)} before this run"
    return "recorded moments before this run"


# ---- links (only from values that look like what GitHub gives) -------------------------


def _server(options: Options) -> str | None:
    url = options.server_url.rstrip("/")
    return url if _SERVER.match(url) else None


def commit_link(source: Source, options: Options) -> Md:
    sha = source.sha or ""
    if not _SHA.match(sha):
        return escape.code(sha) if sha else Md("")
    label = f"`{sha[:7]}`"
    server = _server(options)
    if server and source.repo and _REPO.match(source.repo):
        return Md(f"[{label}]({server}/{source.repo}/commit/{sha})")
    return Md(label)


def run_link(source: Source, options: Options, label: str) -> Md:
    server = _server(options)
    if not (server and source.repo and _REPO.match(source.repo)):
        return Md("")
    if not (source.run_id and _RUN_ID.match(source.run_id)):
        return Md("")
    return Md(f"[{label}]({server}/{source.repo}/actions/runs/{source.run_id})")


def _branch(ref: str | None) -> str | None:
    if not ref:
        return None
    return ref.removeprefix("refs/heads/")


# ---- the first divergent turn as a diff ------------------------------------------------


def _lines(text: str | None, limit: int) -> list[str]:
    if text is None:
        return ["(no answer)"]
    return escape.truncate(text, limit).splitlines() or [""]


def _diff_lines(before: list[str], after: list[str]) -> list[str]:
    out = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out += [f"  {line}" for line in before[i1:i2]]
            continue
        out += [f"- {line}" for line in before[i1:i2]]
        out += [f"+ {line}" for line in after[j1:j2]]
    return out or ["  (none)"]


def divergence_text(turn: TurnDiff, limit: int) -> str:
    """Tool calls and answers of the first divergent turn, baseline (or expected) → current."""
    calls = [escape.truncate(c, limit) for c in turn.current_calls]
    expected = [escape.truncate(c, limit) for c in turn.expected_calls]
    if turn.baseline_calls is None:
        before_calls, before_answer = expected, turn.expected_answer
        header = f"@@ turn {turn.turn + 1}: expected → current run {turn.current_run} @@"
    else:
        before_calls = [escape.truncate(c, limit) for c in turn.baseline_calls]
        before_answer = turn.baseline_answer
        header = (
            f"@@ turn {turn.turn + 1}: baseline run {turn.baseline_run} → "
            f"current run {turn.current_run} @@"
        )
    lines = [header]
    user = _lines(turn.user_text, limit)
    lines += [f"  user: {user[0]}", *(f"        {line}" for line in user[1:])]
    if turn.baseline_calls is not None:
        lines += ["  expected tool calls:", *(f"    {c}" for c in expected or ["(none)"])]
    lines.append("@@ tool calls @@")
    lines += _diff_lines(before_calls, calls)
    lines.append("@@ answer @@")
    lines += _diff_lines(_lines(before_answer, limit), _lines(turn.current_answer, limit))
    if turn.baseline_calls is not None and turn.expected_answer != before_answer:
        lines += ["  expected answer:", *(f"    {a}" for a in _lines(turn.expected_answer, limit))]
    return "\n".join(lines)


# ---- rendering ----------------------------------------------------------------------------


def _finalize(value: Any) -> str:
    """Everything a template prints is escaped as a table cell unless it is already Md."""
    if isinstance(value, Md):
        return value
    if isinstance(value, bool) or value is None:
        raise TypeError(f"a template printed {value!r}")
    if isinstance(value, int | float):
        return str(value)
    return escape.cell(value)


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("agent_eval_action.report", "templates"),
        autoescape=False,  # markdown, not HTML: report/escape.py does it, by context
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        finalize=_finalize,
    )
    env.filters.update(
        text=escape.text,
        cell=escape.cell,
        html=escape.html,
        code=escape.code,
        code_block=escape.code_block,
        score=score,
        bar=delta_bar,
        plural=_plural,
        count=lambda n: Md(f"{n:,}"),
        change=lambda c: CHANGE_LABEL[c],
        case_class=case_class,
        md=Md,  # for strings built in the template from escaped parts only
    )
    return env


def _metrics_on(case: CaseDiff, axis: str | None) -> list[MetricDiff]:
    if axis is None:
        return [m for m in case.metrics if m.change != Change.UNCHANGED or m.reason] or list(
            case.metrics
        )
    return [m for m in case.metrics if m.axis == axis and m.change in REGRESSIONS]


def _why(case: CaseDiff) -> str:
    reasons = [*case.notes, *(f"{m.metric}: {m.reason}" for m in case.metrics if m.reason)]
    if not reasons and case.change == Change.ADDED:
        reasons = ["new in this run"]
    if not reasons and case.change == Change.REMOVED:
        reasons = ["not in this run"]
    return "; ".join(reasons)


def _eval_set_rows(diff: Diff) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for case in diff.cases:
        row = rows.setdefault(
            case.eval_set_id,
            {"name": case.eval_set_id, "cases": 0, "before": 0, "now": 0, "regressed": 0}
            | {"improved": 0, "still_failing": 0, "not_comparable": 0},
        )
        row["cases"] += 1
        row["before"] += case.baseline_status == Status.PASSED
        row["now"] += case.current_status == Status.PASSED
        row["regressed"] += any(a in REGRESSIONS for a in case.axes.values())
        row["improved"] += case.change in IMPROVEMENTS
        row["still_failing"] += case.change == Change.STILL_FAILING
        row["not_comparable"] += case.change in NOT_COMPARABLE
    return list(rows.values())


def _usage(current: Results) -> list[str]:
    usage, parts = current.usage, [f"⏱️ {current.timing.duration_s:,.1f} s"]
    if usage.judge_calls or usage.judge_reused:
        parts.append(
            f"judge: {_plural(usage.judge_calls, 'call')}, {usage.judge_reused:,} reused verdicts"
        )
        cost = "n/a" if usage.cost_usd is None else f"${usage.cost_usd:,.4f}"
        parts.append(f"judge cost {cost}")
    if usage.prompt_tokens or usage.output_tokens:
        parts.append(f"agent tokens {usage.prompt_tokens:,} in / {usage.output_tokens:,} out")
    runs = current.run_config.num_runs
    parts.append(f"{_plural(len(current.cases), 'case')} \u00d7 {_plural(runs, 'run')}")
    return parts


def _cut(items: list, limit: int | None) -> tuple[list, int]:
    if limit is None or len(items) <= limit:
        return items, 0
    return items[:limit], len(items) - limit


_OMITTED = (
    ("regressions", "regression row", "regression rows"),
    ("divergences", "first-divergent-turn block", "first-divergent-turn blocks"),
    ("others", "other case", "other cases"),
    ("eval_sets", "eval set row", "eval set rows"),
    ("notes", "note", "notes"),
)


def _omitted_text(omitted: Counter[str]) -> str:
    parts = [_plural(omitted[key], one, many) for key, one, many in _OMITTED if omitted[key]]
    return ", ".join(parts) or "details"


def render(
    report: Report,
    detail: Detail,
    *,
    with_marker: bool,
    full_report_hint: str,
    parts: tuple[str, ...] = ("head", "body"),
) -> str:
    diff, options = report.diff, report.options
    if detail.minimal:
        detail = replace(detail, eval_sets=0, others=0, divergences=0, regressions=0, notes=0)
    omitted: Counter[str] = Counter()

    def cut(name: str, items: list, limit: int | None) -> list:
        shown, left = _cut(items, limit)
        omitted[name] += left
        return shown

    sections = []
    for axis, cases in (("trajectory", report.trajectory), ("response", report.response)):
        shown = cut("regressions", cases, detail.regressions)
        sections.append(
            {
                "axis": axis,
                "total": len(cases),
                "cases": [(c, _metrics_on(c, axis)) for c in shown],
                "left": len(cases) - len(shown),
            }
        )
    divergences, seen = [], set()
    for section in sections:
        for case, _ in section["cases"]:
            key = (case.eval_set_id, case.eval_id)
            if case.divergence is not None and key not in seen:
                seen.add(key)
                divergences.append(case)
    divergences_shown = cut("divergences", divergences, detail.divergences)
    limit = detail.text_chars
    pending = {(c.eval_set_id, c.eval_id) for c in divergences_shown}
    for section in sections:
        section["divergences"] = []
        for case, _ in section["cases"]:
            key = (case.eval_set_id, case.eval_id)
            if key in pending and case.divergence is not None:
                pending.discard(key)
                section["divergences"].append((case, divergence_text(case.divergence, limit)))
    others = {}
    for name, cases in (
        ("improvements", report.improvements),
        ("still_failing", report.still_failing),
        ("not_comparable", report.not_comparable),
        ("flaky", report.flaky),
    ):
        shown = cut("others", cases, detail.others)
        others[name] = {"total": len(cases), "cases": shown, "left": len(cases) - len(shown)}
    eval_sets = _eval_set_rows(diff)
    eval_sets_shown = cut("eval_sets", eval_sets, detail.eval_sets)
    no_baseline = [n for n in diff.notes if n.startswith("No baseline")]
    notes = [n for n in diff.notes if not n.startswith("No baseline")]
    notes_shown = cut("notes", notes, detail.notes)
    baseline = diff.baseline
    context = {
        "marker": marker(options.check_name) if with_marker else None,
        "check_name": options.check_name,
        "parts": parts,
        "headline": headline(diff),
        "verdict": diff.verdict,
        "report_only": "never" in diff.policy.fail_on,
        "no_baseline": no_baseline,
        "baseline": baseline,
        "baseline_commit": commit_link(baseline.source, options) if baseline else "",
        "baseline_run": run_link(baseline.source, options, "its run") if baseline else "",
        "baseline_branch": _branch(baseline.source.ref) if baseline else None,
        "baseline_age": _age(report.current.created_at - baseline.created_at) if baseline else "",
        "baseline_relation": options.baseline_relation,
        "current_commit": commit_link(diff.current, options),
        "current_run": run_link(diff.current, options, "this run"),
        "eval_sets": eval_sets_shown,
        "eval_sets_left": len(eval_sets) - len(eval_sets_shown),
        "sections": sections,
        "others": others,
        "collapse": detail.collapse_rest,
        "suite_tests": [] if detail.minimal else diff.suite_tests,
        "notes": notes_shown,
        "notes_left": len(notes) - len(notes_shown),
        "usage": _usage(report.current),
        "why": lambda c: escape.truncate(_why(c), limit),
        "metrics_of": lambda c: _metrics_on(c, None),
        "shortened": detail.minimal or any(omitted.values()),
        "shortened_what": _omitted_text(omitted),
        "minimal": detail.minimal,
        "omitted": omitted,
        "full_report_hint": full_report_hint,
    }
    return _environment().get_template("report.md.j2").render(context)


def _steps(report: Report) -> list[tuple[str, int]]:
    """What to show less of, least important first."""
    regressions = max(len(report.trajectory), len(report.response))
    return [
        ("others", report.others),
        ("notes", len(report.diff.notes)),
        ("eval_sets", len({c.eval_set_id for c in report.diff.cases})),
        ("divergences", len(report.trajectory) + len(report.response)),
        ("regressions", regressions),
    ]


def _fitted(
    report: Report,
    start: Detail,
    limit: int,
    *,
    with_marker: bool,
    hint: str,
    parts: tuple[str, ...] = ("head", "body"),
) -> str:
    def attempt(detail: Detail) -> str:
        return render(report, detail, with_marker=with_marker, full_report_hint=hint, parts=parts)

    steps = _steps(report)
    if start.text_chars > 500:  # long answers go before whole cases do
        steps.insert(3, ("text_chars", start.text_chars))
    return fit(attempt, limit, start, steps)


def comment(
    diff: Diff, current: Results, options: Options | None = None, *, limit: int = COMMENT_LIMIT
) -> str:
    """The PR comment: regressions first, the rest collapsed, within `limit` bytes."""
    report = Report.of(diff, current, options or Options())
    return _fitted(
        report,
        Detail(collapse_rest=True, text_chars=1_000),
        limit,
        with_marker=True,
        hint="the full report is in the job summary",
    )


def summary(
    diff: Diff, current: Results, options: Options | None = None, *, limit: int = SUMMARY_LIMIT
) -> str:
    """The job summary: the full report, within `limit` bytes (cut likewise)."""
    report = Report.of(diff, current, options or Options())
    return _fitted(
        report,
        Detail(collapse_rest=False, text_chars=4_000),
        limit,
        with_marker=False,
        hint="the full comparison is in diff.json (`--format json`)",
    )


def check_parts(
    diff: Diff, current: Results, options: Options | None = None, *, limit: int = CHECK_LIMIT
) -> tuple[str, str]:
    """A check run's output summary (verdict, provenance, tables) and text (the cases)."""
    report = Report.of(diff, current, options or Options())
    hint = "the full report is in the job summary"
    head = _fitted(report, Detail(), limit, with_marker=False, hint=hint, parts=("head",))
    body = _fitted(
        report,
        Detail(collapse_rest=True, text_chars=1_000),
        limit,
        with_marker=False,
        hint=hint,
        parts=("body",),
    )
    return head, body
