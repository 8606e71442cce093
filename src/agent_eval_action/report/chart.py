"""The suite's pass rate per axis over main's history, as a Mermaid chart for the job summary.

GitHub draws a ```mermaid block in markdown. Only what this module makes goes into the
chart: numbers, short commit hashes that are hex, and fixed words. No case name and no
other text of a Results file reaches it, so nothing in one can change the chart's syntax.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..compare.record import Past, pass_rates
from ..core import AXES, Axis
from ..results import Results
from .links import short_sha

# one colour per axis, in the order of AXES, named in the legend by the emoji square
COLOURS: dict[Axis, tuple[str, str]] = {
    "trajectory": ("#2f81f7", "🟦"),
    "response": ("#f4900c", "🟧"),
}
MAX_POINTS = 30  # the newest baselines shown, this run included
CURRENT = "this run"


@dataclass(frozen=True)
class Point:
    label: str  # a short commit hash, "#N" when the Results name none, or "this run"
    rates: dict[Axis, float | None]  # percent of the cases with metrics on the axis


def points(history: Sequence[Past], current: Results) -> list[Point]:
    """Main's baselines, oldest first, then this run; at most MAX_POINTS, the newest."""
    older = sorted(history, key=lambda p: p.created_at)[-(MAX_POINTS - 1) :]
    found = [
        Point(short_sha(p.source.sha) or f"#{i}", p.rates) for i, p in enumerate(older, start=1)
    ]
    return [*found, Point(CURRENT, pass_rates(current))]


def mermaid(history: Sequence[Past], current: Results) -> str:
    """The chart and its legend as markdown; empty without a baseline to draw a line from,
    or when no axis has a pass rate at every point."""
    shown = points(history, current)
    axes = [a for a in AXES if all(p.rates[a] is not None for p in shown)]
    if len(shown) < 2 or not axes:
        return ""
    palette = ", ".join(COLOURS[a][0] for a in axes)
    labels = ", ".join(f'"{p.label}"' for p in shown)
    lines = [
        "```mermaid",
        "---",
        "config:",
        "  themeVariables:",
        "    xyChart:",
        f'      plotColorPalette: "{palette}"',
        "---",
        "xychart-beta",
        f"  x-axis [{labels}]",
        '  y-axis "cases passed (%)" 0 --> 100',
        *(f"  line [{', '.join(_number(p.rates[a]) for p in shown)}]" for a in axes),
        "```",
    ]
    legend = " · ".join(f"{COLOURS[a][1]} {a}" for a in axes)
    return (
        "#### Pass rate per axis\n\n"
        + "\n".join(lines)
        + f"\n\n{legend}: the share of cases that passed every metric of the axis, on "
        f"main's baselines (oldest first) and in {CURRENT}.\n"
    )


def _number(rate: float | None) -> str:
    assert rate is not None
    return f"{rate:.1f}".removesuffix(".0")
