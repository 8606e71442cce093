"""Numbers and words as the reports print them: scores, Δ bars, case labels, the headline.

One format everywhere: a score or a change of score has 3 decimals; a count agrees with its
noun ("1 case", "2 cases"). The markdown report, the check run and the console all take
their words from here.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import timedelta

from ..compare import wording
from ..compare.model import CaseDiff, Change, Diff, GateCode
from ..core import RunKind
from ..results import PAIRED_RUN, SAMPLING_RUN, Results, RunRecord, Status
from .escape import Md
from .states import regressed

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
# why a run beyond the suite's own ran (core.RunKind), as a run's heading says it
RUN_KIND_LABEL: dict[RunKind, str] = {
    "suite": "",
    "confirmation": "confirmation re-run",
    "suite_round": "suite round",
    "sampling": SAMPLING_RUN,
    "paired": PAIRED_RUN,
}
_NAMED_BY_WORDS: frozenset[RunKind] = frozenset({"sampling", "paired"})  # words begin so


def run_purpose(run: RunRecord) -> str | None:
    """Why the run ran, when not as one of the suite's own runs: its kind, and its words."""
    kind, _ = run.purpose()
    if kind == "suite":
        return None
    if not run.confirms:
        return RUN_KIND_LABEL[kind]
    return run.confirms if kind in _NAMED_BY_WORDS else f"{RUN_KIND_LABEL[kind]}: {run.confirms}"


SCORE_FORMAT = "{:.3f}"  # every score and change of score the reports print


def number(value: float) -> str:
    """A score (or threshold) as every report prints it: 3 decimals."""
    return SCORE_FORMAT.format(value)


def score(value: float | None) -> Md:
    return Md("\u2013" if value is None else number(value))


def delta_bar(delta: float | None) -> Md:
    """Δ as a signed number and a bar of up to four squares (one per 0.25, at least one)."""
    if delta is None:
        return Md("")
    if abs(delta) < 1e-9:
        return Md("±0")
    cells = max(1, min(4, round(abs(delta) * 4)))
    square = "🟥" if delta < 0 else "🟩"
    sign = "\u2212" if delta < 0 else "+"
    return Md(f"{sign}{number(abs(delta))}\u00a0{square * cells}")


def change_label(case: CaseDiff) -> str:
    """How the case changed, in words that claim no past it does not have: a case that
    fails without a baseline to fail on too is "failing", not "still failing"."""
    if case.change == Change.STILL_FAILING and case.baseline_status != Status.FAILED:
        return "failing"
    return CHANGE_LABEL[case.change]


def case_class(case: CaseDiff) -> str:
    """How a case changed, in one line: its change, the two-axis pattern, what its
    confirmation re-runs showed, and its old name when it was renamed, e.g. "new failure ·
    lucky answer · confirmed in 3/3 re-runs · renamed from s / old"."""
    parts = [change_label(case)]
    if case.pattern is not None:
        parts.append(PATTERN_LABEL.get(case.pattern.value, "both axes"))
    rerun = confirmation(case)
    if rerun is not None:
        parts.append(rerun)  # "not reproduced: …, likely noise" says the noise itself
    elif case.likely_noise:
        parts.append("likely noise")
    old = case.renamed_from
    if old is not None:
        parts.append(f"renamed from {old.key.name}")
    return " · ".join(parts)


def confirmed(case: CaseDiff) -> bool:
    """A regression that every confirmation re-run showed again (compare/confirm.py) and
    that stands: a case the re-runs showed again but the gate left to noise (its runs vary
    on main) is not "confirmed" (report/states.py: one state per axis)."""
    done = case.confirmation
    return bool(done is not None and done.runs and done.reproduced == done.runs) and regressed(case)


