"""Every option of a run and of the gate, with its default declared once.

The command line's flags (cli/), the action's inputs (action/settings.py) and action.yml's
declared defaults (kept equal by tests/test_options.py) all take their defaults from here.
This module stays light: the CLI imports it to build `--help`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core import AXES, Axis, TrajectoryPolicy


@dataclass(frozen=True)
class RunOptions:
    """How the agent is run and scored."""

    num_runs: int = 1
    concurrency: int = 8
    timeout_s: float = 600.0
    trajectory_policy: TrajectoryPolicy | None = None
    judge_model: str | None = None  # pins the judge model of every judged criterion
    # the judge's allow-list (metrics/judge/caps.py): empty, the models with a built-in price
    judge_models: tuple[str, ...] = ()
    # calls a job may make on the judge's key, the judge's and the user simulator's together,
    # over all its rounds (pipeline/key_budget.py): about $10 of gemini-2.5-flash at 2,000
    # prompt tokens a call
    judge_max_calls: int = 5000
    judge_cache: str | None = None
    judge_cache_this_run: bool = False  # the cache holds only this run's verdicts (the action)
    config: str | None = None  # one test_config.json for every eval file
    # Confirmation re-runs (compare/confirm.py): a regressed case not known to be
    # deterministic is re-run up to this many times, one at a time, before it is blamed.
    confirm_runs: int = 3
    confirm_limit: int = 300  # extra case-runs at most, per run of the suite
    # Paired runs (pipeline/paired.py): each confirmation round's cases run once more on the
    # merge-base's code, main's record of them; off unless asked for (`run --paired REF`,
    # the action's `paired: true`)
    paired: bool = False
    # Main's sampling (compare/confirm.to_sample): a run that records main's baseline (`run
    # --record-baseline`, the action on a push) runs a case again until main has this many
    # runs of it, its own and the older baselines', or it is seen to be deterministic: a first
    # baseline stands in for the history main does not have yet (1: off)
    baseline_runs: int = 10
    # ADK's `initial_session_file`: the session of every legacy .test.json row file
    initial_session: str | None = None
    # response_match_score without the model's thought parts (ADK keeps them in the text)
    strip_thoughts: bool = False
    # (efficiency metric, most its per-case total may be): metrics/efficiency.py; unset,
    # efficiency is recorded and reported only
    budgets: tuple[tuple[str, float], ...] = ()
    # Hermetic tools (docs/hermetic-tools.md; the in-process ADK runner only): answer a tool
    # call from the case's expected turns, or from the baseline's recorded calls of the case
    # (main's), instead of running the tool; strict: a call with no answer errors its run
    tools_from_eval_file: bool = False
    replay_tools: bool = False
    replay_strict: bool = False


@dataclass(frozen=True)
class GateOptions:
    """What fails the gate."""

    fail_on: tuple[str, ...] = ("regression",)  # policies: compare/policy.py
    # (axis or None for both, X) items in the order given, a later one winning; an axis
    # not named keeps compare's default (compare/statistics_policy.py min_delta)
    min_delta: tuple[tuple[Axis | None, float], ...] = ()

    def deltas(self) -> dict[Axis, float]:
        """The min-delta given per axis (axes not named keep compare's defaults)."""
        deltas: dict[Axis, float] = {}
        for axis, value in self.min_delta:
            for name in (axis,) if axis else AXES:
                deltas[name] = value
        return deltas

    def recording(self) -> GateOptions:
        """The options of a run that records results and gates on nothing."""
        return GateOptions(fail_on=("never",), min_delta=self.min_delta)


@dataclass(frozen=True)
class ReportOptions:
    check_name: str = "agent-eval"  # names the check run and the comment's hidden marker


@dataclass(frozen=True)
class Defaults:
    run: RunOptions = field(default_factory=RunOptions)
    gate: GateOptions = field(default_factory=GateOptions)
    report: ReportOptions = field(default_factory=ReportOptions)


DEFAULTS = Defaults()
