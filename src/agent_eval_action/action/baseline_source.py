"""Which baseline a run compares with, from the `baseline` input (docs/action.md, "The baseline"):

- `artifact`: the results artifact of the baseline branch's push run for the PR's
  merge-base, else the nearest older commit that has one (github/baseline.py);
- `branch`: the results stored on the data branch for that commit (github/databranch.py);
- a path: that Results file (missing, or no Results file at all: bad input, as for
  `--baseline`); `none`: no baseline.

"No baseline" is never a crash: it comes back with the reason, which every report shows.
A GitHub outage is different: falling back to thresholds then could pass a PR that the
baseline would fail, so it is an infrastructure failure (exit 3).

A baseline's Results are checked when they are loaded (compare/sanity.py) and here against
their metrics' ranges (pipeline/bounds.py): one that fails is no baseline, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..compare.record import MainRecord
from ..errors import InfrastructureError
from ..github.client import GitHub, GitHubError
from ..pipeline.bounds import ResultsRefused, bounded_metric, check_scores
from ..results import Results
from . import outputs
from .settings import Settings

BASELINE_DIR = "baseline"  # below output-dir: the downloaded baseline (and older ones)


@dataclass(frozen=True)
class BaselineQuery:
    """Where to look: the PR's base and head (head None: start at `start_sha` itself)."""

    start_sha: str
    head_sha: str | None
    branch: str
    workflow: str | None


@dataclass
class ChosenBaseline:
    results: Results | None
    path: Path | None = None
    sha: str | None = None
    relation: str | None = None  # e.g. "the merge-base abc1234", for the report
    reason: str | None = None  # why there is none
    history: list[Path] = field(default_factory=list)  # older baselines, for `run --history`
    older: MainRecord = field(default_factory=MainRecord)  # main's record of the same
    # this run's paired runs on the merge-base's code (merge-base.json): main's newest
    # history in the comparison, never a baseline of later runs
    merge_base: Results | None = None


def _none(reason: str) -> ChosenBaseline:
    return ChosenBaseline(results=None, reason=reason)


def _from_file(path: Path) -> ChosenBaseline:
    """`baseline: <path>`: a path the user named, read as `--baseline` is (bad input when
    it is missing or no Results file; no baseline when it is Results that cannot be used)."""
    from ..pipeline.gate import read_named

    results, reason = read_named(str(path), "input baseline")
    if results is None:
        return _none(reason or "the baseline is unusable")
    return ChosenBaseline(
        results=results, path=path, sha=results.source.sha, relation=f"the file {path}"
    )


def choose_baseline(
    settings: Settings, gh: GitHub | None, query: BaselineQuery | None, out_dir: Path
) -> ChosenBaseline:
    return _in_range(_choose(settings, gh, query, out_dir), out_dir / BASELINE_DIR)


def _in_range(chosen: ChosenBaseline, downloads: Path) -> ChosenBaseline:
    """The baseline whose scores are within their metrics' ranges, else none (said why; the
    older baselines were checked as they were read). A refused download is removed, so that
    output-dir holds only the baselines used."""

    def drop(path: Path | None) -> None:
        if path is not None and path.parent == downloads:
            path.unlink(missing_ok=True)

    if chosen.results is None:
        return chosen
    try:
        check_scores(chosen.results, str(chosen.path or "the baseline"))
    except ResultsRefused as err:
        for path in (chosen.path, *chosen.history):
            drop(path)
        return _none(f"the baseline is refused ({err})")
    return chosen


def _choose(
    settings: Settings, gh: GitHub | None, query: BaselineQuery | None, out_dir: Path
) -> ChosenBaseline:
    kind = settings.baseline.kind
    if kind == "none":
        return _none("the baseline input is none")
    if kind == "path":
        path = Path(str(settings.baseline.path))
        return _from_file(path)
    if gh is None:
        return _none(f"no github-token to read the baseline {kind} with")
    if query is None:
        return _none("this event has no base commit to compare with")
    repo = str(settings.github.repository)
    dest = out_dir / BASELINE_DIR
    try:
        if kind == "artifact":
            from ..github.baseline import find_artifact_baseline

            found = find_artifact_baseline(
                gh,
                repo,
                start_sha=query.start_sha,
                head_sha=query.head_sha,
                branch=query.branch,
                workflow=query.workflow,
                artifact_name=settings.baseline_artifact,
                dest=dest,
                repository_id=settings.github.repository_id,
                history=settings.history,
                bounded=bounded_metric,
            )
        else:
            from ..github.databranch import DATA_BRANCH, find_branch_baseline

            found = find_branch_baseline(
                gh,
                repo,
                start_sha=query.start_sha,
                head_sha=query.head_sha,
                branch=query.branch,
                workflow=query.workflow,
                repository_id=settings.github.repository_id,
                data_branch=DATA_BRANCH,
                dest=dest,
                history=settings.history,
                bounded=bounded_metric,
            )
    except GitHubError as err:
        if err.status is None or err.status >= 500 or err.status == 429:
            raise InfrastructureError(f"cannot fetch the baseline: {err}") from None
        return _none(f"the baseline could not be read from GitHub ({err})")
    from ..github.baseline import NoBaseline

    for why in found.refused:  # stored Results no push run of the baseline workflow vouches for
        outputs.command("warning", f"baseline refused: {why}")
    if isinstance(found, NoBaseline):
        return _none(found.reason)
    # found's Results were loaded when they were checked: not read again here
    return ChosenBaseline(
        results=found.results,
        path=found.path,
        sha=found.sha,
        relation=found.relation,
        history=found.history,
        older=found.older,
    )
