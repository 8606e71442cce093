"""What a run was asked to evaluate, recorded in its Results (`run_config.selection`).

A later comparison uses it to tell a case the selection left out ("not run (selection)")
from a case deleted from its eval file (docs/statistics.md, "Removed, renamed and not run"):

- `paths`: each eval path as the run was given it, its file or directory written as the
  Results write files (relative to the working directory), with its `FILE:id` ids;
- `unselected`: per eval set, the ids its file holds that a `FILE:id` filter left out.

Recorded from the suite as loaded, before a shard takes its part, so that every shard of a
run records the same selection.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..evalset.discovery import display_path
from ..results import SelectedPath, Selection
from .suite import Suite


def selected_path(spec: str) -> SelectedPath:
    """One EVAL_PATH as the run read it (discovery's rules: an existing path is taken whole,
    else `FILE:id1,id2` names cases of FILE)."""
    path, ids = Path(spec), None
    if not path.exists() and ":" in spec:
        file, _, id_list = spec.partition(":")
        path, ids = Path(file), [i.strip() for i in id_list.split(",") if i.strip()]
    return SelectedPath(path=display_path(path), directory=path.is_dir(), ids=ids)


def record_selection(eval_paths: Sequence[str], suite: Suite) -> Selection:
    """The selection of a suite loaded from `eval_paths` (before sharding)."""
    unselected = {}
    for eval_set in suite.eval_sets:
        chosen = {case.eval_id for case in eval_set.cases}
        left_out = [eval_id for eval_id in eval_set.case_lines if eval_id not in chosen]
        if left_out:
            unselected[eval_set.eval_set_id] = left_out
    return Selection(paths=[selected_path(spec) for spec in eval_paths], unselected=unselected)
