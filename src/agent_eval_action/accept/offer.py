"""What accepting this run's regressions would change, for the action's report: the same
choice and edit as `accept RESULTS --diff DIFF` (plan.py, apply.py), made by the action's
own code from this run's Results and the checkout's eval files, written as patches into
output-dir and never applied. The comment tells the reviewer to run `accept` on the run's
files (so a fork's artifact is never applied blindly)."""

from __future__ import annotations

from pathlib import Path

from ..compare.model import Diff
from ..core import AXES, Axis
from ..files import write_whole
from ..report.model import AcceptOffer
from ..results import Results
from .apply import edit
from .plan import choose

PATCHES: dict[str, tuple[Axis, ...]] = {
    "accept.patch": AXES,
    "accept-trajectory.patch": ("trajectory",),
    "accept-response.patch": ("response",),
}


def offer(results: Results, diff: Diff, root: Path, out_dir: Path) -> AcceptOffer | None:
    """Write each patch that changes something into `out_dir`; the offer of the whole one
    (None when no regressed case can be accepted)."""
    made: AcceptOffer | None = None
    for name, axes in PATCHES.items():
        accepted, refused = choose(results, (), diff=diff, axes=axes)
        edited, unwritable = edit(results, accepted, root)
        changed = [e for e in edited if e.regions]
        if not changed:
            continue
        write_whole(out_dir / name, "".join(e.diff() for e in changed))
        if axes == AXES:
            cases = tuple((a.case.key, a.axes) for e in changed for a in e.cases)
            made = AcceptOffer(cases, len(refused) + len(unwritable), name)
    return made
