"""Score what `adk eval` already ran (`--adk-history PATH...`).

`adk eval` writes `<agent>/.adk/eval_history/*.evalset_result.json`. Each file is an
`EvalSetResult`; every case in it keeps the agent's actual invocations
(`eval_metric_result_per_invocation[].actual_invocation`). Here those become the
case-runs' turns, and our metrics score them against the eval files given as
EVAL_PATH, so they compare with our own runs. ADK's own scores are not used.

Every variant ADK has written is read:
- the file holds JSON, or (ADK <= 1.21) a JSON string holding the JSON;
- one file per eval set and run (ADK 2.x), or one file per case and run (1.x);
- statuses as ints (PASSED=1, FAILED=2, NOT_EVALUATED=3) or names;
- actual tool calls as `invocation_events` (1.20+) or `tool_uses` (older).

PATH is a result file or a directory searched for `*.evalset_result.json`. When a
case has several results (`adk eval` run more than once), the newest are used:
with `--num-runs N`, the N newest, oldest first as runs 1..N. A case without
history, or whose history does not match the eval file's turns, is errored with a
note saying so.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import CaseKey
from ..errors import InputError
from ..files import decode, read_bytes
from ..traces import CaseRunRequest, CaseRunTrace
from .adk_events import field, turn_from_invocation
from .base import OnTrace

HISTORY_SUFFIX = ".evalset_result.json"
FAILED_STATUSES = {2, "2", "FAILED", "EvalStatus.FAILED"}
NOT_IN_HISTORY = (
    "no adk eval result for this case in the --adk-history files "
    "(run `adk eval` on it, or check its eval_set_id and eval_id)"
)

Key = CaseKey


@dataclass(frozen=True)
class HistoryEntry:
    """One case's result from one `adk eval` run."""

    file: str
    timestamp: float
    order: int  # position among all results read, to keep ties stable
    case: dict[str, Any]  # ADK's EvalCaseResult, as JSON


def history_files(paths: Sequence[str]) -> list[Path]:
    files: list[Path] = []
    for spec in paths:
        path = Path(spec)
        if path.is_dir():
            found = sorted(p for p in path.rglob(f"*{HISTORY_SUFFIX}") if p.is_file())
            if not found:
                raise InputError(f"no *{HISTORY_SUFFIX} files in this directory", spec)
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise InputError("adk eval history file or directory not found", spec)
    return list(dict.fromkeys(files))


def load_history(paths: Sequence[str]) -> dict[Key, list[HistoryEntry]]:
    """Every case result in the files, by case, oldest first. InputError names a bad file."""
    history: dict[Key, list[HistoryEntry]] = defaultdict(list)
    order = 0
    for path in history_files(paths):
        name = path.as_posix()
        result = _read_result_file(path, name)
        set_id = result.get("eval_set_id")
        timestamp = result.get("creation_timestamp")
        timestamp = float(timestamp) if isinstance(timestamp, int | float) else 0.0
        for index, case in enumerate(result["eval_case_results"]):
            if not isinstance(case, dict) or not isinstance(case.get("eval_id"), str):
                raise InputError(f"eval_case_results[{index}] is not an eval case result", name)
            per_invocation = case.get("eval_metric_result_per_invocation") or []
            if not isinstance(per_invocation, list) or not all(
                isinstance(item, dict) and isinstance(item.get("actual_invocation"), dict)
                for item in per_invocation
            ):
                raise InputError(
                    f"eval_case_results[{index}] ({case['eval_id']}): "
                    "eval_metric_result_per_invocation entries need an actual_invocation object",
                    name,
                )
            case_set = case.get("eval_set_id") or case.get("eval_set_file") or set_id
            if not isinstance(case_set, str):
                raise InputError(f"eval_case_results[{index}] has no eval_set_id", name)
            history[CaseKey(case_set, str(case["eval_id"]))].append(
                HistoryEntry(name, timestamp, order, case)
            )
            order += 1
    for entries in history.values():
        entries.sort(key=lambda e: (e.timestamp, e.order))
    return dict(history)


def _read_result_file(path: Path, name: str) -> dict[str, Any]:
    text = decode(read_bytes(path, name), name)
    try:
        data = json.loads(text)
        if isinstance(data, str):  # ADK <= 1.21 wrote the JSON as a JSON string
            data = json.loads(data)
    except json.JSONDecodeError as err:
        raise InputError(
            f"invalid JSON (column {err.colno}): {err.msg}", name, err.lineno
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("eval_case_results"), list):
        raise InputError(
            'not an adk eval result (an EvalSetResult with "eval_case_results")', name, 1
        )
    return data


def history_traces(
    requests: Sequence[CaseRunRequest], history: dict[Key, list[HistoryEntry]]
) -> list[CaseRunTrace]:
    """One trace per request, in request order, from the newest results of each case."""
    runs_wanted: dict[Key, int] = defaultdict(int)
    for request in requests:
        key = request.key
        runs_wanted[key] = max(runs_wanted[key], request.run)
    traces = []
    for request in requests:
        key = request.key
        entries = history.get(key, [])
        newest = entries[-runs_wanted[key] :]
        trace = CaseRunTrace(
            eval_set_id=request.eval_set_id, eval_id=request.eval_id, run=request.run
        )
        if not entries:
            trace.error = NOT_IN_HISTORY
        elif len(newest) < runs_wanted[key] and request.run > len(newest):
            trace.error = (
                f"the history has {len(entries)} adk eval result(s) for this case, "
                f"not the {runs_wanted[key]} runs asked for"
            )
        else:
            _fill(trace, newest[request.run - 1], request)
        traces.append(trace)
    return traces


def _fill(trace: CaseRunTrace, entry: HistoryEntry, request: CaseRunRequest) -> None:
    """The case-run's turns from one adk eval result: a static case's must match its eval
    file's turns; a scenario case's are what ADK's user simulator wrote, user turns kept."""
    invocations = entry.case.get("eval_metric_result_per_invocation") or []
    expected = request.user_contents
    if not invocations:
        failed = entry.case.get("final_eval_status") in FAILED_STATUSES
        trace.error = (
            f"adk eval could not run this case (its inference failed; see adk eval's log) [{entry.file}]"
            if failed
            else f"the adk eval result holds no turns for this case [{entry.file}]"
        )
        return
    if request.scenario is not None:
        for item in invocations:
            user_content, turn = turn_from_invocation(field(item, "actual_invocation"))
            turn.user_content = user_content
            trace.turns.append(turn)
        trace.duration_s = sum(turn.duration_s for turn in trace.turns)
        return
    if len(invocations) != len(expected):
        trace.error = (
            f"the adk eval result has {len(invocations)} turn(s), the eval file "
            f"{len(expected)}: the case changed since adk eval ran [{entry.file}]"
        )
        return
    for number, (item, want) in enumerate(zip(invocations, expected, strict=True), start=1):
        user_content, turn = turn_from_invocation(field(item, "actual_invocation"))
        if user_content is not None and user_content.text() != want.text():
            trace.error = (
                f"turn {number}'s user message in the adk eval result differs from the eval "
                f"file's: the case changed since adk eval ran [{entry.file}]"
            )
            return
        trace.turns.append(turn)
    trace.duration_s = sum(turn.duration_s for turn in trace.turns)


async def run_history_suite(
    requests: Sequence[CaseRunRequest],
    history: dict[Key, list[HistoryEntry]],
    on_trace: OnTrace | None = None,
) -> list[CaseRunTrace]:
    traces = history_traces(requests, history)
    if on_trace is not None:
        for trace in traces:
            on_trace(trace)
    return traces
