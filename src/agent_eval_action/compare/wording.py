"""The words of a metric's `reason`, built from its values: every phrase of it is here.

The engine and the confirmation step decide with `MetricDiff.rule` (compare/model.py),
never with these words; reports show them (tests/test_decision_rules.py replaces every
phrase here with nonsense and gets the same decisions). Writers keep the same words across
versions: an older version's comment job reads a newer version's Diff (docs/results.md).
"""

from __future__ import annotations

from .model import (
    ERRORED_ON,
    EXPECTATION_CHANGED,
    NO_LONGER_SCORED,
    CaseDiff,
    Change,
    MetricDiff,
    Rule,
)

_MOVED = {
    Change.NEW_FAILURE: "passed -> failed ({})",
    Change.REGRESSED: "dropped {}",
    Change.FIXED: "failed -> passed ({})",
    Change.IMPROVED: "rose {}",
    Change.STILL_FAILING: "failing on both sides ({})",
}


def moved(m: MetricDiff, change: Change) -> str:
    """How the score moved, for a change decided on steady runs ("" when it did not)."""
    words = _MOVED.get(change)
    scores = f"{m.baseline_score or 0.0:.3f} -> {m.current_score or 0.0:.3f}"
    return words.format(scores) if words else ""


def threshold(m: MetricDiff, why: str, error: str | None) -> str:
    """A metric with no baseline score (`why`: a new metric, or none on the baseline)."""
    if m.change == Change.NEW_FAILURE:
        return f"{why}, and it fails its threshold ({m.current_score:.3f} < {m.threshold:.3f})"
    if m.change == Change.INCOMPLETE:
        return f"{why}, and it could not be computed: {error or 'no score'}"
    return f"{why}; it passes its threshold"


NEW_METRIC = "new metric"
NO_BASELINE_SCORE = "no baseline score"


def not_computed(error: str | None) -> str:
    return f"could not be computed: {error or 'no score'}"


def within_noise(m: MetricDiff) -> str:
    return f"within noise: {_noise_source(m)}"


def _noise_source(m: MetricDiff) -> str:
    """What explains a move as noise: this run's own varying runs, or main's history."""
    return "runs disagree" if m.noisy else "flaky on main's history"


def beyond_noise(p_value: float, alpha: float) -> str:
    return f"beyond noise (p = {p_value:.4f}, false-discovery rate {alpha})"


def beyond_share(p_value: float, level: float) -> str:
    """A better metric the per-case test decides with re-runs on: its p-value is within its
    case's share of the blame budget."""
    return f"beyond noise (p = {p_value:.4f}, within this case's share {level:.2g} of the budget)"


def below_alone(m: MetricDiff, p_value: float, alpha: float) -> str:
    """A metric the per-case test does not decide alone."""
    return f"{within_noise(m)} (per-case test p = {p_value:.4f}, above its level {alpha:.2g} alone)"


def nominated(p_value: float, alpha: float) -> str:
    """A worse metric the per-case test nominated for re-runs, which decide."""
    return (
        f"within noise until re-runs show it again: the per-case test nominated it "
        f"(p = {p_value:.4f}, false-discovery rate {alpha})"
    )


def though_varies(m: MetricDiff) -> str:
    """A move first left to main's noise, then shown again by every re-run."""
    return f"{moved(m, m.change)}, though the case varies on main"


def confirmed_in(m: MetricDiff, runs: int, tally: tuple[int, int, int, int, float] | None) -> str:
    """`tally`: (failed on main, runs on main, failed here, runs here, p), when a test on
    how often it failed decided, not a change of behaviour."""
    said = f"{m.reason}; confirmed in {runs}/{runs} re-runs"
    if tally is None:
        return said
    main_failed, main_runs, failed, here, p = tally
    return f"{said}: failed {failed} of {here} runs here, {main_failed} of {main_runs} on main (p = {p:.2g})"


def streak(m: MetricDiff, tally: tuple[int, int, int, int, float]) -> str:
    """A nominated metric whose own runs failed more often than main's record explains."""
    main_failed, main_runs, failed, here, p = tally
    return (
        f"{moved(m, m.change)}, beyond noise: failed {failed} of {here} runs here, "
        f"{main_failed} of {main_runs} on main (p = {p:.2g})"
    )


def shown_so_far(m: MetricDiff, shown: int, faults: int = 0) -> str:
    said = f"{m.reason}; shown again in {shown}/{shown} re-runs so far"
    return said + (f" ({_faults(faults)})" if faults else "")


def unconfirmed(m: MetricDiff, shown: int, faults: int) -> str:
    """A regression whose re-runs could not finish deciding: it stands."""
    return (
        f"{m.reason}; not confirmed: {_faults(faults)}, {shown} showed it again; "
        "a fault never clears a regression"
    )


def _faults(count: int) -> str:
    return f"{count} re-run{'s' if count != 1 else ''} errored or went unscored"


def noise_record(failed: int, runs: int) -> str:
    if runs > 1:
        return f"the case failed {failed} of {runs} runs on main and its runs vary"
    return "its runs vary and main's history is too short to say how often it fails"


def not_reproduced(m: MetricDiff, shown: int, runs: int) -> str:
    return _with_first(m, f"not reproduced: {shown}/{runs} re-runs showed it again, likely noise")


def untellable(m: MetricDiff, record: str, *, shown: int | None = None, allowed: int = 0) -> str:
    """Re-runs that cannot tell it from noise: `shown` of as many ran, or none ran since
    no number of the `allowed` could have."""
    why = (
        f"{allowed} re-runs could not tell it from noise, as {record}"
        if shown is None
        else f"shown again in {shown}/{shown} re-runs, but {record}: not enough to tell from noise"
    )
    return _with_first(m, why)


def _with_first(m: MetricDiff, why: str) -> str:
    """`why`, with what the metric's first comparison said (its rule's words, before)."""
    first = _noise_source(m) if m.rule == Rule.WITHIN_NOISE else m.reason
    return f"{why} (the first run: {first})" if first else why


def facts_in_words(case: CaseDiff, *, renamed: bool = True) -> tuple[str, ...]:
    """A case's facts in the words of `CaseDiff.notes` (as versions before the facts read
    them, and as the reports say them; `renamed=False`: not its renaming, which a report's
    label for the case says)."""
    notes = []
    if case.errored_side is not None:
        notes.append(ERRORED_ON.format(case.errored_side) + (case.error or ""))
    if case.expectation_changed:
        notes.append(
            f"{EXPECTATION_CHANGED}: the eval file's expected turns for this case differ from "
            "the baseline's"
        )
    if case.no_longer_scored:
        notes.append(NO_LONGER_SCORED + ", ".join(case.no_longer_scored))
    if renamed and case.renamed_from is not None:
        old = case.renamed_from
        notes.append(
            f"renamed: {old.key.name} on the baseline (the same content), compared with that"
        )
    return tuple(notes)
