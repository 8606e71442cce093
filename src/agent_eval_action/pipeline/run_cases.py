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
and accepts only traces of case-runs the plan asked for: the suite's file those of the
suite's plan, each confirmation round's file those of its round's plan (which the reader
is given, never taken from the traces), each once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from ..core import RUNNER_KINDS, RunKey, RunnerKind
from ..errors import InputError
from ..files import line_by_line, read_lines
from ..files.jsonpos import one_line
from ..runners import Runner, RunnerStartError
from ..runners.reaper import reaping
from ..traces import (
    CaseRunRequest,
    CaseRuns,
    CaseRunTrace,
    NextUser,
    fixed_turns,
    installed_adk,
)
from .cancellable import Cancelled, run_cancellable
from .plan import Plan

if TYPE_CHECKING:
    from ..metrics.judge import JudgeSettings
    from ..metrics.simulation.simulator import UserSimulator

SCHEMA = "agent-eval-traces/1"
MAX_TRACES_BYTES = 4 * 1024**3  # a traces file larger than this is refused
# one trace (a case-run) larger than this is refused: a file of NULs under the file's cap,
# sparse, costs its writer nothing and would be one line held whole by the score stage
MAX_TRACE_LINE_BYTES = 256 * 1024**2
CANCELLED = "cancelled before this run finished"
DIED = "the agent stage ended before this run finished"
NOT_RETURNED = "the agent stage returned no trace for this run"
NO_SIMULATOR = (
    "a conversation_scenario case needs the user simulator, which runs only where the "
    "judge's key is: `run` runs it; `run-cases` gets its turns from `serve-users` through "
    "--user-turns (as the action does), and was given none"
)
NO_SIMULATOR_KEY = (
    "a conversation_scenario case needs the user simulator, which needs a Gemini API key "
    "(AGENT_EVAL_JUDGE_API_KEY or GOOGLE_API_KEY): none is set, so the case is not run"
)


def run_cases(
    plan: Plan,
    runner: Runner,
    *,
    on_trace: Callable[[CaseRunTrace], None] | None = None,
    simulator: JudgeSettings | None = None,
    relay: NextUser | None = None,
    no_key: bool = False,
) -> CaseRuns:
    """Run the plan's case-runs; SIGTERM/SIGINT cancels, keeping every finished trace.
    `simulator`: the judge's settings, for the user simulator of scenario cases; `relay`:
    where to ask for scenario turns instead (pipeline/user_relay.py, the simulator in
    another process). With neither, scenario cases are recorded as not run (`no_key`: the
    reason is that the privileged side has no key for the simulator)."""
    from .score import score_custom

    started = datetime.now(UTC)
    finished: list[CaseRunTrace] = []
    custom = plan.has_custom
    confirming = {(r.key, r.run): r.purpose for r in plan.requests if r.purpose}
    requests, not_run, users = _conversations(plan, runner, simulator, relay is not None, no_key)

    def collect(trace: CaseRunTrace) -> None:
        trace.purpose = confirming.get((trace.key, trace.run))
        if users is not None and trace.simulation is None:
            trace.simulation = users.simulation(trace.eval_set_id, trace.eval_id, trace.run)
        if custom:
            score_custom(plan, trace)  # the project's own metric code runs here, by the agent
        finished.append(trace)
        if on_trace is not None:
            on_trace(trace)

    for trace in not_run:
        collect(trace)
    next_user: NextUser = (
        users.next_user if users is not None else relay if relay is not None else fixed_turns
    )

    async def suite() -> list[CaseRunTrace]:
        try:
            return await runner.run_suite(requests, collect, next_user)
        finally:
            if users is not None:
                await users.close()

    try:
        # What the agent leaves running dies with its case-run, the rest with the stage.
        with reaping():
            traces: list[CaseRunTrace] = [*not_run, *run_cancellable(suite())]
        for trace in traces:  # a runner may return other trace objects than it reported
            trace.purpose = confirming.get((trace.key, trace.run))
            if custom and not trace.custom_scores:
                score_custom(plan, trace)
        cancelled = False
    except RunnerStartError as err:
        raise InputError(str(err)) from None
    except Cancelled:
        traces, cancelled = complete(plan, finished, CANCELLED), True
    return CaseRuns(
        runner.kind, runner.target, started, traces, cancelled, adk_version=installed_adk()
    )


