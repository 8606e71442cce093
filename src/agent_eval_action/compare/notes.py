"""Comparability notes: what differs between the two sides besides the agent itself."""

from __future__ import annotations

from ..results import Results


def comparability_notes(baseline: Results, current: Results) -> list[str]:
    notes = []
    if baseline.partial:
        notes.append(
            "The baseline is partial (its run was cancelled); cases it lacks count as added."
        )
    pairs = [
        ("agent-eval-action version", baseline.tool_version, current.tool_version),
        ("google-adk version", baseline.adk_version, current.adk_version),
        ("runs per case", baseline.run_config.num_runs, current.run_config.num_runs),
        (
            "trajectory policy",
            baseline.run_config.trajectory_policy,
            current.run_config.trajectory_policy,
        ),
        ("judge model pin", baseline.run_config.judge_model, current.run_config.judge_model),
        ("runner", baseline.run_config.runner, current.run_config.runner),
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
    return notes


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
