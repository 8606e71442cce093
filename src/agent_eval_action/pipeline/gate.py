"""The gate stage: current Results against the baseline (and main's history) → Diff → exit code.

One function decides for the CLI (`run --baseline`, `score`, `compare`) and for the action,
so a local run and a PR agree. Exit codes: errors.py.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..compare import compare, load_baseline
from ..compare.loading import NotResults
from ..compare.policy import parse_fail_on
from ..compare.record import MainRecord
from ..core import Axis
from ..errors import EXIT_GATE_FAILED, EXIT_INFRASTRUCTURE, EXIT_PASS, InputError
from ..results import GatePolicy, Results, Status
from .options import GateOptions, RunOptions

if TYPE_CHECKING:
    from ..compare.model import Diff
    from ..metrics.judge import JudgeResults


@dataclass(frozen=True)
class Baseline:
    """The baseline Results, or None and why there is none; main's record of its older
    baselines (compare/record.py), and of paired runs on the merge-base's code."""

    results: Results | None
    reason: str | None = None
    history: MainRecord = field(default_factory=MainRecord)
    warnings: tuple[str, ...] = ()  # for the Results: a baseline was named but is not usable
    left_out: tuple[str, ...] = ()  # of them: a history file that was refused

    @property
    def known(self) -> MainRecord:
        """Main's record of every Results that tells about noise: the history's, the
        baseline's."""
        return self.history.plus(self.results)


NONE_GIVEN = Baseline(None)


def read_baseline(path: str | None, history: Sequence[str] = ()) -> Baseline:
    """A baseline named by path, with its history. A path that does not exist or is no
    Results file is bad input (the user named it: read_named); an unreadable or newer
    Results file is "no baseline", with the warning for the caller to say (`warnings`: for
    stderr and the Results')."""
    if path is None:
        return NONE_GIVEN
    results, reason = read_named(path, "--baseline")
    older, left_out = read_history(history)
    unusable = (f"warning: {no_baseline_warning(reason)}",) if results is None else ()
    return Baseline(results, reason, older, (*unusable, *left_out), tuple(left_out))


def read_history(paths: Sequence[str]) -> tuple[MainRecord, list[str]]:
    """Main's record of the older baselines in `paths` (nearest first): Results files, each
    folded and let go before the next is read, and main records (`*.msgpack`, as push runs
    store them: compare/record_file.py). One that cannot be used is left out: an unreadable
    Results as before, a refused record with a warning."""
    from ..compare.record_file import RECORD_SUFFIX, read_record
    from .bounds import ResultsRefused, bounded_metric

    record, warnings = MainRecord(), []
    for path in paths:
        if path.endswith(RECORD_SUFFIX):
            try:
                record.extend(read_record(Path(path), path, bounded_metric))
            except ResultsRefused as err:
                warnings.append(f"warning: --history {err}; left out")
            continue
        older = load_baseline(path, turns=False)[0]
        if older is not None:
            record.add(older)
    return record, warnings


LEAVE_OUT = "leave it out to judge by thresholds"


def read_named(path: str, what: str) -> tuple[Results | None, str | None]:
    """A baseline file the user named (`what`: the flag or the action's input), as
    load_baseline reads it; but one that is missing, a folder, or no Results file at all (an
    eval set, a traces file, not JSON) is bad input (InputError, exit 2): a slip must not
    quietly turn the gate into thresholds only. A Results file it cannot use (newer,
    refused, invalid) is still "no baseline"."""
    if not Path(path).exists():
        raise InputError(f"{what}: no such file ({LEAVE_OUT})", path)
    if Path(path).is_dir():
        raise InputError(f"{what}: a folder, not a Results file ({LEAVE_OUT})", path)
    try:
        return load_baseline(path, named=True)
    except NotResults as err:
        raise InputError(f"{what}: {err.kind}, not a Results file ({LEAVE_OUT})", path) from None


def no_baseline_warning(reason: str | None) -> str:
    return (
        f"NO BASELINE: {reason}; cases are judged by their thresholds and every judged "
        "answer afresh"
    )


def gate_options(fail_on: str, min_delta: Sequence[tuple[Axis | None, float]]) -> GateOptions:
    """`--fail-on` and `--min-delta` as GateOptions (a bad policy: InputError, exit 2)."""
    return GateOptions(fail_on=tuple(parse_fail_on(fail_on)), min_delta=tuple(min_delta))


def gate_policy(options: GateOptions) -> GatePolicy:
    """The policy as Results record it (`run_config.gate`): the policies, and min-delta per
    axis with compare's defaults filled in, so that two records compare as the gates do."""
    from ..compare.statistics_policy import DEFAULT as STATISTICS

    return GatePolicy(
        fail_on=list(options.fail_on), min_delta={**STATISTICS.min_delta, **options.deltas()}
    )


def with_policy(results: Results, options: GateOptions) -> Results:
    """`results` recording `options` as their gate's policy (`run_config.gate`). A run that
    records main's baseline (`run --record-baseline`, the action's push run) gates on
    nothing, as `--fail-on never`; its Results record the policy of the gate that pull
    requests meet instead, which every later comparison checks against its own ("The
    policy differs from main's", compare/notes.py)."""
    config = results.run_config.replace(gate=gate_policy(options))
    return results.replace(run_config=config)


def gate(
    current: Results,
    baseline: Baseline,
    options: GateOptions,
    *,
    accepted: bool = False,
) -> Diff:
    """Compare with the baseline, noise-aware (cases flaky on main are known), and decide."""
    return compare(
        current,
        baseline.results,
        fail_on=options.fail_on,
        min_delta=options.deltas(),
        history=baseline.history,
        no_baseline_reason=baseline.reason,
        accepted=accepted,
    )


def verdict_code(diff: Diff) -> int:
    return EXIT_PASS if diff.verdict.passed else EXIT_GATE_FAILED


def threshold_code(results: Results) -> int:
    """Without a baseline: pass only if there were cases and every one passed (ADK-like)
    and none is over an efficiency budget."""
    if results.cases and all(
        case.status == Status.PASSED and not case.over_budget for case in results.cases
    ):
        return EXIT_PASS
    return EXIT_GATE_FAILED


def judged_code(results: Results, judged: JudgeResults | None, code: int) -> int:
    """The gate's exit code after saying what the judge could not do: exit 3 when only a
    Gemini outage (after retries) kept the gate from a verdict."""
    from .judge import blocked_by_outage, no_key_advice

    if judged is not None and (advice := no_key_advice(judged)):
        print(f"warning: {advice}", file=sys.stderr)
    if code == EXIT_GATE_FAILED and blocked_by_outage(results, judged):
        print(
            "error: Gemini could not be reached for judged metrics (after retries); "
            "no verdict, re-run later",
            file=sys.stderr,
        )
        return EXIT_INFRASTRUCTURE
    return code


def noise_advice(diff: Diff, options: RunOptions) -> str | None:
    """One line for a user of single runs whose agent answers differently run to run."""
    flaky = sum(case.flaky for case in diff.cases)
    if options.num_runs > 1 or not flaky:
        return None
    confirm = (
        f"regressions are confirmed by up to {options.confirm_runs} re-runs before they count"
        if options.confirm_runs
        else "with --confirm-runs 0, a regression seen in one run counts at once"
    )
    return (
        f"{flaky} case(s) answered differently across runs or against main; with one run per "
        f"case, {confirm}. Older baselines (--history) tell noise from change; "
        "docs/statistics.md says more"
    )
