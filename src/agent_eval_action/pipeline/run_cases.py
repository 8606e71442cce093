"""The agent stage: run every case-run of the plan against the agent, and nothing else.

Its output, `CaseRuns`, is what the score stage reads. The two stages can share a process
(`run`) or not (`run-cases` writes a traces file that `score` reads in another process):
the process that runs the agent then holds nothing the scoring needs (the judge's key, the
baseline), and the scoring process never runs the agent.

The traces file is JSON lines, written as the case-runs finish, so a stage that is killed
still leaves what it finished:

    {"traces": "agent-eval-traces/1", "runner": KIND, "target": TEXT, "started_at": ISO}
    {"trace": CaseRunTrace}            one per finished case-run, in finishing order
    {"end": {"cancelled": BOOL}}       last; absent when the stage died

The file comes from a process that ran the PR's code, so reading it validates every line
and accepts only traces of case-runs the plan asked for.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from ..core import RUNNER_KINDS, RunnerKind
from ..errors import InputError
from ..files.jsonpos import one_line
from ..runners import Runner, RunnerStartError
from ..runners.reaper import reaping
from ..traces import CaseRuns, CaseRunTrace
from .cancellable import Cancelled, run_cancellable
from .plan import Plan

SCHEMA = "agent-eval-traces/1"
CANCELLED = "cancelled before this run finished"
DIED = "the agent stage ended before this run finished"
NOT_RETURNED = "the agent stage returned no trace for this run"


def run_cases(
    plan: Plan,
    runner: Runner,
    *,
    on_trace: Callable[[CaseRunTrace], None] | None = None,
) -> CaseRuns:
    """Run the plan's case-runs; SIGTERM/SIGINT cancels, keeping every finished trace."""
    from .score import score_custom

    started = datetime.now(UTC)
    finished: list[CaseRunTrace] = []
    custom = plan.has_custom
    confirming = {(r.key, r.run): r.confirms for r in plan.requests if r.confirms}

    def collect(trace: CaseRunTrace) -> None:
        trace.confirms = confirming.get((trace.key, trace.run))
        if custom:
            score_custom(plan, trace)  # the project's own metric code runs here, by the agent
        finished.append(trace)
        if on_trace is not None:
            on_trace(trace)

    try:
        # What the agent leaves running dies with its case-run, the rest with the stage.
        with reaping():
            traces: list[CaseRunTrace] = run_cancellable(runner.run_suite(plan.requests, collect))
        for trace in traces:  # a runner may return other trace objects than it reported
            trace.confirms = confirming.get((trace.key, trace.run))
            if custom and not trace.custom_scores:
                score_custom(plan, trace)
        cancelled = False
    except RunnerStartError as err:
        raise InputError(str(err)) from None
    except Cancelled:
        traces, cancelled = complete(plan, finished, CANCELLED), True
    return CaseRuns(runner.kind, runner.target, started, traces, cancelled)


def complete(plan: Plan, finished: list[CaseRunTrace], why: str) -> list[CaseRunTrace]:
    """The finished traces plus an errored one, saying `why`, for every case-run without one."""
    done = {(t.eval_set_id, t.eval_id, t.run) for t in finished}
    missing = [
        CaseRunTrace(
            eval_set_id=r.eval_set_id, eval_id=r.eval_id, run=r.run, error=why, confirms=r.confirms
        )
        for r in plan.requests
        if (r.eval_set_id, r.eval_id, r.run) not in done
    ]
    return [*finished, *missing]


class TracesWriter:
    """Streams a traces file: the header now, each trace as it finishes, the end line last."""

    def __init__(self, path: Path, runner: Runner) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = path.open("w", encoding="utf-8")
        self._line(
            {
                "traces": SCHEMA,
                "runner": runner.kind,
                "target": runner.target,
                "started_at": datetime.now(UTC).isoformat(),
            }
        )

    def _line(self, data: dict[str, object]) -> None:
        self._file.write(json.dumps(data, ensure_ascii=False) + "\n")
        self._file.flush()

    def add(self, trace: CaseRunTrace) -> None:
        self._file.write('{"trace": ' + trace.model_dump_json() + "}\n")
        self._file.flush()

    def finish(self, cancelled: bool) -> None:
        self._line({"end": {"cancelled": cancelled}})
        self._file.close()


def read_traces(paths: Sequence[Path], plan: Plan) -> CaseRuns:
    """The agent stage's traces files (the suite's, then one per confirmation round), each
    line checked (InputError naming the file and line). A case-run without a trace is
    errored: cancelled, or its stage died, or it returned none."""
    first: tuple[RunnerKind, str | None, datetime] | None = None
    finished: dict[tuple[str, str, int], CaseRunTrace] = {}
    ends: list[bool | None] = []
    for index, path in enumerate(paths):
        header, ended = _read_one(path, plan, finished, confirmations_only=index > 0)
        first = first or header
        ends.append(ended)
    assert first is not None, "at least one traces file"
    why = CANCELLED if ends[0] else DIED if ends[0] is None else NOT_RETURNED
    traces = complete(plan, list(finished.values()), why)
    return CaseRuns(*first, traces, cancelled=any(end is not False for end in ends))


def _read_one(
    path: Path,
    plan: Plan,
    finished: dict[tuple[str, str, int], CaseRunTrace],
    *,
    confirmations_only: bool,
) -> tuple[tuple[RunnerKind, str | None, datetime], bool | None]:
    display = str(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read the traces: {err}", display) from None
    if not lines:
        raise InputError("the traces file is empty", display)
    header = _json(lines[0], display, 1)
    if not isinstance(header, dict) or header.get("traces") != SCHEMA:
        raise InputError(
            f'not a traces file (its first line must say "traces": "{SCHEMA}")', display, 1
        )
    runner, target, started = header.get("runner"), header.get("target"), header.get("started_at")
    if runner not in RUNNER_KINDS or not isinstance(started, str):
        raise InputError("the header needs a known runner and started_at", display, 1)
    try:
        started_at = datetime.fromisoformat(started)
    except ValueError:
        raise InputError(f"started_at {started!r} is not a date", display, 1) from None
    wanted = (
        set() if confirmations_only else {(r.eval_set_id, r.eval_id, r.run) for r in plan.requests}
    )
    ended: bool | None = None
    for number, text in enumerate(lines[1:], start=2):
        data = _json(text, display, number)
        if ended is not None or not isinstance(data, dict) or len(data) != 1:
            raise InputError("expected one trace or the end line", display, number)
        if "end" in data:
            cancelled = data["end"].get("cancelled") if isinstance(data["end"], dict) else None
            if not isinstance(cancelled, bool):
                raise InputError('the end line needs "cancelled": true or false', display, number)
            ended = cancelled
            continue
        try:
            trace = CaseRunTrace.model_validate(data.get("trace"))
        except ValidationError as err:
            raise InputError(
                f"not a trace: {one_line(str(err.errors()[0]['msg']))}", display, number
            ) from None
        key = (trace.eval_set_id, trace.eval_id, trace.run)
        confirming = trace.confirms is not None and trace.run > plan.num_runs
        if (key not in wanted and not (confirming and trace.key in plan.cases)) or key in finished:
            what = "a second trace" if key in finished else "a trace nobody asked for"
            raise InputError(
                f"{what}: {trace.eval_set_id}/{trace.eval_id} run {trace.run}", display, number
            )
        finished[key] = trace
    return (runner, target if isinstance(target, str) else None, started_at), ended


def _json(text: str, display: str, line: int) -> object:
    try:
        return json.loads(text)
    except ValueError as err:
        raise InputError(f"not JSON: {err}", display, line) from None
