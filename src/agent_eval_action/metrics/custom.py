"""Custom metrics from test_config.json's `custom_metrics` (`code_config.name` = `module.function`).

The function is called as ADK calls it: `fn(eval_metric, actual_invocations,
expected_invocations, conversation_scenario)`, returning ADK's `EvaluationResult`
(or an awaitable of one). When google-adk is installed the arguments are ADK's
own models; otherwise ours, which carry the same attribute names. A plain number,
or a mapping with `overall_score`, is accepted as the result too.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from ..core import Axis
from ..evalset.models import IntermediateData, Invocation, InvocationEvents
from .criteria import Criterion, CustomCriterion
from .registry import Metric, RunScore

if TYPE_CHECKING:
    from ..traces import ActualTurn


def import_function(path: str) -> Callable[..., Any]:
    """Import `module.function`, looking in the current directory too. Raises ImportError."""
    module_name, _, function_name = path.rpartition(".")
    if not module_name:
        raise ImportError(f'"{path}" is not of the form module.function')
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        function = getattr(importlib.import_module(module_name), function_name)
    except (ImportError, AttributeError) as err:
        raise ImportError(f'cannot import "{path}": {err}') from None
    if not callable(function):
        raise ImportError(f'"{path}" is not callable')
    return function


def actual_invocations(
    expected: Sequence[Invocation], actual: Sequence[ActualTurn]
) -> list[Invocation]:
    """The agent's turns in the shape of ADK's Invocation (one per expected turn). Where an
    ADK runner recorded the turn's events, they are its intermediate data and its app
    details come along, as ADK's own inference gives them to a metric; otherwise (the
    command runner) the tool calls and responses are, in the hand-written form."""
    return [
        Invocation(
            invocation_id=want.invocation_id,
            user_content=want.user_content,
            final_response=turn.final_response,
            intermediate_data=_intermediate(turn),
            app_details=turn.app_details,
        )
        for want, turn in zip(expected, actual, strict=True)
    ]


def _intermediate(turn: ActualTurn) -> IntermediateData | InvocationEvents:
    if turn.invocation_events is not None:
        return InvocationEvents(invocation_events=turn.invocation_events)
    return IntermediateData(tool_uses=turn.tool_uses, tool_responses=turn.tool_responses)


def _adk_arguments(name: str, criterion: Criterion, invocations: list[list[Invocation]]) -> tuple:
    """ADK's own models when google-adk is installed, else ours (same attribute names)."""
    criterion_data = criterion.model_dump(exclude_none=True)
    try:
        from google.adk.evaluation.eval_case import Invocation as AdkInvocation
        from google.adk.evaluation.eval_metrics import BaseCriterion, EvalMetric
    except ImportError:
        ours = SimpleNamespace(
            metric_name=name, threshold=None, criterion=SimpleNamespace(**criterion_data)
        )
        return ours, *invocations
    metric = EvalMetric(metric_name=name, threshold=None, criterion=BaseCriterion(**criterion_data))
    converted = [
        [AdkInvocation.model_validate(i.model_dump(exclude_none=True)) for i in group]
        for group in invocations
    ]
    return metric, *converted


def _as_float(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    return float(value)


def _read_result(result: Any) -> RunScore:
    if isinstance(result, int | float) and not isinstance(result, bool):
        return RunScore(overall=float(result))
    if isinstance(result, dict):
        result = SimpleNamespace(**result)
    overall = _as_float(getattr(result, "overall_score", None))
    per_turn = [
        _as_float(getattr(r, "score", None) if not isinstance(r, dict) else r.get("score"))
        for r in getattr(result, "per_invocation_results", None) or ()
    ]
    error = None if overall is not None else "the custom metric returned no overall_score"
    return RunScore(overall=overall, invocations=per_turn, error=error)


NOT_IMPORTED = "scored by the agent stage, beside the agent (this process imports no project code)"


def custom_metric(name: str, function_path: str, axis: Axis, *, load: bool = True) -> Metric:
    """The custom metric, its function imported (`load`), or else a stand-in that only
    declares it: the score stage reads its scores from the agent stage's traces."""
    if not load:

        def not_imported(
            criterion: Criterion, expected: Sequence[Invocation], actual: Sequence[ActualTurn]
        ) -> RunScore:
            return RunScore(overall=None, error=NOT_IMPORTED)

        return Metric(
            name=name, kind=axis, score_run=not_imported, criterion=CustomCriterion, custom=True
        )
    function = import_function(function_path)

    def score_run(
        criterion: Criterion, expected: Sequence[Invocation], actual: Sequence[ActualTurn]
    ) -> RunScore:
        metric, actual_group, expected_group = _adk_arguments(
            name, criterion, [actual_invocations(expected, actual), list(expected)]
        )
        try:
            result = function(metric, actual_group, expected_group, None)
            if inspect.isawaitable(result):
                result = _wait_for(result)
            return _read_result(result)
        except Exception as err:  # a user's metric failing makes it not_evaluated, never passed
            return RunScore(
                overall=None, error=f"{function_path} raised {type(err).__name__}: {err}"
            )

    return Metric(name=name, kind=axis, score_run=score_run, criterion=CustomCriterion, custom=True)


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _wait_for(awaitable: Any) -> Any:
    """An async metric's result. Custom metrics are scored as each case-run finishes, inside
    the runner's event loop: a loop of its own then runs in a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(awaitable))
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, _await(awaitable)).result()
