"""Which case of the current run is which case of the baseline (pure).

A case is known by its key, `(eval_set_id, eval_id)`. A baseline case whose key is not in
the current run is, in this order (docs/statistics.md, "Removed, renamed and not run"):

1. **renamed** when a current case that the baseline lacks has the same content: the same
   `content_sha256` (the case without its eval_id) when both sides record it, else the same
   `case_sha256` (the same eval_id and content: the eval set id changed, e.g. a legacy file
   moved, whose id is its path). Pairs are made in the baseline's order, each current case
   used once. A renamed case is compared with its old self.
2. **not run (selection)** when the current run records its selection
   (`run_config.selection`) and either
   a. its eval set is in the current run and a `FILE:id` filter left its id out, though the
      file still holds it (`selection.unselected`); or
   b. the current run read neither its eval set nor its file, and none of the current eval
      paths would have found its file had it still been there: not that file, nor a
      directory it lies below with an eval file's name (`*.evalset.json`, `*.test.json`)
      outside the directories discovery skips.
3. **removed** otherwise: the file that held it was read and the case is not in it, or the
   file is gone from where the eval paths look.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from ..core import CaseKey
from ..evalset.discovery import _SKIP_DIRS, EVAL_SUFFIXES
from ..results import CaseResult, Results, SelectedPath


@dataclass
class Matching:
    """The baseline's cases as the current run relates to them."""

    renamed: dict[CaseKey, CaseResult] = field(default_factory=dict)  # current key -> baseline
    removed: list[CaseResult] = field(default_factory=list)
    not_run: list[CaseResult] = field(default_factory=list)  # left out by the selection
    common: int = 0  # cases on both sides, by key or renamed

    @property
    def comparable(self) -> bool:
        return self.common > 0


def match_cases(baseline: Results, current: Results) -> Matching:
    gone, renamed, common = _pair(baseline.cases, current.cases)
    matching = Matching(renamed=renamed, common=common)
    taken = {case.key for case in matching.renamed.values()}
    selection = current.run_config.selection
    read = _Read(
        {s.eval_set_id for s in current.eval_sets} | {c.eval_set_id for c in current.cases},
        {s.file for s in current.eval_sets} | {c.file for c in current.cases},
        {k: set(v) for k, v in selection.unselected.items()} if selection else {},
    )
    for case in gone:
        if case.key in taken:
            continue
        if _not_selected(case, current, read):
            matching.not_run.append(case)
        else:
            matching.removed.append(case)
    return matching


def compared_count(baseline: Sequence[CaseResult], current: Sequence[CaseResult]) -> int:
    """How many current cases a comparison pairs with a baseline case, by key or renamed
    (`Matching.common`): a shard counts its whole suite's so (pipeline/shard.py)."""
    return _pair(baseline, current)[2]


def _pair(
    baseline: Sequence[CaseResult], current: Sequence[CaseResult]
) -> tuple[list[CaseResult], dict[CaseKey, CaseResult], int]:
    """(the baseline cases whose key is gone, the renamed ones by current key, the pairs)."""
    now, before = by_id(current), by_id(baseline)
    gone = [case for case in baseline if case.eval_id not in now.get(case.eval_set_id, {})]
    new = [case for case in current if case.eval_id not in before.get(case.eval_set_id, {})]
    common = sum(len(ids.keys() & now.get(set_id, {}).keys()) for set_id, ids in before.items())
    renamed = _renames(gone, new)
    return gone, renamed, common + len(renamed)


def by_id(cases: Sequence[CaseResult]) -> dict[str, dict[str, CaseResult]]:
    """The cases by eval set, then eval id (the last of a key listed twice), without a
    key object per case (a 100,000-case suite's keys were enough objects to set off full
    garbage collections)."""
    found: dict[str, dict[str, CaseResult]] = {}
    for case in cases:
        ids = found.get(case.eval_set_id)
        if ids is None:
            ids = found[case.eval_set_id] = {}
        ids[case.eval_id] = case
    return found


def _renames(gone: list[CaseResult], new: list[CaseResult]) -> dict[CaseKey, CaseResult]:
    by_content: dict[str, list[CaseResult]] = {}
    by_case: dict[str, list[CaseResult]] = {}
    for case in new:
        if case.content_sha256:
            by_content.setdefault(case.content_sha256, []).append(case)
        by_case.setdefault(case.case_sha256, []).append(case)
    renamed: dict[CaseKey, CaseResult] = {}
    for old in gone:
        candidates: Iterable[CaseResult] = [
            *(by_content.get(old.content_sha256, []) if old.content_sha256 else []),
            *by_case.get(old.case_sha256, []),
        ]
        match = next((c for c in candidates if c.key not in renamed), None)
        if match is not None:
            renamed[match.key] = old
    return renamed


@dataclass(frozen=True)
class _Read:
    """The eval sets and files the current run read."""

    eval_sets: set[str]
    files: set[str]
    unselected: dict[str, set[str]]  # per eval set, the ids a FILE:id filter left out


def _not_selected(case: CaseResult, current: Results, read: _Read) -> bool:
    selection = current.run_config.selection
    if selection is None:  # Results from before selections were recorded
        return False
    if case.eval_id in read.unselected.get(case.eval_set_id, ()):
        return True
    if case.eval_set_id in read.eval_sets or case.file in read.files:
        return False  # its file was read, and the case is not in it
    return not any(covers(path, case.file) for path in selection.paths)


def covers(selected: SelectedPath, file: str) -> bool:
    """Whether this eval path would load `file` (as written in Results) if it existed."""
    if not selected.directory:
        return selected.path == file
    target, root = PurePosixPath(file), PurePosixPath(selected.path)
    if str(root) != "." and not target.is_relative_to(root):
        return False
    if str(root) == "." and target.is_absolute():
        return False
    below = target.parts if str(root) == "." else target.relative_to(root).parts
    return target.name.endswith(EVAL_SUFFIXES) and not _SKIP_DIRS.intersection(below[:-1])