def _conversations(
    plan: Plan,
    runner: Runner,
    simulator: JudgeSettings | None,
    relayed: bool = False,
    no_key: bool = False,
) -> tuple[list[CaseRunRequest], list[CaseRunTrace], UserSimulator | None]:
    """The requests to run, the scenario case-runs recorded as not run (no simulator here,
    or no key for it), and the user simulator when scenario cases run here."""
    scenarios = [r for r in plan.requests if r.scenario is not None]
    if not scenarios or not runner.converses or relayed:
        return list(plan.requests), [], None
    if no_key or (simulator is not None and not simulator.api_key):
        why: str | None = NO_SIMULATOR_KEY
    else:
        why = NO_SIMULATOR if simulator is None else None
    if why is not None:
        skipped = [
            CaseRunTrace(eval_set_id=r.eval_set_id, eval_id=r.eval_id, run=r.run, not_run=why)
            for r in scenarios
        ]
        return [r for r in plan.requests if r.scenario is None], skipped, None
    assert simulator is not None
    return list(plan.requests), [], user_simulator(plan, simulator)


def user_simulator(plan: Plan, settings: JudgeSettings) -> UserSimulator:
    """The user simulator of the plan's scenario cases (each eval set's config)."""
    from ..metrics.simulation.simulator import UserSimulator

    configs = {
        s.eval_set_id: s.config.simulator for s in plan.suite.eval_sets if s.config.simulator
    }
    cases = {key: case.conversation_scenario for key, (_, case) in plan.cases.items()}
    return UserSimulator(settings, configs, {k: v for k, v in cases.items() if v is not None})


def complete(plan: Plan, finished: list[CaseRunTrace], why: str) -> list[CaseRunTrace]:
    """The finished traces plus an errored one, saying `why`, for every case-run without one."""
    done = {t.run_key for t in finished}
    missing = [
        CaseRunTrace(
            eval_set_id=r.eval_set_id, eval_id=r.eval_id, run=r.run, error=why, purpose=r.purpose
        )
        for r in plan.requests
        if r.run_key not in done
    ]
    return [*finished, *missing]


class TracesWriter:
    """Streams a traces file: the header now, each trace as it finishes, the end line last."""

    def __init__(self, path: Path, runner: Runner) -> None:
        self._file = line_by_line(path)
        self._line(
            {
                "traces": SCHEMA,
                "runner": runner.kind,
                "target": runner.target,
                "started_at": datetime.now(UTC).isoformat(),
                "adk_version": installed_adk(),
            }
        )

    def _line(self, data: dict[str, object]) -> None:
        self._file.write(json.dumps(data, ensure_ascii=False) + "\n")
        self._file.flush()

    def add(self, trace: CaseRunTrace) -> None:
        """Write `trace`; one past MAX_TRACE_LINE_BYTES, which the score stage would refuse
        with the whole file, goes as its case-run errored with why (its turns left out)."""
        line = '{"trace": ' + trace.model_dump_json() + "}"
        if len(line.encode("utf-8")) > MAX_TRACE_LINE_BYTES:
            why = f"its trace is more than {MAX_TRACE_LINE_BYTES} bytes, the limit: not scored"
            kept = trace.model_copy(update={"turns": [], "log": None, "error": why})
            line = '{"trace": ' + kept.model_dump_json() + "}"
        self._file.write(line + "\n")
        self._file.flush()

    def finish(self, cancelled: bool) -> None:
        self._line({"end": {"cancelled": cancelled}})
        self._file.close()


def read_traces(path: Path, plan: Plan, rounds: Sequence[tuple[Path, Plan]] = ()) -> CaseRuns:
    """The agent stage's traces files: the suite's (`path`, the case-runs of `plan`), then
    each confirmation round's with the round's plan (pipeline/confirm.round_plan), each
    line checked (InputError naming the file and line). A planned case-run without a
    trace, the suite's or a round's, is errored: cancelled, or its stage died, or it
    returned none (a round's stage that left out a re-run would otherwise leave a regression
    waiting on it undecided, and passed as noise)."""
    return _read([(path, plan), *rounds], plan, complete_first=True)