def confirmation(case: CaseDiff) -> str | None:
    """What the case's confirmation re-runs showed: "confirmed in 3/3 re-runs", "shown again
    in 3/3 re-runs, likely noise" (the gate could not tell it from noise), or "not
    reproduced: 1/3 re-runs, likely noise"; None when it was not re-run."""
    done = case.confirmation
    if done is None or not done.runs:
        return None
    if confirmed(case):
        return f"confirmed in {done.runs}/{done.runs} re-runs"
    if done.reproduced == done.runs:
        return f"shown again in {done.runs}/{done.runs} re-runs, likely noise"
    return f"not reproduced: {done.reproduced}/{done.runs} re-runs, likely noise"


def plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count:,} {one if count == 1 else (many or one + 's')}"


# ---- errors: what a crashed case says, short enough for a headline ------------------------

_RUN_PREFIX = re.compile(r"^run \d+: ")
_NEXT_RUN = re.compile(r"; (?=run \d+: )")
_EXCEPTION = re.compile(r"^([A-Z][\w.]*)(?=: | \(|$)")  # `Type: message (file.py:LINE)`
_WHERE = re.compile(r"\(([^()\s]+:\d+)\)")
ERROR_CHARS = 80  # of an error in the headline that names no exception and place


def case_error(case: CaseDiff, current: Results | None = None) -> str | None:
    """Why a case errored on the current side, as its note says: from the Diff (a case
    compared with its baseline self), else from the current Results (an added case, or no
    baseline). None when it did not error here, or nothing says why."""
    if case.current_status != Status.ERRORED:
        return None
    if case.errored_side == "current":
        return case.error
    if current is not None:
        key = case.key
        found = next((c for c in current.cases if c.key == key), None)
        if found is not None and found.note:
            return found.note
    return None


def case_notes(case: CaseDiff, current: Results | None = None) -> list[str]:
    """The case's notes as the reports list them: the error it stopped on first (from the
    current Results when the Diff does not hold it: an added case, no baseline), and not
    its renaming, which its label says."""
    notes = list(wording.facts_in_words(case, renamed=False))
    error = case_error(case, current)
    if error is not None and not any(error in n for n in notes):
        notes.insert(0, f"errored: {error}")
    return notes


def short_error(error: str) -> str:
    """The first run's error, shortest: `RuntimeError at agent.py:16` when it names an
    exception and where it was raised, else its first characters."""
    first = _RUN_PREFIX.sub("", _NEXT_RUN.split(error, maxsplit=1)[0]).strip()
    kind, where = _EXCEPTION.match(first), _WHERE.search(first)
    if kind and where:
        return f"{kind.group(1)} at {where.group(1)}"
    return first if len(first) <= ERROR_CHARS else first[: ERROR_CHARS - 1] + "…"


def errored_part(cases: list[CaseDiff], current: Results | None = None) -> str | None:
    """The cases that errored on the current side, and why, for the headline: "1 case
    errored: RuntimeError at agent.py:16", "3 cases errored: … and 1 other error"."""
    errored = [c for c in cases if c.current_status == Status.ERRORED]
    if not errored:
        return None
    errors = [case_error(c, current) for c in errored]
    shorts = list(dict.fromkeys(short_error(e) for e in errors if e))
    text = plural(len(errored), "case") + " errored"
    if shorts:
        text += ": " + shorts[0]
        if len(shorts) > 1:
            text += " and " + plural(len(shorts) - 1, "other error")
    return text


# ---- the headline and the gate's policy ---------------------------------------------------


