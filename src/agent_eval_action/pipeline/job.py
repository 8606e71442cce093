"""A job: everything decided before any agent runs — the suite, the plan, this shard's part
of it, the baseline, the judge's settings. The agent stage and the score stage prepare the
same job from the same inputs, whether they share a process or not, so bad input fails
fast (exit 2) before an agent runs, and both stages agree on which case-runs exist.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError
from ..metrics.config import DEFAULTS_SOURCE
from .gate import NONE_GIVEN, Baseline, read_baseline
from .options import RunOptions
from .plan import Plan, plan

if TYPE_CHECKING:
    from ..metrics.judge import JudgeSettings
    from ..results import Selection, Shard
    from .suite import Suite


@dataclass
class Job:
    plan: Plan
    options: RunOptions
    baseline: Baseline = NONE_GIVEN  # a shard's: without the other shards' cases (shard.py)
    shard: Shard | None = None
    judge: JudgeSettings | None = None  # None: no judged metric is configured
    warnings: list[str] = field(default_factory=list)  # for the Results
    configs: str = ""  # which test_config.json each eval file uses, said after the run
    selection: Selection | None = None  # what the eval paths chose, for the Results


def prepare(
    eval_paths: Sequence[str],
    options: RunOptions,
    *,
    baseline: str | None = None,
    history: Sequence[str] = (),
    shard: tuple[int, int] | None = None,
    import_custom: bool = True,
    judges: bool = True,
) -> Job:
    """Load and check everything a run needs; InputError (exit 2) on any bad input.
    `import_custom`: whether this process runs the agent stage, and so the custom metrics
    (the score stage alone imports no project code). `judges`: whether it may judge, and
    so holds the criteria's judge models to the allow-list (`run-cases` never judges, and
    is not told the list)."""
    from .selection import record_selection
    from .shard import shard_plan
    from .suite import load_suite

    suite = load_suite(eval_paths, options.config, options.initial_session)
    selection = record_selection(eval_paths, suite)  # before a shard takes its part
    for warning in suite.warnings:
        print(warning, file=sys.stderr)
    the_plan = plan(
        suite,
        options.num_runs,
        options.trajectory_policy,
        import_custom=import_custom,
        strip_thoughts=options.strip_thoughts,
    )
    the_baseline = read_baseline(baseline, history)
    for warning in the_baseline.warnings:
        print(warning, file=sys.stderr)
    record = None
    if shard is not None:
        the_plan, record, the_baseline = shard_plan(the_plan, *shard, the_baseline)
    judge = judge_settings(the_plan, options, judges=judges)
    return Job(
        plan=the_plan,
        configs=configs_line(suite),
        options=options,
        baseline=the_baseline,
        shard=record,
        judge=judge,
        warnings=list(the_baseline.warnings),
        selection=selection,
    )


def configs_line(suite: Suite) -> str:
    """One line: which test_config.json each eval set is scored with, or that ADK's
    defaults apply (no test_config.json beside the file: a misnamed one is not found)."""
    by_config: dict[str, list[str]] = {}
    for eval_set in suite.eval_sets:
        by_config.setdefault(eval_set.config.source, []).append(eval_set.file)
    parts = []
    for source, files in by_config.items():
        what = f"{len(files)} eval file{'s use' if len(files) > 1 else ' uses'}"
        if source == DEFAULTS_SOURCE:
            beside = files[0] if len(files) == 1 else f"{files[0]} and others"
            parts.append(f"{what} ADK's defaults (no test_config.json beside {beside})")
        else:
            parts.append(f"{what} {source}")
    return "config: " + "; ".join(parts)


def judge_settings(
    the_plan: Plan, options: RunOptions, *, judges: bool = True
) -> JudgeSettings | None:
    """The judge's settings when a judged metric is configured or a scenario case needs the
    user simulator (else None, and google-genai is never imported); bad price tables and
    cache directories are bad input (exit 2)."""
    from ..metrics.judge import judge_settings as settings_from
    from .judge import judged_metrics
    from .key_budget import most_calls

    if not judged_metrics(the_plan) and not any(r.scenario for r in the_plan.requests):
        return None
    if judges:
        check_judge_models(the_plan, options)
    if options.judge_cache:
        try:
            Path(options.judge_cache).mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise InputError(f"--judge-cache: cannot create the directory: {err}") from None
    return settings_from(
        os.environ,
        model_pin=options.judge_model,
        cache_dir=options.judge_cache,
        cache_this_run=options.judge_cache_this_run,
        parallelism=options.concurrency,
        max_calls=most_calls(the_plan, options),
    )


def check_judge_models(the_plan: Plan, options: RunOptions) -> None:
    """The judge's models within its allow-list (metrics/judge/caps.py): the pin, else each
    judged criterion's; InputError (the flag, or the config's file and line) if not."""
    from ..metrics.judge.caps import allowed_judge_models, judge_model_refusal
    from ..metrics.judge.metric import check_judge_models as check_criteria

    allowed = allowed_judge_models(options.judge_models)
    if options.judge_model is not None:
        why = judge_model_refusal(options.judge_model, allowed)
        if why is not None:
            raise InputError(f"--judge-model: {why}")
    for eval_set in the_plan.suite.eval_sets:
        metrics, criteria = (
            the_plan.metrics[eval_set.eval_set_id],
            the_plan.criteria[eval_set.eval_set_id],
        )
        check_criteria(eval_set, metrics, criteria, allowed, options.judge_model)