def read_round_traces(rounds: Sequence[tuple[Path, Plan]], plan: Plan) -> CaseRuns:
    """The traces files of rounds alone (the paired runs on the merge-base's code), each
    with its round's plan; checked as read_traces checks them. A round's case-run without
    a trace is left out."""
    return _read(rounds, plan, complete_first=False)


def _read(files: Sequence[tuple[Path, Plan]], plan: Plan, *, complete_first: bool) -> CaseRuns:
    """Each file holds only the case-runs of its own plan, at most one trace each, saying
    what they confirm as the plan says (a file comes from the process that ran the PR's
    code, and nothing else chose its runs: an unplanned re-run could hide a regression)."""
    first: tuple[RunnerKind, str | None, datetime, str | None] | None = None
    finished: dict[tuple[str, str, int], CaseRunTrace] = {}
    ends: list[bool | None] = []
    for path, asked in files:
        header, ended = _read_one(path, plan, asked, finished)
        first = first or header
        ends.append(ended)
    assert first is not None, "at least one traces file"
    traces = list(finished.values())
    if complete_first:  # every planned case-run is accounted for, a round's too
        for (_, asked), end in zip(files, ends, strict=True):
            why = CANCELLED if end else DIED if end is None else NOT_RETURNED
            traces = complete(asked, traces, why)
    runner, target, started, adk = first
    cancelled = any(end is not False for end in ends)
    return CaseRuns(runner, target, started, traces, cancelled, adk_version=adk)


def _read_one(
    path: Path,
    plan: Plan,
    asked: Plan,
    finished: dict[tuple[str, str, int], CaseRunTrace],
) -> tuple[tuple[RunnerKind, str | None, datetime, str | None], bool | None]:
    """One traces file, whose plan is `asked` (the suite's `plan`, or a round's)."""
    display = str(path)
    # one trace a line, read as they come (never the file whole), split at "\n" alone: a
    # trace's JSON may hold U+2028 or U+0085 as they are (pydantic writes them unescaped)
    lines = read_lines(path, display, MAX_TRACES_BYTES, MAX_TRACE_LINE_BYTES)
    first = next(lines, None)
    if first is None:
        raise InputError("the traces file is empty", display)
    header = _json(first[1], display, 1)
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
    if started_at.tzinfo is None:  # compared with aware times later: say it here
        raise InputError(f"started_at {started!r} names no time zone", display, 1)
    adk = header.get("adk_version")
    if adk is not None and not (isinstance(adk, str) and _VERSION.fullmatch(adk)):
        raise InputError("adk_version must be a version number, like 2.13.0", display, 1)
    wanted = {r.run_key: r.purpose for r in asked.requests}
    ran = wanted if asked.stage is None else asked.stage  # what the file's stage was asked
    seen: set[RunKey] = set()
    ended: bool | None = None
    for number, text in lines:
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
        key = trace.run_key
        if trace.not_run is not None and (
            trace.key not in plan.cases or plan.cases[trace.key][1].conversation_scenario is None
        ):
            raise InputError(
                f"a trace marked not run for a case that is no scenario: {trace.run_key}",
                display,
                number,
            )
        # a trace already read from another file is a second one, unless this file is read
        # again for a later round, which passes over what an earlier one took from it
        second = key in seen or (key in finished and (key in wanted or key not in ran))
        if second or key not in ran:
            what = "a second trace" if second else "a trace nobody asked for"
            raise InputError(f"{what}: {trace.run_key}", display, number)
        seen.add(key)
        if trace.purpose is not None and trace.purpose != ran[key]:
            raise InputError(
                f"a trace that says it re-runs what its plan did not: {trace.run_key}",
                display,
                number,
            )
        if key not in wanted:
            continue  # started ahead for another round: taken there, or discarded
        trace.purpose = wanted[key]  # what the plan says, not what the traces say
        finished[key] = trace
    return (runner, target if isinstance(target, str) else None, started_at, adk), ended


_VERSION = re.compile(r"[0-9][0-9A-Za-z.+!-]{0,39}")  # a PEP 440 version, kept short


def _json(text: str, display: str, line: int) -> object:
    try:
        return json.loads(text)
    except ValueError as err:
        raise InputError(f"not JSON: {err}", display, line) from None
