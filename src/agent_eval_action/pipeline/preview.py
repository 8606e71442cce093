"""The cost preview (`run --plan`, and the first line of every run): what a job will do and
the most it may spend, from its plan alone, before any agent runs (docs/cli.md, "--plan").

One `Preview` is computed once from the plan and the options (the case-runs, what its
rounds may add, the calls on the judge's key: key_budget.py), and `lines` renders it; the
first line is the one every run prints."""

from __future__ import annotations

from dataclasses import dataclass

from ..compare.statistics_policy import DEFAULT as STATISTICS
from ..metrics.judge.caps import MAX_OUTPUT_TOKENS, allowed_judge_models
from ..metrics.simulation.config import MAX_PROMPT_CHARS
from ..report.escape import plain
from .key_budget import ExtraRuns, KeyCalls, extra_case_runs, key_calls
from .options import RunOptions
from .plan import Plan

TIMES = "\u00d7"  # the multiplication sign
MAX_EVAL_SETS_SHOWN = 4  # more eval files than this: their case counts are not listed


@dataclass(frozen=True)
class Preview:
    """What a run will do. `confirms`: it compares with a baseline, so regressed cases may
    be re-run; `records`: it records main's baseline, so its cases may be sampled."""

    eval_sets: tuple[tuple[str, int], ...]  # (eval file, its cases)
    num_runs: int
    case_runs: int  # the plan's own (a shard's: its part)
    extra: ExtraRuns
    confirms: bool
    records: bool
    calls: KeyCalls
    options: RunOptions
    # (I, N): the numbers are the whole suite's, an upper bound for shard I of N (the
    # action's root plans every shard's job alike)
    whole_of_shard: tuple[int, int] | None = None

    @property
    def cases(self) -> int:
        return sum(count for _, count in self.eval_sets)

    @property
    def uses_key(self) -> bool:
        """Whether anything of the run may call Gemini on the judge's key."""
        return self.calls.bound is None or self.calls.bound.total > 0

    @property
    def output_tokens(self) -> int:
        """The most output tokens, thoughts included, its calls may spend."""
        return self.calls.most * MAX_OUTPUT_TOKENS


def preview(
    plan: Plan,
    options: RunOptions,
    *,
    confirms: bool,
    records: bool,
    whole_of_shard: tuple[int, int] | None = None,
) -> Preview:
    """The preview of a run of `plan` with `options` (`whole_of_shard`: `plan` is the whole
    suite of a job that runs only that shard of it)."""
    counts = {s.eval_set_id: 0 for s in plan.suite.eval_sets}
    for key in plan.cases:
        counts[key.eval_set_id] += 1
    eval_sets = tuple(
        (s.file, counts[s.eval_set_id]) for s in plan.suite.eval_sets if counts[s.eval_set_id]
    )
    return Preview(
        eval_sets=eval_sets,
        num_runs=plan.num_runs,
        case_runs=len(plan.requests),
        extra=extra_case_runs(len(plan.cases), options, confirms=confirms, records=records),
        confirms=confirms,
        records=records,
        calls=key_calls(plan, options, confirms=confirms, records=records),
        options=options,
        whole_of_shard=whole_of_shard,
    )


def _shown(file: str) -> str:
    """An eval file's name (the PR's text) on one line, its invisible characters shown."""
    return plain(file).replace("\n", " \u23ce ")


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _rounds(p: Preview) -> str:
    if p.records and p.extra.sampling:
        return f"at most {p.extra.sampling:,} more to sample main"
    if p.extra.confirming:
        paired = " (and as many on main's code)" if p.extra.pairs > 1 else ""
        return f"at most {p.extra.confirming:,} more to confirm{paired}"
    return "no re-runs"


def _calls(p: Preview) -> str:
    cap = f"judge-max-calls {p.options.judge_max_calls:,}"
    bound = p.calls.bound
    if not p.uses_key:
        return f"no call on the judge's key ({cap})"
    if bound is None:
        return f"at most {_plural(p.calls.most, 'call')} on the judge's key ({cap})"
    judge, simulator = min(bound.judge, p.calls.most), min(bound.simulator, p.calls.most)
    said = f"at most {_plural(judge, 'judge call')}, {_plural(simulator, 'simulator call')}"
    if judge + simulator > p.calls.most:
        said += f", {p.calls.most:,} in all"
    return f"{said} ({cap})"


def first_line(p: Preview) -> str:
    """The line every run prints before its agent stage starts."""
    runs = _plural(p.num_runs, "run")
    return (
        f"plan: {_plural(p.cases, 'case')} {TIMES} {runs} = "
        f"{_plural(p.case_runs, 'case-run')}; {_rounds(p)}; {_calls(p)}"
    )


def _confirmation(p: Preview) -> str:
    options = p.options
    if options.confirm_runs < 1:
        return "  confirmation: off (confirm-runs 0)"
    suite = (
        f", and the whole suite up to {STATISTICS.suite_rounds} times more while its test hints at a "
        "broad drop (suite rounds)"
        if p.num_runs == 1
        else ""
    )
    paired = ", each also on main's code (paired)" if p.extra.pairs > 1 else ""
    return (
        f"  confirmation: each regressed case re-runs up to {options.confirm_runs} times"
        f"{suite}; at most {p.extra.confirming:,} more case-runs{paired} (confirm-runs, "
        f"confirm-limit {options.confirm_limit:,})"
    )


def _prompts(p: Preview) -> str:
    """What bounds the prompts: the simulator's cap, and nothing for a judge's."""
    simulator = f"the simulator's at most {MAX_PROMPT_CHARS:,} characters a call"
    bound = p.calls.bound
    if bound is None or bound.judge:
        return f"prompt tokens not bounded (a judge prompt holds the agent's answers; {simulator})"
    most = min(bound.simulator, p.calls.most) * MAX_PROMPT_CHARS
    return f"prompts at most {most:,} characters in all ({simulator})"


def lines(p: Preview) -> list[str]:
    """The whole preview, one fact a line, the first line first."""
    options = p.options
    out = [first_line(p)]
    if p.whole_of_shard is not None:
        index, count = p.whole_of_shard
        out.append(
            f"  shard {index}/{count}: the numbers are the whole suite's, at most what this "
            "job's part of it may do"
        )
    if 1 < len(p.eval_sets) <= MAX_EVAL_SETS_SHOWN:
        listed = ", ".join(f"{_shown(file)} {_plural(n, 'case')}" for file, n in p.eval_sets)
        out.append(f"  eval files: {listed}")
    if p.records and not p.extra.sampling:
        out.append(f"  main's sampling: off (baseline-runs {options.baseline_runs})")
    elif p.records:
        out.append(
            f"  main's sampling: each case runs again until main has {options.baseline_runs} "
            f"runs of it or it is seen to be deterministic: at most {p.extra.sampling:,} "
            "more case-runs (baseline-runs)"
        )
    elif p.confirms:
        out.append(_confirmation(p))
    if not p.uses_key:
        out.append("  the judge's key: no call (no judged metric, no scenario case)")
        return out
    out.append(
        f"  calls on the judge's key: {_calls(p)}; past the cap a call is refused, never "
        "made, and its metric is not passed"
    )
    out.append(
        f"  tokens: at most {p.output_tokens:,} output tokens, thoughts included "
        f"({MAX_OUTPUT_TOKENS:,} a call, max_output_tokens); {_prompts(p)}"
    )
    pinned = f" (pinned: {options.judge_model})" if options.judge_model else ""
    allowed = ", ".join(allowed_judge_models(options.judge_models))
    out.append(f"  judge models allowed: {allowed}{pinned} (judge-models, judge-model)")
    return out
