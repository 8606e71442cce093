"""What one agent turn did, read from ADK events the way `adk eval` reads them.

Used by the three ADK runners on the JSON form of events (snake_case from the
in-process Runner, camelCase from `adk api_server`, ADK's own `Invocation`s from
`.adk/eval_history`), so they capture the same thing from the same run:

- tool_uses: every `function_call` part of the turn's agent events, in order
  (`transfer_to_agent` included), as ADK's `get_all_tool_calls` sees them;
- tool_responses: every `function_response` part, in order;
- final_response: the content of the last event that is a final response
  (`Event.is_final_response()`), an event with text winning over one without;
- intermediate_responses: `[author, [text parts]]` of the other events with text;
- invocation_events: the events in ADK's `InvocationEvents` form, for judges that
  read the raw turn (the final event's content is dropped unless it calls tools);
- tool_effects: per tool response, the non-empty actions of the event that carried it
  (state_delta, transfer_to_agent, ...), which tell whether a recorded call may be
  replayed (tool_answers.py); None when an event came without its actions (history).

This module imports nothing from google-adk: the API and history runners work
without it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel, to_snake

from ..evalset.models import Content, FunctionCall, FunctionResponse, InvocationEvent, Part
from ..traces import ActualTurn, CaseRunRequest, TokenUsage
from .tool_answers import effects

# shared by the ADK runners (runners/adk.py, runners/adk_api.py)
INSTALL_HINT = "pip install 'agent-eval-action[adk]'"
DEFAULT_USER_ID = "test_user_id"  # ADK's, for a case without session_input

USER_AUTHOR = "user"
# ADK's own prefix for eval sessions: `adk api_server` hides these from its session list.
SESSION_PREFIX = "adk-eval-session-"


def new_session_id(request: CaseRunRequest) -> str:
    """A URL-safe session id, unique per case-run (lowercase letters, digits, hyphens)."""
    case = re.sub(r"[^a-z0-9]+", "-", request.eval_id.lower()).strip("-")[:40].strip("-")
    readable = f"{case}-run{request.run}" if case else f"run{request.run}"
    return f"{SESSION_PREFIX}{readable}-{uuid.uuid4().hex[:12]}"


def field(data: Mapping[str, Any], name: str) -> Any:
    """A structural key of an ADK JSON object, in snake_case or camelCase."""
    value = data.get(name)
    return data.get(to_camel(name)) if value is None else value


def _pick(model: type[BaseModel], data: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of `data` that `model` knows (snake or camel), snake-cased; others dropped.

    Events carry Part fields that newer google-genai versions add; they do not
    matter to scoring, and must not make a turn unreadable.
    """
    known = {}
    for key, value in data.items():
        name = to_snake(key)
        if name in model.model_fields and value is not None:
            known[name] = value
    return known


def content_from_json(data: Any) -> Content | None:
    """Our Content from ADK's JSON (either casing, unknown Part fields ignored)."""
    if not isinstance(data, Mapping):
        return None
    parts = []
    for raw in field(data, "parts") or ():
        if not isinstance(raw, Mapping):
            continue
        part = _pick(Part, raw)
        if isinstance(part.get("function_call"), Mapping):
            part["function_call"] = FunctionCall.model_validate(
                _pick(FunctionCall, part["function_call"])
            )
        if isinstance(part.get("function_response"), Mapping):
            part["function_response"] = FunctionResponse.model_validate(
                _pick(FunctionResponse, part["function_response"])
            )
        parts.append(Part.model_validate(part))
    try:
        return Content(parts=parts, role=field(data, "role"))
    except ValidationError:  # a role that is not a string: not an ADK content
        return Content(parts=parts)


def _has_text(content: Content | None) -> bool:
    return content is not None and any(part.text for part in content.parts or ())


def _calls(content: Content | None) -> list[FunctionCall]:
    return [p.function_call for p in (content.parts or () if content else ()) if p.function_call]


def _responses(content: Content | None) -> list[FunctionResponse]:
    return [
        p.function_response for p in (content.parts or () if content else ()) if p.function_response
    ]


def is_final_response(event: Mapping[str, Any]) -> bool:
    """ADK's `Event.is_final_response()` on an event's JSON form."""
    actions = field(event, "actions") or {}
    if field(actions, "skip_summarization") or field(event, "long_running_tool_ids"):
        return True
    content = content_from_json(field(event, "content"))
    calls, partial = _calls(content), bool(field(event, "partial"))
    if field(event, "error_code") and not partial and not calls:
        return True
    parts = (content.parts or []) if content else []
    trailing_code_result = bool(parts) and parts[-1].code_execution_result is not None
    return not calls and not _responses(content) and not partial and not trailing_code_result


def _usage_dict(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, Mapping):
        return None
    return {to_snake(key): item for key, item in value.items()}


def _add_usage(total: TokenUsage, usage: Mapping[str, Any]) -> None:
    total.prompt_tokens += int(usage.get("prompt_token_count") or 0)
    total.output_tokens += int(usage.get("candidates_token_count") or 0)
    total.thinking_tokens += int(usage.get("thoughts_token_count") or 0)