def headline_parts(diff: Diff, current: Results | None = None) -> list[str]:
    """What the verdict rests on, most important first: the cases that errored here (with
    the first error), the regressions per axis, then the other changes, the baseline's
    cases this selection did not run, and the unchanged cases."""
    verdict, counts = diff.verdict, Counter(diff.verdict.counts)
    crashed = errored_part(diff.cases, current)
    if diff.baseline is None:
        passed = sum(c.current_status == Status.PASSED for c in diff.cases)
        parts = ["no baseline"] + ([crashed] if crashed else [])
        return [*parts, f"{passed:,} of {plural(len(diff.cases), 'case')} passed"]
    parts = [crashed] if crashed else []
    regressions = [
        plural(n, f"{axis} regression")
        for axis, n in (
            ("trajectory", verdict.trajectory_regressions),
            ("response", verdict.response_regressions),
        )
        if n
    ]
    parts += regressions or ["no regressions"]
    improved = counts[Change.FIXED.value] + counts[Change.IMPROVED.value]
    errored_before = sum(
        c.change == Change.ERRORED and c.current_status != Status.ERRORED for c in diff.cases
    )
    for count, one, many in (
        (improved, "improvement", None),
        (counts[Change.STILL_FAILING.value], "still failing", "still failing"),
        (counts[Change.ADDED.value], "added", "added"),
        (counts[Change.REMOVED.value], "removed", "removed"),
        (errored_before, "errored on the baseline", "errored on the baseline"),
        (counts[Change.INCOMPLETE.value], "incomplete", "incomplete"),
        (len(diff.not_run), "not run (selection)", "not run (selection)"),
    ):
        if count:
            parts.append(plural(count, one, many))
    parts.append(f"{counts[Change.UNCHANGED.value]:,} unchanged")
    return parts


def headline(diff: Diff, current: Results | None = None) -> str:
    """One line: the verdict and what it rests on, e.g. ❌ 2 trajectory regressions · 38 unchanged.

    Plain text (a check run's title); it holds an error's text, so markdown escapes it."""
    verdict = diff.verdict
    icon = "❌" if not verdict.passed else ("☑️" if verdict.accepted else "✅")
    text = f"{icon} " + " · ".join(headline_parts(diff, current))
    return text + (" (accepted)" if verdict.accepted else "")


def decided_by(diff: Diff) -> str:
    """The policies that decided, as `fail-on` takes them: `regression,-removed`."""
    return ",".join(diff.verdict.decided_by or diff.policy.fail_on)


def fell_back(diff: Diff) -> str | None:
    """The `fail-on` that was asked for when, without a baseline, `threshold` decided
    instead (docs/statistics.md); else None."""
    asked = ",".join(diff.policy.fail_on)
    if diff.baseline is None and decided_by(diff) != asked and "never" not in diff.policy.fail_on:
        return asked
    return None


# the gate's reasons that headline_parts states itself: the regressions of each axis and the
# cases that errored here (with the first error)
HEADLINE_SAYS: frozenset[GateCode] = frozenset({"regressions", "errored"})


def unsaid_reasons(diff: Diff) -> list[str]:
    """The gate's reasons, in words, but those the headline already states (all of them for a
    Diff written before the reasons were values)."""
    verdict = diff.verdict
    if not verdict.why:
        return list(verdict.reasons)
    return [r.text for r in verdict.why if r.code not in HEADLINE_SAYS]


def notes_at_top(diff: Diff) -> list[str]:
    """What the top of every report says beside the verdict: why there is no baseline,
    then the verdict's notes (removed and not-run cases, another agent or policy, no case
    in common, the pull request of a merge group that accepted it)."""
    return [*no_baseline_notes(diff), *diff.verdict.notes]


def no_baseline_notes(diff: Diff) -> list[str]:
    """Why there is no baseline: the Diff's notes when it has none (they say only that)."""
    return list(diff.notes) if diff.baseline is None else []


def notes_below(diff: Diff) -> list[str]:
    """What differs between the two sides besides the agent: the Diff's notes when it has
    a baseline."""
    return [] if diff.baseline is None else list(diff.notes)


def age(delta: timedelta, than: str = "this run") -> str:
    """How long before the current side (`than`: what it is) the baseline was recorded, in
    its largest unit."""
    seconds = delta.total_seconds()
    if seconds < 0:
        return f"recorded after {than}"
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if seconds >= size:
            return f"recorded {plural(int(seconds // size), unit)} before {than}"
    return f"recorded moments before {than}"
