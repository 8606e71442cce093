"""What differs between the two sides besides the agent itself.

- `comparability_notes` (the Diff's notes, shown below the cases): the tool's version, the
  judge, criteria and eval files, renamed cases;
- `verdict_notes` (the Verdict's notes, shown at the top with the verdict): what the
  verdict alone does not show: removed cases and a shrunk suite, cases the selection left
  out, a baseline that ran another agent or another google-adk, a policy other than the
  baseline's, a baseline with no case in common.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..core import Axis
from ..results import CaseResult, GatePolicy, Results, SelectedPath, Status
from .matching import Matching
from .model import Policy

MAX_NAMED = 10  # cases named in one note; the rest are counted
MAX_SHOWN = 120  # characters of a command or a list of eval paths in a note


def comparability_notes(
    baseline: Results, current: Results, matching: Matching | None = None
) -> list[str]:
    notes = []
    if baseline.partial:
        notes.append(
            "The baseline is partial (its run was cancelled); cases it lacks count as added."
        )
    pairs = [
        ("agent-eval-action version", baseline.tool_version, current.tool_version),
        (
            "trajectory policy",
            baseline.run_config.trajectory_policy,
            current.run_config.trajectory_policy,
        ),
        ("judge model pin", baseline.run_config.judge_model, current.run_config.judge_model),
    ]
    for what, before, now in pairs:
        if before != now:
            notes.append(f"The {what} differs: {before} on the baseline, {now} now.")
    notes.extend(_judge_notes(baseline, current))
    before_sets = {s.eval_set_id: s for s in baseline.eval_sets}
    for now_set in current.eval_sets:
        before_set = before_sets.get(now_set.eval_set_id)
        if before_set is None:
            continue
        if before_set.criteria != now_set.criteria:
            changed = sorted(
                name
                for name in set(before_set.criteria) | set(now_set.criteria)
                if before_set.criteria.get(name) != now_set.criteria.get(name)
            )
            notes.append(f"Criteria changed in {now_set.file}: {', '.join(changed)}.")
        elif before_set.file_sha256 != now_set.file_sha256:
            notes.append(f"{now_set.file} changed since the baseline.")
    if matching is not None and matching.renamed:
        pairs_named = [f"{old.key.name} → {key.name}" for key, old in matching.renamed.items()]
        notes.append(
            f"{_count(len(pairs_named), 'case')} renamed since the baseline (the same content "
            f"under a new id), each compared with its old self: {_named(pairs_named)}."
        )
    return notes


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def _named(names: Sequence[str]) -> str:
    shown = ", ".join(names[:MAX_NAMED])
    more = len(names) - MAX_NAMED
    return shown + (f" and {more:,} more" if more > 0 else "")


def _ids(cases: Sequence[CaseResult]) -> str:
    return _named([c.key.name for c in cases])


def _short(text: str) -> str:
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


def verdict_notes(
    baseline: Results,
    current: Results,
    matching: Matching,
    policy: Policy,
    *,
    comparable: bool = True,
) -> list[str]:
    """What the top of the report says beside the verdict (each a sentence, ⚠️ first)."""
    notes = []
    if not comparable:
        notes.append(
            "⚠️ Not comparable: the baseline and this run have no case in common "
            f"({_count(len(baseline.cases), 'case')} on the baseline, "
            f"{_count(len(current.cases), 'case')} now): nothing here was compared with main."
        )
    removed = matching.removed
    if removed:
        passed = sum(c.status == Status.PASSED for c in removed)
        shrank = (
            f"; the suite shrank from {len(baseline.cases):,} cases to {len(current.cases):,}"
            if len(current.cases) < len(baseline.cases)
            else ""
        )
        notes.append(
            f"⚠️ {_count(len(removed), 'case')} removed since the baseline "
            f"({passed:,} of them passed there){shrank}: {_ids(removed)}."
        )
    if matching.not_run:
        selection = current.run_config.selection
        paths = _paths(selection.paths) if selection else "?"
        notes.append(
            f"⚠️ {_count(len(matching.not_run), 'case')} of the baseline not run (selection): "
            f"this run's eval paths ({paths}) leave them out, so they are not counted as "
            f"removed: {_ids(matching.not_run)}."
        )
    notes.extend(_agent_note(baseline, current))
    notes.extend(_adk_note(baseline, current))
    notes.extend(_policy_note(baseline, current, policy))
    return notes


def _agent_note(baseline: Results, current: Results) -> list[str]:
    before, now = baseline.run_config, current.run_config
    if before.runner == now.runner and before.target == now.target:
        return []
    return [
        "⚠️ The baseline ran another agent: "
        f"{before.runner} {_short(before.target or '')!r} on the baseline, "
        f"{now.runner} {_short(now.target or '')!r} now. "
        "What changed may be the setup, not this change."
    ]


def _adk_note(baseline: Results, current: Results) -> list[str]:
    """The google-adk each side's run had (Results.adk_version), when they differ: an
    `--agent` agent runs on it and the eval files are read with it, so it can move scores."""
    before, now = baseline.adk_version, current.adk_version
    if before == now:
        return []

    def had(version: str | None) -> str:
        return f"google-adk {version}" if version else "no google-adk"

    return [
        "⚠️ Scores from another google-adk than the baseline's: "
        f"this run had {had(now)}, the baseline's run {had(before)}. "
        "What changed may be ADK, not this change."
    ]


def _paths(paths: Sequence[SelectedPath]) -> str:
    return _short(
        " ".join(p.path + (":" + ",".join(p.ids) if p.ids is not None else "") for p in paths)
    )


def _fail_on(tokens: Sequence[str]) -> str:
    return ",".join(tokens)


def _min_delta(deltas: Mapping[Axis, float]) -> str:
    return " ".join(f"{axis}={deltas[axis]:g}" for axis in sorted(deltas))


def _policy_note(baseline: Results, current: Results, policy: Policy) -> list[str]:
    """The gate's inputs this run used against those the baseline's run recorded: fail-on
    and min-delta (the policy applied now), the eval paths and the runs per case."""
    before, now = baseline.run_config, current.run_config
    differences = []
    recorded: GatePolicy | None = before.gate
    if recorded is not None:
        if set(recorded.fail_on) != set(policy.fail_on):
            differences.append(
                f"fail-on {_fail_on(policy.fail_on)} here, {_fail_on(recorded.fail_on)} there"
            )
        axes = set(recorded.min_delta) | set(policy.min_delta)
        if any(
            abs(recorded.min_delta.get(a, -1.0) - policy.min_delta.get(a, -1.0)) > 1e-12
            for a in axes
        ):
            differences.append(
                f"min-delta {_min_delta(policy.min_delta)} here, "
                f"{_min_delta(recorded.min_delta)} there"
            )
    if (
        before.selection is not None
        and now.selection is not None
        and _selected(before.selection.paths) != _selected(now.selection.paths)
    ):
        differences.append(
            f"eval paths {_paths(now.selection.paths)} here, {_paths(before.selection.paths)} there"
        )
    if before.num_runs != now.num_runs:
        differences.append(
            f"{now.num_runs} run{'s' if now.num_runs != 1 else ''} per case here, "
            f"{before.num_runs} there"
        )
    if not differences:
        return []
    return [
        "⚠️ The policy differs from main's (the baseline's run): "
        + "; ".join(differences)
        + ". A pull request's workflow sets its own; a required workflow or a ruleset pins "
        "it (docs/workflows.md)."
    ]


def _selected(paths: Sequence[SelectedPath]) -> set[tuple[str, bool, tuple[str, ...] | None]]:
    return {(p.path, p.directory, None if p.ids is None else tuple(p.ids)) for p in paths}


def _judges(results: Results) -> dict[str, set[str]]:
    """Per judged metric, the judges (model and prompt version) its verdicts came from."""
    seen: dict[str, set[str]] = {}
    for case in results.cases:
        for name, metric in case.metrics.items():
            if metric.judge is not None:
                judge = metric.judge
                seen.setdefault(name, set()).add(
                    f"{judge.model} (prompt {judge.prompt_version}, parser {judge.parser_version})"
                )
    return seen


def _judge_notes(baseline: Results, current: Results) -> list[str]:
    before, now = _judges(baseline), _judges(current)
    return [
        f"The judge of {name} differs: {', '.join(sorted(before[name]))} on the baseline, "
        f"{', '.join(sorted(now[name]))} now; its scores may move for that reason alone."
        for name in sorted(set(before) & set(now))
        if before[name] != now[name]
    ]