class TurnCapture:
    """Collects the events of one user turn and turns them into an ActualTurn."""

    def __init__(self) -> None:
        self._events: list[tuple[str, Content | None, bool, dict[str, Any]]] = []
        self._effects: list[list[str] | None] = []  # per event: its actions' effects
        self._usage = TokenUsage()
        self._has_usage = False

    def add(self, event: Mapping[str, Any], final: bool | None = None) -> None:
        """One event in JSON form; `final` overrides our is_final_response() (in-process
        runs pass ADK's own verdict)."""
        author = field(event, "author") or "agent"
        if author.lower() == USER_AUTHOR:
            return
        usage = _usage_dict(field(event, "usage_metadata"))
        if usage:
            self._has_usage = True
            _add_usage(self._usage, usage)
        content = content_from_json(field(event, "content"))
        extra = {
            "usage_metadata": usage,
            "grounding_metadata": field(event, "grounding_metadata"),
            "model_version": field(event, "model_version"),
        }
        is_final = is_final_response(event) if final is None else final
        self._events.append((author, content, is_final, extra))
        actions = field(event, "actions")
        self._effects.append(effects(actions) if isinstance(actions, Mapping) else None)

    @property
    def empty(self) -> bool:
        """No agent event at all: the agent did not run (ADK could not score such a turn)."""
        return not self._events

    def turn(self, duration_s: float, app_details: Any = None) -> ActualTurn:
        final_index = None
        for index, (_, content, is_final, _) in enumerate(self._events):
            if content is None or not content.parts or not is_final:
                continue
            current = None if final_index is None else self._events[final_index][1]
            if not _has_text(current) or _has_text(content):
                final_index = index
        kept: list[InvocationEvent] = []
        tool_uses: list[FunctionCall] = []
        tool_responses: list[FunctionResponse] = []
        tool_effects: list[list[str]] | None = []
        intermediate: list[Any] = []
        for index, (author, content, _, extra) in enumerate(self._events):
            has_parts = content is not None and bool(content.parts)
            relevant = has_parts and any(
                p.function_call or p.function_response or p.text or p.inline_data
                for p in (content.parts if content is not None else None) or ()
            )
            if not relevant and extra["grounding_metadata"] is None:
                continue
            calls = _calls(content)
            tool_uses += calls
            responses = _responses(content)
            tool_responses += responses
            done = self._effects[index]
            if responses and tool_effects is not None:
                tool_effects = None if done is None else tool_effects + [done] * len(responses)
            parts = (content.parts if content is not None else None) or ()
            texts = [p for p in parts if p.text]
            if index != final_index and texts:
                intermediate.append([author, [Part(text=p.text, thought=p.thought) for p in texts]])
            kept.append(
                InvocationEvent(
                    author=author,
                    content=content if index != final_index or calls else None,
                    **{k: v for k, v in extra.items() if v is not None},
                )
            )
        return ActualTurn(
            final_response=None if final_index is None else self._events[final_index][1],
            tool_uses=tool_uses,
            tool_responses=tool_responses,
            intermediate_responses=intermediate,
            usage=self._usage if self._has_usage else None,
            duration_s=duration_s,
            invocation_events=kept,
            app_details=app_details,
            tool_effects=tool_effects,
        )


def turn_from_invocation(invocation: Mapping[str, Any]) -> tuple[Content | None, ActualTurn]:
    """(user_content, turn) from an actual `Invocation` as ADK stores it in eval history.

    Its `intermediate_data` is either ADK's `InvocationEvents` (what `adk eval`
    writes since 1.20) or the older `IntermediateData` form (tool_uses,
    tool_responses, intermediate_responses).
    """
    user_content = content_from_json(field(invocation, "user_content"))
    final = content_from_json(field(invocation, "final_response"))
    data = field(invocation, "intermediate_data") or {}
    duration = field(invocation, "duration")
    duration_s = float(duration) if isinstance(duration, int | float) else 0.0
    app_details = field(invocation, "app_details")
    events = field(data, "invocation_events") if isinstance(data, Mapping) else None
    if events is not None:
        capture = TurnCapture()
        for event in events:
            if isinstance(event, Mapping):
                # Stored events are already filtered, the final one without content.
                capture.add(event, final=False)
        turn = capture.turn(duration_s, app_details)
        turn.final_response = final
        return user_content, turn
    tool_uses = [
        FunctionCall.model_validate(_pick(FunctionCall, call))
        for call in field(data, "tool_uses") or ()
        if isinstance(call, Mapping)
    ]
    tool_responses = [
        FunctionResponse.model_validate(_pick(FunctionResponse, response))
        for response in field(data, "tool_responses") or ()
        if isinstance(response, Mapping)
    ]
    intermediate = [
        [item[0], [Part.model_validate(_pick(Part, p)) for p in item[1] if isinstance(p, Mapping)]]
        for item in field(data, "intermediate_responses") or ()
        if isinstance(item, list | tuple) and len(item) == 2 and isinstance(item[1], list)
    ]
    return user_content, ActualTurn(
        final_response=final,
        tool_uses=tool_uses,
        tool_responses=tool_responses,
        intermediate_responses=intermediate,
        duration_s=duration_s,
        app_details=app_details,
    )
