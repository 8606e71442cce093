"""Hermetic tools' answers for a run (docs/hermetic-tools.md): each planned case's expected
tool responses (`--tools-from-eval-file`) and the baseline's recorded tool calls of the
same case (`--replay-tools`), handed to the in-process ADK runner (runners/tool_answers.py).

The recording is the baseline Results the job already read and validated (pipeline/gate.py,
compare/loading.py): in the action, main's push-run artifact, chosen by the privileged
side; nothing here reads a file of its own.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

from ..errors import InputError
from ..results import CaseResult
from ..runners.tool_answers import (
    CaseAnswers,
    HermeticTools,
    RecordedTurn,
    from_eval_case,
    from_recording,
)
from .gate import Baseline
from .options import RunOptions
from .plan import Plan

NEEDS_AGENT = (
    "--tools-from-eval-file and --replay-tools answer the tool calls of an ADK agent run in "
    "this process: give --agent DIR"
)
NEEDS_SOURCE = "--replay-strict goes with --tools-from-eval-file or --replay-tools"
NEEDS_BASELINE = (
    "--replay-tools answers tool calls from the baseline's recorded runs: give --baseline "
    "BASE.json (main's Results)"
)
NO_RECORDING = "warning: --replay-tools: {why}; every tool call runs live"


def check_flags(options: RunOptions, *, agent: bool, baseline: str | None) -> None:
    """InputError (exit 2) for hermetic-tools flags that cannot apply, before anything runs."""
    wanted = options.tools_from_eval_file or options.replay_tools
    if options.replay_strict and not wanted:
        raise InputError(NEEDS_SOURCE)
    if wanted and not agent:
        raise InputError(NEEDS_AGENT)
    if options.replay_tools and baseline is None:
        raise InputError(NEEDS_BASELINE)


def hermetic_tools(
    options: RunOptions, plan: Plan, baseline: Baseline, warnings: list[str] | None = None
) -> HermeticTools | None:
    """The answers of every planned case; None when neither flag is given. A baseline that
    could not be used replays nothing: every call runs live (said on stderr and added to
    `warnings`, the Results'), and strict applies to the eval file's answers only."""
    if not (options.tools_from_eval_file or options.replay_tools):
        return None
    replay = options.replay_tools and baseline.results is not None
    if options.replay_tools and not replay:
        warning = NO_RECORDING.format(why=baseline.reason or "no usable baseline")
        print(warning, file=sys.stderr)
        if warnings is not None:
            warnings.append(warning)
    recorded = (
        {(c.eval_set_id, c.eval_id): c for c in baseline.results.cases}
        if replay and baseline.results is not None
        else {}
    )
    cases = {}
    for key, (_, case) in plan.cases.items():
        eval_file = from_eval_case(case) if options.tools_from_eval_file else []
        record = recorded.get((key.eval_set_id, key.eval_id))
        recording = from_recording(_recorded_turns(record)) if record is not None else []
        cases[(key.eval_set_id, key.eval_id)] = CaseAnswers(tuple(eval_file), tuple(recording))
    strict = options.replay_strict and (replay or options.tools_from_eval_file)
    return HermeticTools(
        from_eval_file=options.tools_from_eval_file, replay=replay, strict=strict, cases=cases
    )


def _recorded_turns(case: CaseResult) -> Iterator[RecordedTurn]:
    """A baseline case's finished turns, run by run (as recorded), turn by turn."""
    for run in case.runs:
        effects = run.tool_effects or []
        for index, turn in enumerate(run.turns()):
            actual = turn.actual
            if actual is not None:
                done = effects[index] if index < len(effects) else None
                yield RecordedTurn(
                    index, actual.tool_uses, actual.tool_responses, done, run=run.run
                )
