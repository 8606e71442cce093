"""The report's hermetic-tools section (docs/hermetic-tools.md): per case whose runs had tool
calls answered instead of run, how many came from the eval file, from main's recording,
and from the live tools, summed over its runs, and the first call that found no answer:

    - `damaged_item_refund`: 4 from the recording · 1 live; first miss: turn 1: lookup_order …

A run without hermetic tools records nothing, and then the section is not shown.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..results import CaseResult, ToolCounts
from .budget import Detail, Listing
from .cuts import OTHERS
from .model import Report


@dataclass(frozen=True)
class HermeticRow:
    name: str
    counts: str  # "4 from the recording · 1 live"
    first_miss: str | None


@dataclass(frozen=True)
class Hermetic:
    shown: bool  # some run had hermetic tools
    rows: Listing[HermeticRow]


def counts_text(counts: ToolCounts) -> str:
    """ "2 from the eval file · 4 from the recording · 1 live" (the sources with calls)."""
    parts = [
        f"{n} {what}"
        for n, what in (
            (counts.from_eval_file, "from the eval file"),
            (counts.from_recording, "from the recording"),
            (counts.live, "live"),
        )
        if n
    ]
    return " · ".join(parts) or "no tool calls"


def case_counts(case: CaseResult) -> ToolCounts | None:
    """The case's runs' counts summed, with the first run's first miss; None: no run had
    hermetic tools."""
    recorded = [run.tools for run in case.runs if run.tools is not None]
    if not recorded:
        return None
    return ToolCounts(
        from_eval_file=sum(c.from_eval_file for c in recorded),
        from_recording=sum(c.from_recording for c in recorded),
        live=sum(c.live for c in recorded),
        first_miss=next((c.first_miss for c in recorded if c.first_miss), None),
    )


def hermetic(report: Report, detail: Detail) -> Hermetic:
    rows = []
    for case in report.current.cases:
        counts = case_counts(case)
        if counts is not None:
            rows.append(HermeticRow(case.eval_id, counts_text(counts), counts.first_miss))
    missed = [r for r in rows if r.first_miss]  # the misses first: they are what to read
    ordered = [*missed, *(r for r in rows if not r.first_miss)]
    return Hermetic(bool(rows), Listing.of(OTHERS, ordered, detail))
