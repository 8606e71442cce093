"""What the size budget can show less of, in the order it does so (`drop`).

Sections declare which of these shrink them (report/sections.py): other cases go first,
then the run's warnings, the comparability notes, the eval set rows, the length of agent texts, the first
divergent turns, the failing cases the gate counts, and the regression rows last.
"""

from __future__ import annotations

from collections.abc import Mapping

from .budget import Cut
from .labels import plural

OTHERS = Cut("others", drop=0, one="other case")  # per non-regression section
WARNINGS = Cut("warnings", drop=1, one="warning")  # the run's, from its Results
NOTES = Cut("notes", drop=2, one="note")
EVAL_SETS = Cut("eval_sets", drop=3, one="eval set row")
TEXT = Cut("text", drop=4, chars=True)  # a shortened text says so itself
DIVERGENCES = Cut("divergences", drop=5, one="first-divergent-turn block", across=True)
# the failing cases when the gate counts them (no baseline, or `fail-on: threshold`)
FAILING = Cut("failing", drop=6, one="failing case")
REGRESSION_ROWS = Cut("regressions", drop=7, one="regression row")  # per axis

# The order in which the ✂️ note names what it left out.
NOTED = (REGRESSION_ROWS, FAILING, DIVERGENCES, OTHERS, EVAL_SETS, NOTES, WARNINGS)


def counted(omitted: Mapping[Cut, int]) -> str:
    """What a render left out, e.g. "3 regression rows, 1 note"."""
    parts = [plural(omitted[cut], cut.one) for cut in NOTED if omitted.get(cut)]
    return ", ".join(parts) or "details"
