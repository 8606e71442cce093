"""The report's sections, declared once, in the order they are rendered.

Each section is a unit: its name, the part of the report it belongs to, the builder of
what it shows (report/view.py), its template (report/templates/), and the cuts that
shrink it under the size budget (report/cuts.py). From this list come the order of the
report, the budget's steps (every cut some rendered section declares, least important
first), and what the ✂️ note counts (the Listings of the rendered sections' views).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ..core import AXES
from . import efficiency, hermetic, view
from .budget import Cut, Detail
from .cuts import DIVERGENCES, EVAL_SETS, FAILING, NOTES, OTHERS, REGRESSION_ROWS, TEXT, WARNINGS
from .model import Report

# head: verdict, provenance and the eval set table (a check run's summary);
# body: the cases (its text). The comment and the job summary show both.
Part = Literal["head", "body"]


@dataclass(frozen=True)
class Section:
    name: str
    part: Part
    view: Callable[[Report, Detail], object]
    template: str  # in report/templates/
    cuts: tuple[Cut, ...] = ()


_TURNS = (DIVERGENCES, TEXT)  # first divergent turns, and their texts' length

SECTIONS: tuple[Section, ...] = (
    Section("head", "head", view.head, "head.md.j2"),
    Section("eval_sets", "head", view.eval_sets, "eval_sets.md.j2", (EVAL_SETS,)),
    *(
        Section(
            axis,
            "body",
            view.regressions(axis),
            "regressions.md.j2",
            (REGRESSION_ROWS, DIVERGENCES, TEXT),
        )
        for axis in AXES
    ),
    Section("accept", "body", view.accept, "accept.md.j2"),
    # the other cases, with the first divergent turn of those that fail
    Section("improvements", "body", view.improvements, "improvements.md.j2", (OTHERS, *_TURNS)),
    Section(
        "still_failing",
        "body",
        view.still_failing,
        "still_failing.md.j2",
        (OTHERS, FAILING, *_TURNS),
    ),
    Section(
        "not_comparable", "body", view.not_comparable, "not_comparable.md.j2", (OTHERS, *_TURNS)
    ),
    Section("flaky", "body", view.flaky, "flaky.md.j2", (OTHERS, *_TURNS)),
    Section("suite_level", "body", view.suite_level, "suite_level.md.j2"),
    Section("efficiency", "body", efficiency.efficiency, "efficiency.md.j2", (OTHERS,)),
    Section("hermetic", "body", hermetic.hermetic, "hermetic.md.j2", (OTHERS,)),
    Section("notes", "body", view.notes, "notes.md.j2", (NOTES,)),
    Section("warnings", "body", view.warnings, "warnings.md.j2", (WARNINGS,)),
    Section("legend", "body", view.legend, "legend.md.j2"),
    Section("detects", "body", view.detects, "detects.md.j2"),
    Section("scoring", "body", efficiency.scoring, "scoring.md.j2"),
    Section("usage", "body", view.usage, "usage.md.j2"),
)


def of(parts: Sequence[Part]) -> tuple[Section, ...]:
    """The sections of these parts, in report order."""
    return tuple(s for s in SECTIONS if s.part in parts)


def steps(sections: Sequence[Section]) -> list[Cut]:
    """The budget's steps for these sections: their cuts, least important first."""
    return sorted({cut for s in sections for cut in s.cuts}, key=lambda cut: cut.drop)
